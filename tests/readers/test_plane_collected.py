"""The plane builder for events collected in any order (``readers/plane_collected.py``): its
time order equals numpy's three-key ``lexsort`` (the definition), the args' stat bounds equal a
prefix sum of ``bincount`` (``kernels.owner_bounds``), and a trace built on several threads is
the store one thread builds, column for column.

The demo traces are smaller than the event count from which the builder starts threads and than
a batch of args rows (the reader gathers the next batch on a second thread): both are lowered
here, and the test checks that the threads really ran (pools were used), so it does not pass by
building serially."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof._core import kernels
from tbprof.readers import chrome_args, plane_collected
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store import tables
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


@pytest.mark.parametrize(("n", "m"), [(0, 0), (1, 0), (1, 4), (7, 3), (1000, 5000), (5000, 1000)])
def test_owner_bounds_are_the_prefix_sum_of_the_counts(n: int, m: int) -> None:
    owner = np.sort(np.random.default_rng(n + m).integers(0, max(n, 1), m)).astype(np.int32)
    want = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=n)[:n])]).astype(np.int64)
    assert np.array_equal(kernels.owner_bounds(owner, n), want)


@pytest.mark.parametrize("owner", [[0, 2, 1], [-1, 0], [0, 3]], ids=["descending", "negative", "past_n"])
def test_owner_bounds_refuse_owners_out_of_order_or_range(owner: list[int]) -> None:
    with pytest.raises(ValueError, match="ascend"):
        kernels.owner_bounds(np.array(owner, np.int32), 3)


class _Pools:
    """Counts the thread pools the plane builder and the args batches start."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = {"planes": 0, "args": 0}
        for what, module in (("planes", plane_collected), ("args", chrome_args)):
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
        return read_chrome_trace(path)


@pytest.mark.parametrize("pooled_min", [0, 64], ids=["every_plane_pooled", "small_planes_at_once"])
@pytest.mark.parametrize("path", demo_files(), ids=lambda p: p.name)
def test_demo_traces_build_alike_on_threads(monkeypatch: pytest.MonkeyPatch, path: Path, pooled_min: int) -> None:
    serial = _read(monkeypatch, path, 1)
    pools = _Pools(monkeypatch)
    threaded = _read(monkeypatch, path, 3, pooled_min)
    if len(threaded.planes) > 1:
        assert pools.started["planes"] > 0
    if sum(p.n_events for p in threaded.planes) > 16:
        assert pools.started["args"] > 0
    _assert_identical(serial, threaded)
