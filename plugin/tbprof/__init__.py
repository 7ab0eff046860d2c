"""tbprof: fast profile analysis for TensorFlow / JAX / PyTorch profiler output.

Importing the package starts nothing and imports nothing heavy: the CLI, the server and the
TensorBoard plugin each import only the modules a command needs.
"""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``tbprof.open`` / ``tbprof.Profile`` (the Python API, ``service/api.py``), imported on first
    use so that ``import tbprof`` (the CLI, the TensorBoard loader) stays cheap."""
    if name in ("open", "Profile"):
        # By name, not an import statement: the package root sits below every layer (the store
        # reads __version__ from it), and only this attribute lookup reaches up to the service.
        import importlib

        return getattr(importlib.import_module("tbprof.service.api"), name)
    raise AttributeError(f"module 'tbprof' has no attribute {name!r}")
