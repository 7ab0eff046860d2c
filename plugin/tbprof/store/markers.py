"""Names the readers write into the store and the analyses read back (one place for both sides)."""

from __future__ import annotations

import re

from tbprof.store.tables import Plane

# Plane stat of Chrome-trace planes: the lines that hold counter samples ("C" events), not slices.
COUNTER_LINES_STAT = "counter_lines"
# Event stats of Chrome-trace flow events (arrows between slices).
FLOW_ID_STAT = "flow_id"
FLOW_CATEGORY_STAT = "flow_category"

_STEP_IN_NAME = re.compile(r"(\d+)(?!.*\d)")


def is_counter_line(plane: Plane, line: int) -> bool:
    """Whether line ``line`` of a Chrome-trace plane holds counter samples, not slices."""
    return line in plane.plane_stats.get(COUNTER_LINES_STAT, ())


def step_of(host: str) -> int | None:
    """The step in a step file's host name: its last number (``timeline-12`` -> 12, ``x.json_3`` -> 3)."""
    m = _STEP_IN_NAME.search(host)
    return int(m.group(1)) if m else None
