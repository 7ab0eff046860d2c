"""Flow points bound to slices, for the plane builder (``plane_collected.build_planes`` calls it
once the rows are in store order): a point binds to the deepest slice of its thread enclosing
it, or (a "next" point: Chrome's ``f`` without ``"bp": "e"``) to the next slice starting at or
after it. The points of one identity in time order form a chain, a new chain at each start point
after the first; every event of a chain gets the stat ``flow_id`` (the chain's number) and, where
the chain has a category, ``flow_category``. A chain with one bound point links nothing.

Points are taken in parts by identity (every point of one identity in the same part): in memory,
one part; streaming, as many as keep a part within a chunk of points and its temporaries within
half the budget. In memory, the points bind on several threads, in ranges of points
(``kernels.bind_points``; each point's slice is its own), and the reader makes the chains
beforehand, on a thread of its own (``FlowPoints.known_chains``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from tbprof._core import kernels
from tbprof._core.wire import default_threads
from tbprof.readers.chrome_columns import MemoryWork, StatSink, Work
from tbprof.readers.plane_collected import Layout
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique
from tbprof.store.markers import FLOW_CATEGORY_STAT, FLOW_ID_STAT
from tbprof.store.strings import StringTable

# Anonymous bytes per flow point of a part (binding, chains).
_BYTES_PER_FLOW = 160
# Fewer points than this are bound on the calling thread alone (threads cost more than they save).
_THREADED_MIN_POINTS = 1 << 16


class FlowPoints(Protocol):
    """A reader's flow points: ``cat_key`` and ``id_key`` (dense ids of each point's category and
    identity; one flow is one (category, identity)), and per selection of points their thread,
    time and kind, and their categories' string ids. ``known_chains``: ``chains`` of every point,
    where the reader made them already (on a thread of its own while the rows were put in order),
    else None."""

    cat_key: np.ndarray
    id_key: np.ndarray
    known_chains: tuple[np.ndarray, np.ndarray] | None

    def where(self, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(global line or -1 where the thread has no line, time in ps from the origin, binds to
        the next slice, starts a chain) of the points ``sel``."""
        ...

    def categories(self, sel: np.ndarray) -> np.ndarray:
        """The string ids of the categories of the points ``sel`` (0: none)."""
        ...


def bind_flows(points: FlowPoints, layout: Layout, work: Work, strings: StringTable, stats: StatSink) -> int:
    """Binds ``points`` to the slices of ``layout`` and adds their stats to ``stats`` (owner in
    collection order): every part's ``flow_id`` rows, then every part's ``flow_category`` rows.
    Returns how many points bound to no slice."""
    cat_key, id_key = points.cat_key, points.id_key
    n_points = int(cat_key.shape[0])
    threads = default_threads() if isinstance(work, MemoryWork) and n_points >= _THREADED_MIN_POINTS else 1
    parts = max(1, -(-n_points // work.chunk_events))
    if work.limit is not None:
        parts = max(parts, -(-_BYTES_PER_FLOW * n_points // max(1, work.limit.budget_bytes // 2)))
    part_of = ((cat_key * (int(id_key.max()) + 1) + id_key) % parts).astype(np.int32) if parts > 1 else None
    ids = StatSink(work)
    cat_sink = StatSink(work)
    unbound = 0
    chain_base = 0
    for part in range(parts):
        sel = np.arange(n_points) if part_of is None else np.flatnonzero(part_of == part)
        owner, chain_of, cat_ids, n_unbound, n_chains = _bind_part(points, sel, layout, threads)
        del sel
        unbound += n_unbound
        has_cat = cat_ids > 0
        owner32 = owner.astype(np.int32)
        # Names and kinds are written below (the stat names are interned after every part).
        ids.append(owner32, np.zeros(owner32.shape[0], np.int32), np.zeros(owner32.shape[0], np.int8),
                   chain_of + chain_base)
        k = int(has_cat.sum())
        cat_sink.append(owner32[has_cat], np.zeros(k, np.int32), np.zeros(k, np.int8), cat_ids[has_cat])
        chain_base += n_chains
    del part_of
    flow_stat = strings.intern(FLOW_ID_STAT)
    cat_stat = strings.intern(FLOW_CATEGORY_STAT)
    for sink, stat, kind in ((ids, flow_stat, tables.KIND_INT64), (cat_sink, cat_stat, tables.KIND_STR)):
        for owner, _, _, value in sink.segments(consume=True):
            stats.append(np.asarray(owner), np.full(owner.shape[0], stat, np.int32),
                         np.full(owner.shape[0], kind, np.int8), np.asarray(value))
    return unbound


def _bind_part(points: FlowPoints, sel: np.ndarray, layout: Layout, threads: int,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """One part's points bound and chained: (owner event, chain in the part, chain category id)
    per (event, chain), the points bound to nothing, the part's chains."""
    n_flows = int(sel.shape[0])
    if n_flows == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty, 0, 0
    line_g, point_ps, is_next, is_start = points.where(sel)
    bound = _bound(layout, line_g, point_ps, is_next, threads)
    if points.known_chains is not None and n_flows == points.cat_key.shape[0]:  # one part: every point
        chain, pt_order = points.known_chains
    else:
        chain, pt_order = chains(points.cat_key[sel], points.id_key[sel], point_ps, is_start)
    del line_g, point_ps, is_next, is_start
    unbound = int((bound < 0).sum())
    keep = np.nonzero(bound >= 0)[0]
    # A chain with a single bound point links nothing; drop it.
    n_chains = int(chain.max()) + 1
    counts = np.bincount(chain[keep], minlength=n_chains)
    keep = keep[counts[chain[keep]] >= 2]
    # One stat per (event, chain), even when two points of a chain bind to one event.
    # Sorted by (event, chain), as one int64 key: events and chains are fewer than 2^31.
    pairs = sorted_unique(bound[keep] * n_chains + chain[keep])
    owner = pairs // n_chains
    chain_of = pairs % n_chains
    first_point = np.full(n_chains, -1, dtype=np.int64)
    first_point[chain[pt_order][::-1]] = pt_order[::-1]
    cat_ids = points.categories(sel[first_point[chain_of]]).astype(np.int64) if chain_of.shape[0] \
        else np.zeros(0, np.int64)
    return owner, chain_of, cat_ids, unbound, n_chains


def _bound(layout: Layout, line_g: np.ndarray, point_ps: np.ndarray, is_next: np.ndarray, threads: int,
           ) -> np.ndarray:
    """The collection-order event each point binds to, or -1."""
    n_flows = int(line_g.shape[0])
    bound = np.full(n_flows, -1, dtype=np.int64)
    # A trace of flow points only has no line to index.
    p_plane = (np.where(line_g >= 0, layout.plane_of_line[np.maximum(line_g, 0)], -1)
               if layout.plane_of_line.shape[0] else np.full(n_flows, -1, dtype=np.int64))
    for pi, sp in enumerate(layout.planes):
        on = np.nonzero(p_plane == pi)[0]
        if on.shape[0] == 0:
            continue
        rows = layout.order[int(layout.plane_bounds[pi]):int(layout.plane_bounds[pi + 1])]
        parent = kernels.depth_parents(sp.depth, sp.line_offsets)
        got = kernels.bind_points(sp.start_ps, sp.start_ps + sp.dur_ps, parent, sp.line_offsets,
                                  layout.local_of_line[line_g[on]], point_ps[on], is_next[on], threads)
        del parent
        ok = got >= 0
        bound[on[ok]] = rows[got[ok]]
    return bound


def chains(cat_key: np.ndarray, id_key: np.ndarray, point_ps: np.ndarray, is_start: np.ndarray,
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each point's chain (numbered in the order of the chains' identities' first points, then
    time) and the points in that order. A chain is the points of one identity in time order; a
    start point after the chain's first point starts a new one (ids are reused once a flow has
    finished). Identities are numbered in the order they first appear (as a dict of (cat, id)
    would)."""
    n_flows = int(cat_key.shape[0])
    uniq, first_at, inv = np.unique(cat_key * (int(id_key.max()) + 1) + id_key, return_index=True,
                                    return_inverse=True)
    rank = np.empty(uniq.shape[0], dtype=np.int64)
    rank[np.argsort(first_at, kind="stable")] = np.arange(uniq.shape[0])
    ident_idx = rank[inv.reshape(-1)]
    pt_order = np.lexsort((~is_start, point_ps, ident_idx))
    new_ident = np.ones(n_flows, dtype=np.bool_)
    new_ident[1:] = ident_idx[pt_order][1:] != ident_idx[pt_order][:-1]
    chain_break = new_ident | is_start[pt_order]
    chain_sorted = np.cumsum(chain_break) - 1
    chain = np.empty(n_flows, dtype=np.int64)
    chain[pt_order] = chain_sorted
    return chain, pt_order
