"""``_core/groups.pyx`` (the event grouping's compiled passes) against the numpy each replaces:
the rows carrying two stats (a binary search of one row list in the other), a plane's nodes
(``np.unique`` of the parts, each part's ``np.searchsorted`` in it) and their nesting
(``kernels.nesting_parents`` of the gathered rows, each line's bounds counted)."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core.groups import matched_rows, merged_nodes, nest_nodes
from tbprof._core.kernels import nesting_parents


def _ascending_rows(rng: np.random.Generator, n: int, high: int, repeats: bool) -> np.ndarray:
    rows = np.sort(rng.integers(0, high, n)) if repeats else np.sort(rng.choice(high, min(n, high), replace=False))
    return rows.astype(np.int64)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("repeats", [False, True])
def test_matched_rows_pair_each_row_with_the_first_equal_row(seed: int, repeats: bool) -> None:
    rng = np.random.default_rng(seed)
    a = _ascending_rows(rng, int(rng.integers(0, 80)), 120, repeats)
    b = _ascending_rows(rng, int(rng.integers(0, 80)), 120, repeats)
    av, bv = rng.integers(-50, 50, len(a)), rng.integers(-50, 50, len(b))
    got = matched_rows(a, av, b, bv)
    assert got is not None
    # The definition: np.searchsorted finds, for each row of a, the first row of b not below it.
    ib = np.searchsorted(b, a)
    hit = np.nonzero(ib < len(b))[0]
    hit = hit[b[ib[hit]] == a[hit]]
    assert got[0].tolist() == a[hit].tolist()
    assert got[1].tolist() == np.stack([av[hit], bv[ib[hit]]], axis=1).reshape(-1, 2).tolist()


def test_matched_rows_leave_rows_out_of_order_to_the_caller() -> None:
    one = np.ones(2, np.int64)
    assert matched_rows(np.array([3, 1]), one, np.array([1, 3]), one) is None
    assert matched_rows(np.array([1, 3]), one, np.array([3, 1]), one) is None


@pytest.mark.parametrize("seed", range(40))
def test_merged_nodes_are_the_distinct_rows_and_each_parts_positions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parts = [_ascending_rows(rng, int(rng.integers(0, 60)), 200, bool(rng.integers(0, 2)))
             for _ in range(int(rng.integers(1, 7)))]
    base = int(rng.integers(0, 1000))
    rows, ids = merged_nodes(parts, base)
    expected = np.unique(np.concatenate(parts))
    assert rows.tolist() == expected.tolist()
    assert [i.tolist() for i in ids] == [(np.searchsorted(expected, p) + base).tolist() for p in parts]


def test_merged_nodes_refuse_a_part_out_of_order() -> None:
    with pytest.raises(ValueError):
        merged_nodes([np.array([1, 2]), np.array([5, 4])], 0)


def test_merged_nodes_of_nothing() -> None:
    rows, ids = merged_nodes([np.zeros(0, np.int64), np.zeros(0, np.int64)], 7)
    assert rows.tolist() == [] and [i.tolist() for i in ids] == [[], []]


def _plane(rng: np.random.Generator, n_lines: int, per_line: int) -> tuple[np.ndarray, ...]:
    """Events sorted by (line, start, -duration), as a plane keeps them: nested, overlapping and
    apart, so that parents, closings and top levels all occur."""
    starts, durs, lines = [], [], []
    for line in range(n_lines):
        s = np.sort(rng.integers(0, 400, per_line))
        d = rng.integers(0, 120, per_line)
        order = np.lexsort((-d, s))
        starts.append(s[order])
        durs.append(d[order])
        lines.append(np.full(per_line, line, np.int32))
    return np.concatenate(starts).astype(np.int64), np.concatenate(durs).astype(np.int64), np.concatenate(lines)


@pytest.mark.parametrize("seed", range(12))
def test_nest_nodes_is_the_nesting_of_the_gathered_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_lines = int(rng.integers(1, 5))
    start, dur, line = _plane(rng, n_lines, int(rng.integers(1, 40)))
    line_offsets = np.concatenate([[0], np.cumsum(np.bincount(line, minlength=n_lines))]).astype(np.int64)
    rows = np.sort(rng.choice(len(start), int(rng.integers(0, len(start) + 1)), replace=False)).astype(np.int64)
    base = int(rng.integers(0, 500))
    parent = np.empty(len(rows), np.int64)
    sub_end = np.empty(len(rows), np.int64)
    node_offsets = np.searchsorted(rows, line_offsets)
    nest_nodes(rows, start, dur, node_offsets, base, parent, sub_end)
    # The definition: the nesting of the gathered rows, with each line's bounds counted.
    offsets = np.concatenate([[0], np.cumsum(np.bincount(line[rows], minlength=n_lines))]).astype(np.int64)
    assert node_offsets.tolist() == offsets.tolist()
    par, send = nesting_parents(start[rows], dur[rows], offsets)
    assert parent.tolist() == np.where(par >= 0, par + base, -1).tolist()
    assert sub_end.tolist() == (send + base).tolist()


def test_nest_nodes_check_their_outputs_and_rows() -> None:
    start, dur = np.array([0, 5], np.int64), np.array([10, 1], np.int64)
    rows, offsets = np.array([0, 1], np.int64), np.array([0, 2], np.int64)
    with pytest.raises(ValueError):
        nest_nodes(rows, start, dur, offsets, 0, np.empty(1, np.int64), np.empty(2, np.int64))
    with pytest.raises(IndexError):
        nest_nodes(np.array([0, 2], np.int64), start, dur, offsets, 0, np.empty(2, np.int64), np.empty(2, np.int64))
