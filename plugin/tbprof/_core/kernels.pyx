# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True, initializedcheck=True
"""Compiled loops over store columns that numpy cannot express as vector code.

Each function has the signature and semantics of the numba kernel it replaced (named in its
docstring), so call sites only changed their import. Inputs are coerced to the dtype the loop
needs (a no-op for the store's own columns); arrays a kernel writes in place must already have
their dtype. Indexing is bounds-checked (an index from a corrupt file raises IndexError
instead of reading stray memory); the loops run with the GIL released.

Arithmetic on times wraps like numpy's int64 (the extension is built with -fwrapv).
"""

cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memset
from tbprof._core.hash64 cimport fmix64

import os

import numpy as np


cdef object _in(object a, object dtype):
    """A C-contiguous array of ``dtype`` (a view when ``a`` already is one)."""
    return np.ascontiguousarray(a, dtype=dtype)


cdef object _bool(object a):
    """A bool array as uint8 (a view when possible)."""
    arr = np.ascontiguousarray(a)
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    return (arr != 0).view(np.uint8)


cdef void _check_out(object a, object dtype, str name) except *:
    if not isinstance(a, np.ndarray) or a.dtype != dtype or not a.flags.c_contiguous or not a.flags.writeable:
        raise TypeError(f"{name} must be a writable C-contiguous {np.dtype(dtype).name} array")


# --- store/nesting.py ------------------------------------------------------------------------

cdef int64_t* _grow(int64_t* stack, Py_ssize_t* cap) noexcept nogil:
    cdef Py_ssize_t new_cap = cap[0] * 2 if cap[0] else 256
    cdef int64_t* grown = <int64_t*>realloc(stack, new_cap * sizeof(int64_t))
    if grown != NULL:
        cap[0] = new_cap
    return grown


def nesting_depth(start_ps, dur_ps, line_offsets) -> np.ndarray:
    """Depth of each event: how many earlier events of its line still enclose its start.

    Events sorted by (line, start_ps, -dur_ps). An event that starts inside another but ends
    after it (overlap without nesting, common on async GPU lines) is placed below it, as
    chrome://tracing does, rather than dropped. (store/nesting.py)
    """
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] dur = _in(dur_ps, np.int64)
    cdef const int64_t[::1] offs = _in(line_offsets, np.int64)
    if dur.shape[0] != start.shape[0]:
        raise ValueError("start_ps and dur_ps differ in length")
    out = np.zeros(start.shape[0], dtype=np.int16)
    cdef int16_t[::1] depth = out
    cdef Py_ssize_t cap = 0, top, line, i
    cdef int64_t* stack = NULL
    cdef int64_t s
    cdef bint oom = False
    try:
        with nogil:
            stack = _grow(NULL, &cap)
            if stack == NULL:
                oom = True
            else:
                for line in range(offs.shape[0] - 1):
                    top = 0
                    for i in range(offs[line], offs[line + 1]):
                        s = start[i]
                        while top > 0 and stack[top - 1] <= s:
                            top -= 1
                        if top == cap:
                            stack = _grow(stack, &cap)
                            if stack == NULL:
                                oom = True
                                break
                        depth[i] = <int16_t>(top if top < 32767 else 32767)
                        stack[top] = s + dur[i]
                        top += 1
                    if oom:
                        break
    finally:
        free(stack)
    if oom:
        raise MemoryError()
    return out


# --- readers/xplane_columns.py ---------------------------------------------------------------

ctypedef fused meta_t:
    int32_t
    int64_t


def absolute_starts(ev_start, ev_dur, ev_line, line_ts_ps) -> tuple[int, int]:
    """Adds each event's line timestamp to its offset, in place; returns (min start, max end)."""
    _check_out(ev_start, np.int64, "ev_start")
    cdef int64_t[::1] start = ev_start
    cdef const int64_t[::1] dur = _in(ev_dur, np.int64)
    cdef const int32_t[::1] line = _in(ev_line, np.int32)
    cdef const int64_t[::1] ts = _in(line_ts_ps, np.int64)
    cdef Py_ssize_t n = start.shape[0], i
    cdef int64_t lo, hi, s, e
    if n == 0:
        return 0, 0
    if dur.shape[0] != n or line.shape[0] != n:
        raise ValueError("event columns differ in length")
    with nogil:
        lo = start[0] + ts[line[0]]
        hi = lo
        for i in range(n):
            s = start[i] + ts[line[i]]
            start[i] = s
            e = s + dur[i]
            if s < lo:
                lo = s
            if e > hi:
                hi = e
    return lo, hi


cdef inline int64_t _search(int64_t key, const int64_t[::1] sorted_ids, const int32_t[::1] mapped,
                            int64_t missing) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = sorted_ids.shape[0], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_ids[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < sorted_ids.shape[0] and sorted_ids[lo] == key and lo < mapped.shape[0]:
        return mapped[lo]
    return missing


def finish_events(start, dur, line, meta_in, meta_out, name_out, int64_t origin_ps, int64_t first_line, lut,
                  sorted_ids, rows, meta_name_id, line_ts=None, depth=None, bint names=True, bint times=True) -> bool:
    """One plane's events: times relative to the origin, plane-local line numbers, metadata rows
    (0 when the id is unknown) and name ids, in place; ``meta_out`` may be ``meta_in``.

    ``line_ts``: each line's timestamp (indexed by the file's line numbers, before they are made
    plane-local), added to each start first, as ``absolute_starts`` would have (None: the starts
    are absolute already). ``depth`` (int16, written): each event's nesting depth in its line, as
    ``nesting_depth`` gives it, in the same pass; valid only where the rows are in order.

    Returns whether the rows are already in the store's (line, start, -dur) order, which
    profilers usually write. (readers/xplane_columns.py)

    The pass is two loops over disjoint columns: ``names`` (metadata rows and name ids, from
    ``meta_in``) and ``times`` (starts, lines, depths and the order, from ``start``, ``dur`` and
    ``line``); a caller may run each on its own thread (one call with ``times=False``, one with
    ``names=False``: the latter's answer is the order). An error of the metadata rows is the
    one a single pass raises first.
    """
    _check_out(start, np.int64, "start")
    _check_out(line, np.int32, "line")
    _check_out(meta_out, np.int32, "meta_out")
    _check_out(name_out, np.int32, "name_out")
    if depth is not None:
        _check_out(depth, np.int16, "depth")
    ts = _in(line_ts, np.int64) if line_ts is not None else np.zeros(0, np.int64)
    out_depth = depth if depth is not None else np.zeros(0, np.int16)
    if meta_in.dtype == np.int32:
        return _finish_events[int32_t](start, dur, line, meta_in, meta_out, name_out, origin_ps, first_line, lut,
                                       sorted_ids, rows, meta_name_id, ts, line_ts is not None, out_depth,
                                       depth is not None, names, times)
    return _finish_events[int64_t](start, dur, line, _in(meta_in, np.int64), meta_out, name_out, origin_ps,
                                   first_line, lut, sorted_ids, rows, meta_name_id, ts, line_ts is not None,
                                   out_depth, depth is not None, names, times)


# Unchecked indexing in the two loops a reader runs over every event and stat: their columns'
# lengths are checked first, and each index read from the file is compared with its table's.
@cython.boundscheck(False)
cdef int _finish_events(int64_t[::1] start, dur_arr, int32_t[::1] line, const meta_t[::1] meta_in,
                         int32_t[::1] meta_out, int32_t[::1] name_out, int64_t origin_ps, int64_t first_line,
                         lut_arr, sorted_arr, rows_arr, names_arr, const int64_t[::1] ts, bint add_ts,
                         int16_t[::1] depth, bint want_depth, bint names, bint times) except -1:
    cdef const int64_t[::1] dur = _in(dur_arr, np.int64)
    cdef const int32_t[::1] lut = _in(lut_arr, np.int32)
    cdef const int64_t[::1] sorted_ids = _in(sorted_arr, np.int64)
    cdef const int32_t[::1] rows = _in(rows_arr, np.int32)
    cdef const int32_t[::1] meta_name_id = _in(names_arr, np.int32)
    cdef Py_ssize_t n = start.shape[0], i
    if dur.shape[0] != n or line.shape[0] != n or meta_in.shape[0] != n or meta_out.shape[0] != n \
            or name_out.shape[0] != n or (want_depth and depth.shape[0] != n):
        raise ValueError("event columns differ in length")
    cdef int64_t m, key, s, d, ln, g, prev_line = -1, prev_start = 0, prev_dur = 0
    cdef bint in_order = True, bad_line = False, bad_row = False, oom = False
    cdef Py_ssize_t n_ts = ts.shape[0], n_names = meta_name_id.shape[0], cap = 0, top = 0
    cdef int64_t* stack = NULL
    if n == 0:
        # (Not even the GIL handed over: taking it back can wait a switch interval for a thread
        # that imports meanwhile, and half the planes of a file may be empty.)
        return True
    try:
        with nogil:
            if not names:
                pass
            elif lut.shape[0] > 0:  # two loops, so the common one has no binary search in it
                for i in range(n):
                    key = meta_in[i]
                    m = lut[key] if 0 <= key < lut.shape[0] else -1
                    if m >= n_names:
                        bad_row = True
                        break
                    if m >= 0:
                        meta_out[i] = <int32_t>m
                        name_out[i] = meta_name_id[m]
                    else:
                        meta_out[i] = 0
                        name_out[i] = 0
            else:
                for i in range(n):
                    m = _search(meta_in[i], sorted_ids, rows, -1)
                    if m >= n_names:
                        bad_row = True
                        break
                    if m >= 0:
                        meta_out[i] = <int32_t>m
                        name_out[i] = meta_name_id[m]
                    else:
                        meta_out[i] = 0
                        name_out[i] = 0
            if want_depth and times and not bad_row:
                stack = _grow(NULL, &cap)
                oom = stack == NULL
            for i in range(n if times and not bad_row else 0):
                g = line[i]
                s = start[i]
                if add_ts:
                    if not 0 <= g < n_ts:
                        bad_line = True
                        break
                    s = s + ts[g]
                s = s - origin_ps
                start[i] = s
                ln = g - first_line
                line[i] = <int32_t>ln
                d = dur[i]
                if in_order and i > 0:
                    if ln < prev_line or (ln == prev_line and (s < prev_start or (s == prev_start and d > prev_dur))):
                        in_order = False
                if in_order and want_depth and not oom:
                    # ``nesting_depth``'s stack, reset at each line (rows in order: a line's rows in a row).
                    if ln != prev_line:
                        top = 0
                    while top > 0 and stack[top - 1] <= s:
                        top -= 1
                    if top == cap:
                        stack = _grow(stack, &cap)
                        if stack == NULL:
                            oom = True
                    if not oom:
                        depth[i] = <int16_t>(top if top < 32767 else 32767)
                        stack[top] = s + d
                        top += 1
                prev_line = ln
                prev_start = s
                prev_dur = d
    finally:
        free(stack)
    if bad_row:
        raise IndexError("an event's metadata row is out of range")
    if bad_line:
        raise IndexError("an event's line is out of range")
    if oom:
        raise MemoryError()
    return in_order


def finish_stats(owner, meta_in, meta_out, kind, value, int64_t first_event, lut, sorted_ids, name_ids) -> None:
    """One plane's stats, in place: plane-local owner rows, stat name ids (0 when unknown), and
    ref values turned into the name id of the referenced stat metadata; ``meta_out`` may be
    ``meta_in``. (readers/xplane_columns.py)"""
    _check_out(owner, np.int32, "owner")
    _check_out(meta_out, np.int32, "meta_out")
    _check_out(value, np.int64, "value")
    if meta_in.dtype == np.int32:
        _finish_stats[int32_t](owner, meta_in, meta_out, kind, value, first_event, lut, sorted_ids, name_ids)
    else:
        _finish_stats[int64_t](owner, _in(meta_in, np.int64), meta_out, kind, value, first_event, lut, sorted_ids,
                               name_ids)


@cython.boundscheck(False)
cdef int _finish_stats(int32_t[::1] owner, const meta_t[::1] meta_in, int32_t[::1] meta_out, kind_arr,
                       int64_t[::1] value, int64_t first_event, lut_arr, sorted_arr, names_arr) except -1:
    cdef const int8_t[::1] kind = _in(kind_arr, np.int8)
    cdef const int32_t[::1] lut = _in(lut_arr, np.int32)
    cdef const int64_t[::1] sorted_ids = _in(sorted_arr, np.int64)
    cdef const int32_t[::1] name_ids = _in(names_arr, np.int32)
    cdef Py_ssize_t n = owner.shape[0], j
    cdef int64_t key
    if meta_in.shape[0] != n or meta_out.shape[0] != n or kind.shape[0] != n or value.shape[0] != n:
        raise ValueError("stat columns differ in length")
    if n == 0:
        return 0  # (the GIL kept: see _finish_events)
    with nogil:
        for j in range(n):
            owner[j] = <int32_t>(owner[j] - first_event)
        if lut.shape[0] > 0:  # two loops, so the common one has no binary search in it
            for j in range(n):
                key = meta_in[j]
                meta_out[j] = lut[key] if 0 <= key < lut.shape[0] else 0
                if kind[j] == 6:  # KIND_REF
                    key = value[j]
                    value[j] = lut[key] if 0 <= key < lut.shape[0] else 0
        else:
            for j in range(n):
                meta_out[j] = <int32_t>_search(meta_in[j], sorted_ids, name_ids, 0)
                if kind[j] == 6:
                    value[j] = _search(value[j], sorted_ids, name_ids, 0)
    return 0


# --- store/tables.py ---------------------------------------------------------------------------

cdef inline Py_ssize_t _lut_at(const int32_t[::1] lut, int32_t i) noexcept nogil:
    return lut[i] if 0 <= i < lut.shape[0] else -1


def _bucket_count(const int32_t[::1] ids, const int32_t[::1] lut, int64_t[::1] counts, Py_ssize_t lo,
                  Py_ssize_t hi) -> None:
    """Counts the rows [lo, hi) of ``ids`` per bucket (``counts[b + 1]``)."""
    cdef Py_ssize_t i, b
    with nogil:
        for i in range(lo, hi):
            b = _lut_at(lut, ids[i])
            if b >= 0:
                counts[b + 1] += 1


def _bucket_place(const int32_t[::1] ids, const int32_t[::1] lut, int64_t[::1] pos, const int32_t[::1] own,
                  const int8_t[::1] knd, const int64_t[::1] val, int64_t[::1] oo, int8_t[::1] ok, int64_t[::1] ov,
                  Py_ssize_t lo, Py_ssize_t hi) -> None:
    """Places the owner, kind and value of the rows [lo, hi) at their bucket's next slot."""
    cdef Py_ssize_t i, b, d
    with nogil:
        for i in range(lo, hi):
            b = _lut_at(lut, ids[i])
            if b >= 0:
                d = pos[b]
                pos[b] = d + 1
                oo[d] = own[i]
                ok[d] = knd[i]
                ov[d] = val[i]


def bucket_gather(ids, lut, Py_ssize_t n_buckets, owner, kind, value, Py_ssize_t threads=1
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The owner, kind and value of the rows of ``ids`` whose ``lut[id]`` is a bucket, grouped by
    bucket in row order (a counting sort: one pass to count, one to place), and the bucket
    bounds. ``threads`` > 1: the rows in that many ranges, counted and placed on as many
    threads (the GIL released), each range's slots after the earlier ranges' in every bucket,
    so the answer is the one-thread answer. (store/tables.py ``prefetch_stat_columns``)"""
    cdef const int32_t[::1] i_ids = _in(ids, np.int32)
    cdef const int32_t[::1] i_lut = _in(lut, np.int32)
    cdef const int32_t[::1] own = _in(owner, np.int32)
    cdef const int8_t[::1] knd = _in(kind, np.int8)
    cdef const int64_t[::1] val = _in(value, np.int64)
    cdef Py_ssize_t n = i_ids.shape[0]
    if own.shape[0] != n or knd.shape[0] != n or val.shape[0] != n:
        raise ValueError("stat columns differ in length")
    if n_buckets < 0:
        raise ValueError("n_buckets must be >= 0")
    if i_lut.shape[0] and (np.asarray(i_lut).max() >= n_buckets or np.asarray(i_lut).min() < -1):
        raise IndexError("lut outside the buckets")
    cdef Py_ssize_t parts = max(1, min(threads, n // (1 << 20) if n >= (1 << 21) else 1))
    bounds_arr = [(n * t // parts, n * (t + 1) // parts) for t in range(parts)]
    counts = [np.zeros(n_buckets + 1, dtype=np.int64) for _ in range(parts)]
    run_parts(_bucket_count, [(i_ids, i_lut, counts[t], lo, hi) for t, (lo, hi) in enumerate(bounds_arr)])
    per_part = np.stack([c[1:] for c in counts]) if parts else np.zeros((0, n_buckets), np.int64)
    total = per_part.sum(axis=0)
    bounds = np.zeros(n_buckets + 1, dtype=np.int64)
    np.cumsum(total, out=bounds[1:])
    # Part t's slots in bucket b start after bucket b's earlier parts.
    starts = bounds[:n_buckets] + np.cumsum(per_part, axis=0) - per_part
    out_owner = np.empty(bounds[n_buckets], dtype=np.int64)
    out_kind = np.empty(bounds[n_buckets], dtype=np.int8)
    out_value = np.empty(bounds[n_buckets], dtype=np.int64)
    run_parts(_bucket_place, [(i_ids, i_lut, np.ascontiguousarray(starts[t]), own, knd, val, out_owner, out_kind,
                               out_value, lo, hi) for t, (lo, hi) in enumerate(bounds_arr)])
    return out_owner, out_kind, out_value, bounds


def run_parts(fn, jobs, name="tbprof-kernel") -> None:
    """``fn(*job)`` for each job: the first in this thread, the others on threads of their own
    (``name``d); the first exception any raised is raised here once all have ended."""
    import threading
    errors = []

    def run(job):
        try:
            fn(*job)
        except BaseException as e:  # re-raised in the caller
            errors.append(e)

    workers = [threading.Thread(target=run, args=(job,), name=name) for job in jobs[1:]]
    for w in workers:
        w.start()
    if jobs:
        run(jobs[0])
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


# --- timeline/window.py ----------------------------------------------------------------------

def lod_scan(start_ps, dur_ps, depth, name_id, int64_t window_start_ps, int resolution_shift, Py_ssize_t n_depths):
    """One pass over candidate events (ascending start): visible ones and density boxes.

    An event is in the window when it ends after the window start (instants: when they start
    at or after it); the candidates already start before the window end. Returns (indices of
    visible events, box bucket, box depth, box count, box busy ps, box name id, events in the
    window). The resolution is 2**resolution_shift ps, so a bucket is a shift, not a 64-bit
    division. (timeline/window.py ``_lod_scan``)
    """
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] dur = _in(dur_ps, np.int64)
    cdef const int16_t[::1] dep = _in(depth, np.int16)
    cdef const int32_t[::1] name = _in(name_id, np.int32)
    cdef Py_ssize_t n = start.shape[0], i, n_visible = 0, n_boxes = 0, lvl
    if dur.shape[0] != n or dep.shape[0] != n or name.shape[0] != n:
        raise ValueError("event columns differ in length")
    if not 0 <= resolution_shift < 63:
        raise ValueError("resolution_shift must be in [0, 63)")
    cdef int64_t resolution_ps = (<int64_t>1) << resolution_shift
    visible_arr = np.empty(n, dtype=np.int64)
    bb_arr = np.empty(n, dtype=np.int64)
    bd_arr = np.empty(n, dtype=np.int16)
    bc_arr = np.empty(n, dtype=np.int64)
    bs_arr = np.empty(n, dtype=np.int64)
    bn_arr = np.empty(n, dtype=np.int32)
    cb_arr = np.full(n_depths, -1, dtype=np.int64)
    cc_arr = np.zeros(n_depths, dtype=np.int64)
    cs_arr = np.zeros(n_depths, dtype=np.int64)
    cbest_arr = np.zeros(n_depths, dtype=np.int64)
    cn_arr = np.zeros(n_depths, dtype=np.int32)
    cdef int64_t[::1] visible = visible_arr, b_bucket = bb_arr, b_count = bc_arr, b_busy = bs_arr
    cdef int16_t[::1] b_depth = bd_arr
    cdef int32_t[::1] b_name = bn_arr, cur_name = cn_arr
    cdef int64_t[::1] cur_bucket = cb_arr, cur_count = cc_arr, cur_busy = cs_arr, cur_best = cbest_arr
    cdef int64_t s, d, bucket, in_window = 0
    with nogil:
        for i in range(n):
            s = start[i]
            d = dur[i]
            if s + d <= window_start_ps and not (d == 0 and s >= window_start_ps):
                continue
            in_window += 1
            if d >= resolution_ps:
                visible[n_visible] = i
                n_visible += 1
                continue
            lvl = dep[i]
            bucket = s >> resolution_shift
            if cur_bucket[lvl] != bucket:
                if cur_count[lvl] > 0:
                    b_bucket[n_boxes] = cur_bucket[lvl]
                    b_depth[n_boxes] = <int16_t>lvl
                    b_count[n_boxes] = cur_count[lvl]
                    b_busy[n_boxes] = cur_busy[lvl]
                    b_name[n_boxes] = cur_name[lvl]
                    n_boxes += 1
                cur_bucket[lvl] = bucket
                cur_count[lvl] = 0
                cur_busy[lvl] = 0
                cur_best[lvl] = -1
            cur_count[lvl] += 1
            cur_busy[lvl] += d
            if d > cur_best[lvl]:
                cur_best[lvl] = d
                cur_name[lvl] = name[i]
        for lvl in range(n_depths):
            if cur_count[lvl] > 0:
                b_bucket[n_boxes] = cur_bucket[lvl]
                b_depth[n_boxes] = <int16_t>lvl
                b_count[n_boxes] = cur_count[lvl]
                b_busy[n_boxes] = cur_busy[lvl]
                b_name[n_boxes] = cur_name[lvl]
                n_boxes += 1
    return (visible_arr[:n_visible], bb_arr[:n_boxes], bd_arr[:n_boxes], bc_arr[:n_boxes], bs_arr[:n_boxes],
            bn_arr[:n_boxes], in_window)


# --- analyses/memory_profile.py ----------------------------------------------------------------

def match_deallocations(addr_order, addr, is_alloc) -> np.ndarray:
    """For each deallocation the allocation it frees (-1 if none); events in address order.

    Per address in time order, the first allocation not yet freed is remembered (a second
    allocation at a taken address is ignored) and the next deallocation takes it.
    (analyses/memory_profile.py ``_match_deallocations``)
    """
    cdef const int64_t[::1] order = _in(addr_order, np.int64)
    cdef const int64_t[::1] a = _in(addr, np.int64)
    cdef const uint8_t[::1] alloc = _bool(is_alloc)
    if alloc.shape[0] != a.shape[0]:
        raise ValueError("addr and is_alloc differ in length")
    out = np.full(a.shape[0], -1, dtype=np.int64)
    cdef int64_t[::1] source = out
    cdef int64_t pending = -1, prev_addr = 0
    cdef Py_ssize_t j, i
    with nogil:
        for j in range(order.shape[0]):
            i = order[j]
            if j == 0 or a[i] != prev_addr:
                pending = -1
                prev_addr = a[i]
            if alloc[i]:
                if pending < 0:
                    pending = i
            elif pending >= 0:
                source[i] = pending
                pending = -1
    return out


def live_at(addr_order, addr, is_alloc, alloc_bytes, upto) -> tuple[np.ndarray, int, int]:
    """Allocations live after the events marked ``upto`` (XProf's active-allocation walk).

    Returns the live flags, the bytes of all counted allocations minus deallocations, and the
    bytes of deallocations whose allocation is not in the window.
    (analyses/memory_profile.py ``_live_at``)
    """
    cdef const int64_t[::1] order = _in(addr_order, np.int64)
    cdef const int64_t[::1] a = _in(addr, np.int64)
    cdef const uint8_t[::1] alloc = _bool(is_alloc)
    cdef const int64_t[::1] nbytes = _in(alloc_bytes, np.int64)
    cdef const uint8_t[::1] keep = _bool(upto)
    cdef Py_ssize_t n = a.shape[0], j, i
    if alloc.shape[0] != n or nbytes.shape[0] != n or keep.shape[0] != n:
        raise ValueError("event columns differ in length")
    out = np.zeros(n, dtype=np.bool_)
    cdef uint8_t[::1] live = out.view(np.uint8)
    cdef int64_t net = 0, unmatched_free = 0, pending = -1, prev_addr = 0
    cdef bint started = False
    with nogil:
        for j in range(order.shape[0]):
            i = order[j]
            if not keep[i]:
                continue
            if not started or a[i] != prev_addr:
                if pending >= 0:
                    live[pending] = 1
                pending = -1
                prev_addr = a[i]
                started = True
            if alloc[i]:
                pending = i
                net += nbytes[i]
            else:
                if pending >= 0:
                    pending = -1
                else:
                    unmatched_free += nbytes[i]
                net -= nbytes[i]
        if pending >= 0:
            live[pending] = 1
    return out, net, unmatched_free


ctypedef fused num_t:
    int64_t
    double


def bucket_max(values, Py_ssize_t max_points) -> np.ndarray:
    """Index of the first maximum of each bucket floor(i * max_points / n) (one pass, no sort).
    (analyses/memory_profile.py ``_bucket_max``)"""
    arr = np.ascontiguousarray(values)
    if arr.dtype.kind in "iub":
        return _bucket_max[int64_t](_in(arr, np.int64), max_points)
    return _bucket_max[double](_in(arr, np.float64), max_points)


cdef object _bucket_max(const num_t[::1] v, Py_ssize_t max_points):
    cdef Py_ssize_t n = v.shape[0], i, b, j
    out = np.full(max_points, -1, dtype=np.int64)
    cdef int64_t[::1] o = out
    if n == 0:
        return out
    with nogil:
        for i in range(n):
            b = (i * max_points) // n
            j = o[b]
            if j < 0 or v[i] > v[j]:
                o[b] = i
    return out


# --- analyses/event_columns.py -----------------------------------------------------------------

cdef inline Py_ssize_t _lower_bound(const int32_t[::1] owner, int64_t r, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """First index in [lo, hi) whose owner is >= r (owner ascending)."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) // 2
        if owner[mid] < r:
            lo = mid + 1
        else:
            hi = mid
    return lo


def gather_stats(owner, stat_id, kind, value, rows, slot_of, has_out, kind_out, value_out, int mode) -> None:
    """Copies the wanted stats of each row from the owner-sorted stat table into the (slots,
    rows) outputs. mode 0/1: rows ascend, gallop from the previous row's end; mode 2: rows in
    any order, binary search over the whole table. (analyses/event_columns.py ``_gather``)"""
    _check_out(has_out, np.bool_, "has_out")
    _check_out(kind_out, np.int8, "kind_out")
    _check_out(value_out, np.int64, "value_out")
    cdef const int32_t[::1] own = _in(owner, np.int32)
    cdef const int32_t[::1] sid = _in(stat_id, np.int32)
    cdef const int8_t[::1] knd = _in(kind, np.int8)
    cdef const int64_t[::1] val = _in(value, np.int64)
    cdef const int64_t[::1] r_ = _in(rows, np.int64)
    cdef const int64_t[::1] slots = _in(slot_of, np.int64)
    cdef uint8_t[:, ::1] has = has_out.view(np.uint8)
    cdef int8_t[:, ::1] ko = kind_out
    cdef int64_t[:, ::1] vo = value_out
    cdef Py_ssize_t m = own.shape[0], i, lo, hi, step, k, start = 0
    cdef int64_t r, sl
    if sid.shape[0] != m or knd.shape[0] != m or val.shape[0] != m:
        raise ValueError("stat columns differ in length")
    with nogil:
        for i in range(r_.shape[0]):
            r = r_[i]
            if r < 0:
                continue
            if mode != 2:
                # Gallop forward from the previous row's end, then bisect the last stride.
                lo = start
                step = 1
                while lo + step < m and own[lo + step] < r:
                    lo += step
                    step *= 2
                hi = lo + step if lo + step < m else m
                if lo < m and own[lo] >= r:
                    hi = lo
                k = _lower_bound(own, r, lo, hi)
            else:
                k = _lower_bound(own, r, 0, m)
            while k < m and own[k] == r:
                sl = slots[sid[k]]
                if sl >= 0:
                    has[sl, i] = 1
                    ko[sl, i] = knd[k]
                    vo[sl, i] = val[k]
                k += 1
            if mode != 2:
                start = k


# --- analyses/event_groups.py --------------------------------------------------------------------

def nesting_parents(start_ps, dur_ps, line_offsets) -> tuple[np.ndarray, np.ndarray]:
    """Nesting parent of each event (-1: top level) and the end of its subtree (exclusive row).

    XProf's rule: an event's parent is the innermost open event that includes it; an open event
    that does not include the next one is closed. So an event's descendants are exactly the
    rows after it up to the row that closed it. (analyses/event_groups.py ``_nesting``)
    """
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] dur = _in(dur_ps, np.int64)
    cdef const int64_t[::1] offs = _in(line_offsets, np.int64)
    cdef Py_ssize_t n = start.shape[0], line, i, top, cap = 0
    if dur.shape[0] != n:
        raise ValueError("start_ps and dur_ps differ in length")
    parent_arr = np.full(n, -1, dtype=np.int64)
    sub_end_arr = np.zeros(n, dtype=np.int64)
    cdef int64_t[::1] parent = parent_arr, sub_end = sub_end_arr
    cdef int64_t* stack = NULL
    cdef int64_t s, e, p
    cdef bint oom = False
    try:
        with nogil:
            stack = _grow(NULL, &cap)
            oom = stack == NULL
            line = 0
            while not oom and line < offs.shape[0] - 1:
                top = 0
                for i in range(offs[line], offs[line + 1]):
                    s = start[i]
                    e = s + dur[i]
                    while top > 0:
                        p = stack[top - 1]
                        if start[p] <= s and e <= start[p] + dur[p]:
                            parent[i] = p
                            break
                        sub_end[p] = i
                        top -= 1
                    if top == cap:
                        stack = _grow(stack, &cap)
                        if stack == NULL:
                            oom = True
                            break
                    stack[top] = i
                    top += 1
                while not oom and top > 0:
                    sub_end[stack[top - 1]] = offs[line + 1]
                    top -= 1
                line += 1
    finally:
        free(stack)
    if oom:
        raise MemoryError()
    return parent_arr, sub_end_arr


cdef inline Py_ssize_t _searchsorted_left(const int64_t[::1] a, int64_t key) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = a.shape[0], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _searchsorted_right(const int64_t[::1] a, Py_ssize_t lo, Py_ssize_t hi,
                                           int64_t key) noexcept nogil:
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t _searchsorted_left_in(const int64_t[::1] a, Py_ssize_t lo, Py_ssize_t hi,
                                             int64_t key) noexcept nogil:
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def propagate_groups(roots, root_level, parent, sub_end, edge_nodes, edge_ptr, edge_idx
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Claims, root by root, every unclaimed event reachable from it; returns (group of each
    event, root of each group).

    A claimed event brings its whole subtree (a contiguous row range) and the targets of the
    cross links (``edge_nodes`` sorted, ``edge_ptr``/``edge_idx`` their targets) of the events
    in it. (analyses/event_groups.py ``_propagate``)
    """
    cdef const int64_t[::1] rts = _in(roots, np.int64)
    cdef const int64_t[::1] level = _in(root_level, np.int64)
    cdef const int64_t[::1] par = _in(parent, np.int64)
    cdef const int64_t[::1] send = _in(sub_end, np.int64)
    cdef const int64_t[::1] enodes = _in(edge_nodes, np.int64)
    cdef const int64_t[::1] eptr = _in(edge_ptr, np.int64)
    cdef const int64_t[::1] eidx = _in(edge_idx, np.int64)
    cdef Py_ssize_t n = par.shape[0]
    group_arr = np.full(n, -1, dtype=np.int64)
    root_arr = np.empty(rts.shape[0], dtype=np.int64)
    queue_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] group = group_arr, group_root = root_arr, queue = queue_arr
    cdef Py_ssize_t n_groups = 0, ri, head, tail, j, k, k0, k1, q
    cdef int64_t r, a, gid, node, end, src, t
    cdef bint nested
    with nogil:
        for ri in range(rts.shape[0]):
            r = rts[ri]
            if group[r] >= 0:
                continue
            # A root nested in a root of the same level is grouped with its ancestor instead.
            a = par[r]
            nested = False
            while a >= 0:
                if level[a] == level[r]:
                    nested = True
                    break
                a = par[a]
            if nested:
                continue
            gid = n_groups
            n_groups += 1
            group_root[gid] = r
            group[r] = gid
            head = 0
            tail = 0
            queue[tail] = r
            tail += 1
            while head < tail:
                node = queue[head]
                head += 1
                end = send[node]
                for j in range(node + 1, end):
                    if group[j] < 0:
                        group[j] = gid
                k0 = _searchsorted_left(enodes, node)
                k1 = _searchsorted_left(enodes, end)
                for k in range(k0, k1):
                    src = enodes[k]
                    if group[src] != gid:
                        continue
                    for q in range(eptr[k], eptr[k + 1]):
                        t = eidx[q]
                        if group[t] < 0:
                            group[t] = gid
                            queue[tail] = t
                            tail += 1
    return group_arr, root_arr[:n_groups]


cdef inline int32_t* _key_slot(int32_t* table, uint64_t mask, const int64_t* key_ab, int64_t a, int64_t b,
                               uint64_t seed) noexcept nogil:
    """The slot of key (a, b) in an open-addressing table of key ids (-1: empty; key k is
    ``key_ab[2k], key_ab[2k + 1]``): its own, or the empty one it would take. Four bytes a slot,
    so the table of a few hundred thousand keys stays in cache. The hash is seeded per table, so
    keys from a file cannot be chosen to collide."""
    cdef uint64_t slot = fmix64(fmix64(<uint64_t>a ^ seed) ^ <uint64_t>b) & mask
    cdef int32_t k
    while True:
        k = table[slot]
        if k < 0 or (key_ab[2 * k] == a and key_ab[2 * k + 1] == b):
            return &table[slot]
        slot = (slot + 1) & mask


def pair_edges(parent_keys, parent_nodes, child_keys, child_nodes, int64_t limit, bint last_parent_only
               ) -> tuple[np.ndarray, np.ndarray]:
    """Edges parent -> child between nodes with equal (type, id) keys (rows of two int64 key
    matrices), by a hash join: each parent's children in input order; ``last_parent_only``: of
    the parents of one key, the last in input order alone; a key with ``limit`` or more parents
    and as many children links nothing (``limit`` <= 0: no limit). (domain/event_groups.py
    ``_pair_edges``)

    Every index below is made here (key ids < the children's count, slots masked to the table),
    none read from a file, so the loops use raw pointers. The work space is one block, touched
    only as far as the keys found reach (fresh pages are slow to touch: a VM's page faults)."""
    pk_arr = np.ascontiguousarray(parent_keys, dtype=np.int64).reshape(-1, 2)
    ck_arr = np.ascontiguousarray(child_keys, dtype=np.int64).reshape(-1, 2)
    pn_arr = _in(parent_nodes, np.int64)
    cn_arr = _in(child_nodes, np.int64)
    cdef Py_ssize_t n_par = pk_arr.shape[0], n_child = ck_arr.shape[0], i, j, k, n_keys = 0, n_edges = 0, e
    if pn_arr.shape[0] != n_par or cn_arr.shape[0] != n_child:
        raise ValueError("keys and nodes differ in length")
    if n_par == 0 or n_child == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if n_par >= (1 << 31) or n_child >= (1 << 30):
        raise ValueError("too many keys to join")
    cdef const int64_t* pk = _ptr(pk_arr)
    cdef const int64_t* ck = _ptr(ck_arr)
    cdef const int64_t* pn = _ptr(pn_arr)
    cdef const int64_t* cn = _ptr(cn_arr)
    cdef Py_ssize_t cap = 16
    while cap < 2 * n_child:
        cap *= 2
    cdef uint64_t mask = <uint64_t>(cap - 1)
    # OS entropy (``os.urandom``: numpy.random would be imported on a worker's first host, ~6 ms).
    cdef uint64_t seed = int.from_bytes(os.urandom(8), "little") >> 1
    # Per key (at most one per child): its (type, id), its children's bounds in ``order``, its
    # parents' count, its last parent; then (4 bytes each) the slots, each child's and each
    # parent's key, the children by key.
    cdef Py_ssize_t wide = 2 * n_child + (n_child + 1) + 2 * n_child
    cdef char* work = <char*>malloc(wide * sizeof(int64_t) + (cap + 2 * n_child + n_par) * sizeof(int32_t))
    if work == NULL:
        raise MemoryError()
    cdef int64_t* key_ab = <int64_t*>work
    cdef int64_t* start = key_ab + 2 * n_child
    cdef int64_t* n_par_key = start + (n_child + 1)
    cdef int64_t* last = n_par_key + n_child
    cdef int32_t* table = <int32_t*>(last + n_child)
    cdef int32_t* child_key = table + cap
    cdef int32_t* order = child_key + n_child
    cdef int32_t* parent_key = order + n_child
    cdef int32_t* slot
    cdef int64_t a, b
    cdef int64_t* src
    cdef int64_t* dst
    try:
        with nogil:
            for j in range(cap):
                table[j] = -1
            start[0] = 0
            for j in range(n_child):
                a = ck[2 * j]
                b = ck[2 * j + 1]
                slot = _key_slot(table, mask, key_ab, a, b, seed)
                if slot[0] < 0:
                    slot[0] = <int32_t>n_keys
                    key_ab[2 * n_keys] = a
                    key_ab[2 * n_keys + 1] = b
                    start[n_keys + 1] = 0
                    n_keys += 1
                child_key[j] = slot[0]
                start[slot[0] + 1] += 1
            for k in range(n_keys):
                start[k + 1] += start[k]
                last[k] = start[k]  # (the fill position of each key while its children are placed)
            for j in range(n_child):  # a counting sort: each key's children stay in input order
                order[last[child_key[j]]] = <int32_t>j
                last[child_key[j]] += 1
            for k in range(n_keys):
                last[k] = -1
                n_par_key[k] = 0
            for i in range(n_par):
                slot = _key_slot(table, mask, key_ab, pk[2 * i], pk[2 * i + 1], seed)
                parent_key[i] = slot[0]
                if slot[0] >= 0:
                    n_par_key[slot[0]] += 1
                    last[slot[0]] = i
            for i in range(n_par):
                k = parent_key[i]
                if k < 0 or (last_parent_only and last[k] != i):
                    parent_key[i] = -1
                elif (limit > 0 and (1 if last_parent_only else n_par_key[k]) >= limit
                        and start[k + 1] - start[k] >= limit):
                    parent_key[i] = -1
                else:
                    n_edges += start[k + 1] - start[k]
        src_arr = np.empty(n_edges, dtype=np.int64)
        dst_arr = np.empty(n_edges, dtype=np.int64)
        src = _mut_ptr(src_arr)
        dst = _mut_ptr(dst_arr)
        with nogil:
            e = 0
            for i in range(n_par):
                k = parent_key[i]
                if k >= 0:
                    for j in range(start[k], start[k + 1]):
                        src[e] = pn[i]
                        dst[e] = cn[order[j]]
                        e += 1
    finally:
        free(work)
    return src_arr, dst_arr


cdef const int64_t* _ptr(object arr):
    cdef const int64_t[::1] v = arr.reshape(-1)
    return &v[0] if v.shape[0] else NULL


cdef int64_t* _mut_ptr(object arr):
    cdef int64_t[::1] v = arr.reshape(-1)
    return &v[0] if v.shape[0] else NULL


# --- analyses/step_breakdown.py ----------------------------------------------------------------

cdef struct TimeKey:
    int64_t t
    int64_t k


cdef int _cmp_time_key(const void* x, const void* y) noexcept nogil:
    cdef const TimeKey* a = <const TimeKey*>x
    cdef const TimeKey* b = <const TimeKey*>y
    if a.t != b.t:
        return -1 if a.t < b.t else 1
    if a.k != b.k:  # ties in input order: the stable sort numpy's mergesort gave
        return -1 if a.k < b.k else 1
    return 0


cdef int _bit_length(uint64_t v) noexcept nogil:
    cdef int bits = 0
    while v:
        bits += 1
        v >>= 1
    return bits


cdef void _radix_sort_u64(uint64_t* keys, uint64_t* tmp, Py_ssize_t n, int n_bits) noexcept nogil:
    """Sorts ``keys`` (each below 2**n_bits) ascending: least significant byte first, a byte
    that every key shares skipped; ``tmp`` holds ``n``. Linear whatever the keys."""
    cdef Py_ssize_t counts[256]
    cdef Py_ssize_t i, b, total, c
    cdef int shift = 0
    cdef uint64_t* src = keys
    cdef uint64_t* dst = tmp
    cdef uint64_t* swap
    while shift < n_bits:
        memset(counts, 0, sizeof(counts))
        for i in range(n):
            counts[(src[i] >> shift) & 255] += 1
        if counts[(src[0] >> shift) & 255] == n:
            shift += 8
            continue
        total = 0
        for b in range(256):
            c = counts[b]
            counts[b] = total
            total += c
        for i in range(n):
            b = (src[i] >> shift) & 255
            dst[counts[b]] = src[i]
            counts[b] += 1
        swap = src
        src = dst
        dst = swap
        shift += 8
    if src != keys:
        memcpy(keys, src, n * sizeof(uint64_t))


def nonoverlapped_type_ps(step_of, start_ps, end_ps, type_idx, step_begin_ps, step_end_ps,
                          Py_ssize_t n_types, rows=None, int64_t type_divisor=1, Py_ssize_t threads=1
                          ) -> np.ndarray:
    """ps of each step covered by each type, counting overlapping events once for the top type.

    Events are taken in step order: in the order of the columns, or of ``rows`` (indices into
    them, so a caller need not gather copies of its columns). ``type_idx // type_divisor`` is the
    type's priority. Time of the step that no event covers goes to column 0 (unknown). Mirrors
    XProf's ToNonOverlappedEvents followed by clipping to the step span.
    (analyses/step_breakdown.py) The sort buffer holds one step's events, not all of them.
    ``threads`` > 1: rows in step order are cut at steps into that many ranges, each on a thread
    of its own (the GIL released), their steps disjoint.
    """
    cdef const int64_t[::1] step = _in(step_of, np.int64)
    cdef const int64_t[::1] st = _in(start_ps, np.int64)
    cdef const int64_t[::1] en = _in(end_ps, np.int64)
    cdef const int64_t[::1] ty = _in(type_idx, np.int64)
    cdef const int64_t[::1] b0s = _in(step_begin_ps, np.int64)
    cdef const int64_t[::1] b1s = _in(step_end_ps, np.int64)
    cdef Py_ssize_t n_cols = step.shape[0], n_steps = b0s.shape[0]
    if st.shape[0] != n_cols or en.shape[0] != n_cols or ty.shape[0] != n_cols or b1s.shape[0] != n_steps:
        raise ValueError("columns differ in length")
    if n_types < 1:
        raise ValueError("n_types must be >= 1")
    if type_divisor < 1:
        raise ValueError("type_divisor must be >= 1")
    rows_arr = np.arange(n_cols, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    cdef const int64_t[::1] r = rows_arr
    cdef Py_ssize_t n = r.shape[0]
    # Validate what the loop indexes through raw memory (the sort buffer is plain C) in one pass,
    # finding the longest run of one step (the sort buffer's size) and whether the rows come in
    # step order (then ranges of steps may go to threads).
    cdef Py_ssize_t longest = 0, run = 0, lo, i, row
    cdef int64_t last = -1, s_i, t_i
    cdef bint in_order = True
    cdef int bad = 0
    with nogil:
        for i in range(n):
            row = r[i]
            if row < 0 or row >= n_cols:
                bad = 1
                break
            s_i = step[row]
            if s_i < 0 or s_i >= n_steps:
                bad = 2
                break
            t_i = ty[row] // type_divisor
            if ty[row] < 0 or t_i >= n_types:
                bad = 3
                break
            if s_i == last:
                run += 1
            else:
                if s_i < last:
                    in_order = False
                run = 1
                last = s_i
            if run > longest:
                longest = run
    if bad == 1:
        raise IndexError("rows outside the columns")
    if bad == 2:
        raise IndexError("step_of outside the steps")
    if bad == 3:
        raise IndexError("type_idx outside [0, n_types)")
    out_arr = np.zeros((n_steps, n_types), dtype=np.int64)
    cdef int64_t[:, ::1] out = out_arr
    cdef Py_ssize_t parts = max(1, min(threads, n // (1 << 18))) if in_order else 1
    cdef Py_ssize_t cut
    cuts = [0]
    for lo in range(1, parts):
        cut = max(n * lo // parts, cuts[lo - 1])
        while 0 < cut < n and step[r[cut]] == step[r[cut - 1]]:
            cut += 1
        cuts.append(cut)
    cuts.append(n)
    run_parts(_type_ps_part, [(step, st, en, ty, b0s, b1s, r, out, n_types, type_divisor, longest, cuts[k], cuts[k + 1])
                              for k in range(parts) if cuts[k + 1] > cuts[k]])
    cdef Py_ssize_t u
    cdef int64_t tot, s
    with nogil:
        # Steps without any event: all unknown.
        for s in range(n_steps):
            tot = 0
            for u in range(n_types):
                tot += out[s, u]
            if tot == 0:
                out[s, 0] = b1s[s] - b0s[s]
    return out_arr


def _type_ps_part(const int64_t[::1] step, const int64_t[::1] st, const int64_t[::1] en, const int64_t[::1] ty,
                  const int64_t[::1] b0s, const int64_t[::1] b1s, const int64_t[::1] r, int64_t[:, ::1] out,
                  Py_ssize_t n_types, int64_t type_divisor, Py_ssize_t longest, Py_ssize_t lo, Py_ssize_t hi) -> None:
    """``nonoverlapped_type_ps`` of the rows [lo, hi) (validated by it), into ``out``."""
    counts_arr = np.zeros(n_types, dtype=np.int64)
    cdef int64_t[::1] counts = counts_arr
    cdef TimeKey* ev = <TimeKey*>malloc((2 * longest + 1) * sizeof(TimeKey))
    cdef int64_t* kinds = <int64_t*>malloc((2 * longest + 1) * sizeof(int64_t))
    cdef uint64_t* keys = <uint64_t*>malloc((2 * longest + 1) * sizeof(uint64_t))
    cdef uint64_t* keys_tmp = <uint64_t*>malloc((2 * longest + 1) * sizeof(uint64_t))
    cdef Py_ssize_t i = lo, j, m, k, q, u, row, idx
    cdef int64_t s, b0, b1, a, e, covered, top, prev_t, t, tyk
    cdef uint64_t rel_max, k_mask
    cdef int k_bits
    cdef bint packed
    if ev == NULL or kinds == NULL or keys == NULL or keys_tmp == NULL:
        free(ev)
        free(kinds)
        free(keys)
        free(keys_tmp)
        raise MemoryError()
    try:
        with nogil:
            while i < hi:
                s = step[r[i]]
                j = i
                while j < hi and step[r[j]] == s:
                    j += 1
                b0 = b0s[s]
                b1 = b1s[s]
                m = j - i
                rel_max = 0
                for k in range(m):
                    row = r[i + k]
                    a = st[row]
                    e = en[row]
                    if a < b0:
                        a = b0
                    if e > b1:
                        e = b1
                    if e < a:
                        e = a
                    ev[2 * k].t = a
                    ev[2 * k].k = 2 * k
                    kinds[2 * k] = (ty[row] // type_divisor) * 2 + 1
                    ev[2 * k + 1].t = e
                    ev[2 * k + 1].k = 2 * k + 1
                    kinds[2 * k + 1] = (ty[row] // type_divisor) * 2
                    # e >= a >= b0: the offsets from b0 are exact as unsigned.
                    if <uint64_t>e - <uint64_t>b0 > rel_max:
                        rel_max = <uint64_t>e - <uint64_t>b0
                # (time offset, boundary index) packed in one integer when both fit, sorted by
                # a radix sort: the order of _cmp_time_key at a fraction of qsort's cost.
                k_bits = _bit_length(<uint64_t>(2 * m))
                packed = m > 0 and _bit_length(rel_max) + k_bits <= 64
                if packed:
                    for q in range(2 * m):
                        keys[q] = ((<uint64_t>ev[q].t - <uint64_t>b0) << k_bits) | <uint64_t>q
                    _radix_sort_u64(keys, keys_tmp, 2 * m, _bit_length(rel_max) + k_bits)
                    k_mask = ((<uint64_t>1) << k_bits) - 1
                else:
                    qsort(ev, 2 * m, sizeof(TimeKey), _cmp_time_key)
                counts[:] = 0
                covered = 0
                top = -1
                prev_t = b0
                for q in range(2 * m):
                    if packed:
                        idx = <Py_ssize_t>(keys[q] & k_mask)
                        t = <int64_t>(<uint64_t>b0 + (keys[q] >> k_bits))
                    else:
                        idx = ev[q].k
                        t = ev[q].t
                    if top >= 0 and t > prev_t:
                        out[s, top] += t - prev_t
                        covered += t - prev_t
                    prev_t = t
                    tyk = kinds[idx] // 2
                    if kinds[idx] % 2 == 1:
                        counts[tyk] += 1
                        if tyk > top:
                            top = tyk
                    else:
                        counts[tyk] -= 1
                        if tyk == top and counts[tyk] == 0:
                            top = -1
                            for u in range(tyk - 1, -1, -1):
                                if counts[u] > 0:
                                    top = u
                                    break
                out[s, 0] += (b1 - b0) - covered
                i = j
    finally:
        free(ev)
        free(kinds)
        free(keys)
        free(keys_tmp)


cdef struct KeyIndex:
    uint64_t key
    int64_t index


cdef int _key_index_cmp(const void* a, const void* b) noexcept nogil:
    cdef const KeyIndex* x = <const KeyIndex*>a
    cdef const KeyIndex* y = <const KeyIndex*>b
    return -1 if x.key < y.key else (1 if x.key > y.key else 0)


def unique_keys(keys) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)[1:]`` of uint64 keys: each
    distinct key's first position, in key order, and each key's distinct rank. By a hash table
    with the GIL released, in time linear in the keys (only the distinct ones are sorted): the
    texts of a plane are a few distinct strings repeated over many stats; in about the memory
    np.unique takes. (readers/plane_builder.py)
    """
    cdef const uint64_t[::1] k = _in(keys, np.uint64)
    cdef Py_ssize_t n = k.shape[0], cap = 16, i, j, h, n_distinct = 0
    cdef int bits = 4
    if n >= 2**31:
        raise ValueError("more than 2^31 keys")
    while cap < 2 * n:
        cap *= 2
        bits += 1
    inverse_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] inverse = inverse_arr
    cdef int64_t[::1] first
    cdef int32_t* table = <int32_t*>malloc(cap * sizeof(int32_t))  # a key's first position, or -1
    cdef KeyIndex* distinct = NULL
    cdef uint64_t key
    cdef int64_t p
    cdef bint oom = table == NULL
    try:
        with nogil:
            if not oom:
                for h in range(cap):
                    table[h] = -1
                for i in range(n):
                    key = k[i]
                    h = <Py_ssize_t>((key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits))
                    while table[h] >= 0 and k[table[h]] != key:
                        h = (h + 1) & (cap - 1)
                    if table[h] < 0:
                        table[h] = <int32_t>i
                        n_distinct += 1
                    inverse[i] = table[h]
                distinct = <KeyIndex*>malloc((n_distinct if n_distinct else 1) * sizeof(KeyIndex))
                oom = distinct == NULL
            if not oom:
                j = 0
                for i in range(n):
                    if inverse[i] == i:
                        distinct[j].key = k[i]
                        distinct[j].index = i
                        j += 1
                qsort(distinct, n_distinct, sizeof(KeyIndex), _key_index_cmp)
                # Each first position holds -(its rank + 1) for a while; the others then read it.
                for j in range(n_distinct):
                    inverse[distinct[j].index] = -(j + 1)
                for i in range(n):
                    p = inverse[i]
                    if p >= 0:
                        inverse[i] = -inverse[p] - 1
                for i in range(n):
                    if inverse[i] < 0:
                        inverse[i] = -inverse[i] - 1
        if oom:
            raise MemoryError()
        first_arr = np.empty(n_distinct, dtype=np.int64)
        first = first_arr
        for j in range(n_distinct):
            first[j] = distinct[j].index
    finally:
        free(table)
        free(distinct)
    return first_arr, inverse_arr


def counting_order(keys, Py_ssize_t n_keys) -> np.ndarray:
    """The stable order of ``keys`` (each in [0, n_keys)): numpy's ``argsort(keys,
    kind="stable")`` by a counting sort, one pass to count and one to place.
    (analyses/steps/assignment.py ``_breakdown``)"""
    cdef const int64_t[::1] k = _in(keys, np.int64)
    cdef Py_ssize_t n = k.shape[0], i, b
    if n_keys < 0:
        raise ValueError("n_keys must be >= 0")
    if n and (np.asarray(k).min() < 0 or np.asarray(k).max() >= n_keys):
        raise IndexError("keys outside [0, n_keys)")
    start_arr = np.zeros(n_keys + 1, dtype=np.int64)
    out_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] start = start_arr
    cdef int64_t[::1] out = out_arr
    with nogil:
        for i in range(n):
            start[k[i] + 1] += 1
        for b in range(n_keys):
            start[b + 1] += start[b]
        for i in range(n):
            out[start[k[i]]] = i
            start[k[i]] += 1
    return out_arr


def span_index(begin_ps, end_ps, t_ps, rows=None) -> np.ndarray:
    """Index of the span holding each time, -1 if none: the last span starting at or before it
    (``begin_ps`` ascending: numpy's ``searchsorted(begin_ps, t, "right") - 1``) when the time
    lies before that span's end. ``rows``: the times ``t_ps[rows]`` (no gathered copy). A time
    is looked for from the previous one's span first (a line's events come in start order), by
    binary search only where that misses. (analyses/steps/assignment.py ``_event_step_by_time``)
    """
    cdef const int64_t[::1] b = _in(begin_ps, np.int64)
    cdef const int64_t[::1] e = _in(end_ps, np.int64)
    cdef const int64_t[::1] ts = _in(t_ps, np.int64)
    if e.shape[0] != b.shape[0]:
        raise ValueError("begin_ps and end_ps differ in length")
    cdef bint gather = rows is not None
    rows_arr = np.ascontiguousarray(rows, dtype=np.int64) if gather else np.zeros(0, np.int64)
    cdef const int64_t[::1] r = rows_arr
    cdef Py_ssize_t n = r.shape[0] if gather else ts.shape[0]
    if gather and n and (rows_arr.min() < 0 or rows_arr.max() >= ts.shape[0]):
        raise IndexError("rows outside the times")
    out_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = out_arr
    cdef Py_ssize_t m = b.shape[0], i, k = -1, lo, hi, mid
    cdef int64_t t
    with nogil:
        for i in range(n):
            t = ts[r[i]] if gather else ts[i]
            if (k < 0 or b[k] <= t) and (k + 1 >= m or b[k + 1] > t):
                pass
            elif k + 1 < m and b[k + 1] <= t and (k + 2 >= m or b[k + 2] > t):
                k += 1
            else:
                lo = 0
                hi = m
                while lo < hi:
                    mid = lo + (hi - lo) // 2
                    if b[mid] <= t:
                        lo = mid + 1
                    else:
                        hi = mid
                k = lo - 1
            out[i] = k if k >= 0 and t < e[k] else -1
    return out_arr


# --- analyses/op_metrics.py ----------------------------------------------------------------------

def walk_activities(act_line, act_ts, act_op, act_end, Py_ssize_t n_ops) -> tuple[np.ndarray, np.ndarray]:
    """Replays XProf's per-thread op stack over time-sorted begin/end activities.

    Returns per op its time (-1 when XProf drops it) and its nested children's time.
    (analyses/op_metrics.py ``_walk_activities``)
    """
    cdef const int64_t[::1] line = _in(act_line, np.int64)
    cdef const int64_t[::1] ts = _in(act_ts, np.int64)
    cdef const int64_t[::1] op_ = _in(act_op, np.int64)
    cdef const uint8_t[::1] is_end = _bool(act_end)
    cdef Py_ssize_t n = ts.shape[0], i, top = 0, cap = 0
    if line.shape[0] != n or op_.shape[0] != n or is_end.shape[0] != n:
        raise ValueError("activity columns differ in length")
    time_arr = np.full(n_ops, -1, dtype=np.int64)
    child_arr = np.zeros(n_ops, dtype=np.int64)
    begin_arr = np.zeros(n_ops, dtype=np.int64)
    cdef int64_t[::1] time_ps = time_arr, child_ps = child_arr, begin_ps = begin_arr
    cdef int64_t* stack = NULL
    cdef int64_t cur_line = -1, op, dur
    cdef bint found, oom = False
    try:
        with nogil:
            stack = _grow(NULL, &cap)
            oom = stack == NULL
            i = 0
            while not oom and i < n:
                if line[i] != cur_line:
                    cur_line = line[i]
                    top = 0
                op = op_[i]
                if not is_end[i]:
                    if top == cap:
                        stack = _grow(stack, &cap)
                        if stack == NULL:
                            oom = True
                            break
                    stack[top] = op
                    top += 1
                    begin_ps[op] = ts[i]
                    i += 1
                    continue
                found = False
                while top > 0:
                    top -= 1
                    if stack[top] == op:
                        found = True
                        break
                if found:
                    dur = ts[i] - begin_ps[op]
                    time_ps[op] = dur
                    if top > 0:
                        child_ps[stack[top - 1]] += dur
                i += 1
    finally:
        free(stack)
    if oom:
        raise MemoryError()
    return time_arr, child_arr


# --- the Chrome reader and the plane builder (readers/chrome_*.py, plane_*.py) -------------------

def match_begin_end(line, is_begin) -> np.ndarray:
    """Pairs B/E points (sorted by line, then time, then file order) per line, last open first;
    returns per point the index of its partner (-1 when unmatched).
    (readers/chrome_collect.py ``_begin_end``)"""
    cdef const int64_t[::1] ln = _in(line, np.int64)
    cdef const uint8_t[::1] begin = _bool(is_begin)
    cdef Py_ssize_t n = ln.shape[0], i, top = 0
    if begin.shape[0] != n:
        raise ValueError("line and is_begin differ in length")
    partner_arr = np.full(n, -1, dtype=np.int64)
    stack_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] partner = partner_arr, stack = stack_arr
    cdef int64_t current = -1
    with nogil:
        for i in range(n):
            if ln[i] != current:
                current = ln[i]
                top = 0
            if begin[i]:
                stack[top] = i
                top += 1
            elif top > 0:
                top -= 1
                partner[i] = stack[top]
                partner[stack[top]] = i
    return partner_arr


def depth_parents(depth, line_offsets) -> np.ndarray:
    """Row of each event's parent (the nearest earlier event one level up), -1 at depth 0.
    (readers/plane_flows.py ``_bind_part``)"""
    cdef const int16_t[::1] dep = _in(depth, np.int16)
    cdef const int64_t[::1] offs = _in(line_offsets, np.int64)
    cdef Py_ssize_t n = dep.shape[0], line, i
    parent_arr = np.full(n, -1, dtype=np.int64)
    last_arr = np.full(32768, -1, dtype=np.int64)
    cdef int64_t[::1] parent = parent_arr, last_at = last_arr
    cdef int16_t d
    with nogil:
        for line in range(offs.shape[0] - 1):
            for i in range(offs[line], offs[line + 1]):
                d = dep[i]
                if d > 0:
                    parent[i] = last_at[d - 1]
                last_at[d] = i
    return parent_arr


def bind_points(start_ps, end_ps, parent, line_offsets, point_line, point_ts, point_next,
                Py_ssize_t threads=1) -> np.ndarray:
    """Event row each flow point binds to, or -1.

    Enclosing binding: the last event starting at or before the point, climbing to its parents
    until one still runs at the point (end inclusive: TF1 timelines start a flow exactly at the
    producer's end). ``point_next`` selects "next slice" binding instead: the first event of the
    line starting at or after the point. ``threads`` > 1: the points in that many ranges, each
    bound on a thread of its own (the GIL released; each point's answer is its own).
    (readers/plane_flows.py ``_bind_part``)
    """
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] end = _in(end_ps, np.int64)
    cdef const int64_t[::1] par = _in(parent, np.int64)
    cdef const int64_t[::1] offs = _in(line_offsets, np.int64)
    cdef const int64_t[::1] pl = _in(point_line, np.int64)
    cdef const int64_t[::1] pts = _in(point_ts, np.int64)
    cdef const uint8_t[::1] nxt = _bool(point_next)
    cdef Py_ssize_t m = pl.shape[0]
    if pts.shape[0] != m or nxt.shape[0] != m:
        raise ValueError("point columns differ in length")
    if end.shape[0] < start.shape[0] or par.shape[0] < start.shape[0]:
        raise ValueError("event columns differ in length")
    out_arr = np.full(m, -1, dtype=np.int64)
    cdef int64_t[::1] out = out_arr
    cdef Py_ssize_t parts = max(1, min(threads, m // _BIND_MIN_POINTS))
    run_parts(_bind_range, [(start, end, par, offs, pl, pts, nxt, out, m * t // parts, m * (t + 1) // parts)
                            for t in range(parts)])
    return out_arr


# Points per thread below which more threads cost more than they save.
_BIND_MIN_POINTS = 1 << 16


def _bind_range(const int64_t[::1] start, const int64_t[::1] end, const int64_t[::1] par,
                const int64_t[::1] offs, const int64_t[::1] pl, const int64_t[::1] pts, const uint8_t[::1] nxt,
                int64_t[::1] out, Py_ssize_t k0, Py_ssize_t k1) -> None:
    """``bind_points``'s loop over the points ``k0`` to ``k1``."""
    cdef Py_ssize_t k, lo, hi, j, c
    cdef int64_t ts
    with nogil:
        for k in range(k0, k1):
            lo = offs[pl[k]]
            hi = offs[pl[k] + 1]
            if lo < 0 or hi > start.shape[0] or hi < lo:
                with gil:
                    raise IndexError("line_offsets outside the event rows")
            ts = pts[k]
            if nxt[k]:
                j = _searchsorted_left_in(start, lo, hi, ts)
                if j < hi:
                    out[k] = j
                    continue
            c = _searchsorted_right(start, lo, hi, ts) - 1
            while c >= lo and end[c] < ts:
                c = par[c]
            if c >= lo:
                out[k] = c


# --- analyses/gpu/critical_path.py -----------------------------------------------------------

def call_stack_walk(ev_arr, is_start_arr, thread_arr, Py_ssize_t n_events) -> tuple[np.ndarray, np.ndarray]:
    """HTA's call stack of each thread, walked depth-first (HTA ``CallStackGraph.dfs_traverse``).

    The markers (start or end of an event ``0 <= ev < n_events``) come sorted by thread, then in
    HTA's ``compare_events`` order. A start pushes its event, whose parent is the event on top
    of the stack; an end pops the top, whichever event that is (the one that ends when events
    nest). Returns the event of each marker in that walk (an end names the event it closed) and
    each event's parent (-1 at the top of a thread).
    """
    cdef const int64_t[::1] ev = _in(ev_arr, np.int64)
    cdef const uint8_t[::1] is_start = _bool(is_start_arr)
    cdef const int64_t[::1] thread = _in(thread_arr, np.int64)
    cdef Py_ssize_t n = ev.shape[0], i, top = 0, cap = 0
    if is_start.shape[0] != n or thread.shape[0] != n:
        raise ValueError("ev, is_start and thread differ in length")
    walk_arr = np.full(n, -1, dtype=np.int64)
    parent_arr = np.full(n_events, -1, dtype=np.int64)
    cdef int64_t[::1] walk = walk_arr
    cdef int64_t[::1] parent = parent_arr
    cdef int64_t* stack = NULL
    cdef int64_t e
    cdef bint oom = False
    try:
        with nogil:
            stack = _grow(NULL, &cap)
            if stack == NULL:
                oom = True
            else:
                for i in range(n):
                    if i > 0 and thread[i] != thread[i - 1]:
                        top = 0
                    e = ev[i]
                    if is_start[i]:
                        parent[e] = stack[top - 1] if top > 0 else -1
                        if top == cap:
                            stack = _grow(stack, &cap)
                            if stack == NULL:
                                oom = True
                                break
                        stack[top] = e
                        top += 1
                        walk[i] = e
                    elif top > 0:
                        top -= 1
                        walk[i] = stack[top]
    finally:
        free(stack)
    if oom:
        raise MemoryError()
    return walk_arr, parent_arr


def dag_longest_path(Py_ssize_t n_nodes, src_arr, dst_arr, weight_arr) -> np.ndarray:
    """The longest weighted path of a DAG, as networkx's ``dag_longest_path`` finds it (HTA's
    critical path): nodes in the order of ``topological_sort`` (Kahn's generations, children in
    edge order); each node's best predecessor edge is the first maximal one in edge order, and
    a node whose best sum is negative starts afresh at 0; the path ends at the first node of
    the largest sum. Returns the edge indices of the path in path order; ValueError on a cycle.
    """
    cdef const int64_t[::1] src = _in(src_arr, np.int64)
    cdef const int64_t[::1] dst = _in(dst_arr, np.int64)
    cdef const int64_t[::1] weight = _in(weight_arr, np.int64)
    cdef Py_ssize_t m = src.shape[0], i, j, k, head, tail, gen_end, v, u
    if dst.shape[0] != m or weight.shape[0] != m:
        raise ValueError("src, dst and weight differ in length")
    for i in range(m):
        if src[i] < 0 or src[i] >= n_nodes or dst[i] < 0 or dst[i] >= n_nodes:
            raise IndexError("edge node out of range")
    out_order = np.argsort(np.asarray(src), kind="stable").astype(np.int64)
    in_order = np.argsort(np.asarray(dst), kind="stable").astype(np.int64)
    out_ptr_arr = np.searchsorted(np.asarray(src)[out_order], np.arange(n_nodes + 1)).astype(np.int64)
    in_ptr_arr = np.searchsorted(np.asarray(dst)[in_order], np.arange(n_nodes + 1)).astype(np.int64)
    cdef const int64_t[::1] out_e = out_order
    cdef const int64_t[::1] in_e = in_order
    cdef const int64_t[::1] out_ptr = out_ptr_arr
    cdef const int64_t[::1] in_ptr = in_ptr_arr
    indeg_arr = np.diff(in_ptr_arr).astype(np.int64)
    topo_arr = np.empty(n_nodes, dtype=np.int64)
    dist_arr = np.zeros(n_nodes, dtype=np.int64)
    best_arr = np.full(n_nodes, -1, dtype=np.int64)
    cdef int64_t[::1] indeg = indeg_arr
    cdef int64_t[::1] topo = topo_arr
    cdef int64_t[::1] dist = dist_arr
    cdef int64_t[::1] best = best_arr
    cdef int64_t cand, top_sum
    cdef Py_ssize_t best_e, end_node
    with nogil:
        tail = 0
        for v in range(n_nodes):
            if indeg[v] == 0:
                topo[tail] = v
                tail += 1
        head = 0
        while head < tail:
            gen_end = tail
            while head < gen_end:
                u = topo[head]
                head += 1
                for k in range(out_ptr[u], out_ptr[u + 1]):
                    v = dst[out_e[k]]
                    indeg[v] -= 1
                    if indeg[v] == 0:
                        topo[tail] = v
                        tail += 1
    if tail != n_nodes:
        raise ValueError("the graph has a cycle")
    with nogil:
        end_node = -1
        top_sum = 0
        for i in range(n_nodes):
            v = topo[i]
            best_e = -1
            for k in range(in_ptr[v], in_ptr[v + 1]):
                j = in_e[k]
                cand = dist[src[j]] + weight[j]
                if best_e < 0 or cand > dist[v]:
                    dist[v] = cand
                    best_e = j
            if best_e >= 0 and dist[v] >= 0:
                best[v] = best_e
            else:
                dist[v] = 0
                best[v] = -1
            if end_node < 0 or dist[v] > top_sum:
                top_sum = dist[v]
                end_node = v
    path = []
    v = end_node
    while v >= 0 and best[v] >= 0:
        path.append(best[v])
        v = src[best[v]]
    path.reverse()
    return np.asarray(path, dtype=np.int64)


# --- analyses/ops/op_tree.py ---------------------------------------------------------------------

def op_tree_parents(start_ps, end_ps, line_offsets) -> np.ndarray:
    """torch-tb-profiler's nesting of a thread's nodes, in their (start, -end) order: the parent of
    each (an index; -1: a root), or -2 for a node dropped because it starts inside the innermost
    open node but ends after it (a dropped node never becomes a parent).

    A node closes once a later one starts at or after its end, so a zero-length node is never a
    parent of anything after it."""
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] end = _in(end_ps, np.int64)
    cdef const int64_t[::1] offs = _in(line_offsets, np.int64)
    cdef Py_ssize_t n = start.shape[0], line, i, top, cap = 0
    if end.shape[0] != n:
        raise ValueError("start_ps and end_ps differ in length")
    if offs.shape[0] and (offs[0] < 0 or offs[offs.shape[0] - 1] > n):
        raise ValueError("line_offsets out of range")
    parent_arr = np.full(n, -1, dtype=np.int64)
    cdef int64_t[::1] parent = parent_arr
    cdef int64_t* stack = NULL
    cdef bint oom = False
    try:
        with nogil:
            stack = _grow(NULL, &cap)
            oom = stack == NULL
            line = 0
            while not oom and line < offs.shape[0] - 1:
                top = 0
                for i in range(offs[line], offs[line + 1]):
                    while top > 0 and start[i] >= end[stack[top - 1]]:
                        top -= 1
                    if top > 0 and end[i] > end[stack[top - 1]]:
                        parent[i] = -2
                        continue
                    if top > 0:
                        parent[i] = stack[top - 1]
                    if top == cap:
                        stack = _grow(stack, &cap)
                        if stack == NULL:
                            oom = True
                            break
                    stack[top] = i
                    top += 1
                line += 1
    finally:
        free(stack)
    if oom:
        raise MemoryError()
    return parent_arr


def sum_into_parents(parent, values) -> None:
    """Adds each node's value into its parent's, children first, in place: ``values`` becomes
    the sum over each subtree. Nodes are in tree order (``parent[i] < i``; -1: a root)."""
    cdef const int64_t[::1] par = _in(parent, np.int64)
    _check_out(values, np.int64, "values")
    cdef int64_t[::1] val = values
    cdef Py_ssize_t n = par.shape[0], i
    cdef int64_t p
    if val.shape[0] != n:
        raise ValueError("parent and values differ in length")
    with nogil:
        for i in range(n - 1, -1, -1):
            p = par[i]
            if p >= 0:
                if p >= i:
                    with gil:
                        raise ValueError("a parent must precede its children")
                val[p] += val[i]


def or_into_parents(parent, flag, may_inherit) -> None:
    """Sets a node's flag, in place, when a child's (final) flag is set and the node may inherit it.
    Nodes are in tree order (``parent[i] < i``; -1: a root)."""
    cdef const int64_t[::1] par = _in(parent, np.int64)
    _check_out(flag, np.bool_, "flag")
    cdef uint8_t[::1] out = flag.view(np.uint8)
    cdef const uint8_t[::1] inherit = _bool(may_inherit)
    cdef Py_ssize_t n = par.shape[0], i
    cdef int64_t p
    if out.shape[0] != n or inherit.shape[0] != n:
        raise ValueError("parent, flag and may_inherit differ in length")
    with nogil:
        for i in range(n - 1, -1, -1):
            p = par[i]
            if p >= 0:
                if p >= i:
                    with gil:
                        raise ValueError("a parent must precede its children")
                if out[i] and inherit[p]:
                    out[p] = 1


def place_rows(owner, fill, row_of, name, kind, value, out_row, out_name, out_kind, out_value, cuts=None) -> None:
    """A counting sort's placement of stat rows (readers/plane_collected.py ``place_stats``): row
    ``i`` goes to slot ``fill[owner[i]]``, which then moves on by one, so an owner's rows keep
    their order; the slot gets ``row_of[owner[i]]`` and the row's name, kind and value. ``fill``
    and the four outputs are written in place (their dtypes: int64; int32, int32, int8, int64).
    ``cuts`` (ascending owners, int64): the owners in ``len(cuts) - 1`` ranges
    ``[cuts[t], cuts[t + 1])``, each placed on a thread of its own (the GIL released); an owner's
    rows are all in one range and taken in row order there, so the answer is the one-thread one.
    Rows whose owner lies outside every range are left unplaced."""
    cdef const int32_t[::1] own = _in(owner, np.int32)
    cdef const int32_t[::1] nm = _in(name, np.int32)
    cdef const int8_t[::1] kd = _in(kind, np.int8)
    cdef const int64_t[::1] val = _in(value, np.int64)
    cdef const int64_t[::1] rows = _in(row_of, np.int64)
    cdef int64_t[::1] slot = fill
    cdef int32_t[::1] o_row = out_row
    cdef int32_t[::1] o_name = out_name
    cdef int8_t[::1] o_kind = out_kind
    cdef int64_t[::1] o_val = out_value
    cdef Py_ssize_t n = own.shape[0]
    if nm.shape[0] != n or kd.shape[0] != n or val.shape[0] != n:
        raise ValueError("stat columns differ in length")
    if o_name.shape[0] != o_row.shape[0] or o_kind.shape[0] != o_row.shape[0] or o_val.shape[0] != o_row.shape[0]:
        raise ValueError("output columns differ in length")
    if cuts is None:
        ranges = [(-(1 << 31), 1 << 31)]
    else:
        c = np.asarray(cuts, dtype=np.int64)
        if c.ndim != 1 or c.shape[0] < 2 or (c[1:] < c[:-1]).any():
            raise ValueError("cuts must be at least two ascending owners")
        ranges = [(int(c[t]), int(c[t + 1])) for t in range(c.shape[0] - 1) if c[t + 1] > c[t]]
    run_parts(_place_range, [(own, nm, kd, val, rows, slot, o_row, o_name, o_kind, o_val, lo, hi)
                             for lo, hi in ranges])


def _place_range(const int32_t[::1] own, const int32_t[::1] nm, const int8_t[::1] kd, const int64_t[::1] val,
                 const int64_t[::1] rows, int64_t[::1] slot, int32_t[::1] o_row, int32_t[::1] o_name,
                 int8_t[::1] o_kind, int64_t[::1] o_val, int64_t lo, int64_t hi) -> None:
    """``place_rows``'s loop over the rows whose owner is in ``[lo, hi)``."""
    cdef Py_ssize_t n = own.shape[0], i, d
    cdef int32_t e
    with nogil:
        for i in range(n):
            e = own[i]
            if e < lo or e >= hi:
                continue
            d = slot[e]
            slot[e] = d + 1
            o_row[d] = <int32_t>rows[e]
            o_name[d] = nm[i]
            o_kind[d] = kd[i]
            o_val[d] = val[i]


def args_rows(events, bounds, kind, int skip_kind) -> tuple[np.ndarray, np.ndarray]:
    """The stat rows of ``events`` (event ``e``'s rows are ``bounds[e]`` to ``bounds[e + 1]``, in
    order) whose kind is not ``skip_kind``, and for each its event's position in ``events``
    (readers/chrome_args.py ``ArgStats``)."""
    cdef const int64_t[::1] ev = _in(events, np.int64)
    cdef const int64_t[::1] b = _in(bounds, np.int64)
    cdef const int8_t[::1] kd = _in(kind, np.int8)
    cdef Py_ssize_t n = ev.shape[0], i, total = 0, k = 0
    cdef int64_t r, e
    cdef int8_t skip = <int8_t>skip_kind
    with nogil:
        for i in range(n):
            e = ev[i]
            for r in range(b[e], b[e + 1]):
                if kd[r] != skip:
                    total += 1
    rows_arr = np.empty(total, dtype=np.int64)
    pos_arr = np.empty(total, dtype=np.int64)
    cdef int64_t[::1] rows = rows_arr
    cdef int64_t[::1] pos = pos_arr
    with nogil:
        for i in range(n):
            e = ev[i]
            for r in range(b[e], b[e + 1]):
                if kd[r] != skip:
                    rows[k] = r
                    pos[k] = i
                    k += 1
    return rows_arr, pos_arr
