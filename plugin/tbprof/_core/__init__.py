"""tbprof's compiled core (Cython, built by ``pip install``): the XSpace wire scanner (``wire``),
the Chrome-trace JSON scanner (``jsonscan``) and its reader's passes (``chrome_pass``), the
loops over store columns that numpy cannot vectorise (``kernels``), the event grouping's passes
(``groups``) and read-only maps of profile files that survive a truncation under them (``mapped``).

Nothing here compiles at run time. Importing this package imports no submodule, so
``import tbprof`` stays cheap; import ``tbprof._core.wire``, ``tbprof._core.kernels``, ...
"""
