"""torch-tb-profiler's GPU metrics, per device and per kernel: ``gpu_utilization``.

The formulas torch-tb-profiler 0.4.3 documents (kineto ``tb_plugin/docs/gpu_utilization.md``)
and computes (``profiler/gpu_metrics_parser.py``, ``kernel_parser.py``), on Kineto traces
(docs/formulas.md, "GPU utilization, SM efficiency, occupancy (torch-tb-profiler)"):

* **all steps time** (its ``StepParser``): the ``ProfilerStep#`` events (host markers and GPU
  annotations) in start order, or without any, one step over the host operators (first start to
  last end). Where the trace's runtime calls are PyTorch 1.8's ``Runtime`` events (the only ones
  the plugin reads), each step extends to the end of the device work its runtime calls launched,
  starts no earlier than the previous step's end (the first: than the end of earlier device work
  launched outside any step), and trailing steps that launched nothing, or a last step that
  launched under 80 % of the one before, are left out. All steps time runs from the first step's
  start to the last step's end;
* **GPU utilization** = time at least one kernel (category ``kernel``) runs on the device within
  all steps time / all steps time;
* **est. SM efficiency**: each kernel's ``blocks per SM`` arg; where kernels overlap their values
  add up; each stretch counts min(sum, 1) × its length; Σ within all steps time / all steps time;
* **est. achieved occupancy**: Kineto's ``est. achieved occupancy %`` per kernel, weighted by the
  part of its duration within all steps time;
* per kernel name: calls, total / mean duration, and the duration-weighted means of ``blocks per
  SM`` and ``est. achieved occupancy %`` (a kernel without them counts 0, as torch-tb-profiler).

XSpace GPU profiles have neither ``ProfilerStep`` markers nor these per-kernel args (XProf's
kernel_stats has its own occupancy): the tool lists Kineto runs only (docs/pytorch_analyses.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import merge_intervals
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import GpuUtilizationResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.planes import on_device_side
from tbprof.store import kineto_names as kn
from tbprof.store.derived import Derived
from tbprof.store.tables import ProfileStore

TOOL = "gpu_utilization"
_PS_PER_US = 1e6
_STEP_PREFIX = "ProfilerStep#"
_STEP_CATEGORIES = ("cpu_op", "operator", "user_annotation", "gpu_user_annotation")


def has_kernel_args(store: object) -> bool:
    strings = getattr(store, "strings", None)
    return (getattr(store, "format", "") == "chrome_trace" and strings is not None
            and strings.id("kernel") >= 0 and strings.id("cat") >= 0)


def _category(store: ProfileStore, plane: Any) -> np.ndarray:
    return plane.dense_str_ids(store.stat_id("cat"))


def _step_spans(store: ProfileStore) -> list[tuple[int, int]]:
    """The ProfilerStep# events' (start, end), in start order (host markers first at a tie)."""
    ids = [store.strings.id(c) for c in _STEP_CATEGORIES]
    gpu_cat = store.strings.id(kn.GPU_USER_ANNOTATION)
    spans: list[tuple[int, int, int]] = []
    for plane in store.planes:
        if plane.n_events == 0:
            continue
        cat = _category(store, plane)
        names = store.strings.lookup(plane.name_id)
        for i, n in enumerate(names):
            if n.startswith(_STEP_PREFIX) and int(cat[i]) in ids:
                start = int(plane.start_ps[i])
                spans.append((start, int(cat[i]) == gpu_cat, start + int(plane.dur_ps[i])))
    return [(a, b) for a, _, b in sorted(spans)]


def _host_span(store: ProfileStore) -> list[tuple[int, int]]:
    """One step over the host operators, the plugin's step of a trace without ProfilerStep."""
    op_cat = store.strings.id(kn.OPERATOR)
    lo, hi = None, None
    for plane in store.planes:
        if plane.n_events == 0 or on_device_side(plane):
            continue
        rows = np.nonzero(_category(store, plane) == op_cat)[0]
        if rows.shape[0]:
            start = plane.start_ps[rows].astype(np.int64)
            end = start + plane.dur_ps[rows].astype(np.int64)
            lo = int(start.min()) if lo is None else min(lo, int(start.min()))
            hi = int(end.max()) if hi is None else max(hi, int(end.max()))
    return [] if lo is None or hi is None else [(lo, hi)]


def _launches(store: ProfileStore) -> tuple[list[tuple[int, int, int]], dict[int, list[tuple[int, int]]]]:
    """Runtime calls (start, end, correlation) in start order, and the device work (start, end) per
    correlation (kernels, memcpys, memsets; -1: none)."""
    cat_sid, corr_sid = store.stat_id("cat"), store.stat_id("correlation")
    launch_cat = store.strings.id("cuda_runtime")
    device_ids = [i for i in (store.strings.id(c) for c in kn.DEVICE_CATEGORIES[:3]) if i >= 0]
    calls: list[tuple[int, int, int]] = []
    work: dict[int, list[tuple[int, int]]] = {}
    for plane in store.planes:
        if plane.n_events == 0 or cat_sid < 0 or corr_sid < 0:
            continue
        cat = _category(store, plane)
        corr = plane.event_stat(corr_sid).dense_int(plane.n_events)
        start = plane.start_ps.astype(np.int64)
        end = start + plane.dur_ps.astype(np.int64)
        for r in np.nonzero(cat == launch_cat)[0].tolist():
            calls.append((int(start[r]), int(end[r]), int(corr[r])))
        for r in np.nonzero(np.isin(cat, device_ids))[0].tolist():
            work.setdefault(max(int(corr[r]), -1), []).append((int(start[r]), int(end[r])))
    calls.sort()
    return calls, work


def _device_steps(steps: list[tuple[int, int]], store: ProfileStore) -> list[tuple[int, int]]:
    """The plugin's ``update_device_steps`` on PyTorch 1.8 runtime calls (see the module docstring)."""
    calls, work = _launches(store)
    n = len(steps)
    device: list[tuple[int, int] | None] = [None] * n
    matched = [0] * n
    matched_corr: set[int] = set()
    i_step = i_call = 0
    lo = hi = None
    while i_step < n and i_call < len(calls):
        s_start, s_end = steps[i_step]
        c_start, c_end, corr = calls[i_call]
        if c_start < s_start:
            i_call += 1
        elif c_end <= s_end:
            for w_start, w_end in work.get(corr, []) if corr >= 0 else []:
                lo = w_start if lo is None else min(lo, w_start)
                hi = w_end if hi is None else max(hi, w_end)
                matched[i_step] += 1
                matched_corr.add(corr)
            i_call += 1
        elif c_start < s_end:
            i_call += 1
        else:
            device[i_step] = None if lo is None or hi is None else (lo, hi)
            i_step += 1
            lo = hi = None
    if i_step < n:
        device[i_step] = None if lo is None or hi is None else (lo, hi)
    if not matched_corr:
        return steps
    prev_end = steps[0][0]
    first = device[0]
    if first is not None:
        # Device work launched outside every step that ends before the first step's device work.
        prev_end = max([prev_end, *(e for c, spans in work.items() if c not in matched_corr
                                    for _, e in spans if e < first[0])])
    out = []
    for (s_start, s_end), dev in zip(steps, device, strict=True):
        start = max(prev_end, s_start)
        end = max(s_end, start) if dev is None else max(s_end, dev[1], start)
        out.append((start, end))
        prev_end = end
    if n > 1:
        last = max((i for i in range(n) if matched[i] > 0), default=-1)
        if last >= 0:
            keep = last if last > 0 and matched[last - 1] * 0.8 > matched[last] else last + 1
            out = out[:keep]
    return out


def steps_window_ps(store: ProfileStore) -> tuple[int, int] | None:
    """(start, end) of torch-tb-profiler's "all steps time", or None without host operators or steps."""
    steps = _step_spans(store) or _host_span(store)
    if not steps:
        return None
    if kn.runtime_is_pytorch_18(store.metadata):
        steps = _device_steps(steps, store)
    return steps[0][0], steps[-1][1]


def _kernels(store: ProfileStore) -> dict[str, np.ndarray]:
    """Every ``kernel`` event: device, start, end (ps), blocks per SM and occupancy (NaN: absent)."""
    kernel_cat = store.strings.id("kernel")
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("device", "start", "end", "blocks", "occ", "name")}
    sids = {k: store.stat_id(n) for k, n in (("device", "device"), ("blocks", "blocks per SM"),
                                             ("occ", "est. achieved occupancy %"))}
    for plane in store.planes:
        if plane.n_events == 0:
            continue
        rows = np.nonzero(_category(store, plane) == kernel_cat)[0]
        if rows.shape[0] == 0:
            continue
        cols["start"].append(plane.start_ps[rows].astype(np.int64))
        cols["end"].append((plane.start_ps[rows] + plane.dur_ps[rows]).astype(np.int64))
        cols["name"].append(plane.name_id[rows])
        for key in ("device", "blocks", "occ"):
            sid = sids[key]
            values = plane.stat_column(sid).dense_float(plane.n_events)[rows] if sid >= 0 \
                else np.full(rows.shape[0], np.nan)
            cols[key].append(values)
    if not cols["start"]:
        return {k: np.zeros(0) for k in cols}
    return {k: np.concatenate(v) for k, v in cols.items()}


def _clip(start: np.ndarray, end: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return np.maximum(np.minimum(end, hi) - np.maximum(start, lo), 0)


def sm_efficiency_ps(start: np.ndarray, end: np.ndarray, blocks_per_sm: np.ndarray, lo: int, hi: int) -> float:
    """Σ over stretches of min(Σ blocks per SM of the kernels running, 1) × length, within [lo, hi)."""
    keep = blocks_per_sm > 0
    s, e, v = start[keep], end[keep], blocks_per_sm[keep]
    if s.shape[0] == 0:
        return 0.0
    t = np.concatenate([s, e])
    d = np.concatenate([v, -v])
    kind = np.concatenate([np.zeros(s.shape[0]), np.ones(e.shape[0])])  # starts before ends at a tie
    order = np.lexsort((kind, t))
    t, d = t[order], d[order]
    level = np.cumsum(d)[:-1]
    seg = _clip(t[:-1], t[1:], lo, hi)
    return float((np.minimum(np.where(level > 0, level, 0.0), 1.0) * seg).sum())


DEVICE_METRICS: Derived[list[dict[str, Any]]] = Derived(("gpu_utilization", "devices"), lambda s: _device_metrics(s))


def device_metrics(store: ProfileStore) -> list[dict[str, Any]]:
    """Per device: GPU utilization, est. SM efficiency, est. achieved occupancy (memoised)."""
    return store.derive(DEVICE_METRICS)


def _device_metrics(store: ProfileStore) -> list[dict[str, Any]]:
    window = steps_window_ps(store)
    k = _kernels(store)
    if window is None or k["start"].shape[0] == 0:
        return []
    lo, hi = window
    span = hi - lo
    out = []
    for device in np.unique(k["device"][np.isfinite(k["device"])]).tolist():
        m = k["device"] == device
        s, e = k["start"][m], k["end"][m]
        ms, me = merge_intervals(s, e)
        busy = float(_clip(ms, me, lo, hi).sum())
        sm = sm_efficiency_ps(s, e, np.nan_to_num(k["blocks"][m], nan=0.0), lo, hi)
        occ = k["occ"][m]
        has_occ = np.isfinite(occ) & (occ >= 0)
        w = _clip(s[has_occ], e[has_occ], lo, hi).astype(np.float64)
        out.append({
            "device": int(device), "steps_time_us": span / _PS_PER_US, "kernels": int(m.sum()),
            "gpu_utilization_percent": 100.0 * busy / span if span > 0 else None,
            "est_sm_efficiency_percent": 100.0 * sm / span if span > 0 and (k["blocks"][m] > 0).any() else None,
            "est_achieved_occupancy_percent": float((occ[has_occ] * w).sum() / w.sum()) if w.sum() > 0 else None,
        })
    return out


def kernel_metrics(store: ProfileStore) -> list[dict[str, Any]]:
    """Per kernel name: torch-tb-profiler's kernel view (all kernels of the trace)."""
    k = _kernels(store)
    if k["start"].shape[0] == 0:
        return []
    dur = (k["end"] - k["start"]).astype(np.float64)
    uniq, inv = np.unique(k["name"].astype(np.int64), return_inverse=True)
    inv = inv.reshape(-1)
    n = uniq.shape[0]
    count = np.bincount(inv, minlength=n)
    total = np.bincount(inv, weights=dur, minlength=n)
    blocks = np.bincount(inv, weights=np.nan_to_num(k["blocks"], nan=0.0) * dur, minlength=n)
    occ = np.bincount(inv, weights=np.nan_to_num(k["occ"], nan=0.0) * dur, minlength=n)
    # A kernel whose launches carry no grid or occupancy (a trace without them) has no mean: null, not 0.
    known_blocks = np.bincount(inv, weights=~np.isnan(k["blocks"]), minlength=n) > 0
    known_occ = np.bincount(inv, weights=~np.isnan(k["occ"]), minlength=n) > 0
    names = store.strings.lookup(uniq.astype(np.int32))
    out = []
    nan = float("nan")
    for i in range(n):
        weighted = total[i] > 0
        out.append({"name": names[i], "calls": int(count[i]), "total_us": total[i] / _PS_PER_US,
                    "mean_us": total[i] / count[i] / _PS_PER_US,
                    "mean_blocks_per_sm": blocks[i] / total[i] if weighted and known_blocks[i] else nan,
                    "mean_est_achieved_occupancy_percent": occ[i] / total[i] if weighted and known_occ[i] else nan})
    out.sort(key=lambda r: -r["total_us"])
    return out


DEVICE_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "int"),
    Column("gpu_utilization_percent", "GPU utilization", "float", "%", "kernel busy time / all steps time"),
    Column("est_sm_efficiency_percent", "Est. SM efficiency", "float", "%",
           "Σ min(blocks per SM, 1) × time / all steps time"),
    Column("est_achieved_occupancy_percent", "Est. achieved occupancy", "float", "%",
           "Kineto's estimate, weighted by kernel time within the steps"),
    Column("steps_time_us", "All steps time", "float", "us"),
    Column("kernels", "Kernels", "int"),
]
KERNEL_COLUMNS = [
    Column("rank", "Rank", "int"), Column("name", "Kernel", "str"), Column("calls", "Calls", "int"),
    Column("total_us", "Total", "float", "us"), Column("mean_us", "Mean", "float", "us"),
    Column("mean_blocks_per_sm", "Mean blocks per SM", "float", "", "weighted by duration"),
    Column("mean_est_achieved_occupancy_percent", "Mean est. achieved occupancy", "float", "%",
           "weighted by duration"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> GpuUtilizationResult:
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    dev_rows: list[tuple[Any, ...]] = []
    kern_rows: list[tuple[Any, ...]] = []
    for rank, store in ranked:
        for d in device_metrics(store):
            dev_rows.append((rank, store.host, d["device"], d["gpu_utilization_percent"],
                             d["est_sm_efficiency_percent"], d["est_achieved_occupancy_percent"],
                             d["steps_time_us"], d["kernels"]))
        for r in kernel_metrics(store):
            kern_rows.append((rank, r["name"], r["calls"], r["total_us"], r["mean_us"], r["mean_blocks_per_sm"],
                              r["mean_est_achieved_occupancy_percent"]))

    def mean(i: int) -> float | None:
        vals = [r[i] for r in dev_rows if r[i] is not None]
        return float(np.mean(vals)) if vals else None

    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked],
        "gpu_utilization_percent": mean(3), "est_sm_efficiency_percent": mean(4),
        "est_achieved_occupancy_percent": mean(5),
        "tables": {
            "devices": Table.from_columns(DEVICE_COLUMNS, {c.name: [r[i] for r in dev_rows]
                                                           for i, c in enumerate(DEVICE_COLUMNS)}),
            "kernels": Table.from_columns(KERNEL_COLUMNS, {c.name: [r[i] for r in kern_rows]
                                                           for i, c in enumerate(KERNEL_COLUMNS)},
                                          default_sort="total_us"),
        },
    }


TOOLS = (
    Tool(
        name=TOOL, title="GPU utilization (torch-tb-profiler)", compute=compute, available=has_kernel_args,
        multi_host=True,
        description="torch-tb-profiler's GPU utilization, est. SM efficiency and est. achieved occupancy "
                    "per device and kernel.",
        result=GpuUtilizationResult, needs=frozenset({"devices", "kineto"}),
        requires="GPU kernels with their launch configuration (blocks, warps per SM, occupancy), as Kineto writes "
                 "them.",
        how_to=(rec.TORCH_TRACE,),
    ),
)
