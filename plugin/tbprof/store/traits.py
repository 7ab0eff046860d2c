"""What a run can hold: the traits a run kind declares (``readers/kinds.py`` ``KINDS``) and a
tool needs (``analyses/tool.py`` ``Tool.needs``).

A tool is offered for a run when its needs are a subset of the run kind's traits, before any
file is read; whether the run's files do hold that data is the tool's ``available`` test once
they are converted. A trait says what a kind of file *can* carry, so a new input format is a
reader and one kind entry with its traits, and no tool is edited. ``Trait`` is a ``Literal``, so
mypy rejects a misspelt trait on either side.
"""

from __future__ import annotations

from typing import Literal, get_args

Trait = Literal["events", "framework_ops", "memory", "step_markers", "step_files", "devices", "kineto", "xplane",
                "hlo", "tf1", "tfprof"]

# Each trait in words (docs/architecture.md, "Tools and run kinds", lists them from here).
TRAITS: dict[Trait, str] = {
    "events": "timed events on threads and streams: a timeline (every XSpace and Chrome trace)",
    "framework_ops": "the framework's ops as events: TensorFlow and JAX ops, PyTorch operators, TF1 graph nodes",
    "memory": "allocator events (allocations and frees with the bytes in use)",
    "step_markers": "training steps marked in the trace (XProf's step groups, PyTorch's ProfilerStep#N)",
    "step_files": "a file per step: the run's hosts are its steps, compared as a whole (TF1 timelines)",
    "devices": "device activity: GPU kernels and copies on streams, TPU and GPU device planes",
    "kineto": "Kineto's vocabulary: operators with shapes and modules, launch configurations, NCCL's "
              "distributedInfo, and one clock over every rank's trace (baseTimeNanoseconds)",
    "xplane": "XProf's XSpace planes and their stats (host threads, tf.data iterators, request markers, TPU counters)",
    "hlo": "XLA's HLO programs and buffer assignments (the XSpace metadata plane)",
    "tf1": "events of TF1 graph sessions, a file per step (tensorflow.python.client.timeline)",
    "tfprof": "a tfprof ProfileProto: the graph's nodes with their time, memory and FLOPs",
}

ALL_TRAITS: frozenset[Trait] = frozenset(get_args(Trait))
