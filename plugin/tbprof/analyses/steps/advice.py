"""What to do about a slow input pipeline, in the words of the framework that ran it.

A PyTorch run reads its input through ``torch.utils.data.DataLoader``: tf.data's knobs mean
nothing there. A TensorFlow (or JAX) run with tf.data iterators gets tf.data's; one without
them gets the advice every input pipeline shares.
"""

from __future__ import annotations

from typing import Literal

Framework = Literal["pytorch", "tf_data", "other"]

_INPUT_ADVICE: dict[Framework, str] = {
    "pytorch": ("Give the DataLoader more worker processes (num_workers, with persistent_workers=True), "
                "pinned memory (pin_memory=True) with non_blocking=True host-to-device copies, and a larger "
                "prefetch_factor; move per-sample preprocessing out of the training loop."),
    "tf_data": ("Prefetch (dataset.prefetch(tf.data.AUTOTUNE)), parallelise map and interleave "
                "(num_parallel_calls=tf.data.AUTOTUNE) and cache() what fits in memory."),
    "other": "Prefetch, parallelise or cache the input pipeline so that the next batch is ready before the step ends.",
}


def framework_of(pytorch: bool, uses_tf_data: bool) -> Framework:
    """The input framework of a run: a PyTorch trace's, tf.data where its iterators ran, else none known."""
    return "pytorch" if pytorch else "tf_data" if uses_tf_data else "other"


def input_advice(framework: Framework) -> str:
    return _INPUT_ADVICE[framework]
