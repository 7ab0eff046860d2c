"""Capture Profile: ask running TensorFlow/JAX profiler servers to trace and write into the logdir."""
