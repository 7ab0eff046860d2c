"""Which tools feed each part of a comparison, by what a run holds, and their results in one shape.

``compare`` reads steps like ``overview_page`` gives them, ops like ``framework_op_stats``,
kernels like ``kernel_stats`` and memory like ``memory_profile``. Runs whose hosts are their
steps (TF1 timelines, a file per step) have their own tools for the same questions
(``tf1_steps``, ``tf1_op_stats``, ``tf1_memory``); the adapters below restate their results in
the XSpace tools' shape, so a TF1 timeline run compares against an XSpace run. Parts no tool
answers for a run are reported as unavailable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tbprof.analyses.table import Column, Table
from tbprof.store.traits import Trait

# The trait a run needs for a set of sources (section -> tool), the first that the run has wins.
# Runs with marked steps (XSpace, and PyTorch through Kineto's steps, op metrics, kernel reports
# and, with profile_memory, the memory profile the memory page shows) read XProf's tools.
SOURCES: tuple[tuple[Trait, dict[str, str]], ...] = (
    ("step_files", {"steps": "tf1_steps", "ops": "tf1_op_stats", "memory": "tf1_memory"}),
    ("step_markers", {"steps": "overview_page", "ops": "framework_op_stats", "kernels": "kernel_stats",
                      "memory": "memory_profile"}),
)
# Runs whose hosts are the steps of one run (a file per step): compared as a whole.
WHOLE_RUN = "step_files"


def sources_for(traits: frozenset[str]) -> dict[str, str]:
    """Section -> tool for a run whose kind has ``traits`` (empty: nothing to compare)."""
    return next((sources for trait, sources in SOURCES if trait in traits), {})
# The host name adapted whole-run results carry (their per-step divisor is the step count).
WHOLE_RUN_HOST = "__steps__"

SECTION_NAMES = {"steps": "step time and breakdown", "ops": "op tables", "kernels": "kernel table",
                 "memory": "memory"}


def missing_reason(kind: str, section: str) -> str:
    return f"tbprof has no {SECTION_NAMES[section]} analysis for {kind} runs"


def adapt(section: str, tool: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of ``tool`` in the shape of the XSpace tool of ``section``."""
    fn = _ADAPTERS.get(tool)
    return fn(result) if fn is not None else result


def _tf1_steps(r: dict[str, Any]) -> dict[str, Any]:
    t: Table = r["tables"]["steps"]
    nums = np.asarray(t.data["step"], np.int64)
    steps = Table.from_columns(
        [Column("step", "Step", "str"), Column("step_num", "Step number", "int"),
         Column("step_time_ms", "Step time", "float", "ms")],
        {"step": [str(f) for f in t.data["file"].tolist()], "step_num": nums,
         "step_time_ms": np.asarray(t.data["step_time_ms"], np.float64)})
    n = steps.n_rows
    return {"tables": {"steps": steps},
            "steps": {"step_source": "timeline_files", "diagnosis": r.get("message", ""),
                      "per_host": [{"host": WHOLE_RUN_HOST, "step_count": n, "dropped_boundary_steps": 0}]}}


def _tf1_op_stats(r: dict[str, Any]) -> dict[str, Any]:
    # Totals over the run's steps: divided by its step count for "per step".
    return {**r, "host": WHOLE_RUN_HOST}


def _tf1_memory(r: dict[str, Any]) -> dict[str, Any]:
    t = r.get("tables", {}).get("allocators")
    allocators: dict[str, dict[str, Any]] = {}
    if isinstance(t, Table):
        for name, peak in zip(t.data["allocator"].tolist(), t.data["peak_bytes"].tolist(), strict=False):
            prev = allocators.get(str(name))
            if prev is None or peak > prev["peak_bytes_in_use"]:
                allocators[str(name)] = {"peak_bytes_in_use": int(peak), "memory_capacity_bytes": float("nan"),
                                         "peak_fragmentation_fraction": float("nan"),
                                         "num_allocations": float("nan")}
    return {"host": WHOLE_RUN_HOST, "memory_ids": sorted(allocators), "allocators": allocators,
            "memory_id": None, "tables": {}}


_ADAPTERS = {
    "tf1_steps": _tf1_steps,
    "tf1_op_stats": _tf1_op_stats,
    "tf1_memory": _tf1_memory,
}
