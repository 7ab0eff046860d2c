"""The plane builder for events collected in any order (``readers/plane_collected.py``): its
time order equals numpy's three-key ``lexsort`` (the definition), the stat rows placed and the flow points
bound in ranges on several threads equal the one-thread loops (``kernels.place_rows``,
``kernels.bind_points``), and a trace built on several threads is the store one thread builds,
column for column.

The demo traces are smaller than the event count from which the builder starts threads, than a
batch of args rows (the reader gathers the next batch on a second thread), than the flow points
and stat rows from which those go on threads: all are lowered here, and the test checks that
the threads really ran (pools were used, stat rows placed in ranges), so it does not pass by
building serially."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof._core import kernels
from tbprof.readers import chrome_args, chrome_collect, plane_collected, plane_flows
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store import tables
from tbprof.store.markers import FLOW_ID_STAT
from tests.core.chrome_digest import demo_files

_PLANE_COLUMNS = ("start_ps", "dur_ps", "name_id", "meta_idx", "depth", "line_idx", "line_offsets", "line_ids",
                  "line_timestamp_ns", "meta_ids", "meta_name_id", "meta_display_name_id")


def _assert_identical(a: tables.ProfileStore, b: tables.ProfileStore) -> None:
    """The same strings in the same order, the same warnings and metadata, every column equal."""
    assert a.strings.as_list() == b.strings.as_list()
    assert (a.warnings, a.metadata, a.origin_ps, a.span_ps) == (b.warnings, b.metadata, b.origin_ps, b.span_ps)
    assert [p.name for p in a.planes] == [p.name for p in b.planes]
    for p, q in zip(a.planes, b.planes, strict=True):
        assert (p.id, p.line_names, p.line_display_names, p.plane_stats) == \
            (q.id, q.line_names, q.line_display_names, q.plane_stats)
        for col in _PLANE_COLUMNS:
            assert np.array_equal(getattr(p, col), getattr(q, col)), (p.name, col)
        for table in ("stats", "meta_stats"):
            for col in ("owner", "stat_id", "kind", "value"):
                assert np.array_equal(getattr(getattr(p, table), col), getattr(getattr(q, table), col)), \
                    (p.name, table, col)


def _reference(start_ps: np.ndarray, dur_ps: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Rows by line, then start, then the longest first, ties in row order (a stable sort)."""
    return np.lexsort((-dur_ps, start_ps, line))


@pytest.mark.parametrize("seed", range(6))
def test_time_order_is_the_three_key_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5000
    # Rows grouped by line (as the builder hands them), nearly in time order, with many equal
    # starts and equal (start, duration) pairs, so ties of every kind occur.
    line = np.sort(rng.integers(0, 7, n))
    start = (np.arange(n) // 3 + rng.integers(-4, 5, n)).astype(np.int64)
    dur = rng.integers(0, 4, n).astype(np.int64)
    got = plane_collected.time_order(start, dur, line)
    assert np.array_equal(got, _reference(start, dur, line))
    # The ties it had to order were there.
    s, d, ln = start[got], dur[got], line[got]
    same = (s[1:] == s[:-1]) & (ln[1:] == ln[:-1])
    assert (same & (d[1:] != d[:-1])).any() and (same & (d[1:] == d[:-1])).any()


def test_time_order_without_ties_and_empty() -> None:
    start = np.array([5, 1, 3, 2], np.int64)
    line = np.array([0, 0, 1, 1], np.int64)
    dur = np.zeros(4, np.int64)
    assert plane_collected.time_order(start, dur, line).tolist() == [1, 0, 3, 2]
    empty = np.zeros(0, np.int64)
    assert plane_collected.time_order(empty, empty, empty).shape == (0,)


def _placed_one_by_one(owner: np.ndarray, fill: np.ndarray, row_of: np.ndarray, name: np.ndarray,
                       kind: np.ndarray, value: np.ndarray, n_slots: int) -> tuple[np.ndarray, ...]:
    """The definition of ``place_rows``: row ``i`` to slot ``fill[owner[i]]``, which moves on."""
    slot = fill.copy()
    out = (np.full(n_slots, -9, np.int32), np.full(n_slots, -9, np.int32), np.full(n_slots, -9, np.int8),
           np.full(n_slots, -9, np.int64))
    for i, e in enumerate(owner.tolist()):
        d = slot[e]
        slot[e] += 1
        out[0][d], out[1][d], out[2][d], out[3][d] = row_of[e], name[i], kind[i], value[i]
    return (*out, slot)


@pytest.mark.parametrize("cuts", [None, [0, 40], [0, 1, 2, 40], [0, 7, 7, 19, 33, 40], [0, 20, 40]])
def test_place_rows_in_owner_ranges_is_the_one_by_one_placement(cuts: list[int] | None) -> None:
    rng = np.random.default_rng(len(cuts or []))
    n_events, m = 40, 3000
    owner = rng.integers(0, n_events, m).astype(np.int32)  # any order: an event's rows interleave
    per_event = np.bincount(owner, minlength=n_events)
    # Slots of events in a shuffled store order, as place_stats counts them.
    store_order = rng.permutation(n_events)
    fill = np.zeros(n_events, np.int64)
    fill[store_order] = np.cumsum(per_event[store_order]) - per_event[store_order]
    row_of = rng.permutation(n_events).astype(np.int64)
    name = rng.integers(1, 50, m).astype(np.int32)
    kind = rng.integers(0, 5, m).astype(np.int8)
    value = rng.integers(-10**12, 10**12, m).astype(np.int64)
    want = _placed_one_by_one(owner, fill, row_of, name, kind, value, m)
    got_fill = fill.copy()
    got: list[np.ndarray] = [np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int8),
                             np.empty(m, np.int64)]
    kernels.place_rows(owner, got_fill, row_of, name, kind, value, got[0], got[1], got[2], got[3],
                       None if cuts is None else np.array(cuts, np.int64))
    for a, b in zip([*got, got_fill], want, strict=True):
        assert np.array_equal(a, b)


def test_place_rows_refuses_cuts_out_of_order() -> None:
    z32, z8, z64 = np.zeros(1, np.int32), np.zeros(1, np.int8), np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="ascending"):
        kernels.place_rows(z32, z64.copy(), z64, z32, z8, z64, z32.copy(), z32.copy(), z8.copy(), z64.copy(),
                           np.array([0, 2, 1], np.int64))


def test_owner_cuts_split_the_rows_evenly_and_cover_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plane_collected, "_PLACE_MIN_ROWS", 1000)
    per_event = np.random.default_rng(3).integers(0, 9, 10_000).astype(np.int64)  # at most 8 rows each
    total = int(per_event.sum())
    cuts = plane_collected._owner_cuts(per_event, 1 << 20)  # more threads than the rows allow
    assert cuts is not None and cuts[0] == 0 and cuts[-1] == per_event.shape[0]
    assert cuts.shape[0] - 1 == total // 1000 and (np.diff(cuts) >= 0).all()
    rows = np.add.reduceat(per_event, cuts[:-1]) if per_event.shape[0] else np.zeros(0)
    # Each range holds its share of the rows but for one event's rows at either end.
    assert np.abs(rows - total / (cuts.shape[0] - 1)).max() <= 2 * 8
    four = plane_collected._owner_cuts(per_event, 4)
    assert four is not None and four.shape[0] == 5
    assert plane_collected._owner_cuts(per_event, 1) is None


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_bind_points_in_ranges_is_the_one_thread_binding(monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    rng = np.random.default_rng(threads)
    # Two lines of nested slices: each a parent of 100 ps with two children of 30 ps.
    starts, durs, depth = [], [], []
    for t in range(0, 10_000, 120):
        starts += [t, t + 10, t + 50]
        durs += [100, 30, 30]
        depth += [0, 1, 1]
    start = np.array(starts * 2, np.int64)
    dur = np.array(durs * 2, np.int64)
    dep = np.array(depth * 2, np.int16)
    offsets = np.array([0, len(starts), 2 * len(starts)], np.int64)
    parent = kernels.depth_parents(dep, offsets)
    m = 5000
    line = rng.integers(0, 2, m).astype(np.int64)
    ts = rng.integers(-50, 10_100, m).astype(np.int64)
    nxt = rng.random(m) < 0.3
    serial = kernels.bind_points(start, start + dur, parent, offsets, line, ts, nxt)
    monkeypatch.setattr(kernels, "_BIND_MIN_POINTS", 1)
    threaded = kernels.bind_points(start, start + dur, parent, offsets, line, ts, nxt, threads)
    assert np.array_equal(serial, threaded)
    # Both kinds of binding and unbound points occurred.
    assert (serial == -1).any() and (dep[serial[serial >= 0]] == 1).any() and (dep[serial[serial >= 0]] == 0).any()


class _Pools:
    """Counts the thread pools the plane builder, the args batches and the flows (their chains made
    while the rows are put in order) start."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = {"planes": 0, "args": 0, "flows": 0}
        for what, module in (("planes", plane_collected), ("args", chrome_args), ("flows", chrome_collect)):
            real = module.ThreadPoolExecutor

            def counting(*args: Any, what: str = what, real: Any = real, **kwargs: Any) -> Any:
                self.started[what] += 1
                return real(*args, **kwargs)

            monkeypatch.setattr(module, "ThreadPoolExecutor", counting)


def _read(monkeypatch: pytest.MonkeyPatch, path: Path, threads: int, pooled_min: int = 0) -> tables.ProfileStore:
    with monkeypatch.context() as m:
        m.setenv("TBPROF_THREADS", str(threads))
        m.setattr(plane_collected, "_THREADED_MIN_EVENTS", 0)
        m.setattr(plane_collected, "_POOLED_MIN_EVENTS", pooled_min)
        m.setattr(chrome_args, "_ARGS_EVENTS", 16)  # the batch size numbers strings: the same in both
        m.setattr(plane_flows, "_THREADED_MIN_POINTS", 0)
        m.setattr(chrome_collect, "_FLOWS_AHEAD_MIN_POINTS", 0)
        m.setattr(plane_collected, "_PLACE_MIN_ROWS", 1)
        m.setattr(kernels, "_BIND_MIN_POINTS", 1)
        return read_chrome_trace(path)


@pytest.mark.parametrize("pooled_min", [0, 64], ids=["every_plane_pooled", "small_planes_at_once"])
@pytest.mark.parametrize("path", demo_files(), ids=lambda p: p.name)
def test_demo_traces_build_alike_on_threads(monkeypatch: pytest.MonkeyPatch, path: Path, pooled_min: int) -> None:
    serial = _read(monkeypatch, path, 1)
    pools = _Pools(monkeypatch)
    real_place = kernels.place_rows
    ranges: list[int] = []

    def place_rows(*args: Any) -> None:
        cuts = args[-1]
        ranges.append(0 if cuts is None else len(cuts) - 1)
        real_place(*args)

    with monkeypatch.context() as m:
        m.setattr(kernels, "place_rows", place_rows)
        threaded = _read(monkeypatch, path, 3, pooled_min)
    if len(threaded.planes) > 1:
        assert pools.started["planes"] > 0
    if sum(p.n_events for p in threaded.planes) > 16:
        assert pools.started["args"] > 0
    if any(p.stats.owner.shape[0] >= 3 for p in threaded.planes):
        assert max(ranges) > 1
    if FLOW_ID_STAT in threaded.strings.as_list():
        assert pools.started["flows"] > 0
    _assert_identical(serial, threaded)
