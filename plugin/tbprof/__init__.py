"""tbprof: fast profile analysis for TensorFlow / JAX / PyTorch profiler output.

Importing the package starts nothing and imports nothing heavy: the CLI, the server and the
TensorBoard plugin each import only the modules a command needs.
"""

__version__ = "0.1.0"
