"""Compiled kernels that turn scanned XSpace columns into store columns, in place.

``wire_scan`` writes events and stats in wire order with raw metadata ids and line-relative
times. The store wants plane-relative rows, metadata rows, string ids and times relative to
the profile origin. Doing that with numpy expressions allocated a fresh temporary for every
step (~500 MB on jax_large), and on a VM the first touch of fresh memory costs ~1 ms per MB,
which was most of the store build. These kernels rewrite the scanned arrays where they lie,
one pass per plane, so the store's columns are the scanner's buffers.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from tbprof.store import tables

_KIND_REF = tables.KIND_REF

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


@numba.njit(cache=True, nogil=True, inline="always")
def _from_lut(key: int, lut: np.ndarray, missing: int) -> int:
    if 0 <= key < lut.shape[0]:
        return int(lut[key])
    return missing


@numba.njit(cache=True, nogil=True, inline="always")
def _search(key: int, sorted_ids: np.ndarray, mapped: np.ndarray, missing: int) -> int:
    lo = 0
    hi = sorted_ids.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_ids[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < sorted_ids.shape[0] and sorted_ids[lo] == key:
        return int(mapped[lo])
    return missing


@numba.njit(cache=True, nogil=True)
def absolute_starts(ev_start: np.ndarray, ev_dur: np.ndarray, ev_line: np.ndarray,
                    line_ts_ps: np.ndarray) -> tuple[Any, Any]:
    """Adds each event's line timestamp to its offset, in place; returns (min start, max end)."""
    n = ev_start.shape[0]
    if n == 0:
        return 0, 0
    lo = np.int64(ev_start[0] + line_ts_ps[ev_line[0]])
    hi = lo
    for i in range(n):
        s = ev_start[i] + line_ts_ps[ev_line[i]]
        ev_start[i] = s
        e = s + ev_dur[i]
        if s < lo:
            lo = s
        if e > hi:
            hi = e
    return lo, hi


@numba.njit(cache=True, nogil=True, inline="always")
def _set_meta(i: int, m: int, meta_out: np.ndarray, name_out: np.ndarray, meta_name_id: np.ndarray) -> None:
    if m >= 0:
        meta_out[i] = m
        name_out[i] = meta_name_id[m]
    else:
        meta_out[i] = 0
        name_out[i] = 0


@numba.njit(cache=True, nogil=True)
def finish_events(start: np.ndarray, dur: np.ndarray, line: np.ndarray, meta_in: np.ndarray, meta_out: np.ndarray,
                  name_out: np.ndarray, origin_ps: int, first_line: int, lut: np.ndarray, sorted_ids: np.ndarray,
                  rows: np.ndarray, meta_name_id: np.ndarray) -> bool:
    """One plane's events: times relative to the origin, plane-local line numbers, metadata
    rows (0 when the id is unknown) and name ids. ``meta_out`` may be ``meta_in``.

    Returns whether the rows are already in the store's (line, start, -dur) order, which
    profilers usually write.
    """
    if lut.shape[0] > 0:  # two loops, so the common one has no binary search in it
        for i in range(start.shape[0]):
            _set_meta(i, _from_lut(meta_in[i], lut, -1), meta_out, name_out, meta_name_id)
    else:
        for i in range(start.shape[0]):
            _set_meta(i, _search(meta_in[i], sorted_ids, rows, -1), meta_out, name_out, meta_name_id)
    in_order = True
    prev_line = -1
    prev_start = np.int64(0)
    prev_dur = np.int64(0)
    for i in range(start.shape[0]):
        s = start[i] - origin_ps
        start[i] = s
        ln = line[i] - first_line
        line[i] = ln
        d = dur[i]
        if in_order and i > 0:
            if ln < prev_line or (ln == prev_line and (s < prev_start or (s == prev_start and d > prev_dur))):
                in_order = False
        prev_line = ln
        prev_start = s
        prev_dur = d
    return in_order


@numba.njit(cache=True, nogil=True)
def finish_stats(owner: np.ndarray, meta_in: np.ndarray, meta_out: np.ndarray, kind: np.ndarray, value: np.ndarray,
                 first_event: int, lut: np.ndarray, sorted_ids: np.ndarray, name_ids: np.ndarray) -> None:
    """One plane's stats: plane-local owner rows, stat name ids (0 when unknown), and ref
    values turned into the name id of the referenced stat metadata. ``meta_out`` may be
    ``meta_in``."""
    for j in range(owner.shape[0]):
        owner[j] -= first_event
    if lut.shape[0] > 0:  # two loops, so the common one has no binary search in it
        for j in range(owner.shape[0]):
            meta_out[j] = _from_lut(meta_in[j], lut, 0)
            if kind[j] == _KIND_REF:
                value[j] = _from_lut(value[j], lut, 0)
    else:
        for j in range(owner.shape[0]):
            meta_out[j] = _search(meta_in[j], sorted_ids, name_ids, 0)
            if kind[j] == _KIND_REF:
                value[j] = _search(value[j], sorted_ids, name_ids, 0)
