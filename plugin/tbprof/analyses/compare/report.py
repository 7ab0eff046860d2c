"""compare: a baseline and a candidate profile side by side, and what changed.

Pure: it takes each side's results of the existing tools (``overview_page`` for steps and
their breakdown, ``framework_op_stats``, ``kernel_stats``, ``memory_profile``), never a store
or a file, so steps are found and ops aggregated exactly as on those pages. It adds:

- step time: each side's distribution and the change with a confidence interval from the
  per-step spread (``compare_stats``); a change whose interval includes 0 is "no change";
- the step breakdown categories side by side (ms per step and % of step time) with deltas;
- op, op-type and kernel tables joined by key with deltas in total self time, time per
  occurrence, occurrences and time per step, added/removed rows, ordered by their contribution
  to the step-time change (|delta of time per step|);
- memory: peak and fragmentation of every allocator, the allocations at the peak that appear
  or grow most;
- a short verdict in words.

Formulas and the decision rule: docs/formulas.md ("compare"). JSON: docs/api.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tbprof.analyses.compare import stats as cs
from tbprof.analyses.gpu.trace_diff import OpSummary
from tbprof.analyses.gpu.trace_diff import diff as trace_diff_table
from tbprof.analyses.memory.memory_profile import capacity_meaning
from tbprof.analyses.results.compare import (
    AllocatorPeak,
    BreakdownVerdicts,
    CompareResult,
    CompareSide,
    CompareVerdict,
    Direction,
    MemoryPeaks,
    OverlapCounts,
    StepDistribution,
    StepTimeChange,
    TraceDiffSummary,
)
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, OptionError
from tbprof.domain.regex import fixed
from tbprof.errors import BadParameter

IDLE = "IDLE"
# A category is named in the verdict when its share of step time moved at least this much.
VERDICT_CATEGORY_MIN_POINTS = 5.0
BREAKDOWN_KEYS: tuple[tuple[str, str], ...] = (
    *((k, label) for k, label, _ in sb.CATEGORIES),
    ("host_wait_input_ms", "Input: host waiting for input"),
    ("host_to_device_ms", "Input: host to device"),
)


class SelectionError(BadParameter):
    """A step selection that does not parse or selects nothing."""


@dataclass
class SideInput:
    """One side of a comparison: which profile, and its results of the existing tools.

    ``op_stats``, ``kernel_stats`` and ``memory`` hold one result per host (and per allocator
    for memory); a tool that does not exist for the side's format is absent and named in
    ``unavailable`` (section -> reason).
    """

    run: str
    hosts: list[str]
    kind: str = "xspace"
    overview: dict[str, Any] | None = None
    op_stats: list[dict[str, Any]] = field(default_factory=list)
    kernel_stats: list[dict[str, Any]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    # HTA's trace diff input (PyTorch runs): the first rank's events of one iteration by name.
    op_summary: OpSummary | None = None
    steps: str = ""  # step selection ("3:6", "2,4"): restricts the step statistics
    unavailable: dict[str, str] = field(default_factory=dict)
    # Sections no tool answers for this side (unknown, not empty): never joined against the
    # other side, where every row would look "added".
    missing: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        hosts = ",".join(self.hosts) if len(self.hosts) <= 3 else f"{len(self.hosts)} hosts"
        sel = f" steps {self.steps}" if self.steps else ""
        return f"{self.run} · {hosts}{sel}"

    def describe(self, steps: SideSteps | None) -> CompareSide:
        """The side as the answer names it, with the step count of its (selected) ``steps``."""
        return {"run": self.run, "hosts": self.hosts, "kind": self.kind, "label": self.label,
                "steps": self.steps or None, "step_count": steps.n if steps else 0,
                "step_source": steps.source if steps else None}


# --- step selection -----------------------------------------------------------------------

# On RE2: the text is a request parameter, and Python's re backtracks quadratically over spaces here.
_RANGE = r"^\s*(-?\d+)?\s*:\s*(-?\d+)?\s*$"


def parse_step_selection(text: str) -> list[tuple[int | None, int | None]]:
    """"3:6" (inclusive, either end open), "2,4,7", "1:3,8" -> [(lo, hi), ...] of step numbers."""
    out: list[tuple[int | None, int | None]] = []
    for part in text.split(","):
        if not part.strip():
            continue
        m = fixed(_RANGE).match(part)
        if m:
            lo = int(m.group(1)) if m.group(1) is not None else None
            hi = int(m.group(2)) if m.group(2) is not None else None
            out.append((lo, hi))
            continue
        try:
            num = int(part)
        except ValueError:
            raise SelectionError(f"step selection {text!r}: {part.strip()!r} is neither a step number nor "
                                 "a range like 3:6") from None
        out.append((num, num))
    if not out:
        raise SelectionError(f"step selection {text!r} is empty")
    return out


def select_steps(step_nums: np.ndarray, text: str) -> np.ndarray:
    """Mask of the steps whose step number the selection names."""
    mask = np.zeros(step_nums.shape[0], bool)
    for lo, hi in parse_step_selection(text):
        m = np.ones(step_nums.shape[0], bool)
        if lo is not None:
            m &= step_nums >= lo
        if hi is not None:
            m &= step_nums <= hi
        mask |= m
    return mask


# --- steps ----------------------------------------------------------------------------------

@dataclass
class SideSteps:
    names: list[str]
    step_nums: np.ndarray
    step_time_ms: np.ndarray
    category_ms: dict[str, np.ndarray]
    source: str
    # Steps the profile window holds per host (before XProf's boundary rule drops 2): the
    # divisor that turns whole-profile op totals into time per step.
    profiled_steps: dict[str, int]

    @property
    def n(self) -> int:
        return int(self.step_time_ms.shape[0])


def side_steps(side: SideInput) -> SideSteps | None:
    ov = side.overview
    if ov is None or not isinstance(ov.get("tables", {}).get("steps"), Table):
        return None
    t: Table = ov["tables"]["steps"]
    names = np.asarray(t.data["step"], dtype=object)
    nums = np.asarray(t.data["step_num"], dtype=np.int64)
    times = np.asarray(t.data["step_time_ms"], dtype=np.float64)
    cats = {k: np.asarray(t.data[k], np.float64) for k, _ in BREAKDOWN_KEYS if k in t.data}
    if side.steps:
        keep = select_steps(nums, side.steps)
        if not keep.any():
            raise SelectionError(f"step selection {side.steps!r} matches none of the {len(nums)} steps of "
                                 f"{side.run} (step numbers {nums.min() if len(nums) else '-'}.."
                                 f"{nums.max() if len(nums) else '-'})")
        names, nums, times = names[keep], nums[keep], times[keep]
        cats = {k: v[keep] for k, v in cats.items()}
    steps_json = ov.get("steps", {})
    profiled: dict[str, int] = {}
    for entry in steps_json.get("per_host", []):
        profiled[str(entry.get("host"))] = int(entry.get("step_count", 0)) + int(entry.get("dropped_boundary_steps", 0))
    return SideSteps([str(x) for x in names.tolist()], nums, times, cats, str(steps_json.get("step_source", "")),
                     profiled)


def _fmt_pct(x: float | None) -> str:
    if x is None:
        return "?"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:+.1f}"


def _in_ms(d: dict[str, Any]) -> StepDistribution:
    return {"count": int(d["count"]), "mean_ms": d["mean"], "median_ms": d["median"], "p10_ms": d["p10"],
            "p90_ms": d["p90"], "stddev_ms": d["stddev"], "min_ms": d["min"], "max_ms": d["max"]}


def step_change(base: SideSteps | None, cand: SideSteps | None, confidence: float) -> StepTimeChange | None:
    """Distribution of both sides and the change of the candidate against the baseline."""
    if base is None or cand is None or base.n == 0 or cand.n == 0:
        return None
    rel = cs.relative_shift(base.step_time_ms, cand.step_time_ms, confidence)
    absolute = cs.shift(base.step_time_ms, cand.step_time_ms, confidence)
    bd = cs.distribution(base.step_time_ms)
    cd = cs.distribution(cand.step_time_ms)
    direction: Direction
    if rel.low is None or rel.high is None:
        direction = "unknown"
    elif rel.low > 0:
        direction = "slower"
    elif rel.high < 0:
        direction = "faster"
    else:
        direction = "no change"

    def ratio(a: float, b: float) -> float:
        return 100.0 * (b / a - 1.0) if a > 0 else float("nan")

    return {
        "unit": "ms",
        "baseline": _in_ms(bd),
        "candidate": _in_ms(cd),
        "change": {
            "direction": direction, "significant": rel.significant, "confidence": confidence,
            "method": rel.method,
            "change_percent": rel.estimate, "ci_low_percent": rel.low, "ci_high_percent": rel.high,
            "shift_ms": absolute.estimate, "shift_ci_low_ms": absolute.low, "shift_ci_high_ms": absolute.high,
            "median_delta_ms": cd["median"] - bd["median"], "median_change_percent": ratio(bd["median"], cd["median"]),
            "mean_delta_ms": cd["mean"] - bd["mean"], "mean_change_percent": ratio(bd["mean"], cd["mean"]),
        },
    }


def _breakdown_percent(s: SideSteps) -> dict[str, float]:
    """% of total step time per category: XProf's bottleneck-analysis formula (shared code)."""
    main = {k: s.category_ms.get(k, np.zeros(s.n)) for k in sb.CATEGORY_KEYS}
    pct = {k.removesuffix("_percent") + "_ms": v
           for k, v in sb.bottleneck_analysis(main, s.step_time_ms)["percent"].items()}
    total = float(np.sum(s.step_time_ms))
    for k, _ in BREAKDOWN_KEYS:
        if k not in pct:
            pct[k] = 100.0 * float(np.sum(s.category_ms.get(k, 0.0))) / total if total > 0 else 0.0
    return pct


def breakdown_table(base: SideSteps, cand: SideSteps) -> tuple[Table, BreakdownVerdicts]:
    bp, cp = _breakdown_percent(base), _breakdown_percent(cand)
    keys = [k for k, _ in BREAKDOWN_KEYS]
    labels = [label for _, label in BREAKDOWN_KEYS]

    def mean(s: SideSteps, k: str) -> float:
        v = s.category_ms.get(k)
        return float(np.mean(v)) if v is not None and v.size else 0.0

    b_ms = np.array([mean(base, k) for k in keys])
    c_ms = np.array([mean(cand, k) for k in keys])
    b_pct = np.array([bp.get(k, 0.0) for k in keys])
    c_pct = np.array([cp.get(k, 0.0) for k in keys])
    cols = [
        Column("category", "Key", "str", "", "the category's column in the step tables"),
        Column("label", "Category", "str"),
        Column("base_ms", "Baseline per step", "float", "ms", "mean over the baseline's steps"),
        Column("cand_ms", "Candidate per step", "float", "ms"),
        Column("delta_ms", "Δ per step", "float", "ms", "candidate - baseline"),
        Column("base_percent", "Baseline share", "float", "%", "of total step time"),
        Column("cand_percent", "Candidate share", "float", "%"),
        Column("delta_percent_points", "Δ share", "float", "pp", "percentage points"),
    ]
    table = Table.from_columns(cols, {"category": keys, "label": labels, "base_ms": b_ms, "cand_ms": c_ms,
                                      "delta_ms": c_ms - b_ms, "base_percent": b_pct, "cand_percent": c_pct,
                                      "delta_percent_points": c_pct - b_pct}, default_sort=None)
    main = {k: base.category_ms.get(k, np.zeros(base.n)) for k in sb.CATEGORY_KEYS}
    main_c = {k: cand.category_ms.get(k, np.zeros(cand.n)) for k in sb.CATEGORY_KEYS}
    summary: BreakdownVerdicts = {
        "baseline_input_bound": sb.bottleneck_analysis(main, base.step_time_ms)["input_bound"],
        "candidate_input_bound": sb.bottleneck_analysis(main_c, cand.step_time_ms)["input_bound"],
    }
    return table, summary


def steps_table(base: SideSteps | None, cand: SideSteps | None) -> Table:
    """Step times of both sides by position (the overlaid step-time chart, and its CSV)."""
    nb = base.n if base else 0
    nc = cand.n if cand else 0
    n = max(nb, nc)

    def pad_f(v: np.ndarray | None, k: int) -> np.ndarray:
        out = np.full(n, np.nan)
        if v is not None:
            out[:k] = v
        return out

    def pad_s(v: list[str] | None, k: int) -> list[str]:
        return (v or []) + [""] * (n - k)

    def pad_i(v: np.ndarray | None, k: int) -> np.ndarray:
        out = np.full(n, -1, np.int64)
        if v is not None:
            out[:k] = v
        return out

    cols = [Column("index", "#", "int", "", "position of the step in each side (1-based)"),
            Column("base_step", "Baseline step", "str"),
            Column("base_step_num", "Baseline step number", "int", "", "-1: no step at this position"),
            Column("base_step_time_ms", "Baseline step time", "float", "ms"),
            Column("cand_step", "Candidate step", "str"),
            Column("cand_step_num", "Candidate step number", "int", "", "-1: no step at this position"),
            Column("cand_step_time_ms", "Candidate step time", "float", "ms"),
            Column("delta_ms", "Δ step time", "float", "ms", "candidate - baseline at the same position")]
    b_t = pad_f(base.step_time_ms if base else None, nb)
    c_t = pad_f(cand.step_time_ms if cand else None, nc)
    return Table.from_columns(cols, {
        "index": np.arange(1, n + 1), "base_step": pad_s(base.names if base else None, nb),
        "base_step_num": pad_i(base.step_nums if base else None, nb), "base_step_time_ms": b_t,
        "cand_step": pad_s(cand.names if cand else None, nc),
        "cand_step_num": pad_i(cand.step_nums if cand else None, nc), "cand_step_time_ms": c_t,
        "delta_ms": c_t - b_t}, default_sort=None)


# --- joins ----------------------------------------------------------------------------------

@dataclass
class _Frame:
    """Rows of one side: key columns and summed measures (already per host normalised)."""

    keys: dict[str, np.ndarray]
    values: dict[str, np.ndarray]
    per_step_ok: bool = True  # every table had a step count (else "per step" is unknown)

    @property
    def n(self) -> int:
        return int(next(iter(self.keys.values())).shape[0]) if self.keys else 0


def _frame(tables: Sequence[tuple[Table, float]], key_cols: Sequence[str], sum_cols: Sequence[str],
           skip: tuple[str, str] | None = None) -> _Frame:
    """Stacks one side's per-host tables; ``per_step_<col>`` = col / that host's steps."""
    keys: dict[str, list[np.ndarray]] = {k: [] for k in key_cols}
    vals: dict[str, list[np.ndarray]] = {c: [] for c in sum_cols}
    for c in sum_cols:
        vals["per_step_" + c] = []
    for table, steps in tables:
        keep = np.ones(table.n_rows, bool)
        if skip is not None:
            keep &= np.asarray(table.data[skip[0]], dtype=object) != skip[1]
        for k in key_cols:
            keys[k].append(np.asarray(table.data[k])[keep])
        for c in sum_cols:
            v = np.asarray(table.data[c], np.float64)[keep]
            vals[c].append(v)
            vals["per_step_" + c].append(v / steps if steps > 0 else np.full(v.shape[0], np.nan))
    return _Frame({k: (np.concatenate(v) if v else np.zeros(0, object)) for k, v in keys.items()},
                  {c: (np.concatenate(v) if v else np.zeros(0)) for c, v in vals.items()},
                  per_step_ok=bool(tables) and all(steps > 0 for _, steps in tables))


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    if values.dtype == object:
        uniq, inv = np.unique(values.astype(str), return_inverse=True)
    else:
        uniq, inv = np.unique(values, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), int(uniq.shape[0])


@dataclass
class Joined:
    keys: dict[str, np.ndarray]  # key column -> values of the union of keys
    base: dict[str, np.ndarray]  # measure -> per key sum on the baseline (0 when absent)
    cand: dict[str, np.ndarray]
    in_base: np.ndarray  # bool
    in_cand: np.ndarray

    @property
    def n(self) -> int:
        return int(self.in_base.shape[0])

    @property
    def status(self) -> np.ndarray:
        out = np.full(self.n, "both", dtype=object)
        out[~self.in_base] = "added"
        out[~self.in_cand] = "removed"
        return out


def join(base: _Frame, cand: _Frame, key_cols: Sequence[str]) -> Joined:
    """Full outer join on ``key_cols``; measures summed per key on each side (vectorised)."""
    nb, nc = base.n, cand.n
    combined = np.zeros(nb + nc, np.int64)
    for k in key_cols:
        both = np.concatenate([np.asarray(base.keys[k], dtype=object), np.asarray(cand.keys[k], dtype=object)])
        codes, size = _codes(both)
        combined = combined * max(size, 1) + codes
        # Mixed radix may overflow with many wide key columns: re-factorise as we go.
        combined = np.unique(combined, return_inverse=True)[1].reshape(-1).astype(np.int64)
    uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    n = int(uniq.shape[0])
    ib, ic = inv[:nb], inv[nb:]
    keys = {k: np.concatenate([np.asarray(base.keys[k], dtype=object),
                               np.asarray(cand.keys[k], dtype=object)])[first] for k in key_cols}
    b = {c: np.bincount(ib, weights=v, minlength=n) for c, v in base.values.items()}
    c_ = {c: np.bincount(ic, weights=v, minlength=n) for c, v in cand.values.items()}
    # A side without steps has no time per step, not zero time per step for its missing keys.
    for frame, sums in ((base, b), (cand, c_)):
        if not frame.per_step_ok:
            for name in sums:
                if name.startswith("per_step_"):
                    sums[name] = np.full(n, np.nan)
    return Joined(keys, b, c_, np.bincount(ib, minlength=n) > 0, np.bincount(ic, minlength=n) > 0)


def _contribution_order(delta_per_step: np.ndarray, delta_total: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Largest |delta per step| first (|delta total| when there are no steps), then by name."""
    primary = np.where(np.isnan(delta_per_step), 0.0, np.abs(delta_per_step))
    return np.lexsort((names.astype(str), -np.abs(delta_total), -primary))


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


def _pct_change(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base > 0, 100.0 * (cand - base) / np.where(base > 0, base, 1), np.nan)


def _delta_columns(prefix: str, label: str, unit: str, kind: str = "float", desc: str = "") -> list[Column]:
    return [Column(f"base_{prefix}", f"Baseline {label}", kind, unit, desc),
            Column(f"cand_{prefix}", f"Candidate {label}", kind, unit, desc),
            Column(f"delta_{prefix}", f"Δ {label}", kind, unit, "candidate - baseline")]


def op_table(j: Joined, key_cols: Sequence[Column], time_col: str, time_label: str) -> Table:
    """A joined op-like table: occurrences, total time, time per occurrence, time per step."""
    b_occ, c_occ = j.base["occurrences"], j.cand["occurrences"]
    b_tot, c_tot = j.base[time_col], j.cand[time_col]
    b_ps, c_ps = j.base["per_step_" + time_col], j.cand["per_step_" + time_col]
    b_avg, c_avg = _safe_div(b_tot, b_occ), _safe_div(c_tot, c_occ)
    d_avg = np.where(np.isnan(b_avg) | np.isnan(c_avg), np.nan, c_avg - b_avg)
    d_ps = c_ps - b_ps
    d_tot = c_tot - b_tot
    name_col = key_cols[-1].name if key_cols[-1].kind == "str" else key_cols[0].name
    order = _contribution_order(d_ps, d_tot, j.keys[name_col])
    values: dict[str, Any] = {c.name: j.keys[c.name][order] for c in key_cols}
    values["status"] = j.status[order]
    values.update({
        "base_occurrences": b_occ[order].round(), "cand_occurrences": c_occ[order].round(),
        "delta_occurrences": (c_occ - b_occ)[order].round(),
        f"base_{time_col}": b_tot[order], f"cand_{time_col}": c_tot[order], f"delta_{time_col}": d_tot[order],
        "base_avg_us": b_avg[order], "cand_avg_us": c_avg[order], "delta_avg_us": d_avg[order],
        "base_per_step_us": b_ps[order], "cand_per_step_us": c_ps[order], "delta_per_step_us": d_ps[order],
        "change_percent": _pct_change(b_ps, c_ps)[order] if not np.all(np.isnan(d_ps))
        else _pct_change(b_tot, c_tot)[order],
    })
    cols = [*key_cols,
            Column("status", "Status", "str", "", "both, added (only in the candidate) or removed (only in the "
                                                 "baseline)"),
            *_delta_columns("occurrences", "occurrences", "", "int"),
            *_delta_columns(time_col, time_label, "us"),
            *_delta_columns("avg_us", "per occurrence", "us", desc=f"{time_label} / occurrences"),
            *_delta_columns("per_step_us", "per step", "us",
                            desc=f"{time_label} / steps in the profile window (each host's own steps)"),
            Column("change_percent", "Change", "float", "%", "of the time per step (of the total when a side has "
                                                            "no steps); empty for added rows")]
    return Table.from_columns(cols, values, default_sort=None)


OP_KEY_COLUMNS = (Column("host_or_device", "Host/device", "str"), Column("type", "Operation type", "str"),
                  Column("operation", "Operation", "str"))
OP_TYPE_KEY_COLUMNS = (Column("host_or_device", "Host/device", "str"), Column("type", "Operation type", "str"))
KERNEL_KEY_COLUMNS = (
    Column("kernel_name", "Kernel name", "str"), Column("op_name", "Op name", "str"),
    Column("grid_dim", "Grid dim", "str"), Column("block_dim", "Block dim", "str"),
    Column("registers_per_thread", "Registers per thread", "int"),
    # Static + dynamic: the split PyTorch traces do not record.
    Column("shmem_bytes", "Shared memory", "int", "bytes", "static + dynamic shared memory per block"),
)


def _host_steps(steps: SideSteps | None, host: str) -> float:
    if steps is None:
        return 0.0
    return float(steps.profiled_steps.get(host, 0))


def _tables_of(results: Sequence[dict[str, Any]], name: str, steps: SideSteps | None) -> list[tuple[Table, float]]:
    out = []
    for r in results:
        t = r.get("tables", {}).get(name)
        if isinstance(t, Table):
            out.append((t, _host_steps(steps, str(r.get("host", "")))))
    return out


def _fix_key_kinds(j: Joined, key_cols: Sequence[Column]) -> None:
    for c in key_cols:
        if c.kind == "int":
            j.keys[c.name] = j.keys[c.name].astype(np.int64)


def ops_tables(base: SideInput, cand: SideInput, bs: SideSteps | None,
               cs_: SideSteps | None) -> dict[str, Table]:
    bt, ct = _tables_of(base.op_stats, "ops", bs), _tables_of(cand.op_stats, "ops", cs_)
    out = {}
    cols = ("occurrences", "total_self_time_us")
    for name, keys in (("ops", OP_KEY_COLUMNS), ("op_types", OP_TYPE_KEY_COLUMNS)):
        kc = [c.name for c in keys]
        j = join(_frame(bt, kc, cols, ("type", IDLE)), _frame(ct, kc, cols, ("type", IDLE)), kc)
        out[name] = op_table(j, keys, "total_self_time_us", "total self time")
    return out


def kernels_table(base: SideInput, cand: SideInput, bs: SideSteps | None, cs_: SideSteps | None) -> Table:
    bt, ct = _tables_of(base.kernel_stats, "kernels", bs), _tables_of(cand.kernel_stats, "kernels", cs_)
    kc = [c.name for c in KERNEL_KEY_COLUMNS]
    cols = ("occurrences", "total_duration_us")
    j = join(_frame(bt, kc, cols), _frame(ct, kc, cols), kc)
    _fix_key_kinds(j, KERNEL_KEY_COLUMNS)
    return op_table(j, KERNEL_KEY_COLUMNS, "total_duration_us", "total duration")


# --- memory ---------------------------------------------------------------------------------

def _allocators(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """memory id -> summary at the highest peak over the side's hosts."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        for mid, summ in (r.get("allocators") or {}).items():
            if mid not in out or summ["peak_bytes_in_use"] > out[mid]["peak_bytes_in_use"]:
                out[mid] = {**summ, "host": r.get("host", "")}
    return out


def memory_tables(base: SideInput, cand: SideInput) -> tuple[dict[str, Table], MemoryPeaks]:
    ba, ca = _allocators(base.memory), _allocators(cand.memory)
    ids = sorted(set(ba) | set(ca))

    def get(d: dict[str, dict[str, Any]], mid: str, k: str) -> float:
        return float(d[mid][k]) if mid in d else float("nan")

    status = ["both" if (m in ba and m in ca) else ("added" if m in ca else "removed") for m in ids]
    vals: dict[str, Any] = {"memory_id": ids, "status": status}
    for key, col in (("peak_bytes_in_use", "peak_bytes"), ("memory_capacity_bytes", "capacity_bytes"),
                     ("peak_fragmentation_fraction", "peak_fragmentation_fraction"),
                     ("num_allocations", "allocations")):
        b = np.array([get(ba, m, key) for m in ids])
        c = np.array([get(ca, m, key) for m in ids])
        vals[f"base_{col}"], vals[f"cand_{col}"], vals[f"delta_{col}"] = b, c, c - b
    # What "capacity" is on each side, in the memory page's words (memory_profile.CAPACITY_MEANING).
    vals["capacity_is"] = [_capacity_is(ba.get(m), ca.get(m)) for m in ids]
    cols = [Column("memory_id", "Allocator", "str"), Column("status", "Status", "str"),
            *_delta_columns("peak_bytes", "peak in use", "bytes", "float", "heap + stack at the peak"),
            *_delta_columns("capacity_bytes", "capacity", "bytes", "float",
                            "what it is: the 'Capacity is' column (as the memory page says)"),
            Column("capacity_is", "Capacity is", "str", "", "the memory page's statement of each side's capacity"),
            *_delta_columns("peak_fragmentation_fraction", "fragmentation at the peak", "fraction"),
            *_delta_columns("allocations", "allocations", "", "float")]
    allocators = Table.from_columns(cols, vals, default_sort=None)
    # Allocations live at each allocator's peak, joined by what they are.
    kc = ["memory_id", "operation", "region_type", "data_type", "shape"]

    def frame(results: Sequence[dict[str, Any]]) -> _Frame:
        parts = []
        for r in results:
            t = r.get("tables", {}).get("breakdown")
            if isinstance(t, Table) and r.get("memory_id"):
                mid = np.full(t.n_rows, r["memory_id"], dtype=object)
                data = {**t.data, "memory_id": mid}
                parts.append((Table([*t.columns, Column("memory_id", "", "str")], data), 1.0))
        return _frame(parts, kc, ("occurrences", "total_allocation_bytes"))

    def has_breakdown(results: Sequence[dict[str, Any]]) -> bool:
        return any(isinstance(r.get("tables", {}).get("breakdown"), Table) for r in results)

    if not (has_breakdown(base.memory) and has_breakdown(cand.memory)):
        # One side records peaks only (TF1 timelines): no allocation list to join.
        return {"memory_allocators": allocators}, summary_of(ba, ca)
    j = join(frame(base.memory), frame(cand.memory), kc)
    d = j.cand["total_allocation_bytes"] - j.base["total_allocation_bytes"]
    order = np.lexsort((j.keys["operation"].astype(str), -d))
    a_cols = [Column("memory_id", "Allocator", "str"), Column("operation", "Operation", "str"),
              Column("region_type", "Region type", "str"), Column("data_type", "Data type", "str"),
              Column("shape", "Shape", "str"), Column("status", "Status", "str"),
              *_delta_columns("occurrences", "occurrences", "", "int"),
              *_delta_columns("bytes", "bytes at the peak", "bytes", "int", "allocation size x occurrences")]
    allocations = Table.from_columns(a_cols, {
        **{k: j.keys[k][order] for k in kc}, "status": j.status[order],
        "base_occurrences": j.base["occurrences"][order].round(),
        "cand_occurrences": j.cand["occurrences"][order].round(),
        "delta_occurrences": (j.cand["occurrences"] - j.base["occurrences"])[order].round(),
        "base_bytes": j.base["total_allocation_bytes"][order].round(),
        "cand_bytes": j.cand["total_allocation_bytes"][order].round(), "delta_bytes": d[order].round()},
        default_sort=None)
    return {"memory_allocators": allocators, "allocations": allocations}, summary_of(ba, ca)


def _capacity_is(base: dict[str, Any] | None, cand: dict[str, Any] | None) -> str:
    """The memory page's label of each side's capacity ("Capacity", "Reserved by the allocator");
    one text when both sides say the same."""
    def text(a: dict[str, Any] | None) -> str:
        if a is None:
            return ""
        label, meaning = capacity_meaning(str(a.get("capacity_source", "allocator")))
        return f"{label}: {meaning}"
    b, c = text(base), text(cand)
    if not b or not c or b == c:
        return b or c
    return f"baseline: {b}; candidate: {c}"


def summary_of(ba: dict[str, dict[str, Any]], ca: dict[str, dict[str, Any]]) -> MemoryPeaks:
    def one(m: str, a: dict[str, Any]) -> AllocatorPeak:
        label, meaning = capacity_meaning(str(a.get("capacity_source", "allocator")))
        return {"memory_id": m, "host": a.get("host"), "peak_bytes_in_use": a.get("peak_bytes_in_use"),
                "memory_capacity_bytes": a.get("memory_capacity_bytes"),
                "peak_fragmentation_fraction": a.get("peak_fragmentation_fraction"),
                "capacity_source": a.get("capacity_source"), "capacity_label": label, "capacity_meaning": meaning}
    return {"baseline": [one(m, ba[m]) for m in sorted(ba)], "candidate": [one(m, ca[m]) for m in sorted(ca)]}


# --- verdict --------------------------------------------------------------------------------

def _tables_identical(tables: Mapping[str, Table]) -> bool:
    for t in tables.values():
        if "status" in t.data and np.any(t.data["status"] != "both"):
            return False
        for c in t.columns:
            if c.name.startswith("delta_") and c.kind in ("int", "float"):
                v = np.asarray(t.data[c.name], np.float64)
                if np.any(np.nan_to_num(v) != 0):
                    return False
    return True


def _fmt_us(us: float) -> str:
    a = abs(us)
    if a >= 1e6:
        return f"{us / 1e6:.2f} s"
    if a >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def _short(name: str, limit: int = 72) -> str:
    """Long JAX op names, shortened in the middle for a one-line verdict."""
    if len(name) <= limit:
        return name
    keep = (limit - 1) // 2
    return f"{name[:keep]}…{name[-keep:]}"


def _shared_share(ops: Table) -> float:
    """Share of the candidate's op time in ops that the baseline has too."""
    col = "cand_per_step_us" if not np.all(np.isnan(ops.data["cand_per_step_us"])) else "cand_total_self_time_us"
    v = np.nan_to_num(np.asarray(ops.data[col], np.float64))
    total = float(v.sum())
    return float(v[ops.data["status"] == "both"].sum()) / total if total > 0 else 1.0


# Below this share of the smaller side's ops found on both sides, the two profiles mostly ran
# different code and their op tables say little about each other: a warning names how many of
# how many. (Kernels are counted too, but their key holds launch shapes and op names, which a
# new batch size changes: no warning from them.)
OVERLAP_WARN_BELOW = 0.5
_OVERLAP_WARNS = ("ops",)


def overlap(tables: Mapping[str, Table]) -> tuple[dict[str, OverlapCounts], list[str]]:
    """Per joined table (ops, kernels): keys on both sides and on each side; a warning when the
    ops found on both sides are below OVERLAP_WARN_BELOW of the smaller side."""
    counts: dict[str, OverlapCounts] = {}
    warnings: list[str] = []
    for name in ("ops", "kernels"):
        t = tables.get(name)
        if t is None or "status" not in t.data:
            continue
        status = np.asarray(t.data["status"], dtype=object)
        both = int(np.sum(status == "both"))
        n_base = both + int(np.sum(status == "removed"))
        n_cand = both + int(np.sum(status == "added"))
        counts[name] = {"both": both, "baseline": n_base, "candidate": n_cand}
        smaller = min(n_base, n_cand)
        if name in _OVERLAP_WARNS and smaller > 0 and both < OVERLAP_WARN_BELOW * smaller:
            warnings.append(
                f"Only {both} {name} appear on both sides (the baseline has {n_base}, the candidate {n_cand}): "
                f"the two profiles mostly ran different {name}, so their {name} table compares little. Check "
                "that the baseline is the run you meant.")
    return counts, warnings


def verdict(change: StepTimeChange | None, breakdown: Table | None, op_types: Table | None, ops: Table | None,
            identical: bool, why_no_steps: str) -> CompareVerdict:
    details: list[str] = []
    kind: Direction
    if change is None:
        kind = "unknown"
        head = f"step time not compared: {why_no_steps}"
    else:
        c = change["change"]
        kind = c["direction"]
        level = round(100 * c["confidence"])
        ci = f"{level} % CI {_fmt_pct(c['ci_low_percent'])} … {_fmt_pct(c['ci_high_percent'])} %"
        if identical:
            kind = "no change"
            head = "no change: the two profiles give identical results"
        elif kind == "no change":
            head = f"no change: step time {_fmt_pct(c['change_percent'])} % is within the step-to-step noise ({ci})"
        elif kind == "unknown":
            head = f"step time {_fmt_pct(c['change_percent'])} % (too few steps for a {level} % interval)"
        else:
            head = f"step time {_fmt_pct(c['change_percent'])} % ({ci})"
        details.append(head)
    clauses: list[str] = []
    if breakdown is not None and breakdown.n_rows and not identical:
        main = np.isin(breakdown.data["category"], list(sb.CATEGORY_KEYS))
        dpp = np.where(main, np.abs(breakdown.data["delta_percent_points"]), -1.0)
        i = int(np.argmax(dpp))
        if dpp[i] >= VERDICT_CATEGORY_MIN_POINTS:
            b, cnd = breakdown.data["base_percent"][i], breakdown.data["cand_percent"][i]
            label = str(breakdown.data["label"][i]).lower()
            clauses.append(f"{label} {'fell' if cnd < b else 'rose'} from {b:.0f} % to {cnd:.0f} % of step time")
    if ops is not None and ops.n_rows and not identical:
        # Runs whose op names differ (another model scope, a renamed layer) are compared by op type.
        table, what = (ops, "operation") if _shared_share(ops) >= 0.5 or op_types is None else (op_types, "type")
        per_step = not np.all(np.isnan(table.data["delta_per_step_us"]))
        col = "delta_per_step_us" if per_step else "delta_total_self_time_us"
        v = np.nan_to_num(np.asarray(table.data[col], np.float64))
        i = int(np.argmax(np.abs(v)))
        if v[i] != 0:
            status = str(table.data["status"][i])
            what_new = {"added": " (new)", "removed": " (gone)"}.get(status, "")
            label = "op type " if what == "type" else ""
            clauses.append(f"largest op change: {label}{_short(str(table.data[what][i]))}{what_new} "
                           f"{'+' if v[i] > 0 else '-'}{_fmt_us(abs(float(v[i])))}{'/step' if per_step else ''}")
    if op_types is not None and op_types.n_rows:
        # The candidate's biggest op type on its busiest side (device when it has one).
        sides = op_types.data["host_or_device"]
        present = op_types.data["status"] != "removed"
        side = "Device" if np.any(present & (sides == "Device")) else "Host"
        sel = present & (sides == side)
        if sel.any():
            per_step = not np.all(np.isnan(op_types.data["cand_per_step_us"][sel]))
            v = np.nan_to_num(op_types.data["cand_per_step_us" if per_step else "cand_total_self_time_us"])
            v = np.where(sel, v, -1.0)
            i = int(np.argmax(v))
            total = float(np.sum(v[sel]))
            share = 100.0 * v[i] / total if total > 0 else 0.0
            remaining = "" if identical else "remaining "
            clauses.append(f"{_short(str(op_types.data['type'][i]))} is the largest {remaining}op "
                           f"({share:.0f} % of {side.lower()} op time)")
    details.extend(clauses)
    summary = head
    if clauses:
        summary = f"{head}{'; ' if ': ' in head else ': '}{'; '.join(clauses)}"
    return {"kind": kind, "summary": summary, "details": details if change is not None else [head, *clauses]}


# --- the comparison -------------------------------------------------------------------------

def compare(base: SideInput, cand: SideInput, confidence: float = cs.DEFAULT_CONFIDENCE) -> CompareResult:
    if not 0.5 <= confidence < 1.0:
        raise OptionError(f"confidence={confidence} must be in [0.5, 1)")
    unavailable: dict[str, str] = {}
    for name, side in (("baseline", base), ("candidate", cand)):
        for section, why in side.unavailable.items():
            unavailable[section] = f"{name}: {why}" if section not in unavailable else unavailable[section] + \
                f"; {name}: {why}"
    bs, cs_ = side_steps(base), side_steps(cand)
    notes: list[str] = []
    why_no_steps = ""
    for name, side, st in (("baseline", base, bs), ("candidate", cand, cs_)):
        if st is None:
            why_no_steps = why_no_steps or f"the {name} ({side.kind}) has no step analysis"
        elif st.n == 0:
            diag = (side.overview or {}).get("steps", {}).get("diagnosis", "")
            why_no_steps = why_no_steps or f"no steps were found in the {name}" + (f" ({diag})" if diag else "")
    if why_no_steps:
        unavailable.setdefault("step_time", why_no_steps)
    change = step_change(bs, cs_, confidence)
    tables: dict[str, Table] = {"steps": steps_table(bs, cs_)}
    breakdown = None
    breakdown_summary: BreakdownVerdicts = {}
    if bs is not None and cs_ is not None and bs.n and cs_.n:
        if bs.category_ms and cs_.category_ms:
            breakdown, breakdown_summary = breakdown_table(bs, cs_)
            tables["breakdown"] = breakdown
        else:
            who = " and ".join(f"the {n} ({s.kind})" for n, s, st in (("baseline", base, bs), ("candidate", cand, cs_))
                               if not st.category_ms)
            unavailable["breakdown"] = f"{who} has no step breakdown"
    if base.steps or cand.steps:
        notes.append("the step selection restricts step time and breakdown only; op, kernel and memory tables "
                     "cover each whole profile")
    def joinable(section: str) -> bool:
        return section not in base.missing and section not in cand.missing

    if (base.op_stats or cand.op_stats) and joinable("ops"):
        tables.update(ops_tables(base, cand, bs, cs_))
    if (base.kernel_stats or cand.kernel_stats) and joinable("kernels"):
        tables["kernels"] = kernels_table(base, cand, bs, cs_)
    trace_diff: TraceDiffSummary | None = None
    if base.op_summary is not None and cand.op_summary is not None:
        if base.op_summary.iteration is None or cand.op_summary.iteration is None:
            unavailable["trace_diff"] = "no ProfilerStep iteration in " + " and ".join(
                n for n, s in (("the baseline", base), ("the candidate", cand))
                if s.op_summary is not None and s.op_summary.iteration is None)
        else:
            tables["trace_diff"], changes = trace_diff_table(base.op_summary, cand.op_summary)
            trace_diff = {"baseline_iteration": base.op_summary.iteration,
                          "candidate_iteration": cand.op_summary.iteration,
                          "baseline_iterations": list(base.op_summary.iterations),
                          "candidate_iterations": list(cand.op_summary.iterations), "changes": changes}
    memory_summary: MemoryPeaks = {}
    if (base.memory or cand.memory) and joinable("memory"):
        mt, memory_summary = memory_tables(base, cand)
        tables.update(mt)
    for name, side, st in (("baseline", base, bs), ("candidate", cand, cs_)):
        if side.op_stats and (st is None or not st.profiled_steps or not any(st.profiled_steps.values())):
            notes.append(f"the {name} has no steps: op times per step are empty and ops are ordered by the change "
                         "of their total time")
    identical = (change is not None and np.array_equal(bs.step_time_ms, cs_.step_time_ms)  # type: ignore[union-attr]
                 and _tables_identical({k: v for k, v in tables.items() if k != "steps"}))
    v = verdict(change, breakdown, tables.get("op_types"), tables.get("ops"), identical, why_no_steps)
    overlap_counts, warnings = overlap(tables)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "compare",
        "baseline": base.describe(bs),
        "candidate": cand.describe(cs_),
        "confidence": confidence,
        "verdict": v,
        "step_time": change,
        "step_time_series": {
            "baseline": {"step": bs.names if bs else [], "step_num": bs.step_nums if bs else [],
                         "step_time_ms": bs.step_time_ms if bs else []},
            "candidate": {"step": cs_.names if cs_ else [], "step_num": cs_.step_nums if cs_ else [],
                          "step_time_ms": cs_.step_time_ms if cs_ else []},
        },
        "breakdown": breakdown_summary,
        "memory": memory_summary,
        "trace_diff": trace_diff,
        "identical": identical,
        "unavailable": unavailable,
        "notes": notes,
        # Keys found on both sides of the op and kernel tables; warnings when few are.
        "overlap": overlap_counts,
        "warnings": warnings,
        "tables": tables,
    }
