# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True, initializedcheck=True
"""Compiled passes of the Chrome trace reader's event pass (readers/chrome_collect.py) over the
scanner's columns: each replaces several numpy passes (a mask, a gather, a comparison, a count
each) by one loop, so the calling thread, which runs the pass while other threads wait for its
columns, spends little time there.

Each gives what the numpy code it replaced gave, to the bit: times are int64 arithmetic that
wraps like numpy's (the extension is built with -fwrapv), indexing is bounds-checked, and the
loops run with the GIL released.
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from tbprof._core.hash64 cimport fmix64

import numpy as np

from tbprof._core.kernels import run_parts

cdef int64_t _PS_PER_US = 1000000


cdef object _in(object a, object dtype):
    """A C-contiguous array of ``dtype`` (a view when ``a`` already is one)."""
    return np.ascontiguousarray(a, dtype=dtype)


def phase_pass(ph_tok, ph_table, flags, ts_us, ts_sub_ps, dur_ps, codes, other_counts, int flag_empty,
               int ph_none, int ph_m, int ph_other, int64_t no_time, int64_t max_abs_ts_us, int64_t max_span_ps):
    """Each event's phase code (``ph_table[ph_tok + 3]``, written into ``codes``) and the checks
    of its numbers: a ``ts_us`` beyond +-``max_abs_ts_us`` and a ``dur_ps`` beyond
    +-``max_span_ps`` become ``no_time`` (in place). ``other_counts[t]`` grows by the events of
    the unsupported phase token ``t`` (code ``ph_other``). Returns (events whose phase is not a
    string, events without a phase and not empty, whether any timed event, its smallest and
    largest ``ts_us`` (timed: a number, not metadata ``ph_m``), whether any kept event (a phase
    shown, timed), the earliest kept (whole µs, sub-µs ps), the latest kept (whole µs, sub-µs ps)).
    """
    cdef const int32_t[::1] tok = _in(ph_tok, np.int32)
    cdef const int8_t[::1] table = _in(ph_table, np.int8)
    cdef const uint8_t[::1] flg = _in(flags, np.uint8)
    cdef int64_t[::1] ts = ts_us
    cdef const int32_t[::1] sub = _in(ts_sub_ps, np.int32)
    cdef int64_t[::1] dur = dur_ps
    cdef int8_t[::1] code_out = codes
    cdef int64_t[::1] other = other_counts
    cdef Py_ssize_t n = tok.shape[0], i
    if flg.shape[0] != n or ts.shape[0] != n or sub.shape[0] != n or dur.shape[0] != n or code_out.shape[0] != n:
        raise ValueError("event columns differ in length")
    cdef int64_t not_str = 0, no_phase = 0, t, d, lo_us = 0, hi_us = 0
    cdef int64_t t0_us = 0, t0_sub = 0, end_us = 0, end_sub = 0, s
    cdef bint timed = False, kept = False
    cdef int8_t code
    cdef int32_t k
    with nogil:
        for i in range(n):
            k = tok[i]
            code = table[k + 3]
            code_out[i] = code
            if k == -2:
                not_str += 1
            if code == ph_none and (flg[i] & flag_empty) == 0:
                no_phase += 1
            if code == ph_other:
                other[k] += 1
            t = ts[i]
            if t < -max_abs_ts_us or t > max_abs_ts_us:
                t = no_time
                ts[i] = t
            d = dur[i]
            if d < -max_span_ps or d > max_span_ps:
                dur[i] = no_time
            if t == no_time:
                continue
            if code != ph_m:
                if not timed:
                    lo_us = t
                    hi_us = t
                    timed = True
                elif t < lo_us:
                    lo_us = t
                elif t > hi_us:
                    hi_us = t
            if code != ph_none and code != ph_m and code != ph_other:
                s = sub[i]
                if not kept:
                    t0_us, t0_sub, end_us, end_sub = t, s, t, s
                    kept = True
                else:
                    if t < t0_us or (t == t0_us and s < t0_sub):
                        t0_us, t0_sub = t, s
                    if t > end_us or (t == end_us and s > end_sub):
                        end_us, end_sub = t, s
    return not_str, no_phase, timed, lo_us, hi_us, kept, t0_us, t0_sub, end_us, end_sub


def kept_events(codes, int ph_code, ts_us, ts_sub_ps, dur_ps, Py_ssize_t lo, Py_ssize_t hi, int64_t t0_us,
                int64_t t0_sub, int64_t no_time, bint complete, int64_t max_span_ps):
    """The events of phase code ``ph_code`` among rows ``lo``..``hi`` that are kept: timed (a
    ``ts_us`` not ``no_time``) and, ``complete``, of a ``dur_ps`` >= 0 that ends within
    ``max_span_ps`` of the earliest event (``t0_us``, ``t0_sub``). Returns (their rows, their
    start in ps from the earliest event, the rows dropped without a time, with a negative
    duration, ending too late, whether any is kept and complete, the latest end in ps of those).
    """
    cdef const int8_t[::1] code = _in(codes, np.int8)
    cdef const int64_t[::1] ts = _in(ts_us, np.int64)
    cdef const int32_t[::1] sub = _in(ts_sub_ps, np.int32)
    cdef const int64_t[::1] dur = _in(dur_ps, np.int64)
    if ts.shape[0] != code.shape[0] or sub.shape[0] != code.shape[0] or dur.shape[0] != code.shape[0]:
        raise ValueError("event columns differ in length")
    if lo < 0 or hi > code.shape[0] or lo > hi:
        raise ValueError("rows out of range")
    cdef Py_ssize_t i, m = 0
    cdef int64_t start, d, no_ts = 0, neg = 0, late = 0, end_max = 0
    cdef bint any_end = False
    cdef int8_t want = <int8_t>ph_code
    with nogil:
        for i in range(lo, hi):
            if code[i] != want:
                continue
            if ts[i] == no_time:
                no_ts += 1
                continue
            if complete:
                d = dur[i]
                if d < 0:
                    neg += 1
                    continue
                start = (ts[i] - t0_us) * _PS_PER_US + (<int64_t>sub[i] - t0_sub)
                if not d <= max_span_ps - start:
                    late += 1
                    continue
            m += 1
    rows_arr = np.empty(m, np.int64)
    start_arr = np.empty(m, np.int64)
    cdef int64_t[::1] rows = rows_arr
    cdef int64_t[::1] starts = start_arr
    cdef Py_ssize_t j = 0
    with nogil:
        for i in range(lo, hi):
            if code[i] != want or ts[i] == no_time:
                continue
            start = (ts[i] - t0_us) * _PS_PER_US + (<int64_t>sub[i] - t0_sub)
            if complete:
                d = dur[i]
                if d < 0 or not d <= max_span_ps - start:
                    continue
                if not any_end or start + d > end_max:
                    end_max = start + d
                    any_end = True
            rows[j] = i
            starts[j] = start
            j += 1
    return rows_arr, start_arr, no_ts, neg, late, any_end, end_max


def first_pairs(a, b):
    """The distinct (a, b) pairs of two int32 columns, numbered in the order they first appear:
    each row's pair number (int64), then each pair's ``a`` and ``b`` (int32). A hash table of
    the pairs found, doubled as it fills: memory grows with the distinct pairs, not the rows."""
    cdef const int32_t[::1] av = _in(a, np.int32)
    cdef const int32_t[::1] bv = _in(b, np.int32)
    cdef Py_ssize_t n = av.shape[0], i
    if bv.shape[0] != n:
        raise ValueError("pair columns differ in length")
    out_arr = np.empty(n, np.int64)
    cdef int64_t[::1] out = out_arr
    cdef uint64_t cap = 1024, mask, h, key, new_cap, j
    cdef uint64_t* keys = <uint64_t*>calloc(cap, sizeof(uint64_t))
    cdef int64_t* nums = <int64_t*>calloc(cap, sizeof(int64_t))  # a pair's number + 1: 0 is an empty slot
    cdef uint64_t* grown_keys
    cdef int64_t* grown_nums
    cdef int64_t count = 0
    cdef int failed = 0
    if keys == NULL or nums == NULL:
        free(keys)
        free(nums)
        raise MemoryError()
    firsts_arr = np.empty(0, np.int64)
    cdef int64_t[::1] firsts
    cdef int64_t seen = 0
    try:
        with nogil:
            for i in range(n):
                if <uint64_t>(count + 1) * 2 > cap:
                    new_cap = cap * 2
                    grown_keys = <uint64_t*>calloc(new_cap, sizeof(uint64_t))
                    grown_nums = <int64_t*>calloc(new_cap, sizeof(int64_t))
                    if grown_keys == NULL or grown_nums == NULL:
                        free(grown_keys)
                        free(grown_nums)
                        failed = 1
                        break
                    for j in range(cap):
                        if nums[j] != 0:
                            h = fmix64(keys[j]) & (new_cap - 1)
                            while grown_nums[h] != 0:
                                h = (h + 1) & (new_cap - 1)
                            grown_keys[h] = keys[j]
                            grown_nums[h] = nums[j]
                    free(keys)
                    free(nums)
                    keys = grown_keys
                    nums = grown_nums
                    cap = new_cap
                if i > 0 and av[i] == av[i - 1] and bv[i] == bv[i - 1]:  # a thread's events often come together
                    out[i] = out[i - 1]
                    continue
                mask = cap - 1
                key = (<uint64_t><uint32_t>av[i]) << 32 | <uint64_t><uint32_t>bv[i]
                h = fmix64(key) & mask
                while nums[h] != 0 and keys[h] != key:
                    h = (h + 1) & mask
                if nums[h] == 0:
                    keys[h] = key
                    count += 1
                    nums[h] = count
                out[i] = nums[h] - 1
        if failed:
            raise MemoryError()
        # Each pair's first row, by pair number: its a and b.
        firsts_arr = np.empty(count, np.int64)
        firsts = firsts_arr
        with nogil:
            for i in range(n):
                if out[i] == seen:
                    firsts[seen] = i
                    seen += 1
    finally:
        free(keys)
        free(nums)
    return out_arr, np.asarray(a, np.int32)[firsts_arr], np.asarray(b, np.int32)[firsts_arr]


# --- readers/plane_collected.py: stat rows counted and given slots --------------------------------


def count_owners(owners, per_event, Py_ssize_t threads=1) -> None:
    """``per_event[e] += (owner == e).sum()`` for every event ``e`` and every owner array of
    ``owners`` (``np.bincount`` added in place), on up to ``threads`` threads started once for all
    of them, each for a range of events (each reads every owner). Owners outside
    ``0..len(per_event) - 1`` raise IndexError."""
    arrays = [_in(o, np.int32) for o in owners]
    cdef int64_t[::1] counts = per_event
    cdef Py_ssize_t n = counts.shape[0]
    parts = max(1, min(threads, n // (1 << 16)))
    cuts = [n * t // parts for t in range(parts + 1)]
    stray = np.zeros(1, np.int64)  # owners outside every range, counted by the first part
    run_parts(_count_range, [(arrays, counts, cuts[t], cuts[t + 1], stray if t == 0 else None)
                             for t in range(parts)], name="tbprof-chrome-pass")
    if stray[0]:
        raise IndexError("a stat row's owner is not an event")


def _count_range(list arrays, int64_t[::1] counts, int64_t lo, int64_t hi, int64_t[::1] stray) -> None:
    """``count_owners``'s loop over the rows whose owner is in ``[lo, hi)``; ``stray`` (or None)
    gets the number of owners outside ``0..len(counts) - 1``."""
    cdef const int32_t[::1] own
    cdef Py_ssize_t i
    cdef int32_t e
    cdef int64_t n = counts.shape[0], outside = 0
    cdef bint check = stray is not None
    for arr in arrays:
        own = arr
        with nogil:
            for i in range(own.shape[0]):
                e = own[i]
                if e >= lo and e < hi:
                    counts[e] += 1
                elif check and (e < 0 or e >= n):
                    outside += 1
    if check:
        stray[0] = outside


def fill_slots(order, per_event, fill, plane_bounds, out_bounds) -> None:
    """Each event's first slot among the stat rows in store order: ``fill[order[r]]`` is the sum
    of ``per_event`` over the rows before ``r`` (``order``: row -> event); ``out_bounds[p + 1]``:
    the rows of planes ``0..p`` (``plane_bounds``: each plane's first row, then the end), as a
    prefix sum per plane in numpy gives."""
    cdef const int64_t[::1] rows = _in(order, np.int64)
    cdef const int64_t[::1] counts = _in(per_event, np.int64)
    cdef int64_t[::1] slot = fill
    cdef const int64_t[::1] pb = _in(plane_bounds, np.int64)
    cdef int64_t[::1] ob = out_bounds
    cdef Py_ssize_t n_planes = pb.shape[0] - 1, p
    cdef int64_t r, e, total = 0
    if ob.shape[0] != pb.shape[0] or n_planes < 0:
        raise ValueError("plane bounds differ in length")
    with nogil:
        ob[0] = 0
        for p in range(n_planes):
            for r in range(pb[p], pb[p + 1]):
                e = rows[r]
                slot[e] = total
                total += counts[e]
            ob[p + 1] = total


# --- readers/chrome_args.py: each event's stat rows ----------------------------------------------

def owner_bounds(owner, Py_ssize_t n, Py_ssize_t threads=1) -> np.ndarray:
    """Each of ``n`` events' first row in ``owner`` (one event number per stat row, ascending),
    then the end: event ``e``'s rows are ``bounds[e]`` to ``bounds[e + 1]``, as a prefix sum of
    ``np.bincount(owner, minlength=n)`` gives, in one pass and no count array, on up to
    ``threads`` threads, each for a range of rows (and the events whose first row is there).
    Owners that descend or fall outside 0..n-1 raise ValueError."""
    cdef const int32_t[::1] o = _in(owner, np.int32)
    cdef Py_ssize_t m = o.shape[0]
    if n < 0:
        raise ValueError("a negative count of events")
    out = np.empty(n + 1, dtype=np.int64)
    parts = max(1, min(threads, m // (1 << 20)))
    cuts = [m * t // parts for t in range(parts + 1)]
    bad = np.zeros(parts, np.uint8)
    run_parts(_bounds_range, [(o, out, n, cuts[t], cuts[t + 1], bad[t:t + 1]) for t in range(parts)],
              name="tbprof-chrome-pass")
    if bad.any():
        raise ValueError("stat owners must ascend within 0..n-1")
    return out


def _bounds_range(const int32_t[::1] o, int64_t[::1] b, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi,
                  uint8_t[::1] bad) -> None:
    """``owner_bounds`` for rows ``lo``..``hi``: the events after the owner of row ``lo - 1`` (from
    0 for the first rows) up to the owner of row ``hi - 1`` (to ``n`` for the last rows) get
    their first row, each found in these rows; ``bad[0]`` set where these rows (with the one
    before them) descend or leave 0..n-1."""
    cdef Py_ssize_t m = o.shape[0], j, e, e_lo, e_hi
    with nogil:
        for j in range(lo - 1 if lo > 0 else lo, hi):  # the row before too: its owner starts the events
            if o[j] < 0 or o[j] >= n or (j > 0 and o[j] < o[j - 1]):
                bad[0] = 1
                break
        if not bad[0]:
            e_lo = 0 if lo == 0 else o[lo - 1] + 1
            e_hi = n if hi == m else o[hi - 1]
            j = lo
            for e in range(e_lo, e_hi + 1):
                while j < hi and o[j] < e:
                    j += 1
                b[e] = j


# --- readers/plane_collected.py: rows grouped by line ----------------------------------------------

def line_order(line, rank_of_line, Py_ssize_t n_ranks) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by their line's rank (``rank_of_line[line[i]]``, ranks 0..n_ranks-1), each
    group in row order, as a stable sort by rank gives (a counting sort: two passes); and the rows
    of each rank. Lines or ranks out of range raise IndexError."""
    cdef const int64_t[::1] ln = _in(line, np.int64)
    cdef const int64_t[::1] rank = _in(rank_of_line, np.int64)
    cdef Py_ssize_t n = ln.shape[0], i
    counts_arr = np.zeros(n_ranks, np.int64)
    order_arr = np.empty(n, np.int64)
    cdef int64_t[::1] counts = counts_arr
    cdef int64_t[::1] order = order_arr
    cdef int64_t r
    for i in range(n):  # checked with the GIL: a bad rank raises here, before any placement
        r = rank[ln[i]]
        counts[r] += 1
    fill_arr = np.concatenate([[0], np.cumsum(counts_arr)[:-1]]).astype(np.int64) if n_ranks else counts_arr.copy()
    cdef int64_t[::1] fill = fill_arr
    with nogil:
        for i in range(n):
            r = rank[ln[i]]
            order[fill[r]] = i
            fill[r] += 1
    return order_arr, counts_arr
