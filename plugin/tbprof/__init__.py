"""tbprof: fast profile analysis for TensorFlow / JAX / PyTorch profiler output."""

import os as _os
from typing import Any

from tbprof.store import paths as _paths

__version__ = "0.1.0"

# numba reads NUMBA_CACHE_DIR once, when it is first imported, and several modules compile
# with cache=True (the wire scanner, nesting depths, the trace viewer's scans): set the
# default here, before any of them can import numba (see readers/wire_scan.py for why).
_os.environ.setdefault("NUMBA_CACHE_DIR", str(_paths.numba_cache_dir()))


def __getattr__(name: str) -> Any:
    """``tbprof.open`` / ``tbprof.Profile`` (the Python API, ``service/api.py``), imported on first
    use so that ``import tbprof`` (the CLI, the TensorBoard loader) stays cheap."""
    if name in ("open", "Profile"):
        # By name, not an import statement: the package root sits below every layer (the store
        # reads __version__ from it), and only this attribute lookup reaches up to the service.
        import importlib

        return getattr(importlib.import_module("tbprof.service.api"), name)
    raise AttributeError(f"module 'tbprof' has no attribute {name!r}")
