"""Parent/child relations of the events of a plane, from the nesting depth the store keeps.

Events of a plane are sorted by (line, start, -duration) and ``depth`` counts the events of
the same line that still enclose an event's start, so an event's parent is the closest
earlier row one level up (a line always starts at depth 0, so that row is on the same
line). One ``np.searchsorted`` per depth level: no per-event loop.
"""

from __future__ import annotations

import numpy as np

from tbprof.store.tables import Plane


def parent_rows(plane: Plane) -> np.ndarray:
    """Row of each event's enclosing event (-1 at depth 0)."""
    depth = np.asarray(plane.depth, dtype=np.int64)
    parent = np.full(plane.n_events, -1, dtype=np.int64)
    if plane.n_events == 0:
        return parent
    for d in range(1, int(depth.max()) + 1):
        rows = np.nonzero(depth == d)[0]
        above = np.nonzero(depth == d - 1)[0]
        parent[rows] = above[np.searchsorted(above, rows) - 1]
    return parent


def self_time_ps(plane: Plane, parent: np.ndarray, include: np.ndarray | None = None) -> np.ndarray:
    """Duration minus the durations of the direct children (``include``: which children count)."""
    dur = np.asarray(plane.dur_ps, dtype=np.int64)
    child = parent >= 0 if include is None else (parent >= 0) & include
    taken = np.zeros(plane.n_events, dtype=np.int64)
    np.add.at(taken, parent[child], dur[child])
    return np.maximum(dur - taken, 0)


