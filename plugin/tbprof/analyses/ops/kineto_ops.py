"""Per-op time of a PyTorch profiler (Kineto) trace, in XProf's OpMetricsDb shape.

PyTorch's framework ops are the ``cpu_op`` events (ATen operators, nested on the host
threads); Kineto gives an operator and the device work it launched (kernels, memcpys,
memsets) the same ``External id``.

* host side: one op per operator name; self time = duration minus the operators and CUDA
  runtime/driver calls nested directly inside it (the launches are not the operator's own
  compute); a thread's idle time is its operator span minus that self time;
* device side: one op per launching operator. A device event's operator is found as HTA and
  PyTorch's own tools find it: its ``correlation`` names the runtime call that launched it
  (``cudaLaunchKernel``, ``hipLaunchKernel``, ...), and the operator is the innermost ``cpu_op``
  enclosing that call on its thread; without a launch in the trace, the ``cpu_op`` with the
  device event's ``External id`` (DDP's kernels carry External ids no operator has, so the
  launch comes first). Device work no operator launched (NCCL kernels of ``nccl:*``
  annotations, ...) is an op of its own name with type ``Unknown``; occurrences = the operator
  instances that launched work; a device's idle time is its span minus the time of its device
  events.

Op types are the operator names (``aten::conv2d``): PyTorch has no op-type/op-name split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.domain.event_columns import factorize
from tbprof.domain.event_tree import parent_rows, self_time_ps
from tbprof.domain.kineto_links import category_mask, launching_op
from tbprof.domain.planes import HOST_PLANE, device_planes
from tbprof.store import kineto_names as kn
from tbprof.store.arrays import sorted_unique
from tbprof.store.tables import Plane, ProfileStore

DEVICE_CATEGORIES = kn.DEVICE_CATEGORIES
_LAUNCH_CATEGORIES = kn.LAUNCH_CATEGORIES


def is_kineto(store: Any) -> bool:
    """A PyTorch profiler trace (the reader marks it, ``readers/kineto.py``)."""
    meta = getattr(store, "metadata", None)
    return getattr(store, "format", "") == "chrome_trace" and isinstance(meta, dict) and \
        meta.get("producer") == "pytorch"


def _db(names: list[str], occurrences: np.ndarray, time_ps: np.ndarray, self_ps: np.ndarray, total_ps: int,
        types: list[str] | None = None) -> dict[str, Any]:
    """The fields of an ``op_metrics.OpMetricsDb`` (which builds it: that module imports this one)."""
    n = len(names)
    return dict(
        name=np.array(names, dtype=object), type=np.array(types if types is not None else names, dtype=object),
        provenance=np.full(n, "", dtype=object), program_id=np.zeros(n, np.int64),
        occurrences=occurrences.astype(np.int64), time_ps=time_ps.astype(np.int64),
        self_time_ps=self_ps.astype(np.int64), flops=np.zeros(n), bytes_accessed=np.zeros(n),
        is_eager=np.ones(n, bool), total_time_ps=int(total_ps),
    )


def host_ops(store: ProfileStore) -> dict[str, Any]:
    plane = store.plane(HOST_PLANE)
    if plane is None or plane.n_events == 0:
        return _db([], np.zeros(0), np.zeros(0), np.zeros(0), 0)
    is_op = category_mask(store, plane, ("cpu_op",))
    child_counts = is_op | category_mask(store, plane, _LAUNCH_CATEGORIES)
    parent = parent_rows(plane)
    own = self_time_ps(plane, parent, include=child_counts)
    rows = np.nonzero(is_op)[0]
    if rows.shape[0] == 0:
        return _db([], np.zeros(0), np.zeros(0), np.zeros(0), 0)
    uniq, inv = np.unique(plane.name_id[rows], return_inverse=True)
    inv = inv.reshape(-1)
    k = uniq.shape[0]
    occ = np.bincount(inv, minlength=k)
    time_ps = np.bincount(inv, weights=plane.dur_ps[rows].astype(np.float64), minlength=k).round()
    self_ps = np.bincount(inv, weights=own[rows].astype(np.float64), minlength=k).round()
    # Idle per thread: the span of its operators minus their self time (XProf's host IDLE).
    total_ps = 0
    for line in sorted_unique(plane.line_idx[rows]).tolist():
        lr = rows[plane.line_idx[rows] == line]
        total_ps += int((plane.start_ps[lr] + plane.dur_ps[lr]).max() - plane.start_ps[lr].min())
    return _db(store.strings.lookup(uniq), occ, time_ps, self_ps, max(total_ps, int(self_ps.sum())))


def device_ops(store: ProfileStore) -> dict[str, Any]:
    labels: list[np.ndarray] = []
    ext_all: list[np.ndarray] = []
    dur_all: list[np.ndarray] = []
    total_ps = 0
    for plane in device_planes(store):
        rows = np.nonzero(category_mask(store, plane, DEVICE_CATEGORIES))[0]
        if rows.shape[0] == 0:
            continue
        total_ps += int((plane.start_ps[rows] + plane.dur_ps[rows]).max() - plane.start_ps[rows].min())
        op_id, instance = launching_op(store, plane, rows)
        labels.append(np.where(op_id >= 0, op_id, plane.name_id[rows].astype(np.int64)))
        ext_all.append(np.where(op_id >= 0, instance, -1 - np.arange(rows.shape[0])))
        dur_all.append(plane.dur_ps[rows].astype(np.float64))
    if not labels:
        return _db([], np.zeros(0), np.zeros(0), np.zeros(0), total_ps)
    has_op = np.concatenate([e >= 0 for e in ext_all])
    ext = np.concatenate(ext_all)
    dur = np.concatenate(dur_all)
    # Names in text order, sorted once per distinct string id, not once per device event.
    ids, id_inv = np.unique(np.concatenate(labels), return_inverse=True)
    texts = store.strings.lookup(ids)
    uniq_texts = sorted(set(texts))
    at = {t: i for i, t in enumerate(uniq_texts)}
    uniq = np.array(uniq_texts, dtype=object)
    inv = np.array([at[t] for t in texts], dtype=np.int64)[id_inv.reshape(-1)]
    k = uniq.shape[0]
    time_ps = np.bincount(inv, weights=dur, minlength=k).round()
    # Occurrences: operator instances (distinct External ids) that launched work; own launches count
    # one each. Distinct (name, instance) pairs as one int64 key: both are dense ranks below 2^31.
    ext_values, ext_rank = np.unique(ext, return_inverse=True)
    pairs = sorted_unique(inv * ext_values.shape[0] + ext_rank.reshape(-1))
    occ = np.bincount(pairs // ext_values.shape[0], minlength=k)
    launched = np.zeros(k, bool)
    launched[inv[has_op]] = True
    types = [str(u) if launched[i] else "Unknown" for i, u in enumerate(uniq.tolist())]
    return _db([str(u) for u in uniq.tolist()], occ, time_ps, time_ps, max(total_ps, int(time_ps.sum())), types)


def _dims(text: str) -> tuple[int, int, int]:
    """``[8192, 2, 1]`` (a JSON list the reader kept as text) -> (8192, 2, 1); (1, 1, 1) otherwise."""
    parts = text.strip().strip("[]").split(",")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        return (1, 1, 1)
    return (dims[0], dims[1], dims[2]) if len(dims) == 3 else (1, 1, 1)


LaunchTuple = tuple[int, int, int, tuple[int, int, int], tuple[int, int, int], float]


@dataclass(frozen=True)
class KernelLaunches:
    """One device plane's kernels: ``code`` maps each kernel to its distinct (kernel name, launch
    configuration, launching operator); ``params``/``op_names``/``name_ids`` describe each code."""

    plane: Plane
    rows: np.ndarray
    code: np.ndarray
    name_ids: np.ndarray  # per code
    params: list[LaunchTuple]  # per code: registers, static shmem, dynamic shmem (0), grid, block, occupancy %
    op_names: list[str]  # per code


def kernel_launches(store: ProfileStore) -> list[KernelLaunches]:
    """Per device plane: its kernels (rows), each kernel's launch configuration (registers per
    thread, static shared memory (Kineto's ``shared memory``), dynamic shared memory (0: Kineto
    does not split it), grid, block, estimated achieved occupancy %) and the operator that
    launched it, decided once per distinct combination."""
    out: list[KernelLaunches] = []
    for plane in device_planes(store):
        rows = np.nonzero(category_mask(store, plane, ("kernel",)) & (plane.dur_ps // 1000 > 0))[0]
        if rows.shape[0] == 0:
            continue

        def stat(name: str, kind: str, plane: Plane = plane) -> np.ndarray:
            sid = store.stat_id(name)
            n = plane.n_events
            if sid < 0:
                return np.full(n, -1 if kind != "float" else 0.0)
            col = plane.event_stat(sid)
            if kind == "str":
                return col.dense_str(n).astype(np.int64)
            if kind == "float":
                return np.nan_to_num(col.dense_float(n))
            return col.dense_int(n)

        regs = np.maximum(stat("registers per thread", "int")[rows], 0)
        shmem = np.maximum(stat("shared memory", "int")[rows], 0)
        grid, block = stat("grid", "str")[rows], stat("block", "str")[rows]
        occ = stat("est. achieved occupancy %", "float")[rows].astype(np.float64)
        op_id = launching_op(store, plane, rows)[0]
        name_id = plane.name_id[rows].astype(np.int64)
        code, first = factorize(name_id, regs, shmem, grid, block, occ.view(np.int64), op_id)
        params: list[LaunchTuple] = [
            (int(r), int(m), 0, _dims(store.strings[g]) if g >= 0 else (1, 1, 1),
             _dims(store.strings[b]) if b >= 0 else (1, 1, 1), float(o))
            for r, m, g, b, o in zip(regs[first].tolist(), shmem[first].tolist(), grid[first].tolist(),
                                     block[first].tolist(), occ[first].tolist(), strict=True)]
        op_names = [store.strings[i] if i >= 0 else "" for i in op_id[first].tolist()]
        out.append(KernelLaunches(plane, rows, code, name_id[first], params, op_names))
    return out
