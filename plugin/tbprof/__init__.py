"""tbprof: fast profile analysis for TensorFlow / JAX / PyTorch profiler output."""

__version__ = "0.1.0"
