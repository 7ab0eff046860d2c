"""KPI metrics: the few numbers a run is judged by, each from the tool that computes it, as XProf
2.24.2's agent CLI ``get_kpi_metrics`` gathers them (docs/formulas.md, "KPI metrics"):

* ``step_time_ms``: the average step time of ``overview_page`` (None without steps);
* ``roofline_utilization_percent``: the program row of ``roofline_model``: max(measured FLOP rate /
  peak FLOP rate, HBM bandwidth / peak HBM bandwidth), the FLOPs and bytes of XLA's cost model
  (None without HLO ops: PyTorch, TensorFlow on CPU);
* ``mfu_percent`` (model FLOPs utilization): the program's measured FLOP rate / the device's peak
  FLOP rate (``roofline_model``'s compute efficiency), where the FLOPs are known (XLA's cost model);
* ``peak_memory_bytes``: the largest peak in use of the host's allocators (``memory_profile``),
  the allocator named: XProf's ``peak_hbm_gib`` takes the same maximum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tbprof.analyses import recording as rec
from tbprof.analyses.hlo import roofline_model
from tbprof.analyses.memory import memory_profile
from tbprof.analyses.overview import overview
from tbprof.analyses.results.whole_run import KpiMetricsResult, KpiSource
from tbprof.analyses.table import Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import ProfileStore

TOOL = "kpi_metrics"


def _run(tool: Tool[Any], stores: Sequence[ProfileStore]) -> dict[str, Any] | None:
    """A tool's result on the stores, or None where it has no data for them (its ``available``
    test: an XLA tool finds no HLO programs in a PyTorch store)."""
    if not all(tool.available(s) for s in stores):
        return None
    return dict(tool.compute(stores, tool.parse_options({})))


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> KpiMetricsResult:
    sources: list[KpiSource] = []
    step_time_ms = roofline = mfu = None
    ov = _run(overview.TOOLS[0], stores)
    if ov is not None:
        avg = ov.get("performance_summary", {}).get("step_time_ms", {}).get("avg")
        if isinstance(avg, (int, float)) and ov.get("steps", {}).get("step_count", 0) > 0:
            step_time_ms = float(avg)
    sources.append({"metric": "step_time_ms", "tool": "overview_page",
                    "why_missing": None if step_time_ms is not None else "no steps found"})
    rm = _run(roofline_model.TOOLS[0], stores)
    table = rm.get("tables", {}).get("roofline") if rm is not None else None
    if isinstance(table, Table) and table.n_rows:
        program = [i for i, op in enumerate(table.data["operation"].tolist()) if op == "Program"]
        if program:
            roofline = 100.0 * float(table.data["roofline_efficiency"][program[0]])
            mfu = 100.0 * float(table.data["compute_efficiency"][program[0]])
    why = None if roofline is not None else "no HLO ops with cost (XLA programs only)"
    sources.append({"metric": "roofline_utilization_percent", "tool": "roofline_model", "why_missing": why})
    sources.append({"metric": "mfu_percent", "tool": "roofline_model", "why_missing": why})
    peak_bytes: int | None = None
    peak_allocator: str | None = None
    mp = _run(memory_profile.TOOLS[0], stores[:1])
    for memory_id, summary in (mp or {}).get("allocators", {}).items():
        peak = summary.get("peak_bytes_in_use")
        if isinstance(peak, int) and peak > 0 and (peak_bytes is None or peak > peak_bytes):
            peak_bytes, peak_allocator = peak, str(memory_id)
    sources.append({"metric": "peak_memory_bytes", "tool": "memory_profile",
                    "why_missing": None if peak_bytes is not None else "no allocator events"})
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for s in stores],
        "step_time_ms": step_time_ms, "roofline_utilization_percent": roofline, "mfu_percent": mfu,
        "peak_memory_bytes": peak_bytes, "peak_memory_allocator": peak_allocator, "sources": sources,
    }


TOOLS = (
    Tool(
        name=TOOL, title="KPI metrics", compute=compute,
        description="XProf's get_kpi_metrics: step time, roofline utilization, model FLOPs utilization and peak "
                    "memory, each with the tool that computed it.",
        result=KpiMetricsResult, needs=frozenset({"step_markers"}),
        requires="step markers for the step time; XLA programs for the roofline utilization and MFU; allocator events"
                 " for the peak memory.",
        how_to=rec.STEP_MARKERS,
    ),
)
