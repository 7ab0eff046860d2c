"""Totals of a selected time range: how many events of each name overlap it, for how long.

Durations are clipped to the range (an event half inside counts half its time), so the
totals answer "what ran during this selection"; nested events are counted on their own
(a parent and its child both count), as chrome://tracing's selection table does.

A name's total adds up every track (thread, stream, rank) it ran on, so it can be many times the
selection (344 % over four ranks). Its share of the selection is therefore the union of its
intervals (``covered_ps``): the part of the selection during which it ran at all, at most 100 %
whatever the overlap between streams, ranks or nesting. A run of several ranks in one timeline
also gets each rank's total and union (``by_rank``), so the page can show the share rank by rank.
"""

from __future__ import annotations

import numpy as np

from tbprof.analyses.results.timeline import RangeName, RangeSummaryJson, RankShare
from tbprof.store.combine import PLANE_LABELS
from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import window_rows


def covered_ps(key: np.ndarray, start_ps: np.ndarray, end_ps: np.ndarray, n_keys: int) -> np.ndarray:
    """Per key (0..n_keys-1), the length of the union of its intervals ``[start_ps, end_ps)``.

    Sorted by (key, start), an interval adds what reaches past the furthest end seen so far in
    its key. That running maximum is one ``np.maximum.accumulate`` over the ends moved into a
    band per key (``key * band + end``, times taken from the earliest start); where those bands
    would not fit in int64 (a long span and many keys) the ends are first replaced by their rank
    among all endpoints, which keeps the order and makes the band as wide as the endpoints are many.
    """
    out = np.zeros(n_keys, dtype=np.int64)
    if key.shape[0] == 0:
        return out
    order = np.lexsort((start_ps, key))
    k, s, e = key[order].astype(np.int64), start_ps[order], end_ps[order]
    origin = int(s.min())
    band = int(e.max()) - origin + 1
    if n_keys * band < 1 << 62:
        value_of = None
        ends = e - origin
    else:
        value_of = np.sort(np.concatenate([s, e]))
        value_of = value_of[np.concatenate(([True], value_of[1:] != value_of[:-1]))]
        band = value_of.shape[0] + 1
        ends = np.searchsorted(value_of, e)
    furthest = np.maximum.accumulate(k * band + ends)
    same_key = np.zeros(k.shape[0], dtype=bool)
    same_key[1:] = k[1:] == k[:-1]
    prev = np.where(same_key, np.roll(furthest, 1) - k * band, 0)
    prev_end = np.where(same_key, prev + origin if value_of is None else value_of[prev], s)
    added = np.maximum(e - np.maximum(s, prev_end), 0)
    np.add.at(out, k, added)
    return out


def range_summary(store: ProfileStore, start_ps: int, end_ps: int, tracks: list[int] | None = None,
                  limit: int = 100) -> RangeSummaryJson:
    index = track_index(store)
    wanted = range(len(index.tracks)) if tracks is None else tracks
    labels: list[str] = list(store.metadata.get(PLANE_LABELS) or [])
    rank_names: list[str] = []
    names: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    rank_of: list[np.ndarray] = []
    for tid in wanted:
        track = index.tracks[tid]
        if track.kind != "slices" or track.line < 0:
            continue  # counters have no duration; derived tracks repeat line events
        plane = store.planes[track.plane]
        lo, hi = int(plane.line_offsets[track.line]), int(plane.line_offsets[track.line + 1])
        a, b = window_rows(store, plane, lo, hi, start_ps, end_ps)
        s = plane.start_ps[a:b]
        e = s + plane.dur_ps[a:b]
        inside = (e > start_ps) | ((e == s) & (s >= start_ps))
        label = labels[plane.index] if plane.index < len(labels) else ""
        if label not in rank_names:
            rank_names.append(label)
        names.append(plane.name_id[a:b][inside])
        starts.append(np.maximum(s[inside], start_ps))
        ends.append(np.minimum(e[inside], end_ps))
        rank_of.append(np.full(int(np.count_nonzero(inside)), rank_names.index(label), dtype=np.int64))
    all_names = np.concatenate(names) if names else np.zeros(0, np.int32)
    all_start = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    all_end = np.concatenate(ends) if ends else np.zeros(0, np.int64)
    all_rank = np.concatenate(rank_of) if rank_of else np.zeros(0, np.int64)
    uniq, inverse = np.unique(all_names, return_inverse=True)
    inverse = inverse.ravel().astype(np.int64)
    n_names = int(uniq.shape[0])
    counts = np.bincount(inverse, minlength=n_names)
    clipped = all_end - all_start
    totals = np.zeros(n_names, dtype=np.int64)
    np.add.at(totals, inverse, clipped)
    covered = covered_ps(inverse, all_start, all_end, n_names)
    # Ranks only where the timeline holds several (a PyTorch run's ranks together).
    ranked = len(labels) > 0 and any(rank_names)
    n_ranks = len(rank_names) if ranked else 0
    pair = inverse * max(n_ranks, 1) + all_rank
    rank_totals = np.zeros(n_names * max(n_ranks, 1), dtype=np.int64)
    np.add.at(rank_totals, pair, clipped)
    rank_covered = covered_ps(pair, all_start, all_end, n_names * max(n_ranks, 1)) if ranked else rank_totals
    order = np.lexsort((uniq, -totals))[:limit]

    def by_rank(i: int) -> list[RankShare]:
        return [{"total_ps": int(rank_totals[i * n_ranks + r]), "covered_ps": int(rank_covered[i * n_ranks + r])}
                for r in range(n_ranks)]

    rows: list[RangeName] = [{"name": store.strings[int(uniq[i])], "count": int(counts[i]),
                              "total_ps": int(totals[i]), "covered_ps": int(covered[i]), "by_rank": by_rank(i)}
                             for i in order.tolist()]
    return {
        "start_ps": start_ps, "end_ps": end_ps, "duration_ps": end_ps - start_ps,
        "event_count": int(all_names.shape[0]), "name_count": n_names,
        "ranks": rank_names if ranked else [], "names": rows,
    }
