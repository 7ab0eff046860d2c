"""A throwaway tool, as a contributor would add one: this module, and its name in
``service/tools.py`` ``TOOL_MODULES``. It has no page of its own, so the generic page draws it.

``busiest_lines``: each plane's line with the most events, and the profile's event count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.results.common import ToolEnvelope
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import ProfileStore

TOOL = "busiest_lines"
MODULE = __name__


class BusiestLinesResult(ToolEnvelope):
    """The throwaway tool's answer: a scalar card, a table, a nested field."""

    event_count: int
    plane_count: int
    hosts: list[str]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> BusiestLinesResult:
    rows: dict[str, list[Any]] = {"host": [], "plane": [], "line": [], "event_count": []}
    for store in stores:
        for plane in store.planes:
            counts = np.diff(plane.line_offsets)
            if counts.size == 0:
                continue
            at = int(np.argmax(counts))
            rows["host"].append(store.host)
            rows["plane"].append(plane.name)
            rows["line"].append(plane.line_names[at])
            rows["event_count"].append(int(counts[at]))
    table = Table.from_columns([Column("host", "Host", "str"), Column("plane", "Plane", "str"),
                                Column("line", "Busiest line", "str"), Column("event_count", "Events", "int")],
                               rows, default_sort="event_count")
    return {"schema_version": SCHEMA_VERSION, "tool": TOOL, "event_count": sum(s.n_events for s in stores),
            "plane_count": sum(len(s.planes) for s in stores), "hosts": [s.host for s in stores],
            "tables": {"busiest_lines": table}}


TOOLS = (
    Tool(
        name=TOOL, title="Busiest lines", compute=compute, result=BusiestLinesResult, needs=frozenset({"events"}),
        multi_host=True, available=lambda store: store.n_events > 0,
        description="Each plane's line with the most events.",
        requires="timed events on some line.",
        how_to=("Any profile with events.",),
    ),
)
