# cython: language_level=3, boundscheck=True, wraparound=False, cdivision=True, initializedcheck=True
"""Compiled passes of the event grouping (domain/event_groups.py ``compute_groups``) on a GPU run,
where only the events that carry links are grouped: the rows carrying two stats, the graph's
nodes (those rows, merged), and their nesting on each line.

As numpy, each of these was several passes over a few hundred thousand rows, each making a
temporary (a concatenation, a sort, gathers of rows, positions by binary search); here each is
one pass, with the GIL released, so the grouping can run on one thread while another thread
works. Inputs are coerced to the dtype a loop needs (a no-op for the store's own columns);
indexing is bounds-checked.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, realloc

import numpy as np


cdef object _in(object a, object dtype):
    """A C-contiguous array of ``dtype`` (a view when ``a`` already is one)."""
    return np.ascontiguousarray(a, dtype=dtype)


cdef bint _ascending(const int64_t[::1] a) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(1, a.shape[0]):
        if a[i] < a[i - 1]:
            return False
    return True


def matched_rows(a_rows, a_values, b_rows, b_values) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of ``a_rows`` also in ``b_rows`` (both ascending) and their values, as (rows,
    (n, 2) matrix of (a value, b value)): each row of ``a`` paired with the first equal row of
    ``b``, what ``np.searchsorted(b_rows, a_rows)`` finds. None when a row list is not ascending
    (the caller then searches)."""
    cdef const int64_t[::1] ar = _in(a_rows, np.int64)
    cdef const int64_t[::1] av = _in(a_values, np.int64)
    cdef const int64_t[::1] br = _in(b_rows, np.int64)
    cdef const int64_t[::1] bv = _in(b_values, np.int64)
    cdef Py_ssize_t na = ar.shape[0], nb = br.shape[0], i, j, n = 0
    if av.shape[0] != na or bv.shape[0] != nb:
        raise ValueError("rows and values differ in length")
    cdef bint sorted_in
    with nogil:
        sorted_in = _ascending(ar) and _ascending(br)
        if sorted_in:
            j = 0
            for i in range(na):
                while j < nb and br[j] < ar[i]:
                    j += 1
                if j < nb and br[j] == ar[i]:
                    n += 1
    if not sorted_in:
        return None
    rows_arr = np.empty(n, dtype=np.int64)
    kv_arr = np.empty((n, 2), dtype=np.int64)
    cdef int64_t[::1] rows = rows_arr
    cdef int64_t[:, ::1] kv = kv_arr
    with nogil:
        j = 0
        n = 0
        for i in range(na):
            while j < nb and br[j] < ar[i]:
                j += 1
            if j < nb and br[j] == ar[i]:
                rows[n] = ar[i]
                kv[n, 0] = av[i]
                kv[n, 1] = bv[j]
                n += 1
    return rows_arr, kv_arr


def merged_nodes(parts, int64_t base) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct rows of ``parts`` (a few ascending row lists), ascending, and each part's
    rows as their positions there plus ``base``: ``np.unique`` of the concatenation and a
    ``np.searchsorted`` of each part in it, as one merge. A part that is not ascending raises
    ValueError."""
    arrays = [_in(p, np.int64) for p in parts]
    cdef Py_ssize_t k = len(arrays), q, total = 0
    for a in arrays:
        if not _ascending(a):
            raise ValueError("a part is not ascending")
        total += a.shape[0]
    positions = [np.empty(a.shape[0], dtype=np.int64) for a in arrays]
    out_arr = np.empty(total, dtype=np.int64)
    cdef int64_t[::1] out = out_arr
    cdef const int64_t** src = <const int64_t**>malloc(max(k, 1) * sizeof(int64_t*))
    cdef int64_t** pos = <int64_t**>malloc(max(k, 1) * sizeof(int64_t*))
    cdef Py_ssize_t* length = <Py_ssize_t*>malloc(max(k, 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* head = <Py_ssize_t*>malloc(max(k, 1) * sizeof(Py_ssize_t))
    cdef const int64_t[::1] view
    cdef int64_t[::1] pview
    cdef Py_ssize_t n = 0, first
    cdef int64_t low, second, v
    cdef bint bounded
    if src == NULL or pos == NULL or length == NULL or head == NULL:
        free(src)
        free(pos)
        free(length)
        free(head)
        raise MemoryError()
    try:
        for q in range(k):
            view = arrays[q]
            pview = positions[q]
            length[q] = view.shape[0]
            head[q] = 0
            # (Pointers into arrays held by ``arrays`` and ``positions`` until this returns.)
            src[q] = &view[0] if view.shape[0] else NULL
            pos[q] = &pview[0] if pview.shape[0] else NULL
        with nogil:
            while True:
                # The part with the lowest next row, and the lowest next row of the others.
                first = -1
                low = 0
                second = 0
                bounded = False
                for q in range(k):
                    if head[q] < length[q]:
                        v = src[q][head[q]]
                        if first < 0 or v < low:
                            if first >= 0:
                                second = low if not bounded or low < second else second
                                bounded = True
                            first = q
                            low = v
                        elif not bounded or v < second:
                            second = v
                            bounded = True
                if first < 0:
                    break
                # Its rows up to the others' next one, in one run: a row equal to the last one
                # placed is that node (the output ascends).
                while head[first] < length[first]:
                    v = src[first][head[first]]
                    if bounded and v > second:
                        break
                    if n == 0 or out[n - 1] != v:
                        out[n] = v
                        n += 1
                    pos[first][head[first]] = n - 1 + base
                    head[first] += 1
    finally:
        free(src)
        free(pos)
        free(length)
        free(head)
    return out_arr[:n].copy() if n < total else out_arr, positions


cdef int64_t* _grow(int64_t* stack, Py_ssize_t* cap) noexcept nogil:
    cdef Py_ssize_t new_cap = cap[0] * 2 if cap[0] else 256
    cdef int64_t* grown = <int64_t*>realloc(stack, new_cap * sizeof(int64_t))
    if grown != NULL:
        cap[0] = new_cap
    return grown


def nest_nodes(rows, start_ps, dur_ps, node_offsets, int64_t base, parent_out, sub_end_out) -> None:
    """The nesting of the events at ``rows`` (ascending) among themselves, line by line (line
    ``l``'s nodes are ``node_offsets[l]:node_offsets[l + 1]``), written as node ids (position +
    ``base``) into ``parent_out`` (-1: top level) and ``sub_end_out``: what
    ``kernels.nesting_parents`` gives for the gathered rows' times, without gathering them."""
    cdef const int64_t[::1] r = _in(rows, np.int64)
    cdef const int64_t[::1] start = _in(start_ps, np.int64)
    cdef const int64_t[::1] dur = _in(dur_ps, np.int64)
    cdef const int64_t[::1] offs = _in(node_offsets, np.int64)
    cdef int64_t[::1] parent = parent_out
    cdef int64_t[::1] sub_end = sub_end_out
    cdef Py_ssize_t n = r.shape[0], i, top, cap = 0, ln, a, b
    if parent.shape[0] != n or sub_end.shape[0] != n:
        raise ValueError("outputs differ in length from rows")
    if dur.shape[0] != start.shape[0]:
        raise ValueError("event columns differ in length")
    cdef int64_t* stack = NULL
    cdef int64_t s, e, p, ps
    cdef bint oom = False
    try:
        with nogil:
            for i in range(n):  # (a node outside every line's bounds: top level, no subtree)
                parent[i] = -1
                sub_end[i] = base
            stack = _grow(NULL, &cap)
            oom = stack == NULL
            ln = 0
            while not oom and ln < offs.shape[0] - 1:
                top = 0
                a = offs[ln]
                b = offs[ln + 1]
                for i in range(a, b):
                    s = start[r[i]]
                    e = s + dur[r[i]]
                    while top > 0:
                        p = stack[top - 1]
                        ps = start[r[p]]
                        if ps <= s and e <= ps + dur[r[p]]:
                            parent[i] = p + base
                            break
                        sub_end[p] = i + base
                        top -= 1
                    if top == cap:
                        stack = _grow(stack, &cap)
                        if stack == NULL:
                            oom = True
                            break
                    stack[top] = i
                    top += 1
                while not oom and top > 0:
                    sub_end[stack[top - 1]] = b + base
                    top -= 1
                ln += 1
    finally:
        free(stack)
    if oom:
        raise MemoryError()
