"""``python -m tbprof.cli``: the ``tbprof`` command."""

from tbprof.cli.main import entry

# Guarded: worker processes of --workers import this module again as ``__mp_main__``.
if __name__ == "__main__":
    entry()
