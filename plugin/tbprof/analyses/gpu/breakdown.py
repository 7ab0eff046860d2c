"""HTA's GPU analyses, one tool over the ranks (hosts) of a run: ``gpu_breakdown``.

Sections, each named and computed as HTA 0.5.0's ``TraceAnalysis`` method of that name
(formulas in docs/formulas.md, "GPU breakdowns (HTA)"):

* ``temporal_breakdown``: per rank, the device timeline from the first device event's start
  to the last one's end, split into idle (no device event running), compute (a computation
  kernel running) and non-compute (only communication / memory / other events running);
* ``idle_time_breakdown``: per rank and stream, each gap before a device event is *host wait*
  (its launch started after the previous event on the stream ended: the CPU was late),
  *kernel wait* (otherwise, a gap shorter than ``consecutive_kernel_delay_us``: launch
  overhead) or *other*;
* ``comm_comp_overlap``: per rank, the share of communication time during which computation
  also runs;
* ``kernel_launch_stats``: per launch (``cudaLaunchKernel[ExC]``, ``cudaMemcpyAsync``,
  ``cudaMemsetAsync``) its CPU duration, its device event's duration and the launch delay
  (device start - launch end, at least 0), with outlier counts;
* ``kernel_type_breakdown``: device time by kernel type (computation / communication /
  memory and their overlaps), over all ranks, and the top kernels of each type per rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import (
    COMMUNICATION,
    COMPUTATION,
    KIND_NAMES,
    MEMORY,
    DeviceActivity,
    coverage_by_mask,
    has_device_activity,
)
from tbprof.analyses.gpu.shares import PS_PER_US, communication_percent, devices_with_activity, temporal
from tbprof.analyses.metrics import metric_json
from tbprof.analyses.results.gpu import GpuBreakdownResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_float, parse_nonneg_int
from tbprof.store.arrays import sorted_unique
from tbprof.store.kineto_names import LAUNCH_CALLS
from tbprof.store.tables import ProfileStore

TOOL = "gpu_breakdown"
IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")
# HTA's kernel-type breakdown looks at these types, in this order (it names overlaps in it).
BREAKDOWN_KINDS = (COMPUTATION, COMMUNICATION, MEMORY)


def rank_of(store: ProfileStore, index: int) -> int:
    """The trace's ``distributedInfo.rank``; else the host's position in the run."""
    info = store.metadata.get("distributedInfo") if isinstance(store.metadata, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else index


# --- idle time breakdown ----------------------------------------------------------------------

def idle_intervals(act: DeviceActivity, consecutive_kernel_delay_ps: int) -> list[dict[str, Any]]:
    """Per stream: the gap before each device event and its category (HTA's rules).

    Only kernels, memcpys, memsets and MTIA work count, as HTA 0.5.0 keeps them: a ``cuda_sync``
    wait spans the time it waits for, so as a "kernel" it would overlap the next kernel (a
    negative kernel wait) and put a device-wide sync's stream (-1 as unsigned, 4294967295) in a
    row of its own. Gaps are taken to the previous event on the stream in start order; a
    stream's first event has no gap. Two events that overlap on a stream leave no idle time:
    their gap is 0 where HTA counts it negative.
    """
    out: list[dict[str, Any]] = []
    work = act.is_work
    for stream in sorted_unique(act.stream[work]).tolist():
        rows = np.nonzero(work & (act.stream == stream))[0]  # already in start order
        start = act.start_ps[rows]
        end = act.end_ps[rows]
        prev_end = end[:-1]
        gap = np.maximum(start[1:] - prev_end, 0)
        launch = act.launch_start_ps[rows][1:]
        host_wait = (launch >= 0) & (launch > prev_end)
        kernel_wait = ~host_wait & (gap < consecutive_kernel_delay_ps)
        category = np.where(host_wait, 0, np.where(kernel_wait, 1, 2))
        out.append({"stream": int(stream), "gap_ps": gap, "category": category})
    return out


# --- compute / communication overlap ------------------------------------------------------------

def comm_comp_overlap(act: DeviceActivity) -> tuple[float, float]:
    """(communication time us, share of it overlapped by computation %; NaN without communication)."""
    comp = act.kind == COMPUTATION
    comm = act.kind == COMMUNICATION
    cover = coverage_by_mask([(act.start_ps[comm], act.end_ps[comm]), (act.start_ps[comp], act.end_ps[comp])])
    comm_ps = sum(v for m, v in cover.items() if m & 1)
    both_ps = cover.get(3, 0)
    return comm_ps / PS_PER_US, (100.0 * both_ps / comm_ps) if comm_ps else float("nan")


# --- kernel launch statistics -------------------------------------------------------------------

def launches(store: ProfileStore, act: DeviceActivity) -> np.ndarray:
    """Rows of ``act`` whose launch is one of HTA's launch calls (XSpace: every launch in the
    profile; its CUPTI launch events carry the kernel's name, not the API call's)."""
    if store.format == "xspace":
        return np.nonzero(act.launch_name_id >= 0)[0]
    ids = [store.strings.id(n) for n in LAUNCH_CALLS]
    ids = [i for i in ids if i >= 0]
    if not ids:
        return np.zeros(0, np.int64)
    return np.nonzero(np.isin(act.launch_name_id, np.asarray(ids, np.int32)))[0]


# --- kernel type breakdown ----------------------------------------------------------------------

def type_coverage(act: DeviceActivity) -> dict[str, int]:
    """Device time (ps) by HTA's kernel type label ("COMPUTATION overlapping COMMUNICATION", ...)."""
    groups = [(act.start_ps[act.kind == k], act.end_ps[act.kind == k]) for k in BREAKDOWN_KINDS]
    out: dict[str, int] = {}
    for mask, ps in coverage_by_mask(groups).items():
        label = " overlapping ".join(KIND_NAMES[k] for bit, k in enumerate(BREAKDOWN_KINDS) if mask & (1 << bit))
        out[label] = out.get(label, 0) + ps
    return out


def top_kernels(names: list[str], dur_us: np.ndarray, num_kernels: int, duration_ratio: float,
                ) -> list[tuple[str, float, float, float, float, float, int]]:
    """HTA's per-type kernel table: (name, sum, max, min, mean, std, count) per kernel name, the
    rest folded into ``others``.

    Kernels are ranked by total time; once there are more than ``num_kernels``, a kernel stays
    named only while it is among the first ``num_kernels`` and the running total up to it is
    at most the ``duration_ratio`` quantile of the running totals; the ``others`` row then
    aggregates the *totals* of the folded kernels (so its max/min/mean are over kernel names,
    as HTA shows them).

    ``dur_us`` are HTA's rounded durations, -1 µs for a sub-microsecond launch rounded to end
    before it starts: they rank and fold the kernels as HTA does, while the values shown count
    such a launch as 0 µs (never a negative time).
    """
    if not names:
        return []
    uniq, inv = np.unique(np.asarray(names, dtype=object), return_inverse=True)
    inv = inv.reshape(-1)
    k = uniq.shape[0]
    hta_total = np.bincount(inv, weights=dur_us, minlength=k)
    shown = np.maximum(dur_us, 0.0)
    total = np.bincount(inv, weights=shown, minlength=k)
    count = np.bincount(inv, minlength=k)
    mx = np.full(k, -np.inf)
    mn = np.full(k, np.inf)
    np.maximum.at(mx, inv, shown)
    np.minimum.at(mn, inv, shown)
    sq = np.bincount(inv, weights=shown * shown, minlength=k)
    mean = total / count
    # Sample standard deviation (pandas' default), 0 for one sample.
    var = np.where(count > 1, (sq - count * mean * mean) / np.maximum(count - 1, 1), 0.0)
    std = np.sqrt(np.maximum(var, 0.0))
    order = sorted(range(k), key=lambda i: (-hta_total[i], str(uniq[i])))
    rows = [(str(uniq[i]), float(total[i]), float(mx[i]), float(mn[i]), float(mean[i]), float(std[i]), int(count[i]))
            for i in order]
    if len(rows) <= num_kernels:
        return rows
    sums = np.array([r[1] for r in rows])
    hta_sums = hta_total[order]
    cum = np.cumsum(hta_sums)
    threshold = float(np.quantile(cum, duration_ratio))
    # HTA never folds a kernel whose total is negative (its "keep" mask is ``sum < 0``); after
    # the inward rounding a few sub-microsecond kernels have one. Kept named as HTA keeps them.
    named = [(i < num_kernels and cum[i] <= threshold) or hta_sums[i] < 0 for i in range(len(rows))]
    kept = [r for i, r in enumerate(rows) if named[i]]
    folded = sums[[i for i in range(len(rows)) if not named[i]]]
    if folded.shape[0]:
        f_std = float(np.std(folded, ddof=1)) if folded.shape[0] > 1 else 0.0
        kept.append(("others", float(folded.sum()), float(folded.max()), float(folded.min()),
                     float(folded.mean()), f_std, int(folded.shape[0])))
    return sorted(kept, key=lambda r: r[0])


# --- the tool -----------------------------------------------------------------------------------

TEMPORAL_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("idle_time_us", "Idle time", "float", "us"),
    Column("compute_time_us", "Compute time", "float", "us"),
    Column("non_compute_time_us", "Non-compute time", "float", "us"),
    Column("kernel_time_us", "Device timeline", "float", "us", "first device event start to last end"),
    Column("idle_time_percent", "Idle", "float", "%"),
    Column("compute_time_percent", "Compute", "float", "%"),
    Column("non_compute_time_percent", "Non-compute", "float", "%"),
]
IDLE_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("stream", "Stream", "int"),
    Column("idle_category", "Idle category", "str", "", "host_wait, kernel_wait or other"),
    Column("idle_time_us", "Idle time", "float", "us"),
    Column("idle_time_ratio", "Share of the stream's idle time", "float", "fraction"),
    Column("count", "Gaps", "int"),
    Column("mean_us", "Mean gap", "float", "us", "negative when events overlap on the stream (HTA counts "
           "the gap to the previous event's end)"),
    Column("min_us", "Min gap", "float", "us", "negative: the event started before the previous one ended"),
    Column("median_us", "Median gap", "float", "us"), Column("max_us", "Max gap", "float", "us"),
]
OVERLAP_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("communication_time_us", "Communication time", "float", "us"),
    Column("comp_comm_overlap_percent", "Overlapped by computation", "float", "%"),
]
LAUNCH_SUMMARY_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("launches", "Launches", "int"),
    Column("mean_cpu_duration_us", "Mean CPU launch duration", "float", "us"),
    Column("max_cpu_duration_us", "Max CPU launch duration", "float", "us"),
    Column("mean_gpu_duration_us", "Mean device duration", "float", "us"),
    Column("mean_launch_delay_us", "Mean launch delay", "float", "us"),
    Column("p95_launch_delay_us", "p95 launch delay", "float", "us"),
    Column("max_launch_delay_us", "Max launch delay", "float", "us"),
    Column("runtime_outliers", "CPU duration outliers", "int", "", "launches longer than runtime_cutoff_us"),
    Column("launch_delay_outliers", "Launch delay outliers", "int", "", "delays longer than launch_delay_cutoff_us"),
    Column("gpu_shorter_than_cpu", "Device shorter than launch", "int", "",
           "launches whose device work took less time than the launch call itself"),
]
LAUNCH_COLUMNS = [
    Column("rank", "Rank", "int"), Column("device", "Device", "str"), Column("correlation", "Correlation", "int"),
    Column("kernel_name", "Kernel", "str"), Column("launch_name", "Launch call", "str"),
    Column("cpu_duration_us", "CPU duration", "float", "us"),
    Column("gpu_duration_us", "Device duration", "float", "us"),
    Column("launch_delay_us", "Launch delay", "float", "us"),
]
TYPE_COLUMNS = [
    Column("kernel_type", "Kernel type", "str"),
    Column("time_us", "Time", "float", "us"),
    Column("percent", "Share", "float", "%", "of the device time of all ranks"),
]
TOP_KERNEL_COLUMNS = [
    Column("kernel_type", "Kernel type", "str"), Column("rank", "Rank", "int"), Column("device", "Device", "str"),
    Column("name", "Kernel", "str"),
    Column("sum_us", "Total", "float", "us"), Column("max_us", "Max", "float", "us"),
    Column("min_us", "Min", "float", "us"), Column("mean_us", "Mean", "float", "us"),
    Column("stddev_us", "Std. dev.", "float", "us"),
    Column("count", "Count", "int", "", "launches; for 'others', kernel names folded"),
]


def _table(columns: list[Column], rows: list[tuple[Any, ...]], sort: str | None = None) -> Table:
    values = {c.name: [r[i] for r in rows] for i, c in enumerate(columns)}
    return Table.from_columns(columns, values, default_sort=sort)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> GpuBreakdownResult:
    delay_ps = round(float(options.get("consecutive_kernel_delay_us", 30.0)) * PS_PER_US)
    runtime_cutoff_us = float(options.get("runtime_cutoff_us", 50.0))
    launch_delay_cutoff_us = float(options.get("launch_delay_cutoff_us", 100.0))
    num_kernels = int(options.get("num_kernels", 10))
    duration_ratio = float(options.get("duration_ratio", 0.8))
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    temporal_rows: list[tuple[Any, ...]] = []
    idle_rows: list[tuple[Any, ...]] = []
    overlap_rows: list[tuple[Any, ...]] = []
    summary_rows: list[tuple[Any, ...]] = []
    launch_rows: list[tuple[Any, ...]] = []
    top_rows: list[tuple[Any, ...]] = []
    type_ps: dict[str, int] = {}
    idle_pcts: list[float] = []
    comm_pcts: list[float] = []
    for rank, store, device, act in devices_with_activity(ranked):
        t = temporal(act)
        temporal_rows.append((rank, store.host, device, t["idle_time_us"], t["compute_time_us"],
                              t["non_compute_time_us"], t["kernel_time_us"], t["idle_time_percent"],
                              t["compute_time_percent"], t["non_compute_time_percent"]))
        idle_pcts.append(t["idle_time_percent"])
        comm_pcts.append(communication_percent(act))
        for s in idle_intervals(act, delay_ps):
            gap_us = s["gap_ps"] / PS_PER_US
            total_us = float(gap_us.sum())
            for c, label in enumerate(IDLE_CATEGORIES):
                g = gap_us[s["category"] == c]
                idle_us = float(g.sum())
                idle_rows.append((rank, store.host, device, s["stream"], label, idle_us,
                                  idle_us / total_us if total_us else float("nan"), int(g.shape[0]),
                                  float(g.mean()) if g.shape[0] else float("nan"),
                                  float(g.min()) if g.shape[0] else float("nan"),
                                  float(np.median(g)) if g.shape[0] else float("nan"),
                                  float(g.max()) if g.shape[0] else float("nan")))
        comm_us, overlap_pct = comm_comp_overlap(act)
        overlap_rows.append((rank, store.host, device, comm_us, overlap_pct))
        rows = launches(store, act)
        cpu_us = np.maximum(act.launch_dur_ps[rows], 0) / PS_PER_US
        gpu_us = act.rounded_dur_ps()[rows] / PS_PER_US
        launch_end_ps = act.launch_start_ps[rows] + act.launch_dur_ps[rows]
        delay_us = np.maximum(act.start_ps[rows] - launch_end_ps, 0) / PS_PER_US
        n = int(rows.shape[0])
        nan = float("nan")
        summary_rows.append((rank, store.host, device, n, float(cpu_us.mean()) if n else nan,
                             float(cpu_us.max()) if n else nan,
                             float(gpu_us.mean()) if n else nan, float(delay_us.mean()) if n else nan,
                             float(np.percentile(delay_us, 95)) if n else nan, float(delay_us.max()) if n else nan,
                             int((cpu_us > runtime_cutoff_us).sum()), int((delay_us > launch_delay_cutoff_us).sum()),
                             int((gpu_us < cpu_us).sum())))
        kernel_names = store.strings.lookup(act.name_id[rows])
        launch_names = store.strings.lookup(act.launch_name_id[rows])
        corr = act.correlation[rows].tolist()
        for i in range(n):
            launch_rows.append((rank, device, corr[i], kernel_names[i], launch_names[i], float(cpu_us[i]),
                                float(gpu_us[i]), float(delay_us[i])))
        for label, ps in type_coverage(act).items():
            type_ps[label] = type_ps.get(label, 0) + ps
        names_all = store.strings.lookup(act.name_id)
        dur_all = (act.end_ps - act.start_ps) / PS_PER_US  # HTA's, -1 µs included: top_kernels
        for kind in BREAKDOWN_KINDS:
            sel = np.nonzero(act.kind == kind)[0]
            picked = [names_all[i] for i in sel.tolist()]
            for name, total, mx, mn, mean, std, count in top_kernels(picked, dur_all[sel], num_kernels,
                                                                   duration_ratio):
                top_rows.append((KIND_NAMES[kind], rank, device, name, total, mx, mn, mean, std, count))
    all_ps = sum(type_ps.values())
    idle_pct = float(np.mean(idle_pcts)) if idle_pcts else None
    comm_pct = float(np.nanmean(comm_pcts)) if comm_pcts and not np.isnan(comm_pcts).all() else None
    type_rows = [(label, ps / PS_PER_US, 100.0 * ps / all_ps if all_ps else float("nan"))
                 for label, ps in sorted(type_ps.items(), key=lambda kv: -kv[1])]
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked],
        "device_idle_percent": idle_pct,
        "communication_percent": comm_pct,
        "metrics": [metric_json("device_idle_of_kernel_timeline", idle_pct),
                    metric_json("communication_of_kernel_timeline", comm_pct)],
        "tables": {
            "temporal_breakdown": _table(TEMPORAL_COLUMNS, temporal_rows),
            "idle_time_breakdown": _table(IDLE_COLUMNS, idle_rows),
            "comm_comp_overlap": _table(OVERLAP_COLUMNS, overlap_rows),
            "kernel_launch_summary": _table(LAUNCH_SUMMARY_COLUMNS, summary_rows),
            "kernel_launches": _table(LAUNCH_COLUMNS, launch_rows, sort="launch_delay_us"),
            "kernel_type_breakdown": _table(TYPE_COLUMNS, type_rows, sort="time_us"),
            "top_kernels": _table(TOP_KERNEL_COLUMNS, top_rows, sort="sum_us"),
        },
    }


# A time threshold longer than a year of profile is a typo, not a setting; past it the picosecond
# arithmetic (int64) would overflow.
MAX_TIME_US = 3.2e13

OPTIONS = (
    Option("consecutive_kernel_delay_us", parse_float, 30.0, "gaps shorter than this are kernel wait (HTA: 30)",
           min_value=0, max_value=MAX_TIME_US),
    Option("runtime_cutoff_us", parse_float, 50.0, "launch calls longer than this are outliers (HTA: 50)",
           min_value=0, max_value=MAX_TIME_US),
    Option("launch_delay_cutoff_us", parse_float, 100.0, "launch delays longer than this are outliers (HTA: 100)",
           min_value=0, max_value=MAX_TIME_US),
    Option("num_kernels", parse_nonneg_int, 10, "kernels named per type and rank before 'others' (HTA: 10)",
           min_value=0, max_value=1_000_000),
    Option("duration_ratio", parse_float, 0.8, "quantile of the running total beyond which kernels fold into "
           "'others' (HTA: 0.8)", min_value=0, max_value=1),
)

TOOLS = (
    Tool(
        name=TOOL, title="GPU breakdown (HTA)", compute=compute, available=has_device_activity, options=OPTIONS,
        multi_host=True,
        description="HTA's temporal, idle-time, overlap, launch and kernel-type breakdowns per rank.",
        result=GpuBreakdownResult, needs=frozenset({"devices"}),
        requires="GPU kernels, memory copies and sets on device streams (a CUDA or ROCm trace).",
        how_to=(rec.TORCH_TRACE, "JAX/TensorFlow on a GPU: any jax.profiler or tf.profiler trace has the kernels."),
    ),
)
