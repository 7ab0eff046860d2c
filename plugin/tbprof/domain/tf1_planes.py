"""Which planes of a TF1 timeline hold ops, on which device and side (no I/O; shared by the
TF1 tools, the step analysis and the op metrics).

A TF1 timeline (``tensorflow.python.client.timeline``) has, per device, a ``<device> Compute``
process whose ``X`` events are the ops that ran (``args.name`` the node, ``args.op`` the op
type); tfprof's own timelines name them ``Op scheduling threads: <device>``. Host vs device:
ops of CPU devices are host ops; ops on GPU/TPU stream or memcpy devices are device ops. When a
``stream:all`` process exists, the per-stream processes repeat its ops and are skipped; a GPU's
scheduling process (no stream) then holds the ops' host-side launch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.store.markers import COUNTER_LINES_STAT
from tbprof.store.tables import Plane, ProfileStore

_COMPUTE_SUFFIX = " Compute"
_TFPROF_PREFIXES = ("Op scheduling threads: ", "Op execution threads: ")
ALLOCATORS_PLANE = "Allocators"
_PER_STREAM = re.compile(r"stream:\d+", re.I)
_ACCELERATOR = re.compile(r"(gpu|tpu)", re.I)


def op_device(plane_name: str) -> str | None:
    """The device of an op process (``/job:.../device:CPU:0 Compute`` -> ``/job:.../device:CPU:0``)."""
    if plane_name.endswith(_COMPUTE_SUFFIX):
        return plane_name[: -len(_COMPUTE_SUFFIX)]
    for prefix in _TFPROF_PREFIXES:
        if plane_name.startswith(prefix):
            return plane_name[len(prefix):]
    return None


def is_tf1_timeline(store: Any) -> bool:
    planes = getattr(store, "planes", None)
    if getattr(store, "format", "") != "chrome_trace" or not planes:
        return False
    return any(op_device(p.name) is not None or p.name == ALLOCATORS_PLANE for p in planes)


@dataclass
class OpPlane:
    plane: Plane
    device: str
    side: str  # "Host" | "Device"
    rows: np.ndarray  # op event rows (counter lines excluded)


def op_planes(store: ProfileStore) -> list[OpPlane]:
    devices = [(p, op_device(p.name)) for p in store.planes]
    named = [(p, d) for p, d in devices if d is not None]
    has_all_stream = {d.lower().split("/stream", 1)[0] for _, d in named if "stream:all" in d.lower()}
    out = []
    for plane, device in named:
        low = device.lower()
        if _PER_STREAM.search(low) and low.split("/stream", 1)[0] in has_all_stream:
            continue  # repeats the stream:all process
        if "stream" in low or "memcpy" in low:
            side = "Device"
        elif _ACCELERATOR.search(low) and low not in has_all_stream:
            side = "Device"
        else:
            side = "Host"
        counters = set(plane.plane_stats.get(COUNTER_LINES_STAT, ()))
        keep = ~np.isin(plane.line_idx, np.asarray(sorted(counters), dtype=np.int32))
        out.append(OpPlane(plane, device, side, np.nonzero(keep)[0]))
    return out
