"""Parent/child relations of the events of a plane, from the nesting depth the store keeps.

Events of a plane are sorted by (line, start, -duration) and ``depth`` counts the events of
the same line that still enclose an event's start, so an event's parent is the closest
earlier row one level up (a line always starts at depth 0, so that row is on the same
line): one compiled pass over the rows (``_core/kernels.depth_parents``).
"""

from __future__ import annotations

import numpy as np

from tbprof._core.kernels import depth_parents
from tbprof.store.tables import Plane


def parent_rows(plane: Plane) -> np.ndarray:
    """Row of each event's enclosing event (-1 at depth 0)."""
    # The plane's rows as one line: the nearest earlier row one level up is on the event's own line.
    return depth_parents(plane.depth, np.array([0, plane.n_events], dtype=np.int64))


def self_time_ps(plane: Plane, parent: np.ndarray, include: np.ndarray | None = None) -> np.ndarray:
    """Duration minus the durations of the direct children (``include``: which children count)."""
    dur = np.asarray(plane.dur_ps, dtype=np.int64)
    child = parent >= 0 if include is None else (parent >= 0) & include
    taken = np.zeros(plane.n_events, dtype=np.int64)
    np.add.at(taken, parent[child], dur[child])
    return np.maximum(dur - taken, 0)


