"""TF1 timeline runs: step times across step files, op statistics over steps, allocator memory.

A TF1 timeline (``tensorflow.python.client.timeline``, as ``ProfilerHook`` writes one per
traced step) is a Chrome trace with, per device, a ``<device> Compute`` process whose
``X`` events are the ops that ran (``args.name`` the node, ``args.op`` the op type), a
``<device> Tensors`` process (tensor lifetimes) and, with ``show_memory=True``, an
``Allocators`` process of ``C`` counters (bytes in use per allocator). tfprof's own
timelines (``Op scheduling threads: <device>``) are read the same way (ops without types).

Host vs device, and one device per GPU however many stream processes hold its work:
``domain/tf1_planes.py`` decides.

These tools take one or several step files (``host=__all__``): each file is a step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.results.tf1_tfprof import (
    EmptyNote,
    Tf1MemoryResult,
    Tf1MemorySeries,
    Tf1OpSide,
    Tf1OpStatsResult,
    Tf1StepsResult,
)
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.event_tree import parent_rows, self_time_ps
from tbprof.domain.tf1_planes import ALLOCATORS_PLANE, is_tf1_timeline, op_planes
from tbprof.store.derived import Derived
from tbprof.store.markers import COUNTER_LINES_STAT, step_of
from tbprof.store.tables import Plane, ProfileStore


@dataclass
class StepOps:
    """The op events of one step file as flat columns."""

    step: int | None  # from the file name
    host: str
    name: list[str]  # node name (args.name, else the event name)
    type: list[str]  # op type (args.op, else "")
    side: np.ndarray  # object: "Host" / "Device"
    device: np.ndarray  # object
    start_us: np.ndarray  # float64, absolute (the file's own clock)
    dur_us: np.ndarray
    self_us: np.ndarray


def _str_column(store: ProfileStore, plane: Plane, stat: str, rows: np.ndarray) -> list[str]:
    sid = store.stat_id(stat)
    if sid < 0:
        return [""] * rows.shape[0]
    ids = plane.dense_str_ids(sid)[rows]
    return store.strings.lookup(ids)


def _compute_step_ops(store: ProfileStore) -> StepOps:
    names: list[str] = []
    types: list[str] = []
    sides, devs, starts, durs, selfs = [], [], [], [], []
    for op in op_planes(store):
        plane, rows = op.plane, op.rows
        event_names = store.strings.lookup(plane.name_id[rows])
        arg_names = _str_column(store, plane, "name", rows)
        arg_ops = _str_column(store, plane, "op", rows)
        names.extend(a or e for a, e in zip(arg_names, event_names, strict=False))
        types.extend(arg_ops)
        parent = parent_rows(plane)
        own = self_time_ps(plane, parent)[rows]
        sides.append(np.full(rows.shape[0], op.side, dtype=object))
        devs.append(np.full(rows.shape[0], op.device, dtype=object))
        # Absolute ps exceed int64 (epoch-based µs * 1e6): go to µs in float64 first.
        starts.append(store.origin_ps / 1e6 + plane.start_ps[rows] / 1e6)
        durs.append(plane.dur_ps[rows] / 1e6)
        selfs.append(own / 1e6)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return StepOps(step_of(store.host), store.host, names, types, cat(sides, object),
                   cat(devs, object), cat(starts, np.float64), cat(durs, np.float64), cat(selfs, np.float64))


STEP_OPS: Derived[StepOps] = Derived(("tf1_step_ops",), _compute_step_ops)


def step_ops(store: ProfileStore) -> StepOps:
    return store.derive(STEP_OPS)


def _ordered(stores: Sequence[ProfileStore]) -> list[tuple[int, StepOps, ProfileStore]]:
    """(step, ops, store) by step; a file without a number in its name counts by position."""
    items = [(step_ops(s), s) for s in stores]
    items.sort(key=lambda it: (it[0].step is None, it[0].step or 0, it[0].host))
    return [(ops.step if ops.step is not None else i, ops, s) for i, (ops, s) in enumerate(items)]


def _empty_note(steps: Sequence[StepOps]) -> EmptyNote:
    """Step files without a single op (an empty timeline) are named, not silently averaged in."""
    empty = [s.host for s in steps if s.start_us.shape[0] == 0]
    if not empty:
        return {}
    return {"empty_files": empty,
            "message": f"{', '.join(empty)}: no op events (an empty timeline); "
                       "their step time shows as 0 and they are left out of the averages"}


# --- tf1_steps ---------------------------------------------------------------------------------

STEP_COLUMNS = [
    Column("step", "Step", "int"),
    Column("file", "Step file", "str"),
    Column("step_time_ms", "Step time", "float", "ms", "first op start to last op end, all devices"),
    Column("host_op_time_ms", "Host op time", "float", "ms", "sum of host op durations"),
    Column("device_op_time_ms", "Device op time", "float", "ms", "sum of device op durations"),
    Column("op_count", "Ops", "int", "", "op executions in the step"),
    Column("start_offset_ms", "Start", "float", "ms", "start of the step after the first traced step's start"),
]


def steps_compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> Tf1StepsResult:
    ordered = _ordered(stores)
    steps = [ops for _, ops, _ in ordered]
    first = min((float(s.start_us.min()) for s in steps if s.start_us.shape[0]), default=0.0)
    values: dict[str, list[Any]] = {c.name: [] for c in STEP_COLUMNS}
    for step, s, _ in ordered:
        has = s.start_us.shape[0] > 0
        host = s.side == "Host"
        values["step"].append(step)
        values["file"].append(s.host)
        values["step_time_ms"].append(float((s.start_us + s.dur_us).max() - s.start_us.min()) / 1e3 if has else 0.0)
        values["host_op_time_ms"].append(float(s.dur_us[host].sum()) / 1e3)
        values["device_op_time_ms"].append(float(s.dur_us[~host].sum()) / 1e3)
        values["op_count"].append(int(s.start_us.shape[0]))
        values["start_offset_ms"].append(float(s.start_us.min() - first) / 1e3 if has else 0.0)
    table = Table.from_columns(STEP_COLUMNS, values, default_sort=None)
    timed = [i for i, s in enumerate(steps) if s.start_us.shape[0] > 0]
    times = np.asarray(values["step_time_ms"], dtype=np.float64)[timed]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "tf1_steps",
        **_empty_note(steps),
        "step_count": len(steps),
        "chart": {"step": values["step"], "step_time_ms": values["step_time_ms"]},
        "average_step_time_ms": float(times.mean()) if times.shape[0] else 0.0,
        "min_step_time_ms": float(times.min()) if times.shape[0] else 0.0,
        "max_step_time_ms": float(times.max()) if times.shape[0] else 0.0,
        "tables": {"steps": table},
    }


# --- tf1_op_stats ------------------------------------------------------------------------------

OP_COLUMNS = [
    Column("rank", "Rank", "int", "", "position within its side by total self time"),
    Column("host_or_device", "Host/device", "str"),
    Column("device", "Device", "str"),
    Column("type", "Op type", "str"),
    Column("operation", "Operation", "str"),
    Column("occurrences", "Occurrences", "int", "", "executions over the chosen steps"),
    Column("steps", "Steps", "int", "", "step files in which the op ran"),
    Column("total_time_us", "Total time", "float", "us"),
    Column("avg_time_us", "Avg. time", "float", "us"),
    Column("total_self_time_us", "Total self-time", "float", "us", "time minus ops nested inside"),
    Column("avg_self_time_us", "Avg. self-time", "float", "us"),
    Column("self_time_fraction", "Self-time share", "float", "fraction", "of its side's total self time"),
    Column("cumulative_self_time_fraction", "Cumulative self-time share", "float", "fraction"),
]


def op_stats_compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> Tf1OpStatsResult:
    ordered = _ordered(stores)
    steps = [ops for _, ops, _ in ordered]
    names = np.asarray([n for s in steps for n in s.name], dtype=object)
    types = np.asarray([t for s in steps for t in s.type], dtype=object)
    side = np.concatenate([s.side for s in steps]) if steps else np.zeros(0, dtype=object)
    device = np.concatenate([s.device for s in steps]) if steps else np.zeros(0, dtype=object)
    dur = np.concatenate([s.dur_us for s in steps]) if steps else np.zeros(0)
    own = np.concatenate([s.self_us for s in steps]) if steps else np.zeros(0)
    step_idx = np.concatenate([np.full(len(s.name), i) for i, s in enumerate(steps)]) if steps else np.zeros(0, int)
    values: dict[str, list[Any]] = {c.name: [] for c in OP_COLUMNS}
    sides: dict[str, Tf1OpSide] = {}
    for side_name in ("Device", "Host"):
        sel = np.nonzero(side == side_name)[0]
        if sel.shape[0] == 0:
            continue
        # One key per (device, type, name); \x1f (not \0, which numpy strips at the end).
        keys = np.asarray([f"{d}\x1f{t}\x1f{n}"
                           for d, t, n in zip(device[sel], types[sel], names[sel], strict=False)])
        uniq, inv = np.unique(keys, return_inverse=True)
        inv = inv.reshape(-1)
        k = uniq.shape[0]
        occ = np.bincount(inv, minlength=k)
        total = np.bincount(inv, weights=dur[sel], minlength=k)
        total_self = np.bincount(inv, weights=own[sel], minlength=k)
        present = np.zeros((k, max(len(steps), 1)), dtype=bool)
        present[inv, step_idx[sel]] = True
        side_self = float(total_self.sum())
        parts = [u.split("\x1f") for u in uniq.tolist()]
        order = sorted(range(k), key=lambda i: (-total_self[i], parts[i][2]))
        frac = total_self / side_self if side_self > 0 else np.zeros(k)
        cum = np.cumsum(frac[order])
        for rank, i in enumerate(order):
            d, t, n = parts[i]
            values["rank"].append(rank + 1)
            values["host_or_device"].append(side_name)
            values["device"].append(d)
            values["type"].append(t)
            values["operation"].append(n)
            values["occurrences"].append(int(occ[i]))
            values["steps"].append(int(present[i].sum()))
            values["total_time_us"].append(float(total[i]))
            values["avg_time_us"].append(float(total[i] / occ[i]))
            values["total_self_time_us"].append(float(total_self[i]))
            values["avg_self_time_us"].append(float(total_self[i] / occ[i]))
            values["self_time_fraction"].append(float(frac[i]))
            values["cumulative_self_time_fraction"].append(float(cum[rank]))
        by_type: dict[str, float] = {}
        for i in range(k):
            by_type[parts[i][1]] = by_type.get(parts[i][1], 0.0) + float(total_self[i])
        sides[side_name.lower()] = {
            "op_count": k, "total_self_time_us": side_self,
            "self_time_by_type": [{"type": t, "self_time_us": v}
                                  for t, v in sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))],
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "tf1_op_stats",
        **_empty_note(steps),
        "step_count": len(steps),
        "steps": [step for step, _, _ in ordered],
        "sides": sides,
        "tables": {"ops": Table.from_columns(OP_COLUMNS, values, default_sort=None)},
    }


# --- tf1_memory --------------------------------------------------------------------------------

MEMORY_COLUMNS = [
    Column("step", "Step", "int"),
    Column("allocator", "Allocator", "str"),
    Column("peak_bytes", "Peak in use", "int", "bytes"),
    Column("peak_time_ms", "Peak at", "float", "ms", "after the step's first op"),
    Column("final_bytes", "In use at end", "int", "bytes"),
    Column("samples", "Samples", "int"),
]


def allocator_series(store: ProfileStore) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(allocator, absolute time µs, bytes in use) per counter of the Allocators process."""
    plane = store.plane(ALLOCATORS_PLANE)
    if plane is None:
        return []
    out = []
    for line in sorted(plane.plane_stats.get(COUNTER_LINES_STAT, ())):
        span = plane.line_rows(int(line))
        rows = np.arange(span.start, span.stop)
        if rows.shape[0] == 0:
            continue
        name = plane.line_names[line]
        sid = store.stat_id(name)
        if sid < 0:
            continue
        values = plane.event_stat(sid).dense_float(plane.n_events)[rows]
        keep = np.isfinite(values)
        t_us = store.origin_ps / 1e6 + plane.start_ps[rows[keep]] / 1e6
        out.append((name, t_us, values[keep].astype(np.int64)))
    return out


def memory_compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> Tf1MemoryResult:
    series: list[Tf1MemorySeries] = []
    values: dict[str, list[Any]] = {c.name: [] for c in MEMORY_COLUMNS}
    for step, ops, store in _ordered(stores):
        t0 = float(ops.start_us.min()) if ops.start_us.shape[0] else None
        for allocator, t_us, in_use in allocator_series(store):
            base = t0 if t0 is not None else float(t_us.min())
            t_ms = (t_us - base) / 1e3
            series.append({"step": step, "file": store.host, "allocator": allocator,
                           "time_ms": t_ms.tolist(), "bytes_in_use": in_use.tolist()})
            peak = int(np.argmax(in_use))
            values["step"].append(step)
            values["allocator"].append(allocator)
            values["peak_bytes"].append(int(in_use[peak]))
            values["peak_time_ms"].append(float(t_ms[peak]))
            values["final_bytes"].append(int(in_use[-1]))
            values["samples"].append(int(in_use.shape[0]))
    out: Tf1MemoryResult = {
        "schema_version": SCHEMA_VERSION,
        "tool": "tf1_memory",
        "series": series,
        "tables": {"allocators": Table.from_columns(MEMORY_COLUMNS, values, default_sort=None)},
    }
    if not series:
        out["message"] = ("No allocator counters: the timeline was written without show_memory=True "
                          "(Timeline.generate_chrome_trace_format(show_memory=True) records them).")
    return out


def _has_allocators(store: Any) -> bool:
    return is_tf1_timeline(store) and store.plane(ALLOCATORS_PLANE) is not None


TOOLS = (
    Tool(
        name="tf1_steps", title="Step time (timelines)", compute=steps_compute, available=is_tf1_timeline,
        multi_host=True,
        description="Step time of each TF1 timeline step file, as a chart across steps.",
        result=Tf1StepsResult, needs=frozenset({"tf1"}),
        requires="TF1 timeline files, one per step (tensorflow.python.client.timeline's Chrome traces).",
        how_to=(rec.TF1_TIMELINE,),
    ),
    Tool(
        name="tf1_op_stats", title="TensorFlow stats (timelines)", compute=op_stats_compute,
        available=is_tf1_timeline, multi_host=True,
        description="Time per TensorFlow op over the chosen TF1 timeline steps, host and device.",
        result=Tf1OpStatsResult, needs=frozenset({"tf1"}),
        requires="TF1 timeline files, one per step (tensorflow.python.client.timeline's Chrome traces).",
        how_to=(rec.TF1_TIMELINE,),
    ),
    Tool(
        name="tf1_memory", title="Allocator memory (timelines)", compute=memory_compute,
        available=_has_allocators, multi_host=True,
        description="Bytes in use per allocator over each step (timelines written with show_memory=True).",
        result=Tf1MemoryResult, needs=frozenset({"tf1"}),
        requires="allocator events in TF1 timelines (written with show_memory=True).",
        how_to=(rec.TF1_TIMELINE,),
    ),
)
