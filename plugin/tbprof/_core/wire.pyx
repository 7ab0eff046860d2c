# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""XSpace wire scanner: the events and stats of a ``*.xplane.pb`` straight into numpy columns.

Why a scanner and not ``XSpace.FromString``: on ``jax_large`` (millions of events and stats) upb's
parse takes seconds, and copying every event and stat out of the message objects several times
longer (bench/measurements.md#xspace-scan). Events and stats are the only bulky part of a file and
their wire layout is a handful of varint fields, so one compiled pass writes them into columns; the
small fields (metadata maps, plane stats, line names) are recorded as byte spans, read later by
``plane_metadata`` below or by upb (readers/xplane.py).

Safety: this module indexes raw memory without Cython's bounds checks, so every read is
guarded explicitly. Lengths are compared as ``n > end - pos`` in unsigned arithmetic: a varint
length near 2^64 can neither wrap a position nor go negative, and ``pos <= end <= len(buf)``
holds at every step (the invariant every read relies on). Malformed bytes give an error code
and the byte offset; the reader turns that into ``ProfileReadError``.

Parallel decode (``scan``): a cheap serial *index* pass walks space -> plane -> line -> event
headers (a tag and a length per event, no descent into events), which fixes every event's row
and cuts the lines into chunks of about ``chunk_bytes`` at event boundaries (one huge line, such
as a Python tracer thread holding most of jax_large's events, is split too). Threads then count
each chunk's stats (which fixes every stat's row) and decode the chunks with the GIL released,
each writing events and stats at their exact rows of exact-size columns (``_ParallelScan``). Any
surprise (an error, a metadata id beyond int32) falls back to the serial scan, which reports the
first error in wire order, where a single pass over the file meets it first.

The index pass is a small share of the scan and the count and decode phases, most of it, are the
parts that scale with threads; the phase times of jax_large on 1 and 2 threads are in
bench/measurements.md#xspace-scan (bench/core_bench.py prints them).

Wire facts (proto3, field numbers from ``protos/xplane.proto``):
  XSpace: planes=1 (LEN); XPlane: lines=3 (LEN); XLine: events=4 (LEN);
  XEvent: metadata_id=1, offset_ps=2, duration_ps=3 (VARINT), stats=4 (LEN), num_occurrences=5;
  XStat: metadata_id=1, double=2 (I64), uint64=3, int64=4, ref=7 (VARINT), str=5, bytes=6 (LEN).
"""

from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.string cimport memcpy
from cpython.unicode cimport PyUnicode_DecodeUTF8

import time
from _thread import start_new_thread

import numpy as np

# Stat value kinds, stored in the store's ``kind`` column (mirrors store/tables.py).
KIND_NONE = 0
KIND_DOUBLE = 1
KIND_UINT64 = 2
KIND_INT64 = 3
KIND_STR = 4
KIND_BYTES = 5
KIND_REF = 6

# Error codes (0 = ok).
ERR_TRUNCATED = 1
ERR_BAD_WIRE_TYPE = 2
ERR_BAD_VARINT = 3
ERR_LENGTH = 4
ERR_CAPACITY = 5  # internal: the index pass and a chunk disagree (triggers the serial scan)
ERR_TOO_MANY = 6
ERR_NO_MEMORY = 7
ERR_FIELD_ZERO = 9
ERR_SHORT_READ = 10

# Event and stat rows are int32 in the store.
MAX_ROWS = 2**31 - 1

ERROR_TEXT = {
    ERR_TRUNCATED: "the data ends in the middle of a field (truncated file?)",
    ERR_BAD_WIRE_TYPE: "an invalid protobuf wire type (not an XSpace, or corrupt bytes)",
    ERR_BAD_VARINT: "a malformed varint (corrupt bytes)",
    ERR_LENGTH: "a length that runs past the end of its enclosing message (truncated or corrupt)",
    ERR_TOO_MANY: "more than 2^31 events or stats in one file (not supported)",
    ERR_NO_MEMORY: "not enough memory to index the file",
    ERR_FIELD_ZERO: "field number 0, which protobuf never writes (not an XSpace, or corrupt bytes)",
    ERR_SHORT_READ: "the file ended before its size (it changed while it was being read)",
}

cdef enum:
    C_KIND_NONE = 0
    C_KIND_DOUBLE = 1
    C_KIND_UINT64 = 2
    C_KIND_INT64 = 3
    C_KIND_STR = 4
    C_KIND_BYTES = 5
    C_KIND_REF = 6
    C_TRUNCATED = 1
    C_BAD_WIRE_TYPE = 2
    C_BAD_VARINT = 3
    C_LENGTH = 4
    C_CAPACITY = 5
    C_TOO_MANY = 6
    C_NO_MEMORY = 7
    C_REGION_FULL = 8  # a chunk's stat or text buffer is full: grow it and decode the chunk again
    C_FIELD_ZERO = 9
    C_SHORT_READ = 10  # the file's read ended before its size (``FileRead``): the caller reports it

cdef int64_t C_MAX_ROWS = 2147483647
# Protobuf's largest field number: upb refuses a tag beyond it.
cdef uint64_t C_MAX_FIELD = 536870911
cdef int64_t C_INT64_MAX = 0x7FFFFFFFFFFFFFFF
# spans[:, 0] = owner kind * 2^32 + owner index (kind 0 = space, 1 = plane, 2 = line).
cdef int64_t OWNER_PLANE = 4294967296
cdef int64_t OWNER_LINE = 8589934592


class WireError(ValueError):
    """The bytes are not a well-formed XSpace."""

    def __init__(self, code: int, offset: int) -> None:
        super().__init__(f"{ERROR_TEXT.get(code, 'malformed protobuf')} at byte {offset}")
        self.code = code
        self.offset = offset


# --- primitives ------------------------------------------------------------------------------

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define WIRE_CTZ64(x) __builtin_ctzll(x)
    #else
    static int WIRE_CTZ64(unsigned long long x) { int n = 0; while (!(x & 1)) { x >>= 1; n++; } return n; }
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define WIRE_NEXT(c) __atomic_fetch_add((c), 1, __ATOMIC_RELAXED)
    #define WIRE_DONE(c) ((void)__atomic_add_fetch((c), 1, __ATOMIC_RELEASE))
    #elif defined(_MSC_VER)
    #include <intrin.h>
    #if defined(_WIN64)
    #define WIRE_NEXT(c) ((Py_ssize_t)_InterlockedExchangeAdd64((volatile __int64*)(c), 1))
    #define WIRE_DONE(c) ((void)_InterlockedExchangeAdd64((volatile __int64*)(c), 1))
    #else
    #define WIRE_NEXT(c) ((Py_ssize_t)_InterlockedExchangeAdd((volatile long*)(c), 1))
    #define WIRE_DONE(c) ((void)_InterlockedExchangeAdd((volatile long*)(c), 1))
    #endif
    #endif
    #if defined(_WIN32)
    #include <intrin.h>
    #define WIRE_PREAD_OK 0
    static Py_ssize_t wire_pread(int fd, void* buf, size_t n, long long off) { return -1; }
    static void wire_pause(void) { }  /* (a pass's last chunks: a short spin) */
    static int wire_errno(void) { return 0; }
    /* Interlocked: full barriers on every Windows target (a volatile access is not one on ARM64). */
    #if defined(_WIN64)
    static Py_ssize_t wire_load(Py_ssize_t* p) { return (Py_ssize_t)_InterlockedOr64((volatile __int64*)p, 0); }
    static void wire_store(Py_ssize_t* p, Py_ssize_t v) { _InterlockedExchange64((volatile __int64*)p, (__int64)v); }
    #else
    static Py_ssize_t wire_load(Py_ssize_t* p) { return (Py_ssize_t)_InterlockedOr((volatile long*)p, 0); }
    static void wire_store(Py_ssize_t* p, Py_ssize_t v) { _InterlockedExchange((volatile long*)p, (long)v); }
    #endif
    #else
    #include <errno.h>
    #include <time.h>
    #include <unistd.h>
    #define WIRE_PREAD_OK 1
    static Py_ssize_t wire_pread(int fd, void* buf, size_t n, long long off) {
        Py_ssize_t r;
        do { r = pread(fd, buf, n, (off_t)off); } while (r < 0 && errno == EINTR);
        return r;
    }
    /* A tenth of a millisecond: the read of a 256 KiB piece takes about that long, and a walk that
       lags by one piece ends a piece after the read (fewer wake-ups cost less CPU than a tighter lag). */
    static void wire_pause(void) { struct timespec ts = {0, 100000}; nanosleep(&ts, NULL); }
    static int wire_errno(void) { return errno; }
    static Py_ssize_t wire_load(Py_ssize_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static void wire_store(Py_ssize_t* p, Py_ssize_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    #endif
    #if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define WIRE_WORD_VARINTS 1
    #else
    #define WIRE_WORD_VARINTS 0
    #endif
    """
    int WIRE_CTZ64(unsigned long long x) noexcept nogil
    Py_ssize_t WIRE_NEXT(Py_ssize_t* counter) noexcept nogil
    void WIRE_DONE(Py_ssize_t* counter) noexcept nogil
    const bint WIRE_PREAD_OK
    Py_ssize_t wire_pread(int fd, void* buf, size_t n, long long off) noexcept nogil
    int _errno "wire_errno"() noexcept nogil
    void wire_pause() noexcept nogil
    Py_ssize_t wire_load(Py_ssize_t* p) noexcept nogil
    void wire_store(Py_ssize_t* p, Py_ssize_t v) noexcept nogil
    # The 8-byte varint decoder reads a word in the machine's byte order: little-endian only (a
    # compile-time constant: the check costs nothing per varint).
    const bint WIRE_WORD_VARINTS


cdef inline int read_varint(const uint8_t* buf, Py_ssize_t* pos, Py_ssize_t end, uint64_t* out) noexcept nogil:
    """Reads a varint at pos[0] < end (at most 10 bytes); advances pos. Precondition: end <= len(buf)."""
    cdef Py_ssize_t p = pos[0]
    cdef uint64_t result = 0
    cdef uint64_t b, word, stops
    cdef int shift = 0, n
    if p < end and buf[p] < 0x80:  # most tags, ids and small values are one byte
        out[0] = buf[p]
        pos[0] = p + 1
        return 0
    if WIRE_WORD_VARINTS and end - p >= 8:
        # Times and durations in picoseconds take 3-6 bytes, of varying length: a byte-by-byte
        # loop mispredicts its exit on most of them. Here the first byte without a continuation
        # bit is found in one word and the 7-bit groups are packed by masks and shifts.
        memcpy(&word, buf + p, 8)
        stops = ~word & <uint64_t>0x8080808080808080
        if stops != 0:
            n = (WIRE_CTZ64(stops) >> 3) + 1  # the varint's bytes, 1-8, all before ``end``
            if n < 8:
                word &= (<uint64_t>1 << (8 * n)) - 1
            word &= <uint64_t>0x7F7F7F7F7F7F7F7F
            word = ((word & <uint64_t>0x7F007F007F007F00) >> 1) | (word & <uint64_t>0x007F007F007F007F)
            word = ((word & <uint64_t>0x3FFF00003FFF0000) >> 2) | (word & <uint64_t>0x00003FFF00003FFF)
            word = ((word & <uint64_t>0x0FFFFFFF00000000) >> 4) | (word & <uint64_t>0x000000000FFFFFFF)
            out[0] = word
            pos[0] = p + n
            return 0
    while True:
        if p >= end:
            pos[0] = p
            return C_TRUNCATED
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift  # shift <= 63 here: the 11th byte is rejected below
        if b < 0x80:
            out[0] = result
            pos[0] = p
            return 0
        shift += 7
        if shift >= 70:
            pos[0] = p
            return C_BAD_VARINT


cdef inline int read_len(const uint8_t* buf, Py_ssize_t* pos, Py_ssize_t end, Py_ssize_t* out) noexcept nogil:
    """Reads a LEN prefix and checks it fits before ``end``; out = the payload's end."""
    cdef uint64_t n
    cdef int err = read_varint(buf, pos, end, &n)
    if err != 0:
        return err
    # Unsigned and against the room left: no wrap for n near 2^64, no negative lengths.
    if n > <uint64_t>(end - pos[0]):
        return C_LENGTH
    out[0] = pos[0] + <Py_ssize_t>n
    return 0


cdef inline int skip_field(const uint8_t* buf, Py_ssize_t* pos, Py_ssize_t end, uint64_t wire) noexcept nogil:
    """Skips one field value of the given wire type."""
    cdef uint64_t dummy
    cdef Py_ssize_t payload_end
    cdef int err
    if wire == 0:
        return read_varint(buf, pos, end, &dummy)
    if wire == 1 or wire == 5:
        if (8 if wire == 1 else 4) > end - pos[0]:
            pos[0] += 8 if wire == 1 else 4  # reported offset as before; the scan stops here
            return C_TRUNCATED
        pos[0] += 8 if wire == 1 else 4
        return 0
    if wire == 2:
        err = read_len(buf, pos, end, &payload_end)
        if err != 0:
            return err
        pos[0] = payload_end
        return 0
    return C_BAD_WIRE_TYPE


# --- one event ---------------------------------------------------------------------------------

cdef struct Sink:
    # Outputs of events (exact rows) and of stats / texts (a region with a capacity).
    bint fill
    bint narrow  # metadata ids into int32 columns (else int64)
    bint skip_stats  # events only: stats are skipped by their length (decoded later, see scan)
    bint skip_events  # stats only: the events' rows are left unwritten (decoded before, see scan)
    int32_t* ev_line
    int32_t* ev_meta32
    int64_t* ev_meta64
    int64_t* ev_start
    int64_t* ev_dur
    int32_t* st_owner
    int32_t* st_meta32
    int64_t* st_meta64
    int8_t* st_kind
    int64_t* st_value
    int64_t* texts  # (n, 3) row-major: stat row, byte offset, length
    Py_ssize_t st_cap
    Py_ssize_t tx_cap
    int64_t st_row0  # stat row (as written to texts) of the region's first stat
    int64_t n_stats  # in this region
    int64_t n_texts
    int64_t n_wide
    int64_t stats_before  # stats counted before this region (for the 2^31 limit)


cdef inline int64_t narrow_id(Sink* s, uint64_t raw) noexcept nogil:
    cdef int64_t v = <int64_t>raw
    if s.narrow and (v < 0 or v > C_MAX_ROWS):
        s.n_wide += 1
        return -1
    return v


cdef inline void put_event(Sink* s, int64_t slot, int32_t line_idx, int64_t meta, uint64_t offset_ps,
                           uint64_t dur_ps) noexcept nogil:
    """An event's columns at row ``slot`` (its metadata id as ``narrow_id`` gave it)."""
    s.ev_line[slot] = line_idx
    if s.narrow:
        s.ev_meta32[slot] = <int32_t>meta
    else:
        s.ev_meta64[slot] = meta
    s.ev_start[slot] = <int64_t>offset_ps
    s.ev_dur[slot] = <int64_t>dur_ps


cdef struct StatFields:
    uint64_t meta
    int kind
    uint64_t value  # a double's bits, an integer's, or a str/bytes value's offset
    Py_ssize_t length  # a str/bytes value's length


cdef inline int decode_stat(const uint8_t* buf, Py_ssize_t* at, Py_ssize_t send, bint strict,
                            StatFields* out) noexcept nogil:
    """The fields of the XStat in [at[0], send) (the last of each wins, as protobuf's); ``at``
    advances as they are read (an error's offset is where it stopped). Lenient (the scanner): a
    field of another wire type than its own is skipped. ``strict`` (``plane_metadata``, which
    must read what upb reads or hand the plane to upb): such a field, field number 0 or one
    beyond protobuf's largest, is an error."""
    # (Locals, stored once at the end: the scanner's hot loop keeps them in registers.)
    cdef uint64_t tag, field, wire, meta = 0, value = 0
    cdef Py_ssize_t text_end, pos = at[0], length = 0
    cdef int err = 0, k, kind = C_KIND_NONE
    while pos < send:
        err = read_varint(buf, &pos, send, &tag)
        if err != 0:
            break
        field = tag >> 3
        wire = tag & 7
        if field == 1 and wire == 0:
            err = read_varint(buf, &pos, send, &meta)
        elif field == 2 and wire == 1:
            if 8 > send - pos:
                err = C_TRUNCATED
                break
            value = 0
            for k in range(8):
                value |= (<uint64_t>buf[pos + k]) << (8 * k)
            pos += 8
            kind = C_KIND_DOUBLE
            length = 0
        elif wire == 0 and (field == 3 or field == 4 or field == 7):
            err = read_varint(buf, &pos, send, &value)
            kind = C_KIND_UINT64 if field == 3 else (C_KIND_INT64 if field == 4 else C_KIND_REF)
            length = 0
        elif (field == 5 or field == 6) and wire == 2:
            err = read_len(buf, &pos, send, &text_end)
            if err != 0:
                break
            kind = C_KIND_STR if field == 5 else C_KIND_BYTES
            value = <uint64_t>pos
            length = text_end - pos
            pos = text_end
        elif strict and (field == 0 or field > C_MAX_FIELD):
            err = C_FIELD_ZERO
        elif strict and field <= 7:
            err = C_BAD_WIRE_TYPE
        else:
            err = skip_field(buf, &pos, send, wire)
        if err != 0:
            break
    at[0] = pos
    out.meta = meta
    out.kind = kind
    out.value = value
    out.length = length
    return err


cdef int decode_event(const uint8_t* buf, Py_ssize_t* pos, Py_ssize_t eend, int64_t ev_idx, int32_t line_idx,
                      int64_t ev_slot, Sink* s) noexcept nogil:
    """Decodes the XEvent in [pos, eend); writes it at ``ev_slot`` and its stats to the sink."""
    cdef uint64_t tag, v, efield, ewire, sfield, swire
    cdef uint64_t meta_id = 0, offset_ps = 0, dur_ps = 0
    cdef uint64_t s_meta, s_val
    cdef Py_ssize_t send, s_off, s_len
    cdef int s_kind, err
    cdef int64_t st_slot, m
    cdef StatFields st
    while pos[0] < eend:
        err = read_varint(buf, pos, eend, &tag)
        if err != 0:
            return err
        efield = tag >> 3
        ewire = tag & 7
        if ewire == 0 and (efield == 1 or efield == 2 or efield == 3):
            err = read_varint(buf, pos, eend, &v)
            if err != 0:
                return err
            if efield == 1:
                meta_id = v
            elif efield == 2:
                offset_ps = v
            else:
                dur_ps = v
        elif efield == 4 and ewire == 2:
            err = read_len(buf, pos, eend, &send)
            if err != 0:
                return err
            if s.skip_stats:
                pos[0] = send
                continue
            err = decode_stat(buf, pos, send, False, &st)
            if err != 0:
                return err
            s_meta = st.meta
            s_kind = st.kind
            s_val = st.value
            s_off = <Py_ssize_t>st.value
            s_len = st.length
            if s.stats_before + s.n_stats >= C_MAX_ROWS:
                return C_TOO_MANY
            if s.fill and s.n_stats >= s.st_cap:
                return C_REGION_FULL
            st_slot = s.n_stats
            if s_kind == C_KIND_STR or s_kind == C_KIND_BYTES:
                if s.fill:
                    if s.n_texts >= s.tx_cap:
                        return C_REGION_FULL
                    s.texts[3 * s.n_texts] = s.st_row0 + st_slot
                    s.texts[3 * s.n_texts + 1] = s_off
                    s.texts[3 * s.n_texts + 2] = s_len
                s_val = <uint64_t>s.n_texts
                s.n_texts += 1
            m = narrow_id(s, s_meta)
            if s.fill:
                s.st_owner[st_slot] = <int32_t>ev_idx
                if s.narrow:
                    s.st_meta32[st_slot] = <int32_t>m
                else:
                    s.st_meta64[st_slot] = m
                s.st_kind[st_slot] = <int8_t>s_kind
                s.st_value[st_slot] = <int64_t>s_val
            s.n_stats += 1
        else:
            err = skip_field(buf, pos, eend, ewire)
            if err != 0:
                return err
    m = narrow_id(s, meta_id)
    if s.fill and not s.skip_events:
        put_event(s, ev_slot, line_idx, m, offset_ps, dur_ps)
    return 0


# --- growable int64 rows (index tables of unknown length) ------------------------------------

cdef struct Rows:
    int64_t* data
    Py_ssize_t n  # rows
    Py_ssize_t cap  # rows
    int width


cdef int rows_push(Rows* r, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e) noexcept nogil:
    cdef Py_ssize_t new_cap
    cdef int64_t* grown
    if r.n == r.cap:
        new_cap = r.cap * 2 if r.cap else 256
        grown = <int64_t*>realloc(r.data, new_cap * r.width * sizeof(int64_t))
        if grown == NULL:
            return C_NO_MEMORY
        r.data = grown
        r.cap = new_cap
    cdef int64_t* row = r.data + r.n * r.width
    row[0] = a
    if r.width > 1:
        row[1] = b
    if r.width > 2:
        row[2] = c
    if r.width > 3:
        row[3] = d
    if r.width > 4:
        row[4] = e
    r.n += 1
    return 0


cdef object rows_array(Rows* r):
    out = np.empty((r.n, r.width), dtype=np.int64)
    cdef int64_t[:, ::1] view = out
    cdef Py_ssize_t i
    for i in range(r.n * r.width):
        view[i // r.width, i % r.width] = r.data[i]
    return out


# --- the serial scan (reference, fallback, and the exact error report) -----------------------

cdef int scan_serial(const uint8_t* buf, Py_ssize_t end, Sink* s, Rows* spans, Rows* lines,
                     int64_t* n_planes_out, int64_t* n_events_out, Py_ssize_t ev_cap,
                     Py_ssize_t* err_pos) noexcept nogil:
    """Walks the whole XSpace in wire order, one field after another, with overflow-free bounds."""
    cdef Py_ssize_t pos = 0, tag_start, pend, lend, eend
    cdef uint64_t tag, field, wire
    cdef int64_t n_planes = 0, n_events = 0, plane_idx, line_idx
    cdef int err = 0
    while pos < end:
        tag_start = pos
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            break
        field = tag >> 3
        wire = tag & 7
        if field == 1 and wire == 2:
            err = read_len(buf, &pos, end, &pend)
            if err != 0:
                break
            plane_idx = n_planes
            n_planes += 1
            while pos < pend:
                tag_start = pos
                err = read_varint(buf, &pos, pend, &tag)
                if err != 0:
                    break
                field = tag >> 3
                wire = tag & 7
                if field == 3 and wire == 2:
                    err = read_len(buf, &pos, pend, &lend)
                    if err != 0:
                        break
                    line_idx = lines.n
                    err = rows_push(lines, plane_idx, n_events, 0, 0, 0)
                    if err != 0:
                        break
                    while pos < lend:
                        tag_start = pos
                        err = read_varint(buf, &pos, lend, &tag)
                        if err != 0:
                            break
                        field = tag >> 3
                        wire = tag & 7
                        if field == 4 and wire == 2:
                            err = read_len(buf, &pos, lend, &eend)
                            if err != 0:
                                break
                            if n_events >= C_MAX_ROWS:
                                err = C_TOO_MANY
                                break
                            if s.fill and n_events >= ev_cap:
                                err = C_CAPACITY
                                break
                            err = decode_event(buf, &pos, eend, n_events, <int32_t>line_idx, n_events, s)
                            if err != 0:
                                break
                            n_events += 1
                        else:
                            err = skip_field(buf, &pos, lend, wire)
                            if err != 0:
                                break
                            err = rows_push(spans, OWNER_LINE + line_idx, tag_start, pos, 0, 0)
                            if err != 0:
                                break
                    if err != 0:
                        break
                else:
                    err = skip_field(buf, &pos, pend, wire)
                    if err != 0:
                        break
                    err = rows_push(spans, OWNER_PLANE + plane_idx, tag_start, pos, 0, 0)
                    if err != 0:
                        break
            if err != 0:
                break
        else:
            err = skip_field(buf, &pos, end, wire)
            if err != 0:
                break
            err = rows_push(spans, 0, tag_start, pos, 0, 0)
            if err != 0:
                break
    err_pos[0] = pos
    n_planes_out[0] = n_planes
    n_events_out[0] = n_events
    return err


cdef class _Columns:
    """Owns the numpy outputs and exposes raw pointers to them (one place for the casts)."""

    cdef public object ev_line, ev_meta, ev_start, ev_dur, st_owner, st_meta, st_kind, st_value, texts

    def __init__(self, Py_ssize_t n_events, Py_ssize_t n_stats, Py_ssize_t n_texts, object meta_dtype):
        # np.empty reserves address space; only rows written become resident memory.
        self.ev_line = np.empty(n_events, dtype=np.int32)
        self.ev_meta = np.empty(n_events, dtype=meta_dtype)
        self.ev_start = np.empty(n_events, dtype=np.int64)
        self.ev_dur = np.empty(n_events, dtype=np.int64)
        self.st_owner = np.empty(n_stats, dtype=np.int32)
        self.st_meta = np.empty(n_stats, dtype=meta_dtype)
        self.st_kind = np.empty(n_stats, dtype=np.int8)
        self.st_value = np.empty(n_stats, dtype=np.int64)
        self.texts = np.empty((n_texts, 3), dtype=np.int64)

    cdef void bind(self, Sink* s):
        cdef int32_t[::1] ev_line = self.ev_line
        cdef int64_t[::1] ev_start = self.ev_start
        cdef int64_t[::1] ev_dur = self.ev_dur
        cdef int32_t[::1] st_owner = self.st_owner
        cdef int8_t[::1] st_kind = self.st_kind
        cdef int64_t[::1] st_value = self.st_value
        cdef int64_t[:, ::1] texts = self.texts
        cdef int32_t[::1] m32
        cdef int64_t[::1] m64
        s.ev_line = &ev_line[0] if ev_line.shape[0] else NULL
        s.ev_start = &ev_start[0] if ev_start.shape[0] else NULL
        s.ev_dur = &ev_dur[0] if ev_dur.shape[0] else NULL
        s.st_owner = &st_owner[0] if st_owner.shape[0] else NULL
        s.st_kind = &st_kind[0] if st_kind.shape[0] else NULL
        s.st_value = &st_value[0] if st_value.shape[0] else NULL
        s.texts = &texts[0, 0] if texts.shape[0] else NULL
        s.narrow = self.ev_meta.dtype == np.int32
        if s.narrow:
            m32 = self.ev_meta
            s.ev_meta32 = &m32[0] if m32.shape[0] else NULL
            m32 = self.st_meta
            s.st_meta32 = &m32[0] if m32.shape[0] else NULL
        else:
            m64 = self.ev_meta
            s.ev_meta64 = &m64[0] if m64.shape[0] else NULL
            m64 = self.st_meta
            s.st_meta64 = &m64[0] if m64.shape[0] else NULL
        s.st_cap = self.st_owner.shape[0]
        s.tx_cap = self.texts.shape[0]


cdef class ScanResult:
    """Raw columns of one scanned XSpace, indices in wire order.

    spans: int64[n, 3] = (owner kind * 2^32 + owner index, start, end) of the small fields
        that upb parses later; owner kind 0 = space, 1 = plane, 2 = line.
    lines: int64[n, 2] = (plane index, first event row).
    ev_line (int32), ev_meta (metadata_id; int32, or int64 when a file has wider ids),
        ev_start (offset_ps, int64), ev_dur (duration_ps, int64): one row per event.
    st_owner (int32 event row), st_meta, st_kind (int8), st_value (int64 bit pattern; for
        str/bytes the row of ``texts``): one row per stat.
    texts: int64[n, 3] = (stat row, byte offset, length) of each str/bytes value.
    line_bounds: int64[n_lines, 3] = (least offset_ps, greatest offset_ps + duration_ps, 1 where
        the line has events), or None (see below).
    """

    cdef public object spans, lines, ev_line, ev_meta, ev_start, ev_dur, st_owner, st_meta, st_kind, st_value, texts
    cdef public int n_planes
    cdef public dict phase_s  # seconds per phase of the parallel scan (index, decode, join), for benchmarks
    # Planes whose events were decoded (uint8 per plane; None: all) and whether their stats were.
    cdef public object decoded_planes
    cdef public bint with_stats
    # Per line (int64[n_lines, 3]): its events' least offset and greatest offset + duration, and
    # 1 where it has events. None where not known (a serial scan, a scan of some planes, or an
    # event whose times are negative or overflow: the reader then adds the line times itself).
    cdef public object line_bounds
    # (lines, chunks, n_planes, n_events) of a parallel scan, for a later scan of the same bytes
    # (``scan(index=...)``); None after the serial scan.
    cdef public object index

    @property
    def n_events(self) -> int:
        return int(self.ev_line.shape[0])

    @property
    def n_stats(self) -> int:
        return int(self.st_owner.shape[0])


cdef ScanResult _result(_Columns c, object spans, int64_t n_planes, object lines, int64_t n_events,
                        int64_t n_stats, int64_t n_texts):
    r = ScanResult()
    r.spans = spans
    r.n_planes = n_planes
    r.lines = lines
    # Views, not copies: the untouched tail of each buffer is address space, not memory.
    r.ev_line = c.ev_line[:n_events]
    r.ev_meta = c.ev_meta[:n_events]
    r.ev_start = c.ev_start[:n_events]
    r.ev_dur = c.ev_dur[:n_events]
    r.st_owner = c.st_owner[:n_stats]
    r.st_meta = c.st_meta[:n_stats]
    r.st_kind = c.st_kind[:n_stats]
    r.st_value = c.st_value[:n_stats]
    r.texts = c.texts[:n_texts]
    r.decoded_planes = None
    r.with_stats = True
    r.line_bounds = None
    r.index = None
    return r


cdef object as_u8(object data):
    if isinstance(data, np.ndarray):
        arr = data
        if arr.dtype != np.uint8 or arr.ndim != 1:
            raise TypeError("scan expects bytes or a 1-d uint8 array")
        return np.ascontiguousarray(arr)
    return np.frombuffer(data, dtype=np.uint8)


def scan_serial_py(data, bint wide=False, on_counts=None) -> ScanResult:
    """The serial scan: a counting pass, then a filling pass with exact sizes.

    Reference for the parallel scan and its fallback; ``wide`` scans metadata ids into int64
    columns (needed when an id lies outside [0, 2^31)). ``on_counts(n_events, n_stats)`` is
    called between the passes, before any column is filled, and may raise to refuse the file.
    """
    buf_arr = as_u8(data)
    cdef const uint8_t[::1] view = buf_arr
    cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
    cdef Py_ssize_t end = view.shape[0]
    cdef Sink s
    cdef Rows spans, lines
    cdef int64_t n_planes = 0, n_events = 0
    cdef Py_ssize_t err_pos = 0
    cdef int err
    cdef Py_ssize_t ev_cap
    cdef bint narrow = not wide
    cdef _Columns cols = _Columns(0, 0, 0, np.int32)
    for attempt in range(2):
        # Pass 1 counts (fill=False), pass 2 fills arrays of exactly the counted sizes.
        memset_sink(&s)
        cols.bind(&s)
        s.fill = attempt == 1
        spans.data = NULL
        spans.n = spans.cap = 0
        spans.width = 3
        lines.data = NULL
        lines.n = lines.cap = 0
        lines.width = 2
        ev_cap = cols.ev_line.shape[0]
        try:
            with nogil:
                err = scan_serial(buf, end, &s, &spans, &lines, &n_planes, &n_events, ev_cap, &err_pos)
            if err != 0:
                raise WireError(err, err_pos)
            if attempt == 0:
                if s.n_wide > 0:
                    narrow = False
                if on_counts is not None:
                    on_counts(n_events, s.n_stats)
                cols = _Columns(n_events, s.n_stats, s.n_texts, np.int32 if narrow else np.int64)
                continue
            return _result(cols, rows_array(&spans), n_planes, rows_array(&lines), n_events, s.n_stats,
                           s.n_texts)
        finally:
            free(spans.data)
            free(lines.data)
    raise AssertionError("unreachable")


cdef void memset_sink(Sink* s) noexcept nogil:
    s.fill = False
    s.narrow = True
    s.skip_stats = False
    s.skip_events = False
    s.ev_line = NULL
    s.ev_meta32 = NULL
    s.ev_meta64 = NULL
    s.ev_start = NULL
    s.ev_dur = NULL
    s.st_owner = NULL
    s.st_meta32 = NULL
    s.st_meta64 = NULL
    s.st_kind = NULL
    s.st_value = NULL
    s.texts = NULL
    s.st_cap = 0
    s.tx_cap = 0
    s.st_row0 = 0
    s.n_stats = 0
    s.n_texts = 0
    s.n_wide = 0
    s.stats_before = 0


# --- the parallel scan --------------------------------------------------------------------------

cdef struct Filling:
    # A file being read into the buffer by ``FileRead.read`` on another thread: ``filled`` bytes
    # from the start are there (published with release, read with acquire), ``done`` once the
    # reading thread has stopped (the whole file, or a short read or an error).
    Py_ssize_t filled
    Py_ssize_t done


cdef inline int wait_filled(Filling* f, Py_ssize_t* avail, Py_ssize_t upto) noexcept nogil:
    """Waits until the buffer holds bytes [0, upto) (``avail``: what this thread saw last);
    C_SHORT_READ if the read stopped before."""
    cdef Py_ssize_t a
    while True:
        a = wire_load(&f.filled)
        if a >= upto:
            avail[0] = a
            return 0
        if wire_load(&f.done):
            a = wire_load(&f.filled)  # (the last bytes may have come with the end)
            avail[0] = a
            return 0 if a >= upto else C_SHORT_READ
        wire_pause()


cdef enum:
    # The most bytes one step of the index pass reads from a field's first byte: a tag and a
    # length (or a varint), 10 bytes each.
    C_INDEX_STEP = 20


cdef int index_pass(const uint8_t* buf, Py_ssize_t end, Py_ssize_t chunk_bytes, Rows* spans, Rows* lines,
                    Rows* chunks, int64_t* n_planes_out, int64_t* n_events_out, Filling* filling=NULL) noexcept nogil:
    """Space, plane and line fields in wire order; events only by their tag and length.

    chunks: rows (line index, byte start, byte end, first event row, event count); a chunk
    starts at an event boundary inside one line. ``filling``: the buffer is still being read
    (``FileRead``); each step waits for its bytes, so the walk follows the read.
    """
    cdef Py_ssize_t pos = 0, tag_start, pend, lend, eend, chunk_start
    cdef Py_ssize_t avail = end if filling == NULL else 0
    cdef uint64_t tag, field, wire
    cdef int64_t n_planes = 0, n_events = 0, plane_idx, line_idx, chunk_first
    cdef int err = 0
    while pos < end:
        tag_start = pos
        if avail - pos < C_INDEX_STEP and avail < end:
            err = wait_filled(filling, &avail, pos + C_INDEX_STEP if end - pos > C_INDEX_STEP else end)
            if err != 0:
                return err
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            return err
        field = tag >> 3
        wire = tag & 7
        if field == 1 and wire == 2:
            err = read_len(buf, &pos, end, &pend)
            if err != 0:
                return err
            plane_idx = n_planes
            n_planes += 1
            while pos < pend:
                tag_start = pos
                if avail - pos < C_INDEX_STEP and avail < end:
                    err = wait_filled(filling, &avail, pos + C_INDEX_STEP if end - pos > C_INDEX_STEP else end)
                    if err != 0:
                        return err
                err = read_varint(buf, &pos, pend, &tag)
                if err != 0:
                    return err
                field = tag >> 3
                wire = tag & 7
                if field == 3 and wire == 2:
                    err = read_len(buf, &pos, pend, &lend)
                    if err != 0:
                        return err
                    line_idx = lines.n
                    err = rows_push(lines, plane_idx, n_events, 0, 0, 0)
                    if err != 0:
                        return err
                    chunk_start = pos
                    chunk_first = n_events
                    while pos < lend:
                        tag_start = pos
                        if avail - pos < C_INDEX_STEP and avail < end:
                            err = wait_filled(filling, &avail, pos + C_INDEX_STEP if end - pos > C_INDEX_STEP else end)
                            if err != 0:
                                return err
                        err = read_varint(buf, &pos, lend, &tag)
                        if err != 0:
                            return err
                        field = tag >> 3
                        wire = tag & 7
                        if field == 4 and wire == 2:
                            err = read_len(buf, &pos, lend, &eend)
                            if err != 0:
                                return err
                            if n_events >= C_MAX_ROWS:
                                return C_TOO_MANY
                            n_events += 1
                            pos = eend
                            if pos - chunk_start >= chunk_bytes:
                                err = rows_push(chunks, line_idx, chunk_start, pos, chunk_first,
                                                n_events - chunk_first)
                                if err != 0:
                                    return err
                                chunk_start = pos
                                chunk_first = n_events
                        else:
                            err = skip_field(buf, &pos, lend, wire)
                            if err != 0:
                                return err
                            err = rows_push(spans, OWNER_LINE + line_idx, tag_start, pos, 0, 0)
                            if err != 0:
                                return err
                    if n_events > chunk_first:
                        err = rows_push(chunks, line_idx, chunk_start, lend, chunk_first, n_events - chunk_first)
                        if err != 0:
                            return err
                else:
                    err = skip_field(buf, &pos, pend, wire)
                    if err != 0:
                        return err
                    err = rows_push(spans, OWNER_PLANE + plane_idx, tag_start, pos, 0, 0)
                    if err != 0:
                        return err
        else:
            err = skip_field(buf, &pos, end, wire)
            if err != 0:
                return err
            err = rows_push(spans, 0, tag_start, pos, 0, 0)
            if err != 0:
                return err
    n_planes_out[0] = n_planes
    n_events_out[0] = n_events
    return 0


cdef int fill_chunk(const uint8_t* buf, const int64_t* chunk, Sink* s) noexcept nogil:
    """Decodes the events of one chunk (a byte range of one line, starting at an event)."""
    cdef Py_ssize_t pos = <Py_ssize_t>chunk[1], end = <Py_ssize_t>chunk[2], eend
    cdef int32_t line_idx = <int32_t>chunk[0]
    cdef int64_t ev = chunk[3], ev_end = chunk[3] + chunk[4]
    cdef uint64_t tag
    cdef int err
    while pos < end:
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            return err
        if (tag >> 3) == 4 and (tag & 7) == 2:
            err = read_len(buf, &pos, end, &eend)
            if err != 0:
                return err
            if ev >= ev_end:  # the index pass saw fewer events: cannot happen on the same bytes
                return C_CAPACITY
            err = decode_event(buf, &pos, eend, ev, line_idx, ev, s)
            if err != 0:
                return err
            ev += 1
        else:
            err = skip_field(buf, &pos, end, tag & 7)
            if err != 0:
                return err
    return 0 if ev == ev_end else C_CAPACITY


cdef int fill_events_chunk(const uint8_t* buf, const int64_t* chunk, Sink* s) noexcept nogil:
    """``fill_chunk`` of a scan without stats (``Sink.skip_stats``): the same fields decoded the
    same way as ``decode_event`` decodes them, in one loop whose common tags (one byte each:
    metadata id, offset, duration, a stat skipped by its length) are compared whole."""
    cdef Py_ssize_t pos = <Py_ssize_t>chunk[1], end = <Py_ssize_t>chunk[2], eend, send
    cdef int32_t line_idx = <int32_t>chunk[0]
    cdef int64_t ev = chunk[3], ev_end = chunk[3] + chunk[4]
    cdef uint64_t tag, meta_id, offset_ps, dur_ps, v
    cdef int err
    while pos < end:
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            return err
        if (tag >> 3) != 4 or (tag & 7) != 2:
            err = skip_field(buf, &pos, end, tag & 7)
            if err != 0:
                return err
            continue
        err = read_len(buf, &pos, end, &eend)
        if err != 0:
            return err
        if ev >= ev_end:  # the index pass saw fewer events: cannot happen on the same bytes
            return C_CAPACITY
        meta_id = offset_ps = dur_ps = 0
        while pos < eend:
            if buf[pos] < 0x80:
                tag = buf[pos]
                pos += 1
            else:
                err = read_varint(buf, &pos, eend, &tag)
                if err != 0:
                    return err
            if tag == 0x22 or ((tag >> 3) == 4 and (tag & 7) == 2):
                err = read_len(buf, &pos, eend, &send)
                if err != 0:
                    return err
                pos = send
            elif (tag & 7) == 0 and (tag >> 3) >= 1 and (tag >> 3) <= 3:
                err = read_varint(buf, &pos, eend, &v)
                if err != 0:
                    return err
                if (tag >> 3) == 1:
                    meta_id = v
                elif (tag >> 3) == 2:
                    offset_ps = v
                else:
                    dur_ps = v
            else:
                err = skip_field(buf, &pos, eend, tag & 7)
                if err != 0:
                    return err
        put_event(s, ev, line_idx, narrow_id(s, meta_id), offset_ps, dur_ps)
        ev += 1
    return 0 if ev == ev_end else C_CAPACITY


cdef inline int skip_varint(const uint8_t* buf, Py_ssize_t* pos, Py_ssize_t end) noexcept nogil:
    """Skips a varint at pos[0] < end without assembling its value (``read_varint``'s checks
    where it is longer than 8 bytes or near ``end``)."""
    cdef Py_ssize_t p = pos[0]
    cdef uint64_t word, stops, dummy
    if p < end and buf[p] < 0x80:
        pos[0] = p + 1
        return 0
    if WIRE_WORD_VARINTS and end - p >= 8:
        memcpy(&word, buf + p, 8)
        stops = ~word & <uint64_t>0x8080808080808080
        if stops != 0:
            pos[0] = p + (WIRE_CTZ64(stops) >> 3) + 1  # within the 8 bytes, so before ``end``
            return 0
    return read_varint(buf, pos, end, &dummy)


cdef int count_chunk(const uint8_t* buf, const int64_t* chunk, int64_t* n_stats) noexcept nogil:
    """Counts the stats of one chunk's events (each skipped by its length, as ``decode_event``
    meets them: one per stats field), so that the fill pass writes them at their final rows.
    The other fields are skipped without assembling their values (``skip_varint``:
    bench/measurements.md#xspace-build). On bytes the decoder reads otherwise
    the counts differ and the scan falls back to the serial scan (``_ParallelScan._run_chunk``
    compares them)."""
    cdef Py_ssize_t pos = <Py_ssize_t>chunk[1], end = <Py_ssize_t>chunk[2], eend, send
    cdef uint64_t tag
    cdef int err
    cdef int64_t n = 0
    while pos < end:
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            return err
        if (tag >> 3) == 4 and (tag & 7) == 2:
            err = read_len(buf, &pos, end, &eend)
            if err != 0:
                return err
            while pos < eend:
                if buf[pos] < 0x80:  # a one-byte tag: every field of a real XEvent's
                    tag = buf[pos]
                    pos += 1
                else:
                    err = read_varint(buf, &pos, eend, &tag)
                    if err != 0:
                        return err
                if (tag & 7) == 0:
                    if pos >= eend:
                        return C_TRUNCATED
                    err = skip_varint(buf, &pos, eend)
                elif (tag >> 3) == 4 and (tag & 7) == 2:
                    err = read_len(buf, &pos, eend, &send)
                    pos = send if err == 0 else pos
                    n += 1
                else:
                    err = skip_field(buf, &pos, eend, tag & 7)
                if err != 0:
                    return err
        else:
            err = skip_field(buf, &pos, end, tag & 7)
            if err != 0:
                return err
    n_stats[0] = n
    return 0


cdef struct ChunkOut:
    # One chunk's stat count (its stats go straight to their rows of the stat columns) and its
    # texts, in a buffer of its own (malloc, grown on demand; a few per chunk on real profiles).
    int64_t* texts  # (n, 3)
    int64_t tx_cap
    int64_t n_stats
    int64_t n_texts
    int64_t n_wide
    int64_t st_first  # the chunk's first row in the stat and text columns
    int64_t tx_first
    # The least offset and the greatest offset + duration of its events (``time_bounds``), and
    # whether every event had 0 <= offset, 0 <= duration and no overflow in their sum.
    int64_t t_lo
    int64_t t_hi
    bint t_ok
    int err


cdef void free_chunk(ChunkOut* c) noexcept nogil:
    free(c.texts)
    c.texts = NULL
    c.tx_cap = 0


cdef int grow_texts(ChunkOut* c, int64_t tx_cap) noexcept nogil:
    cdef void* p
    if tx_cap > c.tx_cap:
        p = realloc(c.texts, 3 * tx_cap * sizeof(int64_t))
        if p == NULL:
            return C_NO_MEMORY
        c.texts = <int64_t*>p
        c.tx_cap = tx_cap
    return 0


cdef void time_bounds(const int64_t* chunk, const int64_t* ev_start, const int64_t* ev_dur,
                      ChunkOut* c) noexcept nogil:
    """The chunk's time bounds (``ChunkOut.t_lo`` ...), from its events' columns just written
    (still in cache): what lets the reader place the profile's origin without a pass over
    every event (readers/xplane.py ``_origin_from_lines``)."""
    cdef int64_t i, s, d, e, lo = C_INT64_MAX, hi = 0
    cdef bint bad = chunk[4] <= 0
    for i in range(chunk[3], chunk[3] + chunk[4]):  # (no early exit: the loop stays branch-free)
        s = ev_start[i]
        d = ev_dur[i]
        bad |= (s < 0) | (d < 0) | (s > C_INT64_MAX - d)
        e = s + d
        lo = s if s < lo else lo
        hi = e if e > hi else hi
    c.t_lo = lo
    c.t_hi = hi
    c.t_ok = not bad


cdef class _Pass:
    """One pass of threads over the chunks: the next chunk to take and the chunks done (atomics)."""

    cdef Py_ssize_t next
    cdef Py_ssize_t done


cdef inline void wait_done(Py_ssize_t* done, Py_ssize_t n) noexcept nogil:
    while wire_load(done) < n:
        wire_pause()


cdef void _start_helpers(fn, _Pass p, Py_ssize_t n_threads):
    """fn(p) on ``n_threads - 1`` more threads, each taking chunks until none is left (the caller
    takes its share, then waits for the count of chunks done: ``wait_done``).

    Taken one at a time rather than cut into a run per thread: a thread that starts late or loses
    its core to another process leaves its chunks to the others. The threads are started without
    ``threading``'s handshake and waited for by the count of chunks done, not joined: both would
    wait for the GIL (a switch interval, 5 ms, each), which a command's main thread holds while it
    imports beside the conversion; for the same reason the caller's share and its wait are one
    stretch without the GIL (bench/measurements.md#xspace-build). A thread that starts after the
    pass ended finds no chunk left and ends."""
    for _ in range(1, n_threads):
        try:
            start_new_thread(fn, (p,))
        except RuntimeError:  # no more threads to be had: the others take its chunks
            break


cdef class _ParallelScan:
    """State shared by the threads of one parallel scan: the chunk table and the outputs.

    Two passes over the chunks, each on the threads: ``count`` counts every chunk's stats (events
    skipped field by field, stats by their length), which fixes every stat's row; ``run`` then
    decodes the events and stats straight into exact-size columns, as the index pass let it do
    for events. Only texts (a few per chunk) go to buffers of their chunk, joined at the end.
    Counting costs a fraction of decoding; the alternative, stats decoded into per-chunk buffers
    and copied into the columns, touches every stat's bytes three times, and first touches of
    fresh memory (the kernel zeroing each page) are most of a scan's system time
    (bench/measurements.md#one-host-summary).
    """

    cdef object buf_arr, chunks_arr
    cdef object modes_arr  # per chunk: 0 skip, 1 events only, 2 events and stats, 3 stats only
    cdef const uint8_t* modes
    cdef const uint8_t* buf
    cdef int64_t* chunks  # (n_chunks, 5)
    cdef ChunkOut* out
    cdef Py_ssize_t n_chunks
    cdef _Columns cols
    cdef object texts

    def __dealloc__(self):
        cdef Py_ssize_t k
        if self.out != NULL:
            for k in range(self.n_chunks):
                free_chunk(&self.out[k])
            free(self.out)

    def count(self, _Pass p):
        """Counts the stats of the chunks this thread takes from ``p``, with the GIL released."""
        with nogil:
            self._count(&p.next, &p.done)

    cdef void _count(self, Py_ssize_t* next, Py_ssize_t* done) noexcept nogil:
        cdef Py_ssize_t k = WIRE_NEXT(next)
        while k < self.n_chunks:
            self.out[k].n_stats = 0
            if self.modes[k] >= 2:
                self.out[k].err = count_chunk(self.buf, self.chunks + 5 * k, &self.out[k].n_stats)
            WIRE_DONE(done)
            k = WIRE_NEXT(next)

    def run(self, _Pass p):
        """Decodes the chunks this thread takes from ``p``, with the GIL released."""
        cdef Sink base
        memset_sink(&base)
        self.cols.bind(&base)
        base.fill = True
        base.narrow = True
        with nogil:
            self._run(&base, &p.next, &p.done)

    cdef void _run(self, Sink* base, Py_ssize_t* next, Py_ssize_t* done) noexcept nogil:
        cdef Py_ssize_t k = WIRE_NEXT(next)
        while k < self.n_chunks:
            self._run_chunk(base, k)
            WIRE_DONE(done)
            k = WIRE_NEXT(next)

    cdef void _run_chunk(self, Sink* base, Py_ssize_t k) noexcept nogil:
        cdef Sink s
        cdef ChunkOut* c = &self.out[k]
        cdef int64_t chunk_bytes, first
        cdef int err
        if self.modes[k] == 0:
            return  # a plane not asked for: its rows stay unwritten
        if self.modes[k] == 1:
            s = base[0]
            s.skip_stats = True
            s.st_cap = s.tx_cap = 0
            c.err = fill_events_chunk(self.buf, self.chunks + 5 * k, &s)
            c.n_wide = s.n_wide
            if c.err == 0:
                time_bounds(self.chunks + 5 * k, base.ev_start, base.ev_dur, c)
            return
        chunk_bytes = self.chunks[5 * k + 2] - self.chunks[5 * k + 1]
        # Real profiles spend far more than 32 bytes per text (bench/measurements.md#xspace-scan);
        # a denser chunk grows its buffer and is decoded again (untouched capacity costs no memory).
        err = grow_texts(c, chunk_bytes // 32 + 16)
        first = c.st_first
        while err == 0:
            s = base[0]
            if c.n_stats > 0:  # (columns of no rows have no pointers to offset)
                s.st_owner = base.st_owner + first
                s.st_meta32 = base.st_meta32 + first
                s.st_kind = base.st_kind + first
                s.st_value = base.st_value + first
            s.st_cap = c.n_stats
            s.texts = c.texts
            s.tx_cap = c.tx_cap
            s.skip_events = self.modes[k] == 3
            s.st_row0 = first  # texts name their stats' final rows
            s.n_stats = 0
            s.n_texts = 0
            s.n_wide = 0
            s.stats_before = first
            err = fill_chunk(self.buf, self.chunks + 5 * k, &s)
            c.n_texts = s.n_texts
            c.n_wide = s.n_wide
            if err != C_REGION_FULL:
                break
            if s.n_stats >= s.st_cap:
                err = C_CAPACITY  # more stats than counted: cannot happen on the same bytes
                break
            # A text takes >= 3 bytes: doubling ends within a few rounds.
            err = grow_texts(c, 2 * c.tx_cap)
        if err == 0 and s.n_stats != c.n_stats:
            err = C_CAPACITY
        if err == 0 and self.modes[k] == 2:
            time_bounds(self.chunks + 5 * k, base.ev_start, base.ev_dur, c)
        c.err = err

    def join(self):
        """Copies every chunk's texts to their rows of the text column (``tx_first``, set in
        wire order); a str/bytes stat's value, its chunk's text row, becomes the column's."""
        cdef int64_t[:, ::1] view = self.texts
        cdef int64_t* texts = &view[0, 0] if view.shape[0] else NULL
        cdef int64_t[::1] value_view = self.cols.st_value
        cdef int64_t* value = &value_view[0] if value_view.shape[0] else NULL
        cdef Py_ssize_t k
        cdef int64_t j, nt, tx
        cdef ChunkOut* c
        with nogil:
            for k in range(self.n_chunks):
                c = &self.out[k]
                nt = c.n_texts
                tx = c.tx_first
                if nt > 0:
                    memcpy(texts + 3 * tx, c.texts, 3 * nt * sizeof(int64_t))
                    if tx > 0:
                        for j in range(nt):
                            value[c.texts[3 * j]] += tx
                free_chunk(c)

    def line_bounds(self, Py_ssize_t n_lines):
        """``ScanResult.line_bounds`` from the chunks' time bounds (a line's chunks in a row)."""
        out = np.zeros((n_lines, 3), dtype=np.int64)
        cdef int64_t[:, ::1] b = out
        cdef Py_ssize_t k, ln
        cdef ChunkOut* c
        for k in range(self.n_chunks):
            c = &self.out[k]
            ln = <Py_ssize_t>self.chunks[5 * k]
            if not c.t_ok or self.modes[k] == 0 or not 0 <= ln < n_lines:
                return None
            if b[ln, 2] == 0 or c.t_lo < b[ln, 0]:
                b[ln, 0] = c.t_lo
            if b[ln, 2] == 0 or c.t_hi > b[ln, 1]:
                b[ln, 1] = c.t_hi
            b[ln, 2] = 1
        return out


cdef enum:
    # A file's read hands the scan its bytes this many at a time (``FileRead``).
    C_READ_PIECE = 1 << 18
READ_PIECE_BYTES = C_READ_PIECE
# Files from this size on are read beside the index pass (``FileRead.supported``): below it the
# thread costs more than the walk it hides.
READ_BESIDE_MIN_BYTES = 8 << 20


cdef class FileRead:
    """A regular file's first ``len(array)`` bytes read into ``array`` by ``read`` (``pread`` in
    pieces of ``piece_bytes``, the GIL released), for ``scan(reading=...)``: its index pass walks the headers on
    another thread as the bytes arrive, instead of after the whole file is in memory. ``got``
    tells how many bytes came (fewer than asked: the file shrank, or ``error`` holds an errno);
    the caller checks the file as a whole read would (readers/files.py ``read_beside``)."""

    cdef object arr
    cdef uint8_t* buf
    cdef Py_ssize_t size, piece
    cdef int fd
    cdef Filling fill
    cdef public int error
    cdef public bint ran

    def __cinit__(self, int fd, array, Py_ssize_t piece_bytes=C_READ_PIECE):
        cdef uint8_t[::1] view = array
        self.piece = piece_bytes if piece_bytes > 0 else 1
        self.arr = array
        self.buf = &view[0] if view.shape[0] else NULL
        self.size = view.shape[0]
        self.fd = fd
        self.fill.filled = 0
        self.fill.done = 0
        self.error = 0
        self.ran = False

    @staticmethod
    def supported() -> bool:
        """Whether this platform has the reading thread (``pread``); else the file is read first."""
        return bool(WIRE_PREAD_OK)

    @property
    def got(self) -> int:
        return wire_load(&self.fill.filled)

    def read(self) -> int:
        """Reads the file into the array (call once, on the thread that reads); the bytes read."""
        return self._read_then(NULL)

    cdef Py_ssize_t _read_then(self, Py_ssize_t* wait_for):
        """``read``, then (``wait_for``) waits until that flag is set, without the GIL throughout."""
        cdef Py_ssize_t done = 0, n
        cdef int err = 0
        if self.ran:
            raise ValueError("the file was read already")
        self.ran = True
        with nogil:
            while done < self.size:
                n = wire_pread(self.fd, self.buf + done, min(self.piece, self.size - done), done)
                if n <= 0:
                    if n < 0:
                        err = _errno()
                    break
                done += n
                wire_store(&self.fill.filled, done)
            wire_store(&self.fill.done, 1)
            if wait_for != NULL:
                while not wire_load(wait_for):
                    wire_pause()
        self.error = err
        return done


cdef class _IndexBeside:
    """``index_pass`` over a buffer that ``FileRead.read`` fills meanwhile (``run`` on a thread)."""

    cdef Rows spans, lines, chunks
    cdef int64_t n_planes, n_events
    cdef Py_ssize_t chunk_bytes, end
    cdef const uint8_t* buf
    cdef FileRead reading
    cdef int err
    cdef Py_ssize_t finished  # set (release) once the walk has ended

    def __cinit__(self):
        self.spans.data = self.lines.data = self.chunks.data = NULL
        self.spans.n = self.spans.cap = self.lines.n = self.lines.cap = self.chunks.n = self.chunks.cap = 0
        self.spans.width = 3
        self.lines.width = 2
        self.chunks.width = 5
        self.err = -1

    def __dealloc__(self):
        free(self.spans.data)
        free(self.lines.data)
        free(self.chunks.data)

    def run(self):
        with nogil:
            self.err = index_pass(self.buf, self.end, self.chunk_bytes, &self.spans, &self.lines, &self.chunks,
                                  &self.n_planes, &self.n_events, &self.reading.fill)
            wire_store(&self.finished, 1)


def default_threads() -> int:
    """Decoder threads: ``TBPROF_THREADS`` if set, else the CPUs this process may use (max 8)."""
    import os
    env = os.environ.get("TBPROF_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


# Below this size a file's chunks are counted and decoded on the calling thread (threads pay off
# on jax_large, not on keras_cnn): less CPU than the serial scan's two full passes on the demo
# hosts (bench/measurements.md#one-host-summary).
ONE_THREAD_BELOW_BYTES = 8 << 20


def scan(data, threads: int | None = None, Py_ssize_t chunk_bytes=1 << 20, on_counts=None, bint stats=True,
         planes=None, bint events=True, index=None, FileRead reading=None) -> ScanResult:
    """Scans an XSpace into columns; raises WireError on malformed bytes.

    ``planes`` (one flag per plane, wire order; None: every plane) decodes only the events of
    the flagged planes (the rows of the others are left unwritten); ``stats=False`` decodes
    events without their stats, which are skipped by their length (a lazily read plane
    decodes them when asked: readers/xplane.py); ``events=False`` decodes the stats of the flagged
    planes and leaves their events' rows unwritten (that lazily read plane has its events: only
    its stats' rows are new). A scan that falls back to the serial scan (an error to report, ids
    beyond int32) decodes everything: see ``decoded_planes`` and ``with_stats`` of the result.
    ``index``: an earlier parallel scan's ``index`` of the same bytes (its lines and chunks), so
    that a later scan of some planes does not walk the whole file's headers again (the result's
    ``spans`` are then empty). ``reading``: the file is read into ``data`` now, by
    ``reading.read()`` on this thread, while the index pass follows it on another; a read that
    ends short raises ``WireError(ERR_SHORT_READ)`` (the caller reports the file as changed).

    ``threads`` decoder threads (default: the calling thread alone below ``ONE_THREAD_BELOW_BYTES``,
    else ``default_threads()``); the columns are identical for any thread count and chunk size. ``on_counts(n_events, n_stats)`` learns the file's counts
    before its columns are filled (stats: -1 where ``stats=False``) and may raise to refuse it: a file
    of empty events costs many times its size in columns, far beyond what its size suggests
    (bench/measurements.md#build-bytes).
    """
    buf_arr = as_u8(data)
    cdef const uint8_t[::1] view = buf_arr
    cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
    cdef Py_ssize_t end = view.shape[0]
    cdef Rows spans, lines, chunks
    cdef int64_t n_planes = 0, n_events = 0, n_stats = 0, n_texts = 0
    cdef int err
    cdef Py_ssize_t k, n_chunks, n_threads
    cdef bint bad = False
    cdef _ParallelScan ps
    cdef _Pass count_pass, run_pass
    cdef _IndexBeside beside
    cdef Sink base
    cdef bint small = threads is None and end < ONE_THREAD_BELOW_BYTES
    if not events and not stats:
        raise ValueError("a scan decodes events, stats or both")
    n_threads = 1 if small else default_threads() if threads is None else max(1, int(threads))
    t_start = time.perf_counter()
    if chunk_bytes < 1:
        chunk_bytes = 1
    spans.data = lines.data = chunks.data = NULL
    spans.n = spans.cap = lines.n = lines.cap = chunks.n = chunks.cap = 0
    spans.width = 3
    lines.width = 2
    chunks.width = 5
    if reading is not None and (reading.buf != buf or reading.size != end or index is not None or reading.ran):
        raise ValueError("a scan beside a read walks the headers of the array it is about to read")
    try:
        if reading is not None:
            beside = _IndexBeside()
            beside.buf, beside.end, beside.chunk_bytes, beside.reading = buf, end, chunk_bytes, reading
            try:  # (started without threading's handshake: see _on_threads)
                start_new_thread(beside.run, ())
                walking = True
            except RuntimeError:  # no thread to be had: the walk after the read, on this one
                walking = False
            if walking:
                reading._read_then(&beside.finished)  # and waits for the walk, in one stretch without the GIL
            else:
                reading.read()
                beside.run()
            if reading.got != end:
                raise WireError(ERR_SHORT_READ, reading.got)
            if beside.err != 0:
                return scan_serial_py(buf_arr, on_counts=on_counts)  # raises WireError at the first error
            spans_arr, lines_arr = rows_array(&beside.spans), rows_array(&beside.lines)
            chunks_arr, n_planes, n_events = rows_array(&beside.chunks), beside.n_planes, beside.n_events
        elif index is None:
            with nogil:
                err = index_pass(buf, end, chunk_bytes, &spans, &lines, &chunks, &n_planes, &n_events)
            if err != 0:
                return scan_serial_py(buf_arr, on_counts=on_counts)  # raises WireError at the first error
            spans_arr, lines_arr, chunks_arr = rows_array(&spans), rows_array(&lines), rows_array(&chunks)
        else:
            lines_arr, chunks_arr, n_planes, n_events = _checked_index(index, end)
            spans_arr = np.zeros((0, 3), dtype=np.int64)
        n_chunks = chunks_arr.shape[0]
        t_index = time.perf_counter()
        ps = _ParallelScan()
        ps.buf_arr = buf_arr
        ps.buf = buf
        ps.chunks_arr = chunks_arr
        ps.chunks = _ptr64(ps.chunks_arr)
        ps.n_chunks = n_chunks
        ps.out = <ChunkOut*>calloc(n_chunks + 1, sizeof(ChunkOut))
        if ps.out == NULL:
            raise MemoryError()
        chunk_plane = lines_arr[ps.chunks_arr[:, 0], 0] if n_chunks else np.zeros(0, np.int64)
        wanted = (np.ones(n_chunks, dtype=bool) if planes is None
                  else np.asarray(planes, dtype=bool)[np.clip(chunk_plane, 0, max(len(planes) - 1, 0))]
                  & (chunk_plane < len(planes)))
        ps.modes_arr = np.ascontiguousarray(np.where(wanted, (2 if events else 3) if stats else 1, 0).astype(np.uint8))
        ps.modes = _ptr8(ps.modes_arr)
        n_threads = max(1, min(n_threads, n_chunks))
        if stats:
            count_pass = _Pass()
            _start_helpers(ps.count, count_pass, n_threads)
            with nogil:
                ps._count(&count_pass.next, &count_pass.done)
                wait_done(&count_pass.done, n_chunks)
        for k in range(n_chunks):
            bad = bad or ps.out[k].err != 0
            ps.out[k].st_first = n_stats
            n_stats += ps.out[k].n_stats
        if bad:
            return scan_serial_py(buf_arr, on_counts=on_counts)  # raises WireError at the first error
        if n_stats >= C_MAX_ROWS:
            raise WireError(ERR_TOO_MANY, end)
        t_count = time.perf_counter()
        if on_counts is not None:
            on_counts(n_events, n_stats if stats else -1)
        ps.cols = _Columns(n_events, n_stats, 0, np.int32)
        run_pass = _Pass()
        memset_sink(&base)
        ps.cols.bind(&base)
        base.fill = True
        base.narrow = True
        _start_helpers(ps.run, run_pass, n_threads)
        with nogil:
            ps._run(&base, &run_pass.next, &run_pass.done)
            wait_done(&run_pass.done, n_chunks)
        t_decode = time.perf_counter()
        for k in range(n_chunks):
            bad = bad or ps.out[k].err != 0 or ps.out[k].n_wide != 0
            ps.out[k].tx_first = n_texts
            n_texts += ps.out[k].n_texts
        if bad:
            # An error (reported by the serial scan as the first in wire order) or a metadata id
            # beyond int32 (the serial scan switches to int64 columns).
            return scan_serial_py(buf_arr, on_counts=on_counts)
        cols = ps.cols
        cols.texts = ps.texts = np.empty((n_texts, 3), dtype=np.int64)
        ps.join()
        result = _result(cols, spans_arr, n_planes, lines_arr, n_events, n_stats, n_texts)
        result.index = (lines_arr, ps.chunks_arr, n_planes, n_events)
        if planes is not None:
            result.decoded_planes = np.asarray(planes, dtype=np.uint8)
        else:
            result.line_bounds = ps.line_bounds(result.lines.shape[0])
        result.with_stats = stats
        t_end = time.perf_counter()
        result.phase_s = {"index": t_index - t_start, "count": t_count - t_index, "decode": t_decode - t_count,
                          "join": t_end - t_decode, "threads": n_threads if n_chunks else 0, "chunks": n_chunks}
        return result
    finally:
        free(spans.data)
        free(lines.data)
        free(chunks.data)


def _checked_index(index, Py_ssize_t end):
    """An earlier scan's (lines, chunks, n_planes, n_events), checked against the bytes' length
    and each other: the chunk decoder reads at the positions it names unchecked against the
    buffer's end (its precondition)."""
    lines_arr, chunks_arr, n_planes, n_events = index
    lines_arr = np.ascontiguousarray(lines_arr, dtype=np.int64)
    chunks_arr = np.ascontiguousarray(chunks_arr, dtype=np.int64)
    if (lines_arr.ndim != 2 or lines_arr.shape[1] != 2 or chunks_arr.ndim != 2 or chunks_arr.shape[1] != 5
            or not 0 <= n_events < C_MAX_ROWS or not 0 <= n_planes):
        raise ValueError("not a scan's index")
    if chunks_arr.shape[0] and not (
            (chunks_arr[:, 0] >= 0).all() and (chunks_arr[:, 0] < lines_arr.shape[0]).all()
            and (chunks_arr[:, 1] >= 0).all() and (chunks_arr[:, 1] <= chunks_arr[:, 2]).all()
            and (chunks_arr[:, 2] <= end).all() and (chunks_arr[:, 3] >= 0).all() and (chunks_arr[:, 4] >= 0).all()
            and (chunks_arr[:, 3] + chunks_arr[:, 4] <= n_events).all()):
        raise ValueError("the index does not fit these bytes")
    return lines_arr, chunks_arr, int(n_planes), int(n_events)


cdef const uint8_t* _ptr8(object arr):
    cdef const uint8_t[::1] v = arr
    return &v[0] if v.shape[0] else NULL


cdef int64_t* _ptr64(object arr):
    cdef int64_t[:, ::1] v = arr
    return &v[0, 0] if v.shape[0] else NULL


def hash_spans(data, offsets, lengths) -> np.ndarray:
    """64-bit FNV-1a of each byte span, mixed with its length, to find repeated texts."""
    buf_arr = as_u8(data)
    cdef const uint8_t[::1] buf = buf_arr
    cdef const int64_t[::1] off = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const int64_t[::1] ln = np.ascontiguousarray(lengths, dtype=np.int64)
    if off.shape[0] != ln.shape[0]:
        raise ValueError("offsets and lengths differ in length")
    out = np.empty(off.shape[0], dtype=np.uint64)
    cdef uint64_t[::1] o = out
    cdef Py_ssize_t i, k, n = buf.shape[0]
    cdef uint64_t h
    for i in range(off.shape[0]):
        if off[i] < 0 or ln[i] < 0 or ln[i] > n - off[i]:
            raise ValueError(f"span {i} ({off[i]}, {ln[i]}) lies outside the {n} byte buffer")
    with nogil:
        for i in range(off.shape[0]):
            h = 14695981039346656037ULL
            for k in range(off[i], off[i] + ln[i]):
                h = (h ^ buf[k]) * 1099511628211ULL
            o[i] = h ^ (<uint64_t>ln[i] * 0x9E3779B97F4A7C15ULL)
    return out


# --- streaming: files larger than memory ------------------------------------------------------
#
# The same walk as ``index_pass`` and the same event decoder, for a file read in bounded windows
# (readers/xplane_stream.py): ``StreamIndex.feed`` walks the headers of one window and returns
# where the next window must start (events are skipped by their length, so a window holds only
# headers); ``decode_window`` decodes the events of a run of chunks read into one window. Every
# position is an absolute file offset outside and window-relative inside, with the window's own
# length as the readable end: a step needs at most 20 bytes (a tag and a length or a varint, 10
# each), so ``feed`` stops for the next window when fewer remain, and every read stays inside the
# window while every length is still checked against its enclosing message (``n > end - pos``).

cdef enum:
    C_STEP_BYTES = 20

# The smallest window ``StreamIndex.feed`` accepts (except the file's last bytes).
STREAM_STEP_BYTES = 20


cdef class StreamIndex:
    """The index pass of ``scan`` over a file fed in windows; the same spans, lines and chunks
    (absolute offsets), errors as ``WireError`` at the absolute offset."""

    cdef Rows spans, lines, chunks
    cdef int64_t file_size, chunk_bytes, pos, plane_end, line_end
    cdef int64_t n_planes, n_events, plane_idx, line_idx, chunk_start, chunk_first
    cdef int level  # 0: in the space, 1: in a plane, 2: in a line
    cdef bint done

    def __cinit__(self, int64_t file_size, int64_t chunk_bytes=1 << 20):
        self.spans.data = self.lines.data = self.chunks.data = NULL
        self.spans.n = self.spans.cap = self.lines.n = self.lines.cap = self.chunks.n = self.chunks.cap = 0
        self.spans.width = 3
        self.lines.width = 2
        self.chunks.width = 5
        if file_size < 0:
            raise ValueError("negative file size")
        self.file_size = file_size
        self.chunk_bytes = chunk_bytes if chunk_bytes > 0 else 1
        self.pos = 0
        self.level = 0
        self.plane_end = self.line_end = 0
        self.n_planes = self.n_events = self.plane_idx = self.line_idx = self.chunk_start = self.chunk_first = 0
        self.done = file_size == 0

    def __dealloc__(self):
        free(self.spans.data)
        free(self.lines.data)
        free(self.chunks.data)

    @property
    def next_offset(self) -> int:
        """Where the next window must start (-1 once the whole file is indexed)."""
        return -1 if self.done else self.pos

    @property
    def index_bytes(self) -> int:
        """Memory the index tables hold: a row per small field, line and chunk, so a file of
        tiny fields grows them faster than its size (the reader bounds it)."""
        return 8 * (3 * self.spans.cap + 2 * self.lines.cap + 5 * self.chunks.cap)

    def feed(self, window, int64_t base) -> int:
        """Walks the headers inside ``window`` (the file's bytes from offset ``base``, which must be
        ``next_offset``); returns the new ``next_offset``. Raises WireError on malformed bytes."""
        buf_arr = as_u8(window)
        cdef const uint8_t[::1] view = buf_arr
        cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
        cdef Py_ssize_t wl = view.shape[0]
        cdef Py_ssize_t err_pos = 0
        cdef int err
        if self.done:
            return -1
        if base != self.pos:
            raise ValueError(f"window at {base}, expected {self.pos}")
        if wl > self.file_size - base:
            raise ValueError("window runs past the end of the file")
        if wl < C_STEP_BYTES and base + wl < self.file_size:
            raise ValueError("window too small")
        with nogil:
            err = self._walk(buf, base, wl, &err_pos)
        if err != 0:
            raise WireError(err, err_pos)
        return -1 if self.done else self.pos

    cdef int _walk(self, const uint8_t* buf, int64_t base, Py_ssize_t wl, Py_ssize_t* err_pos) noexcept nogil:
        cdef Py_ssize_t p, e, pend
        cdef int64_t tag_start, cur_end
        cdef uint64_t tag, field, wire
        cdef int err = 0
        cdef bint at_eof_window = base + wl >= self.file_size
        p = <Py_ssize_t>(self.pos - base)
        while True:
            # Close the messages that end here.
            if self.level == 2 and self.pos >= self.line_end:
                if self.n_events > self.chunk_first:
                    err = rows_push(&self.chunks, self.line_idx, self.chunk_start, self.line_end, self.chunk_first,
                                    self.n_events - self.chunk_first)
                    if err != 0:
                        break
                self.level = 1
            if self.level == 1 and self.pos >= self.plane_end:
                self.level = 0
            if self.level == 0 and self.pos >= self.file_size:
                self.done = True
                return 0
            # The next step must lie in this window: 20 bytes, or all up to the end of the file.
            if self.pos < base or self.pos >= base + wl or (not at_eof_window and base + wl - self.pos < C_STEP_BYTES):
                return 0
            cur_end = self.line_end if self.level == 2 else (self.plane_end if self.level == 1 else self.file_size)
            p = <Py_ssize_t>(self.pos - base)
            e = <Py_ssize_t>(cur_end - base)  # may lie beyond the window: only lengths compare with it
            tag_start = self.pos
            err = read_varint(buf, &p, e, &tag)
            if err != 0:
                break
            field = tag >> 3
            wire = tag & 7
            if field == 0:
                # Would go to upb as a span, which rejects it: refused here before a file of
                # zeros (a sparse file) grows the span table by a row per 2 bytes.
                err = C_FIELD_ZERO
                p = <Py_ssize_t>(tag_start - base)  # the offset of the tag itself
                break
            if self.level == 0 and field == 1 and wire == 2:
                err = read_len(buf, &p, e, &pend)
                if err != 0:
                    break
                self.plane_idx = self.n_planes
                self.n_planes += 1
                self.plane_end = base + pend
                self.level = 1
            elif self.level == 1 and field == 3 and wire == 2:
                err = read_len(buf, &p, e, &pend)
                if err != 0:
                    break
                self.line_idx = self.lines.n
                err = rows_push(&self.lines, self.plane_idx, self.n_events, 0, 0, 0)
                if err != 0:
                    break
                self.line_end = base + pend
                self.chunk_start = base + p
                self.chunk_first = self.n_events
                self.level = 2
            elif self.level == 2 and field == 4 and wire == 2:
                err = read_len(buf, &p, e, &pend)
                if err != 0:
                    break
                if self.n_events >= C_MAX_ROWS:
                    err = C_TOO_MANY
                    break
                self.n_events += 1
                p = pend
                if base + p - self.chunk_start >= self.chunk_bytes:
                    err = rows_push(&self.chunks, self.line_idx, self.chunk_start, base + p, self.chunk_first,
                                    self.n_events - self.chunk_first)
                    if err != 0:
                        break
                    self.chunk_start = base + p
                    self.chunk_first = self.n_events
            else:
                err = skip_field(buf, &p, e, wire)
                if err != 0:
                    break
                err = rows_push(&self.spans, (OWNER_LINE + self.line_idx) if self.level == 2 else
                                ((OWNER_PLANE + self.plane_idx) if self.level == 1 else 0), tag_start, base + p, 0, 0)
                if err != 0:
                    break
            self.pos = base + p
        err_pos[0] = <Py_ssize_t>(base + p)
        return err

    def result(self) -> tuple:
        """(spans, lines, chunks, n_planes, n_events) as ``scan`` finds them, absolute offsets."""
        if not self.done:
            raise ValueError("the file is not indexed to its end yet")
        return (rows_array(&self.spans), rows_array(&self.lines), rows_array(&self.chunks), self.n_planes,
                self.n_events)


cdef int decode_run(const uint8_t* buf, Py_ssize_t start, Py_ssize_t end, int32_t line_idx, int64_t ev,
                    int64_t ev_end, int64_t slot0, Sink* s, Py_ssize_t* err_pos) noexcept nogil:
    """``fill_chunk`` for a window: events [ev, ev_end) of one line in buf[start:end), written at
    rows ``ev - slot0``; stats owned by the global row ``ev``."""
    cdef Py_ssize_t pos = start, eend
    cdef uint64_t tag
    cdef int err = 0
    while pos < end:
        err = read_varint(buf, &pos, end, &tag)
        if err != 0:
            break
        if (tag >> 3) == 4 and (tag & 7) == 2:
            err = read_len(buf, &pos, end, &eend)
            if err != 0:
                break
            if ev >= ev_end:
                err = C_CAPACITY
                break
            err = decode_event(buf, &pos, eend, ev, line_idx, ev - slot0, s)
            if err != 0:
                break
            ev += 1
        else:
            err = skip_field(buf, &pos, end, tag & 7)
            if err != 0:
                break
    if err == 0 and ev != ev_end:
        err = C_CAPACITY
    err_pos[0] = pos
    return err


def decode_window(window, chunks, int64_t byte_base, int64_t stat_row0, Py_ssize_t stat_cap=0,
                  Py_ssize_t text_cap=0) -> dict:
    """Decodes the events of ``chunks`` (rows of ``StreamIndex.result()``, consecutive, absolute
    offsets) from ``window``, the file's bytes from ``byte_base`` that cover them.

    Returns the scanner's columns for these events: ``ev_*`` (metadata ids always int64, so
    any id decodes alike), ``st_*`` (owner = global event row) and ``texts`` (stat row counted
    from ``stat_row0``, absolute byte offset, length). Raises WireError at the absolute offset.
    """
    buf_arr = as_u8(window)
    cdef const uint8_t[::1] view = buf_arr
    cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
    cdef Py_ssize_t wl = view.shape[0]
    cdef const int64_t[:, ::1] ck = np.ascontiguousarray(chunks, dtype=np.int64)
    cdef Py_ssize_t k, n_chunks = ck.shape[0], err_pos = 0
    cdef int64_t n_events = 0, first = 0, start, end
    cdef int err = 0
    cdef Sink s
    if ck.ndim != 2 or (n_chunks and ck.shape[1] != 5):
        raise ValueError("chunks must be (n, 5)")
    if n_chunks:
        first = ck[0, 3]
    for k in range(n_chunks):
        start = ck[k, 1] - byte_base
        end = ck[k, 2] - byte_base
        if start < 0 or end < start or end > wl or ck[k, 3] != first + n_events or ck[k, 4] < 0:
            raise ValueError(f"chunk {k} does not lie in the window or does not follow the previous one")
        n_events += ck[k, 4]
    if stat_cap <= 0:
        stat_cap = wl // 16 + 16
    if text_cap <= 0:
        text_cap = wl // 32 + 16
    while True:
        cols = _Columns(n_events, stat_cap, text_cap, np.int64)
        memset_sink(&s)
        cols.bind(&s)
        s.fill = True
        s.st_row0 = stat_row0
        s.stats_before = stat_row0
        with nogil:
            for k in range(n_chunks):
                err = decode_run(buf, <Py_ssize_t>(ck[k, 1] - byte_base), <Py_ssize_t>(ck[k, 2] - byte_base),
                                 <int32_t>ck[k, 0], ck[k, 3], ck[k, 3] + ck[k, 4], first, &s, &err_pos)
                if err != 0:
                    break
        if err != C_REGION_FULL:
            break
        # A denser window than assumed: a stat takes >= 2 bytes and a text >= 4, so doubling ends.
        if s.n_stats >= stat_cap:
            stat_cap *= 2
        if s.n_texts >= text_cap:
            text_cap *= 2
    if err != 0:
        raise WireError(err, byte_base + err_pos)
    texts = cols.texts[:s.n_texts]
    texts[:, 1] += byte_base
    return {"ev_line": cols.ev_line, "ev_meta": cols.ev_meta, "ev_start": cols.ev_start, "ev_dur": cols.ev_dur,
            "st_owner": cols.st_owner[:s.n_stats], "st_meta": cols.st_meta[:s.n_stats],
            "st_kind": cols.st_kind[:s.n_stats], "st_value": cols.st_value[:s.n_stats], "texts": texts}


def field_metadata_ids(data, starts, ends) -> np.ndarray:
    """``metadata_id`` (field 1) of each length-delimited message field ``data[start:end]`` (tag,
    length, then an XStat or XEvent; the last field 1 wins and an absent one reads 0, as in proto3),
    or -1 for a field that does not parse or whose id is not below 2^63: the caller then leaves
    that message to upb, which names the error. Lets a reader keep the last stat of each name
    without decoding every one of a plane's tens of thousands of stats into Python objects.
    """
    buf_arr = as_u8(data)
    cdef const uint8_t[::1] view = buf_arr
    cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
    cdef const int64_t[::1] s = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] e = np.ascontiguousarray(ends, dtype=np.int64)
    if s.shape[0] != e.shape[0]:
        raise ValueError("starts and ends differ in length")
    out = np.full(s.shape[0], -1, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef Py_ssize_t i, pos, end, pend, n = view.shape[0]
    cdef uint64_t tag, value
    cdef int64_t found
    cdef int err
    with nogil:
        for i in range(s.shape[0]):
            pos = s[i]
            end = e[i]
            if pos < 0 or end > n or pos > end:
                continue
            if read_varint(buf, &pos, end, &tag) != 0 or (tag & 7) != 2 or read_len(buf, &pos, end, &pend) != 0:
                continue
            found = 0  # proto3: an absent metadata_id reads as 0
            err = 0
            while pos < pend and err == 0:
                err = read_varint(buf, &pos, pend, &tag)
                if err != 0:
                    break
                if tag == (1 << 3):  # field 1, varint
                    err = read_varint(buf, &pos, pend, &value)
                    found = <int64_t>value if value < (<uint64_t>1 << 63) else -1
                else:
                    err = skip_field(buf, &pos, pend, tag & 7)
            if err == 0:
                o[i] = found
    return out


# --- a plane's metadata ---------------------------------------------------------------------
#
# XPlane: id=1 (VARINT), name=2 (LEN), event_metadata=4 and stat_metadata=5 (map entries: key=1
# VARINT, value=2 LEN), stats=6 (LEN); XEventMetadata: name=2, display_name=4 (LEN), stats=5
# (LEN); XStatMetadata: name=2 (LEN). What upb would parse of them, read without building a
# message object per entry; anything upb reads differently or rejects (a known field with
# another wire type, a repeated map key, a key or value twice in one entry, an entry with a field
# of its own beyond those two, malformed bytes)
# makes ``plane_metadata`` answer None, and the caller then hands the plane to upb.


cdef int _stat_fields(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t send, int64_t owner, Rows* out) noexcept nogil:
    """One XStat in [pos, send): a row (owner, metadata_id, kind, value or text offset, text length)."""
    cdef StatFields st
    cdef int err = decode_stat(buf, &pos, send, True, &st)
    if err != 0:
        return err
    return rows_push(out, owner, <int64_t>st.meta, st.kind, <int64_t>st.value, st.length)


cdef int _metadata_entry(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t eend, bint is_event, Rows* entries,
                         Rows* stats) noexcept nogil:
    """One map entry of event_metadata (``is_event``) or stat_metadata in [pos, eend): a row (key,
    name start, name end, display name start, display name end); an event's stats to ``stats``."""
    cdef uint64_t tag, field, wire, key = 0
    cdef Py_ssize_t vstart = -1, vend = -1, fend, name_s = 0, name_e = 0, disp_s = 0, disp_e = 0
    cdef bint has_key = False
    cdef int err
    cdef int64_t owner = entries.n
    while pos < eend:
        err = read_varint(buf, &pos, eend, &tag)
        if err != 0:
            return err
        field = tag >> 3
        wire = tag & 7
        if field == 0 or field > C_MAX_FIELD:
            return C_FIELD_ZERO
        if field == 1:
            if wire != 0 or has_key:
                return C_BAD_WIRE_TYPE
            err = read_varint(buf, &pos, eend, &key)
            has_key = True
        elif field == 2:
            if wire != 2 or vstart >= 0:  # a value twice: upb merges them
                return C_BAD_WIRE_TYPE
            err = read_len(buf, &pos, eend, &vend)
            vstart = pos
            pos = vend
        else:
            return C_BAD_WIRE_TYPE  # upb keeps an entry with an unknown field aside, out of the map
        if err != 0:
            return err
    if vstart >= 0:
        pos = vstart
        while pos < vend:
            err = read_varint(buf, &pos, vend, &tag)
            if err != 0:
                return err
            field = tag >> 3
            wire = tag & 7
            if field == 0 or field > C_MAX_FIELD:
                return C_FIELD_ZERO
            if field == 2 or (is_event and (field == 4 or field == 5)):
                if wire != 2:
                    return C_BAD_WIRE_TYPE
                err = read_len(buf, &pos, vend, &fend)
                if err != 0:
                    return err
                if field == 2:
                    name_s, name_e = pos, fend
                elif field == 4:
                    disp_s, disp_e = pos, fend
                else:
                    err = _stat_fields(buf, pos, fend, owner, stats)
                    if err != 0:
                        return err
                pos = fend
            else:
                err = skip_field(buf, &pos, vend, wire)
                if err != 0:
                    return err
    return rows_push(entries, <int64_t>key, name_s, name_e, disp_s, disp_e)


cdef object _texts(const uint8_t* buf, object rows, int start_col):
    """The UTF-8 texts (bad bytes replaced) of the spans in columns ``start_col`` and the next."""
    cdef const int64_t[:, ::1] r = rows
    cdef Py_ssize_t i
    out = []
    for i in range(r.shape[0]):
        out.append(PyUnicode_DecodeUTF8(<const char*>(buf + r[i, start_col]), r[i, start_col + 1] - r[i, start_col],
                                        "replace"))
    return out


def plane_metadata(data, starts, ends):
    """The metadata of one XPlane whose fields (lines excluded) lie at ``data[starts[i]:ends[i]]``
    (one whole field each), or None where upb must parse the plane (see above). Returns (id,
    name, event metadata ids, their names, their display names, stat metadata ids, their names,
    the event metadata's stats, the plane's stats): ids ascending (int64), texts in their order;
    stats as int64 rows (owner, metadata_id, kind, value, text length), the metadata's grouped
    by owner (its row in id order; its stats in wire order), the plane's in wire order (owner
    -1); a str or bytes value is its text's offset in ``data``, a double its bits, a uint64 its
    bits as int64."""
    buf_arr = as_u8(data)
    cdef const uint8_t[::1] view = buf_arr
    cdef const uint8_t* buf = &view[0] if view.shape[0] else NULL
    cdef const int64_t[::1] s = np.ascontiguousarray(starts, dtype=np.int64)
    cdef const int64_t[::1] e = np.ascontiguousarray(ends, dtype=np.int64)
    if s.shape[0] != e.shape[0]:
        raise ValueError("starts and ends differ in length")
    cdef Rows events, stat_meta, stats
    events.data = NULL
    events.n = events.cap = 0
    events.width = 5
    stat_meta.data = NULL
    stat_meta.n = stat_meta.cap = 0
    stat_meta.width = 5
    stats.data = NULL
    stats.n = stats.cap = 0
    stats.width = 5
    cdef Py_ssize_t i, pos, end, fend, n = view.shape[0], name_s = 0, name_e = 0
    cdef uint64_t tag, field, wire, plane_id = 0
    cdef int err = 0
    cdef int64_t[::1] evo, smo
    try:
        with nogil:
            for i in range(s.shape[0]):
                pos = s[i]
                end = e[i]
                if pos < 0 or end > n or pos > end:
                    err = C_LENGTH
                    break
                while pos < end and err == 0:
                    err = read_varint(buf, &pos, end, &tag)
                    if err != 0:
                        break
                    field = tag >> 3
                    wire = tag & 7
                    if field == 0 or field > C_MAX_FIELD:
                        err = C_FIELD_ZERO
                    elif field == 1:
                        if wire != 0:
                            err = C_BAD_WIRE_TYPE
                        else:
                            err = read_varint(buf, &pos, end, &plane_id)
                    elif field == 2 or field == 4 or field == 5 or field == 6:
                        if wire != 2:
                            err = C_BAD_WIRE_TYPE
                            break
                        err = read_len(buf, &pos, end, &fend)
                        if err != 0:
                            break
                        if field == 2:
                            name_s, name_e = pos, fend
                        elif field == 6:
                            err = _stat_fields(buf, pos, fend, -1, &stats)
                        else:
                            err = _metadata_entry(buf, pos, fend, field == 4, &events if field == 4 else &stat_meta,
                                                  &stats)
                        pos = fend
                    elif field == 3:
                        err = C_BAD_WIRE_TYPE  # lines are not the metadata's: a span that holds one is not ours
                    else:
                        err = skip_field(buf, &pos, end, wire)
                if err != 0:
                    break
        if err != 0:
            return None
        ev_order = np.empty(events.n, dtype=np.int64)
        sm_order = np.empty(stat_meta.n, dtype=np.int64)
        evo = ev_order
        smo = sm_order
        if (_by_key(&events, &evo[0] if events.n else NULL) != 0
                or _by_key(&stat_meta, &smo[0] if stat_meta.n else NULL) != 0):
            return None  # a repeated map key (upb keeps the last entry), or no memory: upb decides
        ev = rows_array(&events)[ev_order]
        sm = rows_array(&stat_meta)[sm_order]
        meta_st, plane_st = _stats_by_entry(&stats, ev_order)
        return (<int64_t>plane_id, bytes(view[name_s:name_e]), ev[:, 0].copy(), _texts(buf, ev, 1),
                _texts(buf, ev, 3), sm[:, 0].copy(), _texts(buf, sm, 1), meta_st, plane_st)
    finally:
        free(events.data)
        free(stat_meta.data)
        free(stats.data)


cdef struct KeyRow:
    int64_t key
    int64_t row


cdef int _key_row_cmp(const void* a, const void* b) noexcept nogil:
    cdef const KeyRow* x = <const KeyRow*>a
    cdef const KeyRow* y = <const KeyRow*>b
    if x.key != y.key:
        return -1 if x.key < y.key else 1
    return -1 if x.row < y.row else (1 if x.row > y.row else 0)


cdef int _by_key(Rows* r, int64_t* order) noexcept nogil:
    """The rows of ``r`` ordered by their key (column 0): their row numbers into ``order``; 1
    when a key repeats, C_NO_MEMORY without memory, else 0."""
    cdef Py_ssize_t i
    cdef int repeated = 0
    if r.n == 0:
        return 0
    cdef KeyRow* k = <KeyRow*>malloc(r.n * sizeof(KeyRow))
    if k == NULL:
        return C_NO_MEMORY
    for i in range(r.n):
        k[i].key = r.data[i * r.width]
        k[i].row = i
    qsort(k, r.n, sizeof(KeyRow), _key_row_cmp)
    for i in range(r.n):
        order[i] = k[i].row
        if i > 0 and k[i].key == k[i - 1].key:
            repeated = 1
    free(k)
    return repeated


cdef tuple _stats_by_entry(Rows* st, object ev_order):
    """The metadata entries' stats with owner = the entry's row in key order, grouped by it (an
    entry's stats in wire order), and the plane's own stats (owner -1) in wire order."""
    cdef const int64_t[::1] order = ev_order
    cdef Py_ssize_t n_entries = order.shape[0], i, j, n_plane = 0
    row_arr = np.empty(n_entries, dtype=np.int64)
    starts_arr = np.zeros(n_entries + 1, dtype=np.int64)
    cdef int64_t[::1] row_of = row_arr
    cdef int64_t[::1] starts = starts_arr
    cdef int64_t owner
    for i in range(n_entries):
        row_of[order[i]] = i
    for i in range(st.n):
        owner = st.data[i * st.width]
        if owner < 0:
            n_plane += 1
        else:
            starts[row_of[owner] + 1] += 1
    for i in range(n_entries):
        starts[i + 1] += starts[i]
    meta_arr = np.empty((st.n - n_plane, 5), dtype=np.int64)
    plane_arr = np.empty((n_plane, 5), dtype=np.int64)
    cdef int64_t[:, ::1] meta = meta_arr
    cdef int64_t[:, ::1] plane = plane_arr
    cdef Py_ssize_t at, p = 0
    for i in range(st.n):
        owner = st.data[i * st.width]
        if owner < 0:
            at = p
            p += 1
            for j in range(5):
                plane[at, j] = st.data[i * st.width + j]
        else:
            at = starts[row_of[owner]]
            starts[row_of[owner]] += 1
            meta[at, 0] = row_of[owner]
            for j in range(1, 5):
                meta[at, j] = st.data[i * st.width + j]
    return meta_arr, plane_arr
