"""smart_suggestion: rule-based advice from the other analyses, each with the numbers that
triggered it and the page that shows them (XProf's "Smart Suggestions" tool).

Every rule and threshold is in docs/formulas.md "Smart suggestions"; the rules read the
results of overview_page, kernel_stats, memory_profile and hlo_stats, so a suggestion never
says something those pages do not show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from tbprof.analyses.gpu.distributed import has_collectives
from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import kernel_stats, kineto_ops
from tbprof.analyses.ops.headline import collectives_metric, idle_metric
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.overview import overview
from tbprof.analyses.results.common import MetricJson
from tbprof.analyses.results.whole_run import Severity, SmartSuggestionResult, Suggestion
from tbprof.analyses.steps.advice import framework_of, input_advice
from tbprof.analyses.steps.table import analysis, step_table
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import ProfileStore

# Thresholds (docs/formulas.md "Smart suggestions").
INPUT_HIGH_PERCENT = 20.0  # XProf's "highly input-bound" step-time share
INPUT_MODERATE_PERCENT = 5.0  # XProf's "moderately input-bound"
KERNEL_LAUNCH_PERCENT = 10.0  # step time the host spends launching kernels
TENSORCORE_MIN_PERCENT = 50.0  # of TensorCore-eligible kernel time that used TensorCores
LOW_OCCUPANCY_PERCENT = 25.0  # a kernel's theoretical occupancy
LOW_OCCUPANCY_TIME_PERCENT = 10.0  # share of kernel time in low-occupancy kernels
FRAGMENTATION_FRACTION = 0.5  # free memory that is not one block at the peak
COLLECTIVES_PERCENT = 20.0  # of device op self time in collectives
IDLE_PERCENT = 30.0  # of the device time span with no op running


# What each rule found, as a heading for people: a rule id means nothing to a reader.
RULE_TITLES = {
    "input_bound": "The steps wait for input",
    "kernel_launch_overhead": "Launching kernels takes much of the step",
    "low_tensorcore_use": "TensorCore-eligible kernels run without TensorCores",
    "low_occupancy_kernels": "Kernels with low occupancy",
    "memory_fragmentation": "Fragmented device memory",
    "collectives_share": "Much device time in collectives",
    "idle_device": "The devices are often idle",
}


def _suggestion(rule: str, severity: Severity, message: str, page: str, evidence: dict[str, Any]) -> Suggestion:
    return {"rule": rule, "title": RULE_TITLES[rule], "severity": severity, "message": message, "page": page,
            "evidence": evidence}


def _input_and_launch(stores: Sequence[ProfileStore], out: list[Suggestion]) -> None:
    if not any(overview.TOOLS[0].available(s) for s in stores):
        return
    # The overview's step-time shares (performance_summary.percent_of_step_time), without the
    # rest of the overview page.
    st = step_table(stores)
    if st.step_time_ms.shape[0] == 0:
        return
    pct = analysis(st)["percent"]
    advice = input_advice(framework_of(all(kineto_ops.is_kineto(s) for s in stores), False))
    inp = float(pct.get("input_percent", 0.0))
    if inp >= INPUT_MODERATE_PERCENT:
        high = inp >= INPUT_HIGH_PERCENT
        out.append(_suggestion(
            "input_bound", "high" if high else "medium",
            f"{inp:.1f} % of the step time waits for input: the program is "
            f"{'highly' if high else 'moderately'} input-bound. {advice}",
            "input_pipeline_analyzer", {"input_percent": inp}))
    launch = float(pct.get("kernel_launch_percent", 0.0))
    if launch >= KERNEL_LAUNCH_PERCENT:
        out.append(_suggestion(
            "kernel_launch_overhead", "medium",
            f"{launch:.1f} % of the step time is the host launching kernels: the device waits for the host. "
            "Fuse small ops (XLA/jit), use CUDA graphs, or make the batch larger.",
            "overview_page", {"kernel_launch_percent": launch}))


def _kernels(stores: Sequence[ProfileStore], out: list[Suggestion]) -> None:
    if not any(kernel_stats.TOOLS[0].available(s) for s in stores):
        return
    table = kernel_stats.hosts_table(stores)
    if table.n_rows == 0:
        return
    dur = table.data["total_duration_us"]
    on_tc = np.array([kernel_stats.kernel_on_tensorcores(str(n)) for n in table.data["kernel_name"]], dtype=bool)
    eligible = float(dur[table.data["op_tensorcore_eligible"].astype(bool) | on_tc].sum())
    # A share of TensorCore use that cannot be determined is no reason for advice.
    if eligible > 0 and not kernel_stats.tensorcore_undetermined_note(table):
        tc_pct = 100.0 * float(dur[on_tc].sum()) / eligible
        if tc_pct < TENSORCORE_MIN_PERCENT:
            out.append(_suggestion(
                "low_tensorcore_use", "medium",
                f"Only {tc_pct:.1f} % of the TensorCore-eligible kernel time ran on TensorCores. "
                "Use 16-bit inputs (bf16/fp16) and dimensions that are multiples of 8.",
                "kernel_stats", {"tensorcore_percent_of_eligible": tc_pct, "eligible_us": eligible}))
    total = float(dur.sum())
    if total > 0:
        low = table.data["occupancy_pct"] < LOW_OCCUPANCY_PERCENT
        low_us = float(table.data["total_duration_us"][low].sum())
        share = 100.0 * low_us / total
        if share >= LOW_OCCUPANCY_TIME_PERCENT:
            worst = int(np.argmax(np.where(low, table.data["total_duration_us"], -1.0)))
            out.append(_suggestion(
                "low_occupancy_kernels", "low",
                f"{share:.1f} % of the kernel time is in kernels with theoretical occupancy under "
                f"{LOW_OCCUPANCY_PERCENT:.0f} % (largest: {table.data['kernel_name'][worst]}). Check their block size, "
                "registers and shared memory.",
                "kernel_stats", {"low_occupancy_time_percent": share, "low_occupancy_us": low_us}))


def _memory(stores: Sequence[ProfileStore], out: list[Suggestion]) -> None:
    store = stores[0]
    # The allocator events only (memoised with the memory profile); the rule needs no step ids.
    for mid, events in sorted(memory_profile.memory_events(store).items()):
        frag = memory_profile.peak_fragmentation(events)
        if frag >= FRAGMENTATION_FRACTION:
            out.append(_suggestion(
                "memory_fragmentation", "medium",
                f"At the memory peak of {mid}, {100 * frag:.0f} % of the free memory is not in its largest free "
                "block: allocations of mixed sizes fragment the heap.",
                "memory_profile", {"memory_id": mid, "peak_fragmentation_fraction": frag}))


def _device(stores: Sequence[ProfileStore], out: list[Suggestion], metrics: list[MetricJson]) -> None:
    db = hosts_op_metrics(stores, "device")
    if db.n_ops == 0 or db.total_time_ps <= 0:
        return
    # The same metric entries (analyses/metrics.py) framework op stats and op profile show.
    coll, idle = collectives_metric(stores), idle_metric(stores, "device")
    metrics.extend((idle, coll))
    share = coll["value_percent"]
    if share is not None and share >= COLLECTIVES_PERCENT:
        out.append(_suggestion(
            "collectives_share", "medium",
            f"Collectives (all-reduce, all-gather, ...) take {share:.1f}% {coll['of']}. Overlap them with "
            "compute, shard differently or communicate in lower precision.",
            # A PyTorch run's collectives are on the Collectives page (it has no HLO).
            "collectives" if any(has_collectives(s) for s in stores) else "hlo_stats", {coll["key"]: share}))
    idle_pct = idle["value_percent"]
    if idle_pct is not None and idle_pct >= IDLE_PERCENT:
        out.append(_suggestion(
            "idle_device", "high" if idle_pct >= 2 * IDLE_PERCENT else "medium",
            f"The devices are idle {idle_pct:.1f}% {idle['of']}: the host does not feed them work fast "
            "enough (input, Python, synchronisation). The trace viewer shows the gaps.",
            "trace_viewer", {idle["key"]: idle_pct, "device_time_us": db.total_time_ps / 1e6}))


SUGGESTION_COLUMNS = [
    Column("rule", "Rule", "str"), Column("severity", "Severity", "str", "", "high, medium or low"),
    Column("page", "Page", "str", "", "the tool that shows the numbers"), Column("message", "Suggestion", "str"),
    Column("evidence", "Evidence", "str", "", "the numbers that triggered the rule, as JSON"),
]


def _table(found: list[Suggestion]) -> Table:
    by_key: Sequence[Mapping[str, object]] = found
    values: dict[str, list[Any]] = {c.name: [s[c.name] for s in by_key] for c in SUGGESTION_COLUMNS[:-1]}
    values["evidence"] = [json.dumps(s["evidence"], sort_keys=True) for s in found]
    return Table.from_columns(SUGGESTION_COLUMNS, values)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> SmartSuggestionResult:
    # The rules that need no step assignment run first: right after a store loads, the background
    # warm-up (service/tools.warmups) is deriving the steps meanwhile, on the other core, and the
    # step rule then finds them memoised instead of waiting for them before starting the rest.
    fired: dict[str, list[Suggestion]] = {}
    metrics: list[MetricJson] = []
    for name, rule in (("kernels", _kernels), ("memory", _memory), ("device", partial(_device, metrics=metrics)),
                       ("steps", _input_and_launch)):
        fired[name] = []
        rule(stores, fired[name])
    found = fired["steps"] + fired["kernels"] + fired["memory"] + fired["device"]
    rank = {"high": 0, "medium": 1, "low": 2}
    found.sort(key=lambda s: rank[s["severity"]])
    return {"schema_version": SCHEMA_VERSION, "tool": "smart_suggestion",
            "host": stores[0].host if len(stores) == 1 else None, "hosts": [s.host for s in stores],
            "suggestions": found, "metrics": metrics,
            "rules": ["input_bound", "kernel_launch_overhead", "low_tensorcore_use", "low_occupancy_kernels",
                      "memory_fragmentation", "collectives_share", "idle_device"],
            "message": "" if found else "No rule fired: nothing stands out in this profile.",
            "tables": {"suggestions": _table(found)}}


TOOLS = (
    Tool(
        name="smart_suggestion", title="Smart suggestions", compute=compute, multi_host=True,
        description="Rule-based suggestions with the numbers that triggered them and the page that shows them.",
        result=SmartSuggestionResult, needs=frozenset({"xplane"}),
        requires="any XSpace profile: the rules read the overview, kernel stats, memory profile and HLO op stats.",
        how_to=("Any TensorFlow or JAX profile.",),
    ),
)
