"""overview_page: run environment, step-time summary and breakdown, top ops, recommendation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.metrics import metric_json
from tbprof.analyses.ops import kineto_ops
from tbprof.analyses.ops.headline import collectives_metric, idle_metric
from tbprof.analyses.ops.kernel_stats import tensorcore_by_op, tensorcore_rules_match
from tbprof.analyses.ops.op_time import OpTimes, eager_percent, op_times
from tbprof.analyses.ops.precision import Precision, device_precision
from tbprof.analyses.overview.environment import run_environment
from tbprof.analyses.results.common import Diagnostics, MetricJson
from tbprof.analyses.results.whole_run import (
    NextStep,
    OverviewRecommendation,
    OverviewResult,
    PrecisionJson,
)
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.steps.advice import framework_of, input_advice
from tbprof.analyses.steps.assignment import has_steps_data
from tbprof.analyses.steps.table import StepTable, analysis, step_table, steps_table, summaries
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import ProfileStore
from tbprof.store.view import StoreView

TOP_OPS = 10
# Below this share of 16-bit device compute the overview suggests bf16/fp16 (a run mostly in
# 16-bit gains little from the advice).
PRECISION_ADVICE_BELOW_PERCENT = 50.0


def top_ops_table(t: OpTimes, n: int = TOP_OPS, tensorcore_by_op: dict[str, tuple[int, int]] | None = None) -> Table:
    k = min(n, t.n_ops)
    total = float(t.total_op_time_ps) or 1.0
    self_ps = t.self_time_ps[:k].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Unknown (null), not 0, when the profile carries no FLOP counts for the op.
        flop_rate = np.where((self_ps > 0) & (t.flops[:k] > 0), t.flops[:k] / (self_ps / 1e12) / 1e9, np.nan)
    tc_pct = np.full(k, np.nan)
    if tensorcore_by_op and t.side == "device":
        for i, op in enumerate(t.name[:k].tolist()):
            hit = tensorcore_by_op.get(op)
            if hit and hit[0] > 0:
                tc_pct[i] = 100.0 * hit[1] / hit[0]
    cols = [Column("rank", "Rank", "int"), Column("name", "Operation", "str"), Column("type", "Category", "str"),
            Column("occurrences", "Occurrences", "int"), Column("self_time_us", "Self time", "float", "us"),
            Column("self_time_percent", "Self time", "float", "%",
                   f"share of all {t.side} op self time (idle excluded)"),
            Column("cumulative_percent", "Cumulative", "float", "%"),
            Column("flop_rate_gflops_per_sec", "FLOP rate", "float", "GFLOP/s",
                   "empty when the profile has no FLOP counts for the op"),
            Column("tensor_core_utilization_percent", "TensorCore use", "float", "%",
                   "share of the op's GPU kernel time in TensorCore kernels (empty: no GPU kernels, or none "
                   "of the run's ops and kernels matches XProf's TensorCore rules)")]
    pct = 100.0 * self_ps / total
    return Table.from_columns(cols, {
        "rank": np.arange(1, k + 1), "name": t.name[:k], "type": t.type[:k], "occurrences": t.occurrences[:k],
        "self_time_us": self_ps / 1e6, "self_time_percent": pct, "cumulative_percent": np.cumsum(pct),
        "flop_rate_gflops_per_sec": flop_rate, "tensor_core_utilization_percent": tc_pct}, default_sort=None)


def _precision(stores: Sequence[StoreView], st: StepTable) -> PrecisionJson:
    """Device compute precision with its source (analyses/ops/precision.py); null when unknown."""
    c16 = float(np.sum(st.category_ms.get("device_compute_16bit_ms", 0.0)))
    c32 = float(np.sum(st.category_ms.get("device_compute_32bit_ms", 0.0)))
    unknown = float(np.sum(st.category_ms.get("device_compute_unknown_precision_ms", 0.0)))
    p = device_precision(stores, c16, c32, unknown) if st.has_device else Precision("unknown", None, None)
    return {"device_compute_16bit_percent": p.percent_16bit, "device_compute_32bit_percent": p.percent_32bit,
            "device_compute_precision_source": p.source}


def next_steps(rec: OverviewRecommendation, has_device: bool, uses_tf_data: bool) -> list[NextStep]:
    """Where to look next: the tbprof page that shows the cause of the verdict."""
    out: list[NextStep] = []
    if rec["input_bound"] in ("high", "moderate", "potential"):
        out.append({"tool": "input_pipeline_analyzer", "why": "see which input operations take the time "
                    "(host side) and how long each step waits for input (device side)"})
        if uses_tf_data:
            out.append({"tool": "tf_data_bottleneck_analysis", "why": "find the slowest tf.data iterator and "
                        "how to speed it up"})
    if rec["kernel_launch_bottleneck"] != "no":
        out.append({"tool": "trace_viewer", "why": "look at the host threads launching kernels"})
    if rec["device_collectives_bottleneck"] != "no":
        out.append({"tool": "pod_viewer", "why": "compare collective time across devices and hosts"})
    out.append({"tool": "framework_op_stats", "why": f"find the most expensive operations on the "
                f"{'device' if has_device else 'host'}"})
    out.append({"tool": "trace_viewer", "why": "look at one step on the timeline"})
    seen: set[str] = set()
    return [x for x in out if not (x["tool"] in seen or seen.add(x["tool"]))]  # type: ignore[func-returns-value]


def diagnostics(stores: Sequence[StoreView], st: StepTable, options: Mapping[str, Any]) -> Diagnostics:
    errors = [f"{s.host}: {e}" for s in stores for e in s.errors]
    warnings = [f"{s.host}: {w}" for s in stores for w in s.warnings]
    info = list(st.notes)
    if st.diagnosis:
        warnings.append(st.diagnosis)
    if st.source == "inferred":
        info.append(f"Steps inferred: {st.detail}")
    return {"errors": errors, "warnings": warnings, "info": info}


def overview_metrics(stores: Sequence[StoreView], percent: Mapping[str, float], has_step_time: bool,
                     has_device: bool) -> list[MetricJson]:
    """The device idle and communication shares by each definition the pages use, so the
    overview puts them side by side with their windows (one headline, one explained panel)."""
    out: list[MetricJson] = []
    if has_step_time:
        out += [metric_json("device_idle_of_step_time", percent["idle_percent"]),
                metric_json("device_collectives_of_step_time", percent["device_collectives_percent"])]
    if has_device:
        out += [idle_metric(stores, "device"), collectives_metric(stores)]
    return out


def compute(stores: Sequence[StoreView], options: Mapping[str, Any]) -> OverviewResult:
    st = step_table(stores)
    summ = summaries(st)
    side = "device" if st.has_device else "host"
    ops = op_times(stores, side)
    host_ops, dev_ops = op_times(stores, "host"), op_times(stores, "device")
    uses_tf_data = bool(np.any(host_ops.type == "Dataset")) if host_ops.n_ops else False
    pytorch = bool(stores) and all(kineto_ops.is_kineto(s) for s in stores)
    ana = analysis(st, input_advice=input_advice(framework_of(pytorch, uses_tf_data)))
    op_total = host_ops.total_op_time_ps + dev_ops.total_op_time_ps
    host_count, dev_count = int(host_ops.occurrences.sum()), int(dev_ops.occurrences.sum())
    env = run_environment(stores)
    prec = _precision(stores, st)
    precision_statement = ""
    low = prec["device_compute_16bit_percent"]
    if low is not None and low < PRECISION_ADVICE_BELOW_PERCENT:
        precision_statement = (f"{low:.1f}% of device compute runs in 16-bit precision; where accuracy allows, "
                               "bf16/fp16 ops run faster and use less memory.")
    recommendation: OverviewRecommendation = {
        "bottleneck": ana["input_classification"], "input_bound": ana["input_bound"],
        "input_bound_reason": ana["input_bound_reason"],
        "statement": ana["input_statement"],
        "kernel_launch_bottleneck": ana["kernel_launch_bottleneck"],
        "kernel_launch_statement": ana["kernel_launch_statement"],
        "all_other_bottleneck": ana["all_other_bottleneck"], "all_other_statement": ana["all_other_statement"],
        "device_collectives_bottleneck": ana["device_collectives_bottleneck"],
        "device_collectives_statement": ana["device_collectives_statement"],
        "precision_statement": precision_statement,
        # The thresholds behind input_bound, so a page colours its cards by the same rule.
        "input_thresholds_percent": sb.INPUT_THRESHOLDS_PERCENT,
        "causes": ana["causes"],
        "next_steps": [],
    }
    if st.source == "none":
        recommendation["statement"] = st.diagnosis or recommendation["statement"]
    recommendation["next_steps"] = next_steps(recommendation, st.has_device, uses_tf_data)
    # Shares of step time (analyses/metrics.py); a host-only run has no device to be idle.
    has_step_time = st.has_device and float(np.sum(st.step_time_ms)) > 0
    # A TensorCore share only where XProf's rules recognise something in the run (else unknown,
    # not 0 %: kernel_stats.TENSORCORE_UNJUDGED_NOTE).
    judged = ops.side == "device" and tensorcore_rules_match(stores)
    timed = ana["input_classification"] != "unknown"  # a step time to share out
    return {
        "schema_version": SCHEMA_VERSION, "tool": "overview_page",
        "hosts": st.hosts, "steps": st.steps_json(), "run_environment": env,
        "performance_summary": {
            "step_time_ms": summ["step_time_ms"],
            "breakdown_ms": {k: summ[k] for k in (*sb.CATEGORY_KEYS, "host_wait_input_ms", "host_to_device_ms")},
            "percent_of_step_time": ana["percent"] if timed else dict.fromkeys(ana["percent"]),
            "input_percent": ana["percent"]["input_percent"] if timed else None,
            "host_op_time_percent": 100.0 * host_ops.total_op_time_ps / op_total if op_total else 0.0,
            "device_op_time_percent": 100.0 * dev_ops.total_op_time_ps / op_total if op_total else 0.0,
            # XProf's op placement (host_tf_op_percent / device_tf_op_percent): shares of op executions.
            "host_op_count_percent": 100.0 * host_count / (host_count + dev_count) if host_count + dev_count else 0.0,
            "device_op_count_percent": 100.0 * dev_count / (host_count + dev_count) if host_count + dev_count else 0.0,
            "host_op_time_eager_percent": eager_percent(stores, "host"),
            "device_op_time_eager_percent": eager_percent(stores, "device") if st.has_device else 0.0,
            **prec,
        },
        "step_time_graph": {"step": st.names, "step_time_ms": st.step_time_ms,
                            # The host each step's bar comes from (all hosts: the slowest one).
                            "host": st.critical_host,
                            **{k: st.category_ms.get(k, np.zeros(0)) for k in sb.CATEGORY_KEYS}},
        "top_ops_side": ops.side,
        "recommendation": recommendation,
        "diagnostics": diagnostics(stores, st, options),
        "metrics": overview_metrics(stores, ana["percent"], has_step_time, st.has_device),
        "tables": {"steps": steps_table(st), "top_ops": top_ops_table(
            ops, tensorcore_by_op=tensorcore_by_op(stores) if judged else None)},
    }


def _available(store: ProfileStore) -> bool:
    return has_steps_data(store)


TOOLS = (
    Tool(
        name="overview_page", title="Overview", compute=compute, compute_partials=compute, available=_available,
        multi_host=True,
        description="Step time and what it is spent on, top operations and a recommendation.",
        result=OverviewResult, needs=frozenset({"framework_ops"}),
        requires="step markers (a step-annotated training loop) and the ops that ran in each step.",
        how_to=rec.STEP_MARKERS,
    ),
)
