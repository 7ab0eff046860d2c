"""HTA's trace counters, one tool over the ranks of a run: ``gpu_counters``.

Two step functions per rank, computed as HTA 0.5.0's ``TraceCounters`` computes them
(formulas in docs/formulas.md, "GPU counters (HTA)"):

* **CUDA stream queue length**: the number of operations launched on a stream and not yet
  started. +1 at the start of each launch call (``cudaLaunchKernel[ExC]``, ``cuLaunchKernel``,
  ``cudaMemcpyAsync``, ``cudaMemsetAsync`` and their HIP names) whose device event is in the
  trace, -1 at the start of that device event; the series is the running sum per stream in
  time order, one point per change. The summary is pandas' ``describe()`` of those points.
* **Memory bandwidth**: per memory operation type (``Memcpy HtoD``, ``Memcpy DtoH``, ``Memcpy
  DtoD``, ``Memset``, ... from the name), the sum of the bandwidths of the copies running:
  +bandwidth at a copy's start, -bandwidth at its end (a 0 us copy lasts 1 us, as in HTA). A
  Kineto event's bandwidth is its ``memory bandwidth (GB/s)`` arg; an XSpace copy's is
  ``size`` from its ``memcpy_details`` / ``memset_details`` over its duration (bytes/ns =
  GB/s). The summary describes the points above 0.

Both use the device events HTA keeps (``activity.device_activity``: its last-step filter and
its inward microsecond rounding). At one rounded timestamp HTA orders the points by an unstable
sort, so the values *between* simultaneous changes are arbitrary; tbprof orders them by the
exact times of the trace (a launch before its kernel starts; a copy that ends before another
starts is not counted running beside it), and at an exact tie puts decreases before increases
(ends before starts). Its series has HTA's points and timestamps, and the same values except
inside a group of simultaneous changes (docs/differences.md). The trace viewer shows both as
counter tracks of each device (``timeline/tracks.py``), with the value after all the changes of
a timestamp.

XProf has neither; torch-tb-profiler neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import MEMORY, DeviceActivity, device_activity, has_device_activity, per_device
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import GpuCountersResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.derived import Derived
from tbprof.store.tables import KIND_REF, KIND_STR, ProfileStore

TOOL = "gpu_counters"
_PS_PER_US = 1_000_000
# HTA's runtime launch events (``TraceSymbolTable.get_runtime_launch_events_query``).
QUEUE_LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
                      "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel",
                      "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream")
KINETO_BANDWIDTH_ARG = "memory bandwidth (GB/s)"
XSPACE_COPY_DETAILS = ("memcpy_details", "memset_details")


@dataclass(frozen=True)
class StepSeries:
    """One step function: its points (ps from the store origin, ascending) and values after each."""

    key: str  # the stream ("7") or the memory operation type ("Memcpy HtoD")
    time_ps: np.ndarray  # int64
    value: np.ndarray  # int64 (queue length) or float64 (GB/s)


def memory_kind(name: str) -> str:
    """HTA's memory operation type: the name's first 11 characters for a copy ("Memcpy HtoD")."""
    if name.startswith("Memset"):
        return "Memset"
    if not name.startswith("Memcpy"):
        return "Memcpy Unknown"
    return name[:11]


def _running_sums(key: np.ndarray, time_ps: np.ndarray, exact_ps: np.ndarray, delta: np.ndarray,
                  labels: list[str]) -> list[StepSeries]:
    """Per key: the points sorted by time, ties by the exact time, then decreases first; and
    their running sum."""
    out: list[StepSeries] = []
    for k in np.unique(key).tolist():
        m = key == k
        t, d = time_ps[m], delta[m]
        order = np.lexsort((d > 0, exact_ps[m], t))
        out.append(StepSeries(labels[k], t[order], np.cumsum(d[order])))
    return out


def queue_length_series(store: ProfileStore, act: DeviceActivity) -> list[StepSeries]:
    """Per stream of one device: outstanding launches over time (one point per launch and per start)."""
    if store.format == "xspace":
        launched = act.launch_name_id >= 0  # CUPTI launch events carry the kernel's name
    else:
        ids = np.asarray([i for i in (store.strings.id(n) for n in QUEUE_LAUNCH_CALLS) if i >= 0], np.int32)
        launched = np.isin(act.launch_name_id, ids)
    rows = np.nonzero(launched)[0]
    if rows.shape[0] == 0:
        return []
    streams, inv = np.unique(act.stream[rows], return_inverse=True)
    inv = inv.reshape(-1)
    n = rows.shape[0]
    key = np.concatenate([inv, inv])
    time_ps = np.concatenate([act.launch_start_ps[rows], act.start_ps[rows]])
    exact_ps = np.concatenate([act.launch_exact_start_ps[rows], act.exact_start_ps[rows]])
    delta = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
    return _running_sums(key, time_ps, exact_ps, delta, [str(s) for s in streams.tolist()])


def _size_from_details(text: str) -> float:
    """``size:N`` of a CUPTI memcpy/memset details string (plain splitting: no regex on profile text)."""
    for part in text.split():
        if part.startswith("size:"):
            try:
                return float(part[5:])
            except ValueError:
                return float("nan")
    return float("nan")


def bandwidth_gbps(store: ProfileStore, act: DeviceActivity, rows: np.ndarray) -> np.ndarray:
    """GB/s of the device events ``rows`` of one device (0 where the profile does not say, as HTA)."""
    out = np.zeros(rows.shape[0])
    if rows.shape[0] == 0:
        return out
    plane = store.planes[int(act.plane[rows[0]])]
    event_rows = act.row[rows]
    if store.format != "xspace":
        sid = store.stat_id(KINETO_BANDWIDTH_ARG)
        if sid >= 0:
            out[:] = plane.stat_column(sid).dense_float(plane.n_events)[event_rows]
        return np.nan_to_num(out, nan=0.0)
    size = np.full(rows.shape[0], np.nan)
    for stat in XSPACE_COPY_DETAILS:
        sid = store.stat_id(stat)
        if sid < 0:
            continue
        col = plane.event_stat(sid)
        is_text = (col.kind == KIND_STR) | (col.kind == KIND_REF)
        text_rows, text_ids = col.rows[is_text], col.value[is_text].astype(np.int32)
        pos = np.searchsorted(text_rows, event_rows)
        found = (pos < text_rows.shape[0]) & (text_rows[np.minimum(pos, max(text_rows.shape[0] - 1, 0))]
                                              == event_rows) if text_rows.shape[0] else np.zeros(rows.shape[0], bool)
        if found.any():
            # Parse each distinct details string once (a profile repeats a few hundred of them).
            uniq, inv = np.unique(text_ids[pos[found]], return_inverse=True)
            sizes = np.array([_size_from_details(t) for t in store.strings.lookup(uniq)], np.float64)
            size[found] = sizes[inv.reshape(-1)]
    dur_ns = (act.end_ps[rows] - act.start_ps[rows]) / 1000.0
    with np.errstate(divide="ignore", invalid="ignore"):
        gbps = np.where(dur_ns > 0, size / dur_ns, np.nan)  # bytes per ns = GB/s
    return np.nan_to_num(gbps, nan=0.0, posinf=0.0, neginf=0.0)


def memory_bw_series(store: ProfileStore, act: DeviceActivity) -> list[StepSeries]:
    """Per memory operation type of one device: GB/s of the copies running, over time."""
    rows = np.nonzero(act.kind == MEMORY)[0]
    if rows.shape[0] == 0:
        return []
    uniq, inv = np.unique(act.name_id[rows], return_inverse=True)  # kinds per distinct name
    kinds_of_names = [memory_kind(n) for n in store.strings.lookup(uniq)]
    labels = sorted(set(kinds_of_names))
    index = {label: i for i, label in enumerate(labels)}
    kind = np.asarray([index[k] for k in kinds_of_names], np.int64)[inv.reshape(-1)]
    gbps = bandwidth_gbps(store, act, rows)
    start = act.start_ps[rows]
    dur = act.end_ps[rows] - start
    # HTA: "0 us duration events round up to 1 us" (a copy rounded inward to nothing still ran).
    dur = np.where(dur == 0, _PS_PER_US if store.format != "xspace" else 1, dur)
    exact = np.concatenate([act.exact_start_ps[rows], act.exact_end_ps[rows]])
    return _running_sums(np.concatenate([kind, kind]), np.concatenate([start, start + dur]), exact,
                         np.concatenate([gbps, -gbps]), labels)


def _compute_device_counters(store: ProfileStore) -> list[tuple[int, str, list[StepSeries], list[StepSeries]]]:
    act = device_activity(store)
    out = []
    for device, a in per_device(store, act) if act.n else []:
        out.append((int(a.plane[0]), device, queue_length_series(store, a), memory_bw_series(store, a)))
    return out



DEVICE_COUNTERS: Derived[list[tuple[int, str, list[StepSeries], list[StepSeries]]]] = Derived(
    ("gpu_counters",), _compute_device_counters)


def device_counters(store: ProfileStore) -> list[tuple[int, str, list[StepSeries], list[StepSeries]]]:
    """(device plane index, plane name, queue series, bandwidth series) per device of one host (memoised)."""
    return store.derive(DEVICE_COUNTERS)


def last_per_time(time_ps: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The value after all the changes at each distinct time (what a counter track draws)."""
    if time_ps.shape[0] == 0:
        return time_ps, value
    last = np.ones(time_ps.shape[0], bool)
    last[:-1] = time_ps[1:] != time_ps[:-1]
    return time_ps[last], value[last]


def describe(values: np.ndarray) -> tuple[int, float, float, float, float, float, float, float]:
    """pandas' ``describe()``: count, mean, sample std, min, 25/50/75 % (linear), max."""
    v = values.astype(np.float64)
    n = int(v.shape[0])
    if n == 0:
        nan = float("nan")
        return 0, nan, nan, nan, nan, nan, nan, nan
    q = np.percentile(v, [25, 50, 75])
    std = float(np.std(v, ddof=1)) if n > 1 else float("nan")
    return n, float(v.mean()), std, float(v.min()), float(q[0]), float(q[1]), float(q[2]), float(v.max())


_STATS = [Column("count", "Points", "int", "", "changes of the value (HTA's describe count)"),
          Column("mean", "Mean", "float"), Column("std", "Std. dev.", "float"), Column("min", "Min", "float"),
          Column("p25", "25th pct.", "float"), Column("p50", "Median", "float"), Column("p75", "75th pct.", "float"),
          Column("max", "Max", "float")]
QUEUE_SUMMARY_COLUMNS = [Column("rank", "Rank", "int"), Column("host", "Host", "str"),
                         Column("device", "Device", "str"), Column("stream", "Stream", "int"), *_STATS]
QUEUE_SERIES_COLUMNS = [Column("rank", "Rank", "int"), Column("device", "Device", "str"),
                        Column("stream", "Stream", "int"),
                        Column("time_us", "Time", "float", "us", "from the start of the host's profile"),
                        Column("queue_length", "Queue length", "int", "", "launched, not yet started")]
# The tables show bandwidths in GiB/s, the dashboard's one bandwidth unit (XProf's); the series
# stay in HTA's GB/s inside (its parity), converted on the way out.
GIB_PER_GB = 1e9 / 2**30
BW_SUMMARY_COLUMNS = [Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
                      Column("memory_kind", "Operation", "str", "", "Memcpy HtoD / DtoH / DtoD, Memset, ..."),
                      *[Column(c.name + ("_gibps" if c.kind == "float" else ""), c.label, c.kind,
                               "GiB/s" if c.kind == "float" else "", c.description) for c in _STATS]]
BW_SERIES_COLUMNS = [Column("rank", "Rank", "int"), Column("device", "Device", "str"),
                     Column("memory_kind", "Operation", "str"),
                     Column("time_us", "Time", "float", "us", "from the start of the host's profile"),
                     Column("memory_bw_gibps", "Bandwidth", "float", "GiB/s", "of the copies running")]


def _table(columns: list[Column], rows: list[tuple[Any, ...]], sort: str | None = None, desc: bool = True) -> Table:
    return Table.from_columns(columns, {c.name: [r[i] for r in rows] for i, c in enumerate(columns)},
                              default_sort=sort, default_desc=desc)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> GpuCountersResult:
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    q_summary: list[tuple[Any, ...]] = []
    bw_summary: list[tuple[Any, ...]] = []
    q_series: list[tuple[Any, ...]] = []
    bw_series: list[tuple[Any, ...]] = []
    max_queue = 0
    peak_gibps = 0.0
    for rank, store in ranked:
        for _, device, queues, bandwidths in device_counters(store):
            for s in queues:
                q_summary.append((rank, store.host, device, int(s.key), *describe(s.value)))
                t_us = (s.time_ps / _PS_PER_US).tolist()
                q_series.extend((rank, device, int(s.key), t, v) for t, v in zip(t_us, s.value.tolist(), strict=True))
                max_queue = max(max_queue, int(s.value.max()))
            for s in bandwidths:
                gibps = s.value * GIB_PER_GB
                positive = gibps[s.value > 0]
                bw_summary.append((rank, store.host, device, s.key, *describe(positive)))
                t_us = (s.time_ps / _PS_PER_US).tolist()
                bw_series.extend((rank, device, s.key, t, v) for t, v in zip(t_us, gibps.tolist(), strict=True))
                if positive.shape[0]:
                    peak_gibps = max(peak_gibps, float(positive.max()))
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked],
        "max_queue_length": max_queue if q_summary else None,
        "peak_memory_bw_gibps": peak_gibps if bw_summary else None,
        "tables": {
            "queue_length_summary": _table(QUEUE_SUMMARY_COLUMNS, q_summary),
            "memory_bw_summary": _table(BW_SUMMARY_COLUMNS, bw_summary),
            "queue_length_series": _table(QUEUE_SERIES_COLUMNS, q_series, sort="time_us", desc=False),
            "memory_bw_series": _table(BW_SERIES_COLUMNS, bw_series, sort="time_us", desc=False),
        },
    }


TOOLS = (
    Tool(
        name=TOOL, title="GPU queue length & memory bandwidth (HTA)", compute=compute, available=has_device_activity,
        multi_host=True,
        description="HTA's CUDA stream queue length and memcpy/memset bandwidth, summaries and series per rank.",
        result=GpuCountersResult, needs=frozenset({"devices"}),
        requires="GPU kernels and memory copies with their launch (runtime) events, to count the queue per stream and"
                 " the bytes per second.",
        how_to=(rec.TORCH_TRACE,),
    ),
)
