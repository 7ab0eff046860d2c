"""``python -m tbprof.cli``: the ``tbprof`` command."""

import sys

from tbprof.cli.main import main

# Guarded: worker processes of --workers import this module again as ``__mp_main__``.
if __name__ == "__main__":
    sys.exit(main())
