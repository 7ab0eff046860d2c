"""The tool registry: every tool of every page, listed here and nowhere else.

A tool module defines ``TOOLS``: each ``Tool`` is the whole tool (compute, result type, what it
needs of a run, options, help). This list names the modules, so adding a tool is its module and
one line here (a page of its own in the frontend is optional: the generic page draws any result),
and importing a module never registers anything.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from tbprof.analyses.tool import Tool

# XProf's tool menu order first (a run's first listed tool is the page the dashboard opens: the
# dashboard lists tools in this order, and their titles, from the ``tools`` and ``settings``
# routes), then tbprof's own tools; the profile summary, which every run has, last. Modules,
# not imports: a command that needs no tool table (``tbprof summary``, ``--help``) must not pay
# for importing every page, a large share of tbprof's import time (bench/measurements.md#services).
TOOL_MODULES: tuple[str, ...] = (
    "tbprof.analyses.overview.overview",
    "tbprof.analyses.input.input_pipeline",
    "tbprof.analyses.ops.framework_op_stats",
    "tbprof.analyses.ops.kernel_stats",
    "tbprof.analyses.memory.memory_profile",
    "tbprof.analyses.pod.pod_viewer",
    "tbprof.analyses.input.tf_data",
    "tbprof.analyses.ops.op_profile",
    "tbprof.timeline.tool",
    "tbprof.analyses.hlo.hlo_stats",
    "tbprof.analyses.hlo.roofline_model",
    "tbprof.analyses.hlo.memory_viewer",
    "tbprof.analyses.hlo.peak_allocations",
    "tbprof.analyses.hlo.graph_viewer",
    "tbprof.analyses.overview.smart_suggestion",
    "tbprof.analyses.overview.kpi",
    "tbprof.analyses.inference.inference_profile",
    "tbprof.analyses.tpu.tpu_only",
    "tbprof.analyses.gpu.breakdown",
    "tbprof.analyses.gpu.counters",
    "tbprof.analyses.gpu.sequences",
    "tbprof.analyses.gpu.utilization",
    "tbprof.analyses.gpu.distributed",
    "tbprof.analyses.gpu.collective_overlap",
    "tbprof.analyses.gpu.device_time",
    "tbprof.analyses.gpu.host_boundness",
    "tbprof.analyses.gpu.stragglers",
    "tbprof.analyses.gpu.critical_path",
    "tbprof.analyses.ops.op_shapes",
    "tbprof.analyses.ops.modules",
    "tbprof.analyses.tf1.tf1_timeline",
    "tbprof.analyses.tfprof.tfprof_views",
    "tbprof.analyses.tfprof.tfprof_advice",
    "tbprof.analyses.overview.profile_summary",
)


@cache
def all_tools() -> tuple[Tool, ...]:
    """Every tool, in menu order (imports the tool modules on first use)."""
    return tuple(t for module in TOOL_MODULES for t in importlib.import_module(module).TOOLS)


@cache
def _by_name() -> dict[str, Tool]:
    by_name = {t.name: t for t in all_tools()}
    by_name.update({alias: t for t in all_tools() for alias in t.aliases})
    return by_name


@cache
def partial_tools() -> frozenset[str]:
    """The tools that run on a pod's per-host partials (those with ``compute_partials``)."""
    return frozenset(t.name for t in all_tools() if t.compute_partials is not None)


@cache
def offered(traits: frozenset[str]) -> tuple[Tool, ...]:
    """The tools offered for a run whose kind has ``traits`` (those whose needs are among them),
    in menu order. Kept per trait set: listing 20 000 runs asks 20 000 times, for a handful of
    kinds."""
    return tuple(t for t in all_tools() if t.offered_for(traits))


def result_types() -> dict[str, type]:
    """Every tool's result type by tool id, in menu order (the tools that only answer "no data",
    whose ``result`` is None, left out): what ``scripts/gen_ts_schemas.py`` writes as
    ``ToolResults`` and the checks of real answers read."""
    return {t.name: t.result for t in all_tools() if t.result is not None}


def get(name: str) -> Tool | None:
    """The tool named ``name`` (or one of its aliases)."""
    return _by_name().get(name)


@cache
def warmups() -> tuple[Callable[[Any], None], ...]:
    """Derived values most tools of a store need: computed in the background as soon as a store
    is loaded, so the first page asked for does not wait for them."""
    from tbprof.analyses.memory import memory_profile
    from tbprof.analyses.ops import op_metrics
    from tbprof.analyses.steps import assignment

    # Steps and op metrics feed most pages; the allocator events feed the memory profile and
    # smart_suggestion, whose first request then stays within bench/ops_bench.py's target
    # (bench/measurements.md#services).
    return (assignment.warm_steps, op_metrics.warm_op_metrics, memory_profile.warm_memory)
