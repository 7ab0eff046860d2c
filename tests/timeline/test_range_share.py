"""A selection's share per name (#35): "% of selection" summed over every track read 344 % over
four ranks; the share is the union of the name's intervals (at most the selection), and a run of
several ranks gets each rank's total and union. Expectations are derived here from the events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace
from tbprof.store.combine import absolute_origin_ps, combine_stores
from tbprof.store.tables import ProfileStore
from tbprof.timeline.range import covered_ps, range_summary
from tbprof.timeline.tracks import track_index
from tests.conftest import xplane_of


def _union_length(intervals: list[tuple[int, int]]) -> int:
    """Plain sweep: sort, merge overlapping intervals, add their lengths."""
    total = 0
    merged: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    for s, e in merged:
        total += e - s
    return total


@pytest.mark.parametrize("intervals", [
    [],
    [(0, 10)],
    [(0, 10), (5, 15)],  # overlap: 15
    [(0, 10), (2, 3), (20, 30)],  # nested and disjoint: 20
    [(5, 5), (0, 0)],  # zero-length
    [(10**15, 10**15 + 7), (10**15 + 3, 10**15 + 9), (0, 1)],  # far apart: 3 bands of 10^15 fit in int64
    [(0, 1), (2**61, 2**61 + 5), (2**61 + 2, 2**61 + 9)],  # 3 bands of 2^61 do not: ends ranked first
])
def test_union_length_per_key_matches_a_sweep(intervals: list[tuple[int, int]]) -> None:
    # The same intervals under three keys, key 1 empty: each key's union on its own.
    keys = [0] * len(intervals) + [2] * len(intervals)
    both = intervals + [(s + 1, e + 1) for s, e in intervals]
    got = covered_ps(np.array(keys, dtype=np.int64), np.array([s for s, _ in both], dtype=np.int64),
                     np.array([e for _, e in both], dtype=np.int64), 3)
    assert got.tolist() == [_union_length(intervals), 0, _union_length(intervals)]


def _clipped_by_track(store: ProfileStore, name: str, start: int, end: int) -> list[list[tuple[int, int]]]:
    out = []
    for track in track_index(store).tracks:
        if track.kind != "slices" or track.line < 0:
            continue
        plane = store.planes[track.plane]
        lo, hi = int(plane.line_offsets[track.line]), int(plane.line_offsets[track.line + 1])
        mine = np.array([store.strings[int(i)] == name for i in plane.name_id[lo:hi]], dtype=bool)
        s = plane.start_ps[lo:hi][mine]
        e = s + plane.dur_ps[lo:hi][mine]
        keep = (e > start) & (s < end)
        out.append([(max(int(a), start), min(int(b), end)) for a, b in zip(s[keep], e[keep], strict=True)])
    return out


def test_share_is_the_union_at_most_the_selection(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "keras_cnn"))
    start, end = 0, int(store.span_ps)
    summary = range_summary(store, start, end, limit=10_000)
    names = summary["names"]
    assert summary["ranks"] == [] and all(n["by_rank"] == [] for n in names)
    # The summed total exceeds the selection for some name (it ran on several threads at once),
    # which is why the share is not total / selection.
    assert any(n["total_ps"] > summary["duration_ps"] for n in names)
    for n in names:
        assert 0 <= n["covered_ps"] <= min(n["total_ps"], summary["duration_ps"])
        assert (n["covered_ps"] > 0) == (n["total_ps"] > 0)
    # Derivation for the top name: its clipped intervals on every slice track, merged.
    top = names[0]
    per_track = _clipped_by_track(store, top["name"], start, end)
    assert top["total_ps"] == sum(e - s for t in per_track for s, e in t)
    assert top["covered_ps"] == _union_length([iv for t in per_track for iv in t])


def test_ranks_of_a_pytorch_run_each_get_their_share(sample_profiles: Path) -> None:
    ranks = [read_chrome_trace(p) for p in sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))]
    store = combine_stores(ranks)
    start = int(store.span_ps) // 3
    end = start + int(store.span_ps) // 10
    summary = range_summary(store, start, end, limit=10_000)
    assert summary["ranks"] == ["rank 0", "rank 1"]
    # Each rank's own store, moved onto the combined time base (its absolute origin minus the
    # earliest rank's), holds that rank's intervals.
    zero = min(absolute_origin_ps(r) for r in ranks)
    shift = {f"rank {r.metadata['distributedInfo']['rank']}": absolute_origin_ps(r) - zero for r in ranks}
    own = {f"rank {r.metadata['distributedInfo']['rank']}": r for r in ranks}
    names = summary["names"]
    assert sum(n["count"] for n in names) == summary["event_count"]
    checked = 0
    for n in names[:12]:
        assert n["total_ps"] == sum(r["total_ps"] for r in n["by_rank"])
        assert 0 <= n["covered_ps"] <= summary["duration_ps"]
        everywhere: list[tuple[int, int]] = []
        for label, share in zip(summary["ranks"], n["by_rank"], strict=True):
            d = shift[label]
            tracks = _clipped_by_track(own[label], n["name"], start - d, end - d)
            intervals = [iv for t in tracks for iv in t]
            everywhere += [(s + d, e + d) for s, e in intervals]
            assert share["total_ps"] == sum(e - s for s, e in intervals)
            assert share["covered_ps"] == _union_length(intervals) <= summary["duration_ps"]
            checked += share["total_ps"] > 0
        assert n["covered_ps"] == _union_length(everywhere)
    assert checked > 12  # some names ran on both ranks in the range
