"""Planes from events collected in any order (the Chrome trace reader's: a file's events come
in file order, every thread's interleaved), finished by the one plane builder
(``plane_builder.py``): rows put in store order (by plane, line, start, longest first; ties in
collection order), each plane's line offsets and nesting depths, the stat rows placed under
their events, an event metadata row per distinct (name, category), then ``plane_builder.plane``.

Columns live where the reader's ``Work`` keeps them (``chrome_columns.py``: in memory, or
scratch files of a cache entry walked in chunks). In memory the per-plane steps run on several
threads (``default_threads()``; their sorts, gathers and compiled loops release the GIL): the
lines' time order in batches, each plane's columns and depths, each plane's metadata while the
flows are bound and the stats placed, and the stat rows themselves in ranges of events of about
equal rows (``kernels.place_rows``: an event's rows all in one range, so in their order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from tbprof._core import chrome_pass, kernels
from tbprof._core.wire import default_threads
from tbprof.cache.memory_guard import release_free_memory
from tbprof.readers.chrome_columns import MemoryWork, StatSink, Work, chunks
from tbprof.readers.plane_builder import PlaneHead, line_rows, plane
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique
from tbprof.store.strings import StringTable

# Anonymous bytes per row of one line's rows sorted by time (held whole even when streaming).
_SORT_BYTES_PER_ROW = 64
# Stat rows per thread below which counting or placing them on more threads costs more than it
# saves (each thread reads every owner of a segment).
_PLACE_MIN_ROWS = 1 << 18
# Stat rows freed between two hand-backs of the C heap's free pages while they are placed.
_TRIM_BYTES = 16 << 20
# Fewer events than this are built on one thread (a pool costs more than it saves); in a trace
# built on several, a plane of fewer than _POOLED_MIN_EVENTS is built by the calling thread.
_THREADED_MIN_EVENTS = 1 << 18
_POOLED_MIN_EVENTS = 1 << 12
# The stat that names an event metadata row's category.
CATEGORY_STAT = "cat"

T = TypeVar("T")


@dataclass
class Collected:
    """Events in collection order: times in picoseconds from the profile's origin, global line
    ids, string ids of names and categories (0: none), and their stat rows (owner = the event's
    collection index)."""

    start_ps: np.ndarray
    dur_ps: np.ndarray
    line: np.ndarray
    name_id: np.ndarray
    cat_id: np.ndarray
    stats: StatSink


@dataclass
class SortedPlane:
    """A plane's rows in store order: local line, start, duration, line offsets, depths."""

    line_idx: np.ndarray
    start_ps: np.ndarray
    dur_ps: np.ndarray
    line_offsets: np.ndarray
    depth: np.ndarray


@dataclass
class Layout:
    """Where each collected event went: ``order`` (row in store order -> collection index),
    each plane's first row, each global line's plane and local line, the sorted planes."""

    order: np.ndarray
    plane_bounds: np.ndarray
    plane_of_line: np.ndarray
    local_of_line: np.ndarray
    planes: list[SortedPlane]


def build_planes(work: Work, events: Collected, plane_lines: list[list[int]], heads: list[PlaneHead],
                 strings: StringTable, bind: Callable[[Layout], None] | None = None) -> list[tables.Plane]:
    """The planes of ``events`` (``plane_lines``: each plane's global lines in display order;
    ``heads``: each plane's names and stats). ``bind`` runs once the rows are in store order and
    before the stats are placed (the reader's flows add their stat rows there)."""
    n = int(events.line.shape[0])
    threads = 1 if not isinstance(work, MemoryWork) or n < _THREADED_MIN_EVENTS else default_threads()
    n_lines = sum(len(mine) for mine in plane_lines)
    plane_of_line = np.zeros(n_lines, dtype=np.int64)
    local_of_line = np.zeros(n_lines, dtype=np.int64)
    for pi, mine in enumerate(plane_lines):
        for local, g in enumerate(mine):
            plane_of_line[g] = pi
            local_of_line[g] = local
    order, line_start = _store_order(work, events, plane_lines, threads)
    first_line = np.cumsum([0] + [len(mine) for mine in plane_lines])
    plane_bounds = line_start[first_line]
    row_in_plane = work.empty("row_in_plane", np.int64, n)
    for pi in range(len(plane_lines)):
        plo, phi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
        for a, b in chunks(phi - plo, work.chunk_events):
            row_in_plane[order[plo + a:plo + b]] = np.arange(a, b)

    def sort_plane(pi: int) -> SortedPlane:
        plo, phi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
        p_line = work.plane_column(pi, "line_idx", np.int32, phi - plo)
        for local in range(len(plane_lines[pi])):
            r = int(first_line[pi]) + local
            p_line[int(line_start[r]) - plo:int(line_start[r + 1]) - plo] = local
        p_start = work.plane_column(pi, "start_ps", np.int64, phi - plo)
        p_dur = work.plane_column(pi, "dur_ps", np.int64, phi - plo)
        for a, b in chunks(phi - plo, work.chunk_events):
            rows = order[plo + a:plo + b]
            p_start[a:b] = events.start_ps[rows]
            p_dur[a:b] = events.dur_ps[rows]
        work.check(2 * (phi - plo), f"the nesting depths of {phi - plo:,} events")
        line_offsets, depth = line_rows(p_line, p_start, p_dur, len(plane_lines[pi]))
        return SortedPlane(p_line, p_start, p_dur, line_offsets, depth)

    # Each plane's rows sorted and its event metadata made on the pool (largest plane first),
    # the metadata while the flows are bound and the stats placed: neither needs the other.
    with _Tasks(min(threads, len(plane_lines))) as tasks:
        sizes = np.diff(plane_bounds)
        by_size = np.argsort(-sizes, kind="stable").tolist()
        small = (sizes < _POOLED_MIN_EVENTS).tolist()  # done at once: a task costs more
        sorting = {pi: tasks.submit(small[pi], sort_plane, pi) for pi in by_size}
        base = len(strings) + 1  # (name, category) pairs as one int64 key: every id below
        metas = {pi: tasks.submit(small[pi], _event_metadata, work, pi,
                                  order[int(plane_bounds[pi]):int(plane_bounds[pi + 1])], events, base)
                 for pi in by_size}
        sorted_planes = [sorting[pi].result() for pi in range(len(plane_lines))]
        work.drop(events.start_ps, events.dur_ps)
        events.start_ps = events.dur_ps = np.zeros(0, np.int64)
        if bind is not None:
            bind(Layout(order, plane_bounds, plane_of_line, local_of_line, sorted_planes))
        release_free_memory()  # the binding's temporaries, before the stats' placed columns
        st_row, st_name, st_kind, st_value, st_bounds = place_stats(work, events.stats, order, plane_bounds,
                                                                    row_in_plane, threads)
        work.drop(row_in_plane)
        del row_in_plane
        meta = [metas[pi].result() for pi in range(len(plane_lines))]
    work.drop(order, events.name_id, events.cat_id)
    cat_stat = strings.intern(CATEGORY_STAT)
    planes = []
    for pi, (sp, (meta_idx, p_name, meta_name, meta_cat)) in enumerate(zip(sorted_planes, meta, strict=True)):
        has_cat = np.nonzero(meta_cat > 0)[0]
        meta_stats = tables.StatTable(has_cat.astype(np.int32), np.full(has_cat.shape[0], cat_stat, np.int32),
                                      np.full(has_cat.shape[0], tables.KIND_STR, np.int8), meta_cat[has_cat])
        s_lo, s_hi = int(st_bounds[pi]), int(st_bounds[pi + 1])
        planes.append(plane(pi, heads[pi], sp.line_offsets, {
            "start_ps": sp.start_ps, "dur_ps": sp.dur_ps, "meta_idx": meta_idx, "name_id": p_name,
            "depth": sp.depth, "line_idx": sp.line_idx,
            "stats": tables.StatTable(st_row[s_lo:s_hi], st_name[s_lo:s_hi], st_kind[s_lo:s_hi], st_value[s_lo:s_hi]),
            "blobs": []},
            np.arange(meta_name.shape[0], dtype=np.int64), meta_name, np.zeros(meta_name.shape[0], dtype=np.int32),
            meta_stats))
    return planes


class _Done(Generic[T]):
    """A result computed at once (``_Tasks`` on one thread)."""

    def __init__(self, value: T) -> None:
        self.value = value

    def result(self) -> T:
        return self.value


class _Tasks:
    """Runs calls on a pool of ``threads`` threads, or at once, in the caller, where one."""

    def __init__(self, threads: int) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None

    def __enter__(self) -> _Tasks:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, at_once: bool, fn: Callable[..., T], *args: Any) -> Future[T] | _Done[T]:
        """``fn(*args)`` on the pool, or ``at_once`` (or without a pool) in the caller."""
        return self.pool.submit(fn, *args) if self.pool is not None and not at_once else _Done(fn(*args))


def _map(fn: Callable[[int], T], count: int, threads: int, sizes: np.ndarray) -> list[T]:
    """``[fn(0), ..., fn(count - 1)]``, on up to ``threads`` threads (the largest first)."""
    if threads <= 1 or count <= 1:
        return [fn(i) for i in range(count)]
    with ThreadPoolExecutor(max_workers=min(threads, count)) as pool:
        futures = {i: pool.submit(fn, i) for i in np.argsort(-sizes, kind="stable").tolist()}
        return [futures[i].result() for i in range(count)]


def _store_order(work: Work, events: Collected, plane_lines: list[list[int]], threads: int,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Rows in store order (row -> collection index): counted into lines (in display order), then
    each line's rows sorted by (start, longest first), ties in collection order; and each line's
    first row (lines in display order, then the end)."""
    step = work.chunk_events
    line_g = events.line
    n = int(line_g.shape[0])
    n_lines = sum(len(mine) for mine in plane_lines)
    display = np.array([g for mine in plane_lines for g in mine], dtype=np.int64)
    # Ranks of 16 bits where they fit: numpy's stable sort of those is a radix sort.
    rank_of_line = np.zeros(n_lines, dtype=np.uint16 if n_lines <= 1 << 16 else np.int64)
    rank_of_line[display] = np.arange(display.shape[0])
    if isinstance(work, MemoryWork):  # one chunk: its rows grouped by line (a counting sort) are the store's
        order, per_line = chrome_pass.line_order(line_g, rank_of_line, n_lines)
        line_start = np.concatenate([[0], np.cumsum(per_line)]).astype(np.int64)
    else:
        per_line = np.zeros(n_lines, dtype=np.int64)  # by display rank
        for lo, hi in chunks(n, step):
            per_line += np.bincount(rank_of_line[line_g[lo:hi]], minlength=n_lines)
        line_start = np.concatenate([[0], np.cumsum(per_line)]).astype(np.int64)
        order = work.empty("order", np.int64, n)
        fill = line_start[:-1].copy()
        for lo, hi in chunks(n, step):
            rank = rank_of_line[line_g[lo:hi]]
            perm = np.argsort(rank, kind="stable")
            rank = rank[perm]
            counts = np.bincount(rank, minlength=n_lines)
            order[fill[rank] + (np.arange(rank.shape[0]) - (np.cumsum(counts) - counts)[rank])] = lo + perm
            fill += counts
        del fill
    work.drop(line_g)
    events.line = np.zeros(0, np.int64)
    del line_g
    longest = int(per_line.max()) if per_line.shape[0] else 0
    work.check(_SORT_BYTES_PER_ROW * longest, f"the time order of a thread of {longest:,} events")
    # Batches of whole lines of about a chunk each (streaming: a thread longer than a chunk is a
    # batch alone); in memory, a batch per thread.
    batch = step if threads <= 1 else max(1, -(-n // (2 * threads)))
    bounds = list(_line_batches(line_start, batch))
    start_ps, dur_ps = events.start_ps, events.dur_ps

    def sort_batch(i: int) -> None:
        a, b = bounds[i]
        r0, r1 = int(np.searchsorted(line_start, a, "right")) - 1, int(np.searchsorted(line_start, b, "left"))
        rows = np.array(order[a:b])
        rank = np.repeat(np.arange(r0, r1), per_line[r0:r1])
        order[a:b] = rows[time_order(start_ps[rows], dur_ps[rows], rank)]

    _map(sort_batch, len(bounds), threads, np.array([b - a for a, b in bounds], dtype=np.int64))
    return order, line_start


def time_order(start_ps: np.ndarray, dur_ps: np.ndarray, line: np.ndarray) -> np.ndarray:
    """The stable order of rows by (line, start, longest first): ``np.lexsort((-dur_ps,
    start_ps, line))``, but for rows grouped by line and nearly in time order (a trace's events
    come about in time order per thread) at the cost of a sort by start, which numpy's stable
    sort (timsort) does in about one pass over such rows: only rows sharing a start are then
    ordered by duration."""
    perm = np.lexsort((start_ps, line))
    s, ln = start_ps[perm], line[perm]
    tie = (s[1:] == s[:-1]) & (ln[1:] == ln[:-1])  # row i + 1 starts with row i
    del s, ln
    if tie.any():
        in_tie = np.zeros(perm.shape[0], dtype=np.bool_)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        at = np.flatnonzero(in_tie)
        group = np.cumsum(np.concatenate([[True], ~tie]))[at]
        perm[at] = perm[at][np.lexsort((-dur_ps[perm[at]], group))]
    return perm


def _line_batches(line_start: np.ndarray, step: int) -> Iterator[tuple[int, int]]:
    """[a, b) row ranges of whole lines (``line_start``: each line's first row, then the end), of
    at most ``step`` rows each unless one line alone is longer."""
    n = int(line_start[-1])
    a = 0
    while a < n:
        # The last line boundary within a + step, else the first one after a.
        b = int(line_start[int(np.searchsorted(line_start, a + step, "right")) - 1])
        if b <= a:
            b = int(line_start[int(np.searchsorted(line_start, a, "right"))])
        yield a, b
        a = b


def _event_metadata(work: Work, pi: int, rows: np.ndarray, events: Collected, base: int,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A plane's event metadata: a row per distinct (name, category) of its events ``rows``
    (sorted by name id, then category id; ``base`` above every id), each event's row and name
    id, and each row's name and category (0: none)."""
    step = work.chunk_events
    n = int(rows.shape[0])
    name_id, cat_id = events.name_id, events.cat_id
    uniq = np.zeros(0, np.int64)
    for a, b in chunks(n, step):
        r = rows[a:b]
        uniq = sorted_unique(np.concatenate([uniq, name_id[r].astype(np.int64) * base + cat_id[r]]))
    meta_idx = work.plane_column(pi, "meta_idx", np.int32, n)
    p_name = work.plane_column(pi, "name_id", np.int32, n)
    for a, b in chunks(n, step):
        r = rows[a:b]
        p_name[a:b] = name_id[r]
        meta_idx[a:b] = np.searchsorted(uniq, name_id[r].astype(np.int64) * base + cat_id[r])
    return meta_idx, p_name, (uniq // base).astype(np.int32), (uniq % base).astype(np.int64)


def place_stats(work: Work, stats: StatSink, order: np.ndarray, plane_bounds: np.ndarray, row_in_plane: np.ndarray,
                threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every stat row moved to its place: by plane, then event row, an event's rows in
    collection order (as a stable sort would put them). Counted, not sorted: each event's first
    slot is a prefix sum (compiled loops, no temporaries). With ``threads`` > 1 the rows are
    counted on that many threads, each for a range of events over every segment, and a segment's
    rows placed on that many, each for a range of events holding about as many stat rows as the
    others."""
    n = row_in_plane.shape[0]
    per_event = work.zeros("stats_per_event", np.int64, n)
    owners = [owner for owner, _, _, _ in stats.segments(consume=False)]
    chrome_pass.count_owners(owners, per_event, threads if sum(o.shape[0] for o in owners) >= _PLACE_MIN_ROWS else 1)
    del owners
    cuts = _owner_cuts(per_event, threads)
    fill = work.empty("stats_fill", np.int64, n)  # each event's next free slot
    bounds = np.zeros(plane_bounds.shape[0], dtype=np.int64)
    chrome_pass.fill_slots(order, per_event, fill, plane_bounds, bounds)
    total = int(bounds[-1])
    work.drop(per_event)
    del per_event
    st_row = work.empty("st_row", np.int32, total)
    st_name = work.empty("st_name", np.int32, total)
    st_kind = work.empty("st_kind", np.int8, total)
    st_value = work.empty("st_value", np.int64, total)
    freed = 0
    for owner, name, kind, value in stats.segments(consume=True):
        # In collection order, each row to its event's next slot (an event's rows keep their order).
        kernels.place_rows(owner, fill, row_in_plane, name, kind, value, st_row, st_name, st_kind, st_value,
                           cuts if owner.shape[0] >= _PLACE_MIN_ROWS else None)
        freed += owner.nbytes + name.nbytes + kind.nbytes + value.nbytes
        del owner, name, kind, value
        if freed >= _TRIM_BYTES:
            # The segments placed are freed into the C heap (each is under glibc's mmap
            # threshold) while the placed columns fill pages of their own: handed back as
            # they go, the peak is one copy of the stat rows, not two.
            release_free_memory()
            freed = 0
    work.drop(fill)
    return st_row, st_name, st_kind, st_value, bounds


def _owner_cuts(per_event: np.ndarray, threads: int) -> np.ndarray | None:
    """Events (owners) cut into up to ``threads`` ranges of about equal stat rows (``per_event``:
    each event's), as ``kernels.place_rows`` takes them: the first 0, the last past every event;
    None for one range."""
    total = int(per_event.sum()) if threads > 1 else 0
    parts = min(threads, total // _PLACE_MIN_ROWS)
    if parts <= 1:
        return None
    cum = np.cumsum(per_event)
    inner = np.searchsorted(cum, total * np.arange(1, parts, dtype=np.int64) // parts, "right")
    return np.concatenate([[0], inner, [per_event.shape[0]]]).astype(np.int64)


