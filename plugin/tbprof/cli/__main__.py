"""``python -m tbprof.cli``: the ``tbprof`` command."""

import sys

from tbprof.cli.main import main

sys.exit(main())
