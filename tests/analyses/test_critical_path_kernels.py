"""The two compiled loops of ``critical_path`` on small graphs whose answers are derived by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tbprof._core import kernels


def _lp(n: int, edges: list[tuple[int, int, int]]) -> list[int]:
    src, dst, w = (np.array(c, np.int64) for c in zip(*edges, strict=True))
    return kernels.dag_longest_path(n, src, dst, w).tolist()


def test_longest_path_takes_the_heaviest_chain() -> None:
    # 0 -5-> 1 -5-> 3 (10) beats 0 -2-> 2 -7-> 3 (9); then 3 -1-> 4.
    assert _lp(5, [(0, 1, 5), (0, 2, 2), (1, 3, 5), (2, 3, 7), (3, 4, 1)]) == [0, 2, 4]


def test_ties_keep_the_first_predecessor_edge() -> None:
    # Two paths of 4 into node 3: networkx keeps the first maximal predecessor in edge order.
    assert _lp(4, [(0, 1, 2), (0, 2, 2), (2, 3, 2), (1, 3, 2)]) == [1, 2]
    assert _lp(4, [(0, 1, 2), (0, 2, 2), (1, 3, 2), (2, 3, 2)]) == [0, 2]


def test_a_negative_sum_starts_afresh() -> None:
    # 0 -(-5)-> 1 -3-> 2: node 1's best sum is -5 < 0, so it restarts at 0 and the path is 1 -> 2.
    assert _lp(3, [(0, 1, -5), (1, 2, 3)]) == [1]


def test_the_path_ends_at_the_first_node_of_the_largest_sum() -> None:
    # Nodes 1 and 2 both reach 4; 1 comes first in topological order.
    assert _lp(3, [(0, 1, 4), (0, 2, 4)]) == [0]


def test_a_cycle_and_a_bad_node_are_errors() -> None:
    with pytest.raises(ValueError, match="cycle"):
        _lp(2, [(0, 1, 1), (1, 0, 1)])
    with pytest.raises(IndexError):
        _lp(2, [(0, 5, 1)])


def test_call_stack_walk_nests_and_pops_the_top() -> None:
    # Thread 0: A [0,10) holds B [1,3); thread 1: C [0,5) and D [2,8) overlap without nesting:
    # D's start pushes it under C, and C's end (at 5) pops the top, D, as HTA's stack does.
    ev = np.array([0, 1, 1, 0, 2, 3, 2, 3])
    is_start = np.array([1, 1, 0, 0, 1, 1, 0, 0], bool)
    thread = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    walk, parent = kernels.call_stack_walk(ev, is_start, thread, 4)
    assert walk.tolist() == [0, 1, 1, 0, 2, 3, 3, 2]
    assert parent.tolist() == [-1, 0, -1, 2]
