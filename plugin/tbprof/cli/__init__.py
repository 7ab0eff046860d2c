"""The ``tbprof`` command line: ``main.py`` lists the subcommands, one module each."""
