"""Counter tracks in a window: raw samples when few, else min/max per bucket (uPlot's rule).

A counter is a step function: a sample holds until the next one. The window's answer
starts with the last sample before the window (so the line enters the view at the right
height) and, when there are more than two samples per bucket on average, keeps per
bucket the first sample time, the minimum, the maximum and the last value, so no spike is
lost when zoomed out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tbprof.timeline.tracks import CounterSeries

RAW_SAMPLES_PER_BUCKET = 2


@dataclass
class CounterWindow:
    time_ps: np.ndarray  # int64, ascending
    series_min: dict[str, np.ndarray]  # float64 per sample or per bucket
    series_max: dict[str, np.ndarray]
    series_last: dict[str, np.ndarray]
    in_window: int  # samples inside [start, end)
    decimated: bool


def counter_window(series: CounterSeries, start_ps: int, end_ps: int, resolution_ps: int) -> CounterWindow:
    t = series.time_ps
    a = int(np.searchsorted(t, start_ps, side="left"))
    b = int(np.searchsorted(t, end_ps, side="left"))
    lo = max(a - 1, 0)  # the sample in force when the window starts
    times = t[lo:b]
    buckets = (end_ps - start_ps) // resolution_ps + 1
    if times.shape[0] <= RAW_SAMPLES_PER_BUCKET * buckets:
        vals = {k: v[lo:b] for k, v in series.values.items()}
        return CounterWindow(times, vals, vals, vals, b - a, False)
    bucket = times // resolution_ps
    first = np.concatenate([[0], np.nonzero(np.diff(bucket))[0] + 1])
    last = np.concatenate([first[1:] - 1, [times.shape[0] - 1]])
    mins = {k: np.minimum.reduceat(v[lo:b], first) for k, v in series.values.items()}
    maxs = {k: np.maximum.reduceat(v[lo:b], first) for k, v in series.values.items()}
    lasts = {k: v[lo:b][last] for k, v in series.values.items()}
    return CounterWindow(times[first], mins, maxs, lasts, b - a, True)
