"""Totals of a selected time range: how many events of each name overlap it, for how long.

Durations are clipped to the range (an event half inside counts half its time), so the
totals answer "what ran during this selection"; nested events are counted on their own
(a parent and its child both count), as chrome://tracing's selection table does.

A name's total adds up every track (thread, stream, rank) it ran on, so it can be many times the
selection (344 % over four ranks). Its share of the selection is therefore taken on the track
where it ran longest (``busiest_track_ps``): a stream or thread runs one event at a time, so that
share is at most 100 % (events of one name nested in themselves on one line aside).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import window_rows


def range_summary(store: ProfileStore, start_ps: int, end_ps: int, tracks: list[int] | None = None,
                  limit: int = 100) -> dict[str, Any]:
    index = track_index(store)
    wanted = range(len(index.tracks)) if tracks is None else tracks
    names: list[np.ndarray] = []
    clipped: list[np.ndarray] = []
    track_of: list[np.ndarray] = []
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
        names.append(plane.name_id[a:b][inside])
        clipped.append(np.minimum(e[inside], end_ps) - np.maximum(s[inside], start_ps))
        track_of.append(np.full(int(np.count_nonzero(inside)), tid, dtype=np.int64))
    all_names = np.concatenate(names) if names else np.zeros(0, np.int32)
    all_dur = np.concatenate(clipped) if clipped else np.zeros(0, np.int64)
    uniq, inverse = np.unique(all_names, return_inverse=True)
    counts = np.bincount(inverse, minlength=uniq.shape[0])
    totals = np.bincount(inverse, weights=all_dur.astype(np.float64), minlength=uniq.shape[0])
    # Per (name, track) totals, then each name's largest.
    all_tracks = np.concatenate(track_of) if track_of else np.zeros(0, np.int64)
    pairs, pair_inv = np.unique(np.stack([inverse.astype(np.int64), all_tracks]), axis=1, return_inverse=True)
    pair_totals = np.bincount(pair_inv.ravel(), weights=all_dur.astype(np.float64), minlength=pairs.shape[1])
    busiest = np.zeros(uniq.shape[0], dtype=np.float64)
    np.maximum.at(busiest, pairs[0], pair_totals)
    order = np.lexsort((uniq, -totals))[:limit]
    return {
        "start_ps": start_ps, "end_ps": end_ps, "duration_ps": end_ps - start_ps,
        "event_count": int(all_names.shape[0]), "name_count": int(uniq.shape[0]),
        "names": [{"name": store.strings[int(uniq[i])], "count": int(counts[i]), "total_ps": int(totals[i]),
                   "busiest_track_ps": int(busiest[i])}
                  for i in order.tolist()],
    }
