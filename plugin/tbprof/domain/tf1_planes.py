"""Which planes of a TF1 timeline hold ops, on which device and side (no I/O; shared by the
TF1 tools, the step analysis and the op metrics).

A TF1 timeline (``tensorflow.python.client.timeline``) has, per device, a ``<device> Compute``
process whose ``X`` events are the ops that ran (``args.name`` the node, ``args.op`` the op
type); tfprof's own timelines name them ``Op scheduling threads: <device>``. Host vs device:
ops of CPU devices are host ops; ops on GPU/TPU stream or memcpy devices are device ops.

One GPU is one device, however many processes its work is spread over. TF's GPU tracer
(``device_tracer``) saves each kernel to ``<gpu>/stream:all`` and to ``<gpu>/stream:<n>``, and
each copy to ``<gpu>/memcpy`` and to ``<gpu>/stream:<n>``: with ``stream:all`` the per-stream
processes repeat it and ``memcpy``, and are skipped; without it the per-stream processes hold
every kernel and copy, and ``memcpy`` repeats theirs. A GPU's scheduling process
(``/job:…/device:GPU:0``, no stream) holds the executor's host-side launch of each op: host time
once the GPU has a stream or memcpy process, the only record of the op otherwise. Processes are
matched to their GPU by device type and index (the tracer's stream devices may lack the
scheduling device's ``/job:…/task:…`` prefix).
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
_PER_STREAM = re.compile(r"/stream:\d+", re.I)
_DEVICE_WORK = re.compile(r"/(stream:[^/]*|memcpy)$", re.I)
_DEVICE_ID = re.compile(r"device:([a-z_]+):(\d+)", re.I)
_ACCELERATOR_TYPES = frozenset({"GPU", "TPU", "SYCL"})


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
    device: str  # the device the ops ran on: a GPU's base name, not its stream process's
    side: str  # "Host" | "Device"
    rows: np.ndarray  # op event rows (counter lines excluded)


def _device_key(device: str) -> tuple[str, int] | None:
    """(type, index) of a TF device name (``/job:w/replica:0/task:0/device:GPU:0/stream:7`` ->
    ("GPU", 0)); None for a name without a device id."""
    m = _DEVICE_ID.search(device)
    return (m.group(1).upper(), int(m.group(2))) if m else None


def op_planes(store: ProfileStore) -> list[OpPlane]:
    named = [(p, d) for p, d in ((p, op_device(p.name)) for p in store.planes) if d is not None]
    keys = [_device_key(d) for _, d in named]
    all_stream: set[tuple[str, int]] = set()
    per_stream: set[tuple[str, int]] = set()
    device_work: set[tuple[str, int]] = set()
    base_name: dict[tuple[str, int], str] = {}  # the longest base name seen (with its /job prefix)
    for (_, device), key in zip(named, keys, strict=True):
        if key is None:
            continue
        low = device.lower()
        work = _DEVICE_WORK.search(device)
        if work:
            device_work.add(key)
        if low.endswith("/stream:all"):
            all_stream.add(key)
        elif _PER_STREAM.search(low):
            per_stream.add(key)
        base = device[: work.start()] if work else device
        if len(base) > len(base_name.get(key, "")):
            base_name[key] = base
    out = []
    for (plane, device), key in zip(named, keys, strict=True):
        low = device.lower()
        is_work = _DEVICE_WORK.search(device) is not None
        if key is not None and is_work:
            if _PER_STREAM.search(low) and key in all_stream:
                continue  # repeats stream:all (kernels) and memcpy (copies)
            if low.endswith("/memcpy") and key not in all_stream and key in per_stream:
                continue  # repeats the copies of the per-stream processes
            side = "Device"
        elif "stream" in low or "memcpy" in low:
            side = "Device"
        elif key is not None and key[0] in _ACCELERATOR_TYPES and key not in device_work:
            side = "Device"  # no tracer output for this accelerator: its ops' only record
        else:
            side = "Host"
        name = base_name.get(key, device) if key is not None and side == "Device" else device
        counters = set(plane.plane_stats.get(COUNTER_LINES_STAT, ()))
        keep = ~np.isin(plane.line_idx, np.asarray(sorted(counters), dtype=np.int32))
        out.append(OpPlane(plane, name, side, np.nonzero(keep)[0]))
    return out
