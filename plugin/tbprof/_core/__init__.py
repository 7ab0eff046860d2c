"""tbprof's compiled core (Cython, built by ``pip install``): the XSpace wire scanner (``wire``)
and the loops over store columns that numpy cannot vectorise (``kernels``).

Nothing here compiles at run time. Importing this package imports neither submodule, so
``import tbprof`` stays cheap; import ``tbprof._core.wire`` or ``tbprof._core.kernels``.
"""
