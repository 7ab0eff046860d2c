"""The tool registry: every tool of every page, listed here and nowhere else.

A tool module defines ``TOOLS`` (its ``Tool`` specs); this list names the modules, so adding a
page is one line here and importing a module never registers anything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tbprof.analyses.gpu import breakdown as gpu_breakdown
from tbprof.analyses.legacy import tf1_timeline, tfprof_advice, tfprof_views
from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import framework_op_stats, kernel_stats, op_metrics, op_profile
from tbprof.analyses.pages import input_pipeline, overview, pod_viewer, profile_summary, tf_data
from tbprof.analyses.steps import assignment
from tbprof.analyses.tool import Tool
from tbprof.timeline import tool as trace_viewer

# XProf's tool menu order first (a run's first listed tool is the page the dashboard opens),
# then tbprof's own tools.
TOOLS: tuple[Tool, ...] = (
    *overview.TOOLS,
    *input_pipeline.TOOLS,
    *framework_op_stats.TOOLS,
    *kernel_stats.TOOLS,
    *memory_profile.TOOLS,
    *pod_viewer.TOOLS,
    *tf_data.TOOLS,
    *op_profile.TOOLS,
    *trace_viewer.TOOLS,
    *profile_summary.TOOLS,
    *gpu_breakdown.TOOLS,
    *tf1_timeline.TOOLS,
    *tfprof_advice.TOOLS,
    *tfprof_views.TOOLS,
)

_BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}
_BY_NAME.update({alias: t for t in TOOLS for alias in t.aliases})

# Derived values most tools of a store need: computed in the background as soon as a store
# is loaded, so the first page asked for does not wait for them.
WARMUPS: tuple[Callable[[Any], None], ...] = (assignment.warm_steps, op_metrics.warm_op_metrics)


def get(name: str) -> Tool | None:
    """The tool named ``name`` (or one of its aliases)."""
    return _BY_NAME.get(name)


def all_tools() -> tuple[Tool, ...]:
    return TOOLS
