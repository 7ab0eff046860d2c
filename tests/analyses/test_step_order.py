"""The order XProf's device step marker is found in (steps/assignment.py ``_longest_runs``): by
start, then longest first, then as given, what ``np.lexsort((-dur, start))`` gives, also where a
plane's lines start events at one time with other durations (the stable sort's shortcut fails)."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof.analyses.steps.assignment import _by_start_longest_first


def _plane_order(rng: np.random.Generator, n_lines: int, per_line: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    """Events by line, each line by (start, -dur), as a plane keeps them."""
    starts, durs = [], []
    for _ in range(n_lines):
        s = rng.integers(0, span, per_line)
        d = rng.integers(0, 20, per_line)
        order = np.lexsort((-d, s))
        starts.append(s[order])
        durs.append(d[order])
    return np.concatenate(starts).astype(np.int64), np.concatenate(durs).astype(np.int64)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("span", [10, 100_000])  # crowded starts (ties across lines), then few ties
def test_the_order_is_the_lexsort(seed: int, span: int) -> None:
    rng = np.random.default_rng(seed)
    start, dur = _plane_order(rng, int(rng.integers(1, 4)), int(rng.integers(0, 60)), span)
    assert _by_start_longest_first(start, dur).tolist() == np.lexsort((-dur, start)).tolist()


def test_rows_out_of_the_planes_order_still_sort() -> None:
    start = np.array([5, 1, 5, 1, 0], np.int64)
    dur = np.array([1, 2, 3, 9, 4], np.int64)
    assert _by_start_longest_first(start, dur).tolist() == np.lexsort((-dur, start)).tolist() == [4, 3, 1, 2, 0]
