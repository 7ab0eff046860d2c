"""Metadata-id lookup tables for the compiled column kernels (``tbprof._core.kernels``).

The wire scanner (``tbprof._core.wire``) writes events and stats in wire order with raw
metadata ids and line-relative times. The store wants plane-relative rows, metadata rows,
string ids and times relative to the profile origin. ``finish_events`` / ``finish_stats``
rewrite the scanned arrays where they lie, one pass per plane, so the store's columns are the
scanner's buffers: numpy expressions would allocate a temporary per step, and on a VM first
touching fresh memory dominates the store build (bench/measurements.md#store-build).
"""

from __future__ import annotations

import numpy as np


def id_lookup(sorted_ids: np.ndarray, mapped: np.ndarray, n_queries: int, missing: int) -> np.ndarray:
    """A dense lookup table id -> mapped value for small non-negative ids, else an empty array.

    Profilers number metadata 1, 2, 3, ...; a table indexed by id beats a binary search. With
    sparse or negative ids the kernels fall back to a binary search over ``sorted_ids``.
    """
    if sorted_ids.shape[0] == 0 or int(sorted_ids[0]) < 0 or int(sorted_ids[-1]) >= 4 * n_queries + 1024:
        return np.zeros(0, dtype=mapped.dtype)
    lut = np.full(int(sorted_ids[-1]) + 1, missing, dtype=mapped.dtype)
    lut[sorted_ids] = mapped
    return lut
