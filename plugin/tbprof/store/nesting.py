"""Nesting depth of events on one line (a thread's call stack, a stream's op/kernel levels)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def nesting_depth(start_ps: np.ndarray, dur_ps: np.ndarray, line_offsets: np.ndarray) -> np.ndarray:
    """Depth of each event: how many earlier events of its line still enclose its start.

    Events must be sorted by (line, start_ps, -dur_ps). An event that starts inside another
    but ends after it (overlap without nesting, common on async GPU lines) is placed below
    it, like chrome://tracing does, rather than dropped.
    """
    n = start_ps.shape[0]
    depth = np.zeros(n, dtype=np.int16)
    stack_end = np.empty(256, dtype=np.int64)
    for line in range(line_offsets.shape[0] - 1):
        top = 0
        for i in range(line_offsets[line], line_offsets[line + 1]):
            s = start_ps[i]
            while top > 0 and stack_end[top - 1] <= s:
                top -= 1
            if top == stack_end.shape[0]:
                grown = np.empty(top * 2, dtype=np.int64)
                grown[:top] = stack_end[:top]
                stack_end = grown
            depth[i] = min(top, 32767)
            stack_end[top] = s + dur_ps[i]
            top += 1
    return depth
