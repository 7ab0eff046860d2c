"""Window queries with level of detail: what the trace viewer draws for [start, end) at a width.

The resolution (picoseconds per bucket) is the window span divided by its width in pixels,
rounded *down* to a power of two, so buckets sit on one global grid: a pan or a padded
refetch yields the same boxes for the same time range (the Perfetto approach), and the
resolution is never coarser than a pixel.

Per track, every event that overlaps the window and lasts at least one bucket is returned
as is (start, duration, name, depth, row). Shorter events are not dropped: per depth they
are merged into one *density box* per bucket, carrying how many events it holds, the time
they cover (busy fraction of the bucket) and the name of the longest of them (for colour and
tooltip). So ``returned + merged == in_window`` holds per track, and nothing disappears when
zoomed out — XProf's streaming viewer instead drops events it deems too small.

Each line is scanned once, in compiled code (the rows are already sorted by start; the
window is cut with ``np.searchsorted`` on start and on a running maximum of end times).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tbprof._core.kernels import lod_scan
from tbprof.store.tables import Plane, ProfileStore
from tbprof.timeline.counters import CounterWindow, counter_window
from tbprof.timeline.tracks import Track, TrackIndex, track_index


@dataclass
class SliceWindow:
    """One slice track's answer: visible events and density boxes (columns)."""

    rows: np.ndarray  # int64 plane rows of the visible events
    start_ps: np.ndarray  # int64
    dur_ps: np.ndarray  # int64
    name_id: np.ndarray  # int32
    depth: np.ndarray  # int16
    box_bucket: np.ndarray  # int64: the box covers [bucket * res, (bucket + 1) * res)
    box_depth: np.ndarray  # int16
    box_count: np.ndarray  # int64
    box_busy_ps: np.ndarray  # int64, summed durations of the merged events
    box_name_id: np.ndarray  # int32, name of the longest merged event
    in_window: int

    @property
    def merged(self) -> int:
        return int(self.box_count.sum())


@dataclass
class WindowResult:
    start_ps: int
    end_ps: int
    width_px: int
    resolution_ps: int
    index: TrackIndex
    slices: dict[int, SliceWindow] = field(default_factory=dict)  # track id -> window
    counters: dict[int, CounterWindow] = field(default_factory=dict)

    @property
    def in_window(self) -> int:
        return sum(s.in_window for s in self.slices.values())

    @property
    def returned(self) -> int:
        return sum(int(s.rows.shape[0]) for s in self.slices.values())

    @property
    def merged(self) -> int:
        return sum(s.merged for s in self.slices.values())

    @property
    def boxes(self) -> int:
        return sum(int(s.box_bucket.shape[0]) for s in self.slices.values())


def resolution_for(span_ps: int, width_px: int) -> int:
    """Largest power of two picoseconds not above span / width (>= 1)."""
    per_px = max(span_ps // max(width_px, 1), 1)
    return 1 << (int(per_px).bit_length() - 1)


def _end_cummax(store: ProfileStore, plane: Plane) -> np.ndarray:
    """Running maximum of event end times, restarted at each line (for the window's left cut)."""
    def compute() -> np.ndarray:
        end = plane.start_ps + plane.dur_ps
        out = np.empty_like(end)
        for i in range(plane.n_lines):
            lo, hi = int(plane.line_offsets[i]), int(plane.line_offsets[i + 1])
            if hi > lo:
                np.maximum.accumulate(end[lo:hi], out=out[lo:hi])
        return out
    return store.memo(("timeline", "end_cummax", plane.index), compute)


def window_rows(store: ProfileStore, plane: Plane, lo: int, hi: int, start_ps: int, end_ps: int) -> tuple[int, int]:
    """Rows [a, b) of rows lo..hi (one line) that may overlap [start_ps, end_ps).

    Rows before ``a`` all end at or before ``start_ps``; rows from ``b`` start at or after
    ``end_ps``. Rows in between may still end before ``start_ps`` (the caller checks).
    """
    cummax = _end_cummax(store, plane)
    a = lo + int(np.searchsorted(cummax[lo:hi], start_ps, side="left"))
    b = lo + int(np.searchsorted(plane.start_ps[lo:hi], end_ps, side="left"))
    return a, max(a, b)


def _slice_window(store: ProfileStore, track: Track, start_ps: int, end_ps: int, resolution_ps: int) -> SliceWindow:
    plane = store.planes[track.plane]
    if track.derived is not None:
        # Viewer-only events: "rows" are indices into the track's own arrays.
        d = track.derived
        hi = int(np.searchsorted(d.start_ps, end_ps, side="left"))
        rows = np.arange(hi, dtype=np.int64)
        first_row = 0
        start, dur, name, depth = d.start_ps[:hi], d.dur_ps[:hi], d.name_id[:hi], d.depth[:hi]
    elif track.rows is not None and track.depth is not None:
        # A derived track (Steps): its own rows and depths; few events, no cut needed.
        keep = plane.start_ps[track.rows] < end_ps
        rows = track.rows[keep]
        first_row = 0
        start, dur, name, depth = plane.start_ps[rows], plane.dur_ps[rows], plane.name_id[rows], track.depth[keep]
    else:
        lo, hi = int(plane.line_offsets[track.line]), int(plane.line_offsets[track.line + 1])
        a, b = window_rows(store, plane, lo, hi, start_ps, end_ps)
        rows = None
        first_row = a
        start, dur, name, depth = plane.start_ps[a:b], plane.dur_ps[a:b], plane.name_id[a:b], plane.depth[a:b]
    visible, bucket, bdepth, count, busy, bname, in_window = lod_scan(
        start, dur, depth, name, start_ps, resolution_ps.bit_length() - 1, track.max_depth + 1)
    visible_rows = rows[visible] if rows is not None else first_row + visible
    # Boxes by (depth, bucket): the browser then draws each depth's boxes left to right and
    # joins neighbours that fall on one screen pixel.
    order = np.lexsort((bucket, bdepth))
    bucket, bdepth, count, busy, bname = bucket[order], bdepth[order], count[order], busy[order], bname[order]
    return SliceWindow(visible_rows, start[visible], dur[visible], name[visible], depth[visible],
                       bucket, bdepth, count, busy, bname, int(in_window))


def query_window(store: ProfileStore, start_ps: int | None, end_ps: int | None, width_px: int,
                 tracks: list[int] | None = None) -> WindowResult:
    """Every track's events in [start_ps, end_ps) at ``width_px`` pixels (None: the whole span)."""
    start = 0 if start_ps is None else int(start_ps)
    end = store.span_ps if end_ps is None else int(end_ps)
    if end <= start:
        end = start + 1
    resolution = resolution_for(end - start, width_px)
    index = track_index(store)
    result = WindowResult(start, end, width_px, resolution, index)
    wanted = range(len(index.tracks)) if tracks is None else tracks
    for tid in wanted:
        track = index.tracks[tid]
        if track.kind == "counter" and track.counter is not None:
            result.counters[tid] = counter_window(track.counter, start, end, resolution)
        else:
            result.slices[tid] = _slice_window(store, track, start, end, resolution)
    return result
