"""tfprof_advice: the checks of tfprof's advisor (``Profiler.advise()``) that a ProfileProto supports.

* accelerator utilisation: per accelerator device, kernel time over the span from the
  earliest op start to the latest op end of the last traced step (tfprof's definition);
  at least 50 % is fine, below it is low.
* expensive operations: the op types, top-level name scopes and Python call sites that
  take the most time (averaged over the traced steps), found with the same view queries
  tfprof's checker runs.
* known faster alternatives: BatchNorm built from primitive ops where the fused kernel
  exists; NHWC convolutions placed on a GPU, where NCHW is usually faster.

The findings carry the numbers; the sentences are tbprof's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.results.tf1_tfprof import (
    AcceleratorUse,
    AdviceCheck,
    Alternative,
    ExpensiveCallSite,
    ExpensiveOpType,
    ExpensiveScope,
    TfprofAdviceResult,
)
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tfprof.tfprof_engine import METRICS, ViewOptions, show_view
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tfprof import TfprofProfile

TOOL = "tfprof_advice"
GOOD_UTILIZATION = 0.5
EXPENSIVE_CALL_SITE_MICROS = 1000

_EXEC = METRICS.index("exec_micros")
_ACC = METRICS.index("accelerator_exec_micros")
_CPU = METRICS.index("cpu_exec_micros")


def _on_accelerator(device: str) -> bool:
    return "gpu" in device.lower()


def accelerator_utilization(p: TfprofProfile) -> list[AcceleratorUse]:
    """Per accelerator device: busy / span of the last step each op ran in (tfprof's measure)."""
    ex = p.execs
    if len(ex) == 0:
        return []
    # Each node's record of its latest step.
    last = np.zeros(p.n_nodes, dtype=np.int64) - 1
    order = np.lexsort((ex.step, ex.node))
    last_rows = order[np.r_[ex.node[order][1:] != ex.node[order][:-1], True]]
    last[ex.node[last_rows]] = last_rows
    per_device: dict[str, list[int]] = {}
    for g in range(p.n_nodes):
        if last[g] < 0 or not _on_accelerator(p.canonical_device[g]):
            continue
        r = last[g]
        start = int(ex.values["all_start_micros"][r])
        end = int(ex.values["latest_end_micros"][r])
        busy = int(ex.values["accelerator_exec_micros"][r])
        d = per_device.setdefault(p.canonical_device[g], [0, 0, 0])
        if d[0] == 0:
            d[0] = start
        elif start != 0:
            d[0] = min(d[0], start)
        d[1] = max(d[1], end)
        d[2] += busy
    out: list[AcceleratorUse] = []
    for device in sorted(per_device):
        start, end, busy = per_device[device]
        span = end - start
        if span <= 0:
            continue
        out.append({"device": device, "busy_us": busy, "span_us": span, "utilization": busy / span,
                    "low": busy / span < GOOD_UTILIZATION})
    return out


def expensive_op_types(p: TfprofProfile) -> list[ExpensiveOpType]:
    if not p.steps:
        return []
    result = show_view(p, "op", ViewOptions(max_depth=3, min_micros=1, order_by="micros"))
    total = result.root.total_stats[_EXEC]
    return [{"op_type": r.name, "exec_us": r.self_stats[_EXEC], "accelerator_us": r.self_stats[_ACC],
             "cpu_us": r.self_stats[_CPU], "share": r.self_stats[_EXEC] / (total + 1e-10)}
            for r in result.rows[1:4]]


def expensive_scopes(p: TfprofProfile) -> list[ExpensiveScope]:
    result = show_view(p, "scope", ViewOptions(max_depth=100, min_micros=100, order_by="micros"))
    return [{"scope": result.rows[c].name, "total_exec_us": result.rows[c].total_stats[_EXEC],
             "total_accelerator_us": result.rows[c].total_stats[_ACC],
             "total_cpu_us": result.rows[c].total_stats[_CPU], "self_exec_us": result.rows[c].self_stats[_EXEC]}
            for c in result.children[0][:3]]


def expensive_call_sites(p: TfprofProfile) -> list[ExpensiveCallSite]:
    """The costly call sites below the first place the call tree branches (tfprof's heuristic:
    library frames are usually on the single-child path, the user's own code branches)."""
    if not p.has_trace:
        return []
    result = show_view(p, "code", ViewOptions(max_depth=100, min_micros=1, order_by="micros"))
    row = 0
    while len(result.children[row]) == 1:
        row = result.children[row][0]
    out: list[ExpensiveCallSite] = []

    def visit(r: int, depth: int) -> None:  # at most 4 levels deep
        kids = result.children[r]
        if len(kids) <= 1 or depth > 3:
            return
        for c in kids[:3]:
            node = result.rows[c]
            if node.total_stats[_EXEC] < EXPENSIVE_CALL_SITE_MICROS:
                continue
            out.append({"call_site": node.name, "depth": depth, "total_exec_us": node.total_stats[_EXEC],
                        "total_accelerator_us": node.total_stats[_ACC], "total_cpu_us": node.total_stats[_CPU]})
            visit(c, depth + 1)

    visit(row, 0)
    return out


def faster_alternatives(p: TfprofProfile) -> list[Alternative]:
    findings: list[Alternative] = []
    unfused = [n for n in p.names if "BatchNorm" in n]
    # tfprof looks for the exact type FusedBatchNorm; V2/V3 are fused kernels too.
    fused = any(t.startswith("FusedBatchNorm") for types in p.op_types for t in types)
    if unfused and not fused:
        findings.append({"kind": "batch_norm", "nodes": unfused[:10], "node_count": len(unfused)})
    nhwc_gpu = [p.names[g] for g in range(p.n_nodes)
                if p.data_format[g] == "NHWC" and _on_accelerator(p.canonical_device[g])]
    if nhwc_gpu:
        findings.append({"kind": "nhwc_on_gpu", "nodes": nhwc_gpu[:10], "node_count": len(nhwc_gpu)})
    return findings


def _ms(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def compute(stores: Sequence[Any], options: Mapping[str, Any]) -> TfprofAdviceResult:
    p: TfprofProfile = stores[0]
    util = accelerator_utilization(p)
    ops = expensive_op_types(p)
    scopes = expensive_scopes(p)
    sites = expensive_call_sites(p)
    alternatives = faster_alternatives(p)
    checks: list[AdviceCheck] = []

    accel_nodes = any(_on_accelerator(d) for d in p.canonical_device)
    if not accel_nodes:
        checks.append({"check": "accelerator_utilization", "status": "not_applicable", "findings": [],
                       "text": ["No op ran on an accelerator: nothing to measure."]})
    else:
        text = [f"{u['device']}: kernels kept it busy {u['utilization']:.0%} of the last traced step "
                f"({_ms(u['busy_us'])} of {_ms(u['span_us'])})"
                + (" — low: look for input stalls, host-side work or small kernels." if u["low"] else ".")
                for u in util]
        if p.miss_accelerator_stream:
            text.append("Accelerator stream records are missing from this profile, so busy time reads as zero.")
        checks.append({"check": "accelerator_utilization",
                       "status": "warning" if any(u["low"] for u in util) or p.miss_accelerator_stream else "ok",
                       "findings": util, "text": text})

    text = []
    if ops:
        text.append("Op types that take the most time per step: " + "; ".join(
            f"{o['op_type']} {_ms(o['exec_us'])} ({o['share']:.0%})" for o in ops) + ".")
    if scopes:
        text.append("Costliest top-level name scopes: " + "; ".join(
            f"{s['scope']} {_ms(s['total_exec_us'])}" for s in scopes) + ".")
    if sites:
        text.append("Costliest Python call sites: " + "; ".join(
            f"{s['call_site']} {_ms(s['total_exec_us'])}" for s in sites) + ".")
    checks.append({"check": "expensive_operations", "status": "info" if text else "not_applicable",
                   "findings": {"op_types": ops, "scopes": scopes, "call_sites": sites},
                   "text": text or ["No step was traced: no execution times to rank."]})

    text = []
    for f in alternatives:
        if f["kind"] == "batch_norm":
            text.append(f"{f['node_count']} nodes implement batch normalisation from primitive ops; the fused "
                        "kernel (FusedBatchNorm, `fused=True`) usually runs faster.")
        else:
            text.append(f"{f['node_count']} ops on a GPU use the NHWC data format; NCHW is often faster "
                        "there with cuDNN.")
    checks.append({"check": "faster_alternatives", "status": "warning" if alternatives else "ok",
                   "findings": alternatives,
                   "text": text or ["No op with a known faster alternative was found."]})

    rows: dict[str, list[Any]] = {"check": [], "status": [], "advice": []}
    for c in checks:
        for line in c["text"]:
            rows["check"].append(c["check"])
            rows["status"].append(c["status"])
            rows["advice"].append(line)
    table = Table.from_columns([Column("check", "Check", "str"), Column("status", "Status", "str"),
                                Column("advice", "Advice", "str")], rows)
    return {"schema_version": SCHEMA_VERSION, "tool": TOOL, "steps": p.steps, "checks": checks,
            "warnings": list(p.warnings), "tables": {"advice": table}}


TOOLS = (
    Tool(
        name=TOOL, title="tfprof advice", compute=compute,
        description="tfprof's advisor checks: accelerator utilisation, expensive operations, faster alternatives.",
        result=TfprofAdviceResult, needs=frozenset({"tfprof"}),
        requires="a tfprof ProfileProto (Profiler.serialize_to_string() / ProfileContext dump).",
        how_to=("Write one with tf.compat.v1.profiler.Profiler(...).serialize_to_string().",),
    ),
)
