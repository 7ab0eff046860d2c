"""The vectorised operator tree (``op_tree.nest``) against a plain reference walk of the plugin's
rules, on seeded random nested intervals: same-name chains, events that cross their parent's
end, zero-length events, equal intervals, shared External ids and launches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof._core import kernels
from tbprof.analyses.ops.op_tree import COMMUNICATION, MODULE, OPERATOR, STEP, TreeArrays, nest, nest_inputs
from tbprof.readers.chrome_trace import read_chrome_trace

FIELDS = ("rows", "parent", "dur_ps", "self_host_ps", "device_ps", "self_device_ps", "tc_eligible", "tc_self_ps",
          "tc_total_ps")


def reference(start: np.ndarray, end: np.ndarray, kind: np.ndarray, name_id: np.ndarray, external: np.ndarray,
              line_offsets: np.ndarray, launch_external: np.ndarray, launch_host_ps: np.ndarray,
              launch_device_ps: np.ndarray, launch_tc_ps: np.ndarray, tc_by_name: np.ndarray) -> TreeArrays:
    """The rules walked event by event: a stack per thread, a depth-first merge, a bottom-up sum."""
    node_rows: list[int] = []
    parent_of: dict[int, int] = {}
    children: dict[int, list[int]] = {-1: []}
    for line in range(line_offsets.shape[0] - 1):
        stack: list[int] = []
        for r in range(int(line_offsets[line]), int(line_offsets[line + 1])):
            if kind[r] < 0:
                continue
            while stack and start[r] >= end[stack[-1]]:
                stack.pop()
            if stack and end[r] > end[stack[-1]]:
                continue  # starts inside its parent, ends after it: dropped
            p = stack[-1] if stack else -1
            parent_of[r] = p
            children.setdefault(p, []).append(r)
            children[r] = []
            node_rows.append(r)
            stack.append(r)
    first_with_ext: dict[int, int] = {}
    for r in node_rows:
        e = int(external[r])
        if e > 0 and e not in first_with_ext and kind[r] != MODULE:
            first_with_ext[e] = r
    launches: dict[int, list[int]] = {}
    for i, e in enumerate(launch_external.tolist()):
        owner = first_with_ext.get(int(e))
        if owner is not None:
            launches.setdefault(owner, []).append(i)
    order: list[int] = []
    todo = list(reversed(children[-1]))
    while todo:
        r = todo.pop()
        while len(children[r]) == 1:
            c = children[r][0]
            if not (kind[r] == OPERATOR and kind[c] == OPERATOR and name_id[r] == name_id[c]):
                break
            children[r] = children[c]
            for g in children[r]:
                parent_of[g] = r
            launches[r] = launches.pop(c, [])  # the child's launches replace the parent's
            parent_of.pop(c)
        order.append(r)
        todo.extend(reversed(children[r]))
    index = {r: i for i, r in enumerate(order)}
    m = len(order)
    rows = np.asarray(order, np.int64)
    parent = np.asarray([index.get(parent_of[r], -1) for r in order], np.int64)
    dur = (end[rows] - start[rows]).astype(np.int64)
    self_host = dur.copy()
    self_dev = np.zeros(m, np.int64)
    tc_self = np.zeros(m, np.int64)
    for i, r in enumerate(order):
        for li in launches.get(r, []):
            self_host[i] -= int(launch_host_ps[li])
            self_dev[i] += int(launch_device_ps[li])
            tc_self[i] += int(launch_tc_ps[li])
    kinds = kind[rows]
    eligible = tc_by_name[rows] | ((kinds == OPERATOR) & (tc_self > 0))
    device = self_dev.copy()
    tc_total = tc_self.copy()
    for i in range(m - 1, -1, -1):
        p = int(parent[i])
        if p < 0:
            continue
        self_host[p] -= dur[i]
        device[p] += device[i]
        tc_total[p] += tc_total[i]
        if eligible[i] and kinds[p] == OPERATOR:
            eligible[p] = True
    return TreeArrays(rows, parent, dur, np.maximum(self_host, 0), device, self_dev, eligible, tc_self, tc_total)


def random_thread(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name) of ``n`` events on one thread, in (start, -end) order. Durations span
    several scales so events nest deeply; about a tenth are zero-length; random placement makes
    some cross the end of the event they start in; copies and shrunk copies with the same name
    make equal intervals and same-name chains."""
    horizon = 10_000
    start = rng.integers(0, horizon, n)
    scale = rng.choice([0, 3, 30, 300, 3000], n, p=[0.1, 0.3, 0.3, 0.2, 0.1])
    end = start + (rng.random(n) * scale).astype(np.int64)
    name = rng.integers(0, 3, n)
    k = n // 4
    src = rng.integers(0, n, k)
    shrink = rng.integers(0, 2, k)  # 0: an equal interval, 1: one inside by a tick each side (where room)
    room = (end[src] - start[src]) >= 2
    c_start = start[src] + shrink * room
    c_end = end[src] - shrink * room
    start, end, name = np.concatenate([start, c_start]), np.concatenate([end, c_end]), np.concatenate([name, name[src]])
    order = np.lexsort((-end, start))
    return start[order], end[order], name[order]


def random_case(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    parts = [random_thread(rng, int(rng.integers(0, 300))) for _ in range(int(rng.integers(1, 5)))]
    start = np.concatenate([p[0] for p in parts]).astype(np.int64)
    end = np.concatenate([p[1] for p in parts]).astype(np.int64)
    name = np.concatenate([p[2] for p in parts]).astype(np.int32)
    line_offsets = np.concatenate([[0], np.cumsum([p[0].shape[0] for p in parts])]).astype(np.int64)
    n = start.shape[0]
    kind = rng.choice([-1, OPERATOR, STEP, MODULE, COMMUNICATION], n, p=[0.15, 0.6, 0.05, 0.15, 0.05])
    external = np.where(rng.random(n) < 0.7, rng.integers(0, 80, n), -1)  # ids repeat: the first node wins
    n_launch = int(rng.integers(0, 2 * n + 1))
    launch_external = rng.integers(-1, 90, n_launch)
    launch_host = rng.integers(0, 5, n_launch)
    launch_device = rng.integers(0, 1000, n_launch)
    launch_tc = np.where(rng.random(n_launch) < 0.3, launch_device, 0)
    tc_by_name = np.asarray(rng.random(n) < 0.1)
    return (start, end, kind.astype(np.int64), name, external.astype(np.int64), line_offsets, launch_external,
            launch_host, launch_device, launch_tc, tc_by_name)


@pytest.mark.parametrize("seed", range(40))
def test_nest_matches_reference_walk(seed: int) -> None:
    args = random_case(seed)
    got, want = nest(*args), reference(*args)
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=f"{field} (seed {seed})")


def test_random_cases_exercise_every_rule() -> None:
    """The generator does make the cases the comparison is for (else it would prove little)."""
    dropped = merged = zero = launched = 0
    for seed in range(40):
        args = random_case(seed)
        start, end, kind = args[0], args[1], args[2]
        want = reference(*args)
        cand = np.nonzero(kind >= 0)[0]
        n_dropped = int((kernels.op_tree_parents(start[cand], end[cand], np.searchsorted(cand, args[5])) == -2).sum())
        dropped += n_dropped
        merged += cand.shape[0] - n_dropped - want.rows.shape[0]
        zero += int((want.dur_ps == 0).sum())
        launched += int((want.self_device_ps > 0).sum())
    assert dropped > 0 and merged > 0 and zero > 0 and launched > 0


def test_op_tree_parents_rules() -> None:
    # A: [0, 10); B: [2, 5) in A; C: [5, 5) zero-length in A after B closed; D: [8, 12) crosses A's end;
    # E: [10, 11) starts at A's end: a root; F: [10, 11) equal to E: its child.
    start = np.array([0, 2, 5, 8, 10, 10])
    end = np.array([10, 5, 5, 12, 11, 11])
    got = kernels.op_tree_parents(start, end, np.array([0, 6]))
    np.testing.assert_array_equal(got, [-1, 0, 0, -2, -1, 4])


def test_kernels_reject_a_parent_after_its_child() -> None:
    with pytest.raises(ValueError):
        kernels.sum_into_parents(np.array([-1, 2, 0]), np.zeros(3, np.int64))
    with pytest.raises(ValueError):
        kernels.or_into_parents(np.array([1, -1]), np.ones(2, bool), np.ones(2, bool))
    with pytest.raises(ValueError):
        kernels.op_tree_parents(np.zeros(2, np.int64), np.zeros(2, np.int64), np.array([0, 3]))
    with pytest.raises(IndexError):
        kernels.op_tree_parents(np.zeros(2, np.int64), np.zeros(2, np.int64), np.array([0, 5, 2]))


REPO = Path(__file__).resolve().parents[2]
REAL_TRACES = sorted([*(REPO / "demo_logs").glob("torch_*/*.pt.trace.json"),
                      *(REPO / "tests" / "data").glob("kineto_*/*.pt.trace.json")])


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nest_matches_reference_walk_on_real_traces(path: Path) -> None:
    found = nest_inputs(read_chrome_trace(path))
    assert found is not None
    inputs = found[0]
    got, want = nest(*inputs), reference(*inputs)
    assert want.rows.shape[0] > 0
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


def test_real_traces_found() -> None:
    assert len(REAL_TRACES) >= 5
