# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Chrome-trace JSON scanner: the ``traceEvents`` array straight into columns, in windows.

Why: ``json.loads`` of a whole trace builds a dict per event and a Python object per value
(several times the file: bench/measurements.md#conversion-memory); the reader needs a handful of
fields per event. This pass tokenises the bytes once and writes, per event, the phase, ``ts``
(whole microseconds and the picoseconds above them) and ``dur`` (picoseconds), both exact to
their decimal text (``_exact_us``), and the identity fields (``pid``, ``tid``, ``name``, ``cat``, ``id``, ``bind_id``) as
ids of an interned token table, two flags (``"bp": "e"``, ``"s": "g"``), and every ``args``
entry as a stat row (owner event, key token, kind, value) with the reader's kind rules: int64,
uint64 bit pattern, huge integers as their text, double, string, bool as 0/1, null as KIND_NONE
(dropped later), arrays written as ``json.dumps(v, sort_keys=True)`` would write them (the
reader's canonical text) when they hold only integers, strings, booleans, nulls and arrays, and
any other array or object kept as its raw text (kind ``K_JSON``) for the reader to canonicalise
in Python (once per distinct text).

Top-level members other than ``traceEvents`` come back as their raw JSON text (``top``, each
at most 1 MiB) for the reader to decode.

Tokens: a string is interned as ``b"S" + its decoded UTF-8``, any other value (a number, a
literal, an array or object used as a pid/name/...) as ``b"R" + its JSON text``; the reader
converts each distinct token once. Lone surrogate escapes (``"\\ud800"``) decode to U+FFFD.

Windows: ``feed(buf, base, final)`` parses as many whole units (an event, a top-level member)
as ``buf`` holds and returns how many bytes it consumed; the caller keeps the rest and
prepends it to the next window. A unit cut by the window's end is rolled back (its stat rows
dropped) and parsed again with the next window, so the result never depends on where the
windows fall.

Threads: the event array is parsed with the GIL released (``_array_run``: no Python object per
event; ``args`` numbers through the C library's ``strtod``, correctly rounded as Python's
``float()``, unless the process' locale has another decimal point); the top-level members are
handled with the GIL. One trace may be scanned in segments by several scanners at once
(``readers/chrome_scan.py``): a scanner started inside the event array (``resume_in_events``),
the boundary verified by the state of the scanner before it (``between_events``), the tables
merged in file order (``merge_tokens``, on threads) and the columns moved with the GIL released
(``columns_into``).

Safety: every read is guarded by ``p < end`` (``end`` = the buffer's length); nesting is
bounded (``MAX_DEPTH``); malformed input gives an error code and its absolute byte offset,
which the reader turns into ``ProfileReadError``. The JSON grammar is checked in full (as
``json.loads`` does, including its ``NaN``/``Infinity`` extensions), strings are checked to be
UTF-8, and duplicate keys resolve as ``json.loads`` does (the last wins).
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport PyObject
from libc.math cimport INFINITY, NAN
from libc.stdint cimport INT64_MAX, INT64_MIN, int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.locale cimport localeconv
from libc.stdlib cimport free, malloc, realloc, strtod
from libc.string cimport memcmp, memcpy, memset

from tbprof._core.kernels import run_parts


cdef extern from "Python.h":
    double PyOS_string_to_double(const char *s, char **endptr, PyObject *overflow_exception) except? -1.0


# Kinds of stat rows (the store's KIND_* values, tables.py) and the scanner's own.
DEF KIND_NONE = 0
DEF KIND_DOUBLE = 1
DEF KIND_UINT64 = 2
DEF KIND_INT64 = 3
DEF KIND_STR = 4
DEF K_JSON = 9
KIND_JSON = K_JSON
# A ts or dur that is absent, not a number, or beyond int64 (microseconds; a dur's picoseconds).
cdef int64_t TS_MISSING = INT64_MIN
TIME_MISSING = TS_MISSING
cdef int64_t MAX_DUR_US = 9223372036853  # the most whole microseconds whose picoseconds fit int64

DEF MAX_DEPTH = 512
DEF RECENT = 1024  # entries of the interning cache of recent tokens (a power of two)
DEF NEED = -1   # the buffer ends inside the unit
DEF ERR = -2    # malformed; self.err_code / self.err_at say why and where

# Event flags.
DEF F_BP_E = 1
DEF F_SCOPE_G = 2
DEF F_EMPTY = 4
FLAG_BP_E = F_BP_E
FLAG_SCOPE_G = F_SCOPE_G
FLAG_EMPTY = F_EMPTY

# Top-level states.
DEF S_START = 0
DEF S_OBJ_FIRST = 1
DEF S_OBJ_NEXT = 2
DEF S_OBJ_MEMBER = 3
DEF S_ARR_FIRST = 4
DEF S_ARR_NEXT = 5
DEF S_ARR_ELEM = 6
DEF S_END = 7

# Error codes (messages in ERRORS).
DEF E_EOF = 1
DEF E_CHAR = 2
DEF E_UTF8 = 3
DEF E_DEPTH = 4
DEF E_CONTROL = 5
DEF E_ESCAPE = 6
DEF E_NUMBER = 7
DEF E_EXTRA = 8
DEF E_TOO_MANY = 9

ERRORS = {E_EOF: "unexpected end of data", E_CHAR: "unexpected character", E_UTF8: "not UTF-8",
          E_DEPTH: "nested too deeply", E_CONTROL: "invalid control character in a string",
          E_ESCAPE: "invalid escape in a string", E_NUMBER: "invalid number", E_EXTRA: "extra data after the trace",
          E_TOO_MANY: "more than 2^31 events or tokens"}
UTF8_ERROR = E_UTF8
DEPTH_ERROR = E_DEPTH

# Top-level values other than traceEvents (deviceProperties, distributedInfo, schemaVersion, ...)
# are returned as their JSON text, up to this size each.
DEF TOP_VALUE_MAX_BYTES = 1 << 20


# Bytes a string's plain ASCII run may hold (printable, not '"' nor '\\'): one table lookup a byte.
cdef uint8_t _PLAIN[256]
for _c in range(256):
    _PLAIN[_c] = 1 if 0x20 <= _c < 0x80 and _c != 34 and _c != 92 else 0


cdef inline bint _ws(uint8_t c) nogil:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef inline int _hexval(uint8_t c) nogil:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


cdef inline uint64_t _hash(const uint8_t* s, Py_ssize_t n, uint8_t prefix) nogil:
    """A hash of the prefix byte and s[0:n], eight bytes per step (equality is checked with memcmp)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ (<uint64_t>prefix << 56) ^ <uint64_t>n
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, s + i, 8)
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 32
        i += 8
    w = 0
    if i < n:
        if n >= 8:
            memcpy(&w, s + n - 8, 8)  # the last eight bytes, overlapping: one load
        else:
            # Byte by byte: a partial memcpy into w stalls its 8-byte read (store forwarding).
            while i < n:
                w |= (<uint64_t>s[i]) << (8 * i)
                i += 1
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL
    return h ^ (h >> 29)


cdef class Scanner:
    # Token table: bytes (prefix byte first) in one arena, open-addressing hash of ids.
    cdef char* arena
    cdef int64_t arena_len, arena_cap
    cdef int64_t* tok_off
    cdef int32_t* tok_len
    cdef int32_t n_tok, tok_cap
    cdef int32_t* slots
    cdef int32_t recent[RECENT]  # the token last found per hash bucket: the hot ones skip the table
    cdef int64_t n_slots
    # Per key token: the args object it was last seen in, and its row (duplicate keys).
    cdef int64_t* key_stamp
    cdef int64_t* key_row
    cdef int64_t key_cap
    cdef int64_t args_serial
    # Event columns.
    cdef int32_t* ev_ph
    cdef int64_t* ev_ts  # whole microseconds (floor); TS_MISSING when absent or not a number
    cdef int32_t* ev_ts_sub  # the picoseconds below that microsecond, 0 to 999,999
    cdef int64_t* ev_dur  # picoseconds; TS_MISSING when not a number
    cdef int32_t* ev_pid
    cdef int32_t* ev_tid
    cdef int32_t* ev_name
    cdef int32_t* ev_cat
    cdef int32_t* ev_id
    cdef int32_t* ev_bind
    cdef uint8_t* ev_flags
    cdef int64_t n_ev, ev_cap
    # Stat columns.
    cdef int32_t* st_owner
    cdef int32_t* st_key
    cdef int8_t* st_kind
    cdef int64_t* st_value
    cdef int64_t n_st, st_cap
    # Scratch: decoded strings, canonical texts, number texts.
    cdef uint8_t* sbuf
    cdef int64_t sbuf_cap
    cdef uint8_t* cbuf
    cdef int64_t cbuf_len, cbuf_cap
    # Parse state.
    cdef const uint8_t* buf
    cdef Py_ssize_t end
    cdef bint final
    cdef bint dot_ok  # the C library's decimal point is '.' (strtod reads JSON numbers)
    cdef bint halt  # the array run stopped: the buffer ends inside a unit, or an error
    cdef int state
    cdef public bint bare
    cdef public int top_kind  # 0 nothing yet, 1 object, 2 array, 3 other value
    cdef public int trace_events  # 0 absent, 1 an array, 2 another value
    cdef public int64_t non_objects
    cdef public int64_t event_resets  # times the event columns restarted (each 'traceEvents' key)
    cdef public int err_code
    cdef public int64_t err_at
    cdef int64_t base
    cdef public dict top

    def __cinit__(self):
        self.arena_cap = 1 << 16
        self.arena = <char*>malloc(self.arena_cap)
        self.tok_cap = 1024
        self.tok_off = <int64_t*>malloc(self.tok_cap * sizeof(int64_t))
        self.tok_len = <int32_t*>malloc(self.tok_cap * sizeof(int32_t))
        self.n_slots = 4096
        self.slots = <int32_t*>malloc(self.n_slots * sizeof(int32_t))
        self.key_cap = 1024
        self.key_stamp = <int64_t*>malloc(self.key_cap * sizeof(int64_t))
        self.key_row = <int64_t*>malloc(self.key_cap * sizeof(int64_t))
        self.sbuf_cap = 4096
        self.sbuf = <uint8_t*>malloc(self.sbuf_cap)
        self.cbuf_cap = 4096
        self.cbuf = <uint8_t*>malloc(self.cbuf_cap)
        if (self.arena == NULL or self.tok_off == NULL or self.tok_len == NULL or self.slots == NULL
                or self.key_stamp == NULL or self.key_row == NULL or self.sbuf == NULL or self.cbuf == NULL):
            raise MemoryError()
        memset(self.slots, 0xFF, self.n_slots * sizeof(int32_t))
        memset(self.recent, 0xFF, RECENT * sizeof(int32_t))
        memset(self.key_stamp, 0xFF, self.key_cap * sizeof(int64_t))
        self.top = {}

    def __dealloc__(self):
        free(self.arena); free(self.tok_off); free(self.tok_len); free(self.slots)
        free(self.key_stamp); free(self.key_row); free(self.sbuf); free(self.cbuf)
        self._free_columns()

    cdef void _free_columns(self):
        free(self.ev_ph); free(self.ev_ts); free(self.ev_ts_sub); free(self.ev_dur); free(self.ev_pid); free(self.ev_tid)
        free(self.ev_name); free(self.ev_cat); free(self.ev_id); free(self.ev_bind); free(self.ev_flags)
        free(self.st_owner); free(self.st_key); free(self.st_kind); free(self.st_value)
        self.ev_ph = NULL; self.ev_ts = NULL; self.ev_ts_sub = NULL; self.ev_dur = NULL; self.ev_pid = NULL; self.ev_tid = NULL
        self.ev_name = NULL; self.ev_cat = NULL; self.ev_id = NULL; self.ev_bind = NULL; self.ev_flags = NULL
        self.st_owner = NULL; self.st_key = NULL; self.st_kind = NULL; self.st_value = NULL
        self.n_ev = self.ev_cap = self.n_st = self.st_cap = 0

    # --- growth ---------------------------------------------------------------------------
    cdef int _grow_events(self) except -1 nogil:
        cdef int64_t cap = self.ev_cap * 2 if self.ev_cap else 4096
        if cap > 0x7FFFFFFF:
            cap = 0x7FFFFFFF
            if self.n_ev >= cap:
                self.err_code = E_TOO_MANY
                return 1
        self.ev_ph = <int32_t*>_grow(self.ev_ph, cap * 4)
        self.ev_ts = <int64_t*>_grow(self.ev_ts, cap * 8)
        self.ev_ts_sub = <int32_t*>_grow(self.ev_ts_sub, cap * 4)
        self.ev_dur = <int64_t*>_grow(self.ev_dur, cap * 8)
        self.ev_pid = <int32_t*>_grow(self.ev_pid, cap * 4)
        self.ev_tid = <int32_t*>_grow(self.ev_tid, cap * 4)
        self.ev_name = <int32_t*>_grow(self.ev_name, cap * 4)
        self.ev_cat = <int32_t*>_grow(self.ev_cat, cap * 4)
        self.ev_id = <int32_t*>_grow(self.ev_id, cap * 4)
        self.ev_bind = <int32_t*>_grow(self.ev_bind, cap * 4)
        self.ev_flags = <uint8_t*>_grow(self.ev_flags, cap)
        self.ev_cap = cap
        return 0

    cdef int _grow_stats(self) except -1 nogil:
        cdef int64_t cap = self.st_cap * 2 if self.st_cap else 16384
        self.st_owner = <int32_t*>_grow(self.st_owner, cap * 4)
        self.st_key = <int32_t*>_grow(self.st_key, cap * 4)
        self.st_kind = <int8_t*>_grow(self.st_kind, cap)
        self.st_value = <int64_t*>_grow(self.st_value, cap * 8)
        self.st_cap = cap
        return 0

    cdef inline int _need_sbuf(self, int64_t n) except -1 nogil:
        if n <= self.sbuf_cap:
            return 0
        return self._grow_sbuf(n)

    cdef int _grow_sbuf(self, int64_t n) except -1 nogil:
        cdef int64_t cap = self.sbuf_cap
        while cap < n:
            cap *= 2
        self.sbuf = <uint8_t*>_grow(self.sbuf, cap)
        self.sbuf_cap = cap
        return 0

    cdef inline int _cput(self, const uint8_t* s, int64_t n) except -1 nogil:
        if self.cbuf_len + n > self.cbuf_cap:
            self._grow_cbuf(self.cbuf_len + n)
        memcpy(self.cbuf + self.cbuf_len, s, n)
        self.cbuf_len += n
        return 0

    cdef int _grow_cbuf(self, int64_t need) except -1 nogil:
        cdef int64_t cap = self.cbuf_cap
        while cap < need:
            cap *= 2
        self.cbuf = <uint8_t*>_grow(self.cbuf, cap)
        self.cbuf_cap = cap
        return 0

    # --- tokens ---------------------------------------------------------------------------
    cdef int32_t _intern(self, uint8_t prefix, const uint8_t* s, Py_ssize_t n) except -2 nogil:
        cdef uint64_t h = _hash(s, n, prefix)
        cdef int64_t mask = self.n_slots - 1
        cdef int64_t i = <int64_t>(h & <uint64_t>mask)
        cdef int64_t r = <int64_t>((h >> 40) & (RECENT - 1))
        cdef int32_t t = self.recent[r]
        cdef char* at
        if t >= 0 and self.tok_len[t] == n + 1:
            at = self.arena + self.tok_off[t]
            if <uint8_t>at[0] == prefix and memcmp(at + 1, s, n) == 0:
                return t
        while True:
            t = self.slots[i]
            if t < 0:
                break
            if self.tok_len[t] == n + 1:
                at = self.arena + self.tok_off[t]
                if <uint8_t>at[0] == prefix and memcmp(at + 1, s, n) == 0:
                    self.recent[r] = t
                    return t
            i = (i + 1) & mask
        if self.n_tok >= 0x7FFFFFF0 or n + 1 > 0x7FFFFFFF:
            self.err_code = E_TOO_MANY
            return -1
        # New token.
        if self.n_tok == self.tok_cap:
            self.tok_cap *= 2
            self.tok_off = <int64_t*>_grow(self.tok_off, self.tok_cap * sizeof(int64_t))
            self.tok_len = <int32_t*>_grow(self.tok_len, self.tok_cap * sizeof(int32_t))
        if self.arena_len + n + 1 > self.arena_cap:
            while self.arena_len + n + 1 > self.arena_cap:
                self.arena_cap *= 2
            self.arena = <char*>_grow(self.arena, self.arena_cap)
        t = self.n_tok
        self.tok_off[t] = self.arena_len
        self.tok_len[t] = <int32_t>(n + 1)
        self.arena[self.arena_len] = <char>prefix
        if n:
            memcpy(self.arena + self.arena_len + 1, s, n)
        self.arena_len += n + 1
        self.n_tok += 1
        self.slots[i] = t
        self.recent[r] = t
        if self.n_tok * 2 > self.n_slots:
            self._rehash()
        return t

    cdef int _rehash(self) except -1 nogil:
        cdef int64_t n = self.n_slots * 2
        cdef int32_t* slots = <int32_t*>malloc(n * sizeof(int32_t))
        cdef int32_t t
        cdef int64_t i, mask = n - 1
        cdef char* at
        if slots == NULL:
            with gil:
                raise MemoryError()
        memset(slots, 0xFF, n * sizeof(int32_t))
        for t in range(self.n_tok):
            at = self.arena + self.tok_off[t]
            i = <int64_t>(_hash(<const uint8_t*>at + 1, self.tok_len[t] - 1, <uint8_t>at[0]) & <uint64_t>mask)
            while slots[i] >= 0:
                i = (i + 1) & mask
            slots[i] = t
        free(self.slots)
        self.slots = slots
        self.n_slots = n
        return 0

    # --- errors ---------------------------------------------------------------------------
    cdef Py_ssize_t _fail(self, int code, Py_ssize_t p) noexcept nogil:
        # A byte that can start no UTF-8 sequence: the text is not UTF-8 (judged on this byte
        # alone, so the verdict never depends on where a window ends).
        if code == E_CHAR and p < self.end and (0x80 <= self.buf[p] <= 0xC1 or self.buf[p] >= 0xF5):
            code = E_UTF8
        self.err_code = code
        self.err_at = self.base + p
        return ERR

    cdef inline Py_ssize_t _eof(self, Py_ssize_t p) noexcept nogil:
        """Ran out of bytes at p: more may come, or the data ends here."""
        if self.final:
            return self._fail(E_EOF, p)
        return NEED

    cdef Py_ssize_t _utf8_len(self, Py_ssize_t p) noexcept nogil:
        """Length of the UTF-8 sequence at p (a byte >= 0x80), NEED or ERR (no error recorded)."""
        cdef uint8_t c = self.buf[p]
        cdef int n
        cdef uint8_t lo = 0x80, hi = 0xBF
        cdef int k
        if 0xC2 <= c <= 0xDF:
            n = 2
        elif 0xE0 <= c <= 0xEF:
            n = 3
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            n = 4
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            return ERR
        for k in range(1, n):
            if p + k >= self.end:
                return NEED if not self.final else ERR
            c = self.buf[p + k]
            if k == 1:
                if c < lo or c > hi:
                    return ERR
            elif c < 0x80 or c > 0xBF:
                return ERR
        return n

    # --- strings --------------------------------------------------------------------------
    cdef Py_ssize_t _string(self, Py_ssize_t p, bint decode, int64_t* out_len) except? -1 nogil:
        """The string starting at p (its '"'): returns the position after it; with ``decode``
        its UTF-8 text is in sbuf[0:out_len]."""
        cdef Py_ssize_t q = p + 1, r
        cdef const uint8_t* b = self.buf
        cdef uint8_t c
        cdef int64_t n = 0
        cdef int h0, h1, h2, h3
        cdef uint32_t u, lo
        if decode:
            self._need_sbuf(64)
        while True:
            if q >= self.end:
                return self._eof(q)
            c = b[q]
            if c == 34:  # '"'
                out_len[0] = n
                return q + 1
            if c == 92:  # '\\'
                if q + 1 >= self.end:
                    return self._eof(q + 1)
                c = b[q + 1]
                if c == 117:  # 'u'
                    if q + 6 > self.end:
                        return self._eof(self.end)
                    h0 = _hexval(b[q + 2]); h1 = _hexval(b[q + 3]); h2 = _hexval(b[q + 4]); h3 = _hexval(b[q + 5])
                    if h0 < 0 or h1 < 0 or h2 < 0 or h3 < 0:
                        return self._fail(E_ESCAPE, q)
                    u = (h0 << 12) | (h1 << 8) | (h2 << 4) | h3
                    q += 6
                    if 0xD800 <= u <= 0xDBFF:
                        # A pair needs the next escape; if it may still come, wait for it.
                        if q + 6 > self.end:
                            if not self.final and (q >= self.end or (b[q] == 92 and (q + 1 >= self.end
                                                                                     or b[q + 1] == 117))):
                                return NEED
                            u = 0xFFFD
                        elif b[q] == 92 and b[q + 1] == 117:
                            h0 = _hexval(b[q + 2]); h1 = _hexval(b[q + 3])
                            h2 = _hexval(b[q + 4]); h3 = _hexval(b[q + 5])
                            lo = (h0 << 12) | (h1 << 8) | (h2 << 4) | h3
                            if h0 >= 0 and h1 >= 0 and h2 >= 0 and h3 >= 0 and 0xDC00 <= lo <= 0xDFFF:
                                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                                q += 6
                            else:
                                u = 0xFFFD
                        else:
                            u = 0xFFFD
                    elif 0xDC00 <= u <= 0xDFFF:
                        u = 0xFFFD
                    if decode:
                        self._need_sbuf(n + 4)
                        n += _put_utf8(self.sbuf + n, u)
                    continue
                if c == 34 or c == 92 or c == 47:
                    u = c
                elif c == 98:
                    u = 8
                elif c == 102:
                    u = 12
                elif c == 110:
                    u = 10
                elif c == 114:
                    u = 13
                elif c == 116:
                    u = 9
                else:
                    return self._fail(E_ESCAPE, q)
                if decode:
                    self._need_sbuf(n + 1)
                    self.sbuf[n] = <uint8_t>u
                    n += 1
                q += 2
                continue
            if c < 0x20:
                return self._fail(E_CONTROL, q)
            if c < 0x80:
                # A run of plain ASCII.
                r = q + 1
                while r < self.end and _PLAIN[b[r]]:
                    r += 1
                if decode:
                    self._need_sbuf(n + (r - q))
                    memcpy(self.sbuf + n, b + q, r - q)
                    n += r - q
                q = r
                continue
            r = self._utf8_len(q)
            if r == NEED:
                return NEED
            if r == ERR:
                self.err_code = E_UTF8
                self.err_at = self.base + q
                return ERR
            if decode:
                self._need_sbuf(n + r)
                memcpy(self.sbuf + n, b + q, r)
                n += r
            q += r

    # --- numbers and literals --------------------------------------------------------------
    cdef Py_ssize_t _number(self, Py_ssize_t p, int* is_float) noexcept nogil:
        """A JSON number (or -Infinity) at p: the position after it; is_float 0 int, 1 float, 2 special."""
        cdef const uint8_t* b = self.buf
        cdef Py_ssize_t q = p
        is_float[0] = 0
        if b[q] == 45:  # '-'
            q += 1
            if q >= self.end:
                return self._eof(q)
            if b[q] == 73:  # -Infinity
                is_float[0] = 2
                return self._literal(q, b"Infinity", 8)
        if q >= self.end:
            return self._eof(q)
        if b[q] == 48:
            q += 1
        elif 49 <= b[q] <= 57:
            while q < self.end and 48 <= b[q] <= 57:
                q += 1
        else:
            return self._fail(E_NUMBER, q)
        if q < self.end and b[q] == 46:  # '.'
            is_float[0] = 1
            q += 1
            if q >= self.end:
                return self._eof(q)
            if not (48 <= b[q] <= 57):
                return self._fail(E_NUMBER, q)
            while q < self.end and 48 <= b[q] <= 57:
                q += 1
        if q < self.end and (b[q] == 101 or b[q] == 69):
            is_float[0] = 1
            q += 1
            if q < self.end and (b[q] == 43 or b[q] == 45):
                q += 1
            if q >= self.end:
                return self._eof(q)
            if not (48 <= b[q] <= 57):
                return self._fail(E_NUMBER, q)
            while q < self.end and 48 <= b[q] <= 57:
                q += 1
        if q >= self.end and not self.final:
            return NEED  # the number may go on in the next window
        return q

    cdef Py_ssize_t _literal(self, Py_ssize_t p, const char* word, int n) noexcept nogil:
        cdef int k
        for k in range(n):
            if p + k >= self.end:
                return self._eof(p + k)
            if self.buf[p + k] != <uint8_t>word[k]:
                return self._fail(E_CHAR, p + k)
        return p + n

    cdef double _to_double(self, Py_ssize_t p, Py_ssize_t q) except? -1.0 nogil:
        """The double of the (checked) number text buf[p:q], rounded as Python's float() does."""
        cdef int64_t n = q - p
        self._need_sbuf(n + 1)
        memcpy(self.sbuf, self.buf + p, n)
        self.sbuf[n] = 0
        if self.dot_ok:
            # The C library's strtod rounds correctly (as Python's float() does) and needs no GIL;
            # only a locale whose decimal point is not '.' sends numbers to Python's parser.
            return strtod(<const char*>self.sbuf, NULL)
        with gil:
            return PyOS_string_to_double(<const char*>self.sbuf, NULL, NULL)

    cdef inline Py_ssize_t _skip_ws(self, Py_ssize_t p) noexcept nogil:
        if p < self.end and self.buf[p] > 32:  # most calls: no whitespace at all
            return p
        while p < self.end and _ws(self.buf[p]):
            p += 1
        return p

    # --- generic values ---------------------------------------------------------------------
    cdef Py_ssize_t _skip(self, Py_ssize_t p, int depth) except? -1 nogil:
        """Checks and skips the value at p (whitespace before it already skipped)."""
        cdef uint8_t c
        cdef int64_t n
        cdef int fl
        if p >= self.end:
            return self._eof(p)
        c = self.buf[p]
        if c == 34:
            return self._string(p, False, &n)
        if c == 45 or 48 <= c <= 57:
            return self._number(p, &fl)
        if c == 116:
            return self._literal(p, b"true", 4)
        if c == 102:
            return self._literal(p, b"false", 5)
        if c == 110:
            return self._literal(p, b"null", 4)
        if c == 78:
            return self._literal(p, b"NaN", 3)
        if c == 73:
            return self._literal(p, b"Infinity", 8)
        if c == 91 or c == 123:
            if depth >= MAX_DEPTH:
                return self._fail(E_DEPTH, p)
            return self._container(p, depth)
        return self._fail(E_CHAR, p)

    cdef Py_ssize_t _container(self, Py_ssize_t p, int depth) except? -1 nogil:
        cdef bint is_obj = self.buf[p] == 123
        cdef uint8_t close = 125 if is_obj else 93
        cdef int64_t n
        p = self._skip_ws(p + 1)
        if p >= self.end:
            return self._eof(p)
        if self.buf[p] == close:
            return p + 1
        while True:
            if is_obj:
                if self.buf[p] != 34:
                    return self._fail(E_CHAR, p)
                p = self._string(p, False, &n)
                if p < 0:
                    return p
                p = self._skip_ws(p)
                if p >= self.end:
                    return self._eof(p)
                if self.buf[p] != 58:
                    return self._fail(E_CHAR, p)
                p = self._skip_ws(p + 1)
            p = self._skip(p, depth + 1)
            if p < 0:
                return p
            p = self._skip_ws(p)
            if p >= self.end:
                return self._eof(p)
            if self.buf[p] == close:
                return p + 1
            if self.buf[p] != 44:
                return self._fail(E_CHAR, p)
            p = self._skip_ws(p + 1)
            if p >= self.end:
                return self._eof(p)

    # --- canonical text of an array (json.dumps(v, sort_keys=True)) ----------------------------
    cdef int _canon(self, Py_ssize_t p, Py_ssize_t* out, int depth) except -1 nogil:
        """Writes the canonical text of the checked value at p into cbuf; 1 = not supported here
        (floats, objects, NaN/Infinity: the reader canonicalises those in Python)."""
        cdef const uint8_t* b = self.buf
        cdef uint8_t c = b[p]
        cdef Py_ssize_t q
        cdef int r, fl
        cdef bint first
        if c == 91:
            if depth > 64:
                return 1
            self._cput(<const uint8_t*>b"[", 1)
            q = self._skip_ws(p + 1)
            if b[q] == 93:
                self._cput(<const uint8_t*>b"]", 1)
                out[0] = q + 1
                return 0
            first = True
            while True:
                if not first:
                    self._cput(<const uint8_t*>b", ", 2)
                first = False
                r = self._canon(q, &q, depth + 1)
                if r:
                    return r
                q = self._skip_ws(q)
                if b[q] == 93:
                    self._cput(<const uint8_t*>b"]", 1)
                    out[0] = q + 1
                    return 0
                q = self._skip_ws(q + 1)  # the ','
        if c == 34:
            return self._canon_string(p, out)
        if c == 45 or 48 <= c <= 57:
            q = self._number(p, &fl)
            if fl:
                return 1
            if q - p == 2 and b[p] == 45 and b[p + 1] == 48:
                self._cput(<const uint8_t*>b"0", 1)  # -0 is the integer 0
            else:
                self._cput(b + p, q - p)
            out[0] = q
            return 0
        if c == 116:
            self._cput(<const uint8_t*>b"true", 4)
            out[0] = p + 4
            return 0
        if c == 102:
            self._cput(<const uint8_t*>b"false", 5)
            out[0] = p + 5
            return 0
        if c == 110:
            self._cput(<const uint8_t*>b"null", 4)
            out[0] = p + 4
            return 0
        return 1

    cdef int _canon_string(self, Py_ssize_t p, Py_ssize_t* out) except -1 nogil:
        """A checked string as json.dumps writes it (ensure_ascii): printable ASCII kept, the
        short escapes, anything else as lower-case \\uXXXX (astral characters as a pair)."""
        cdef const uint8_t* b = self.buf
        cdef Py_ssize_t q = p + 1
        cdef uint8_t c
        cdef uint32_t u
        cdef int r
        self._cput(<const uint8_t*>b"\"", 1)
        while True:
            c = b[q]
            if c == 34:
                self._cput(<const uint8_t*>b"\"", 1)
                out[0] = q + 1
                return 0
            if c == 92:
                c = b[q + 1]
                if c == 117:
                    u = ((<uint32_t>_hexval(b[q + 2]) << 12) | (<uint32_t>_hexval(b[q + 3]) << 8)
                         | (<uint32_t>_hexval(b[q + 4]) << 4) | <uint32_t>_hexval(b[q + 5]))
                    q += 6
                else:
                    u = c if (c == 34 or c == 92 or c == 47) else (8 if c == 98 else 12 if c == 102 else
                                                                   10 if c == 110 else 13 if c == 114 else 9)
                    q += 2
                self._canon_unit(u)
                continue
            if c < 0x80:
                self._canon_unit(c)
                q += 1
                continue
            r = <int>self._utf8_len(q)
            u = _get_utf8(b + q, r)
            q += r
            if u >= 0x10000:
                u -= 0x10000
                self._canon_unit(0xD800 + (u >> 10))
                self._canon_unit(0xDC00 + (u & 0x3FF))
            else:
                self._canon_unit(u)

    cdef int _canon_unit(self, uint32_t u) except -1 nogil:
        cdef uint8_t tmp[6]
        cdef const char* hexd = b"0123456789abcdef"
        if u == 34:
            return self._cput(<const uint8_t*>b"\\\"", 2)
        if u == 92:
            return self._cput(<const uint8_t*>b"\\\\", 2)
        if 0x20 <= u < 0x7F:
            tmp[0] = <uint8_t>u
            return self._cput(tmp, 1)
        if u == 10:
            return self._cput(<const uint8_t*>b"\\n", 2)
        if u == 13:
            return self._cput(<const uint8_t*>b"\\r", 2)
        if u == 9:
            return self._cput(<const uint8_t*>b"\\t", 2)
        if u == 8:
            return self._cput(<const uint8_t*>b"\\b", 2)
        if u == 12:
            return self._cput(<const uint8_t*>b"\\f", 2)
        tmp[0] = 92
        tmp[1] = 117
        tmp[2] = hexd[(u >> 12) & 15]
        tmp[3] = hexd[(u >> 8) & 15]
        tmp[4] = hexd[(u >> 4) & 15]
        tmp[5] = hexd[u & 15]
        return self._cput(tmp, 6)

    # --- stat rows ------------------------------------------------------------------------
    cdef int _stat(self, int32_t key, int kind, int64_t value) except -1 nogil:
        cdef int64_t row, cap
        if key >= self.key_cap:
            cap = self.key_cap
            while cap <= key:
                cap *= 2
            self.key_stamp = <int64_t*>_grow(self.key_stamp, cap * sizeof(int64_t))
            self.key_row = <int64_t*>_grow(self.key_row, cap * sizeof(int64_t))
            memset(self.key_stamp + self.key_cap, 0xFF, (cap - self.key_cap) * sizeof(int64_t))
            self.key_cap = cap
        if self.key_stamp[key] == self.args_serial:
            row = self.key_row[key]  # a duplicate key: the last value wins, in the first one's place
        else:
            if self.n_st == self.st_cap:
                self._grow_stats()
            row = self.n_st
            self.n_st += 1
            self.st_owner[row] = <int32_t>self.n_ev
            self.st_key[row] = key
            self.key_stamp[key] = self.args_serial
            self.key_row[key] = row
        self.st_kind[row] = <int8_t>kind
        self.st_value[row] = value
        return 0

    cdef Py_ssize_t _args(self, Py_ssize_t p) except? -1 nogil:
        """The event's ``args`` object at p ('{'): one stat row per key."""
        cdef const uint8_t* b = self.buf
        cdef int64_t n
        cdef int32_t key, tok
        cdef Py_ssize_t q, v
        cdef int fl, r
        cdef uint8_t c
        cdef double d
        cdef uint64_t mag
        cdef int k
        cdef bint neg
        self.args_serial += 1
        p = self._skip_ws(p + 1)
        if p >= self.end:
            return self._eof(p)
        if b[p] == 125:
            return p + 1
        while True:
            if b[p] != 34:
                return self._fail(E_CHAR, p)
            q = self._string(p, True, &n)
            if q < 0:
                return q
            key = self._intern(83, self.sbuf, n)
            if key < 0:
                return self._fail(E_TOO_MANY, p)
            p = self._skip_ws(q)
            if p >= self.end:
                return self._eof(p)
            if b[p] != 58:
                return self._fail(E_CHAR, p)
            p = self._skip_ws(p + 1)
            if p >= self.end:
                return self._eof(p)
            c = b[p]
            if c == 34:
                q = self._string(p, True, &n)
                if q < 0:
                    return q
                tok = self._intern(83, self.sbuf, n)
                if tok < 0:
                    return self._fail(E_TOO_MANY, p)
                self._stat(key, KIND_STR, tok)
            elif c == 45 or 48 <= c <= 57:
                q = self._number(p, &fl)
                if q < 0:
                    return q
                if fl:
                    d = self._to_double(p, q) if fl == 1 else -INFINITY
                    self._stat(key, KIND_DOUBLE, _bits(d))
                else:
                    neg = c == 45
                    mag = 0
                    r = 0  # overflowed
                    for k in range(p + (1 if neg else 0), q):
                        if mag > (0xFFFFFFFFFFFFFFFFULL - (b[k] - 48)) // 10:
                            r = 1
                            break
                        mag = mag * 10 + (b[k] - 48)
                    if r == 0 and not neg and mag <= 0x7FFFFFFFFFFFFFFFULL:
                        self._stat(key, KIND_INT64, <int64_t>mag)
                    elif r == 0 and not neg:
                        self._stat(key, KIND_UINT64, <int64_t>mag)
                    elif r == 0 and neg and mag <= 0x8000000000000000ULL:
                        self._stat(key, KIND_INT64, <int64_t>(0 - mag))
                    else:  # beyond 64 bits: its text
                        tok = self._intern(83, b + p, q - p)
                        if tok < 0:
                            return self._fail(E_TOO_MANY, p)
                        self._stat(key, KIND_STR, tok)
            elif c == 116:
                q = self._literal(p, b"true", 4)
                if q < 0:
                    return q
                self._stat(key, KIND_INT64, 1)
            elif c == 102:
                q = self._literal(p, b"false", 5)
                if q < 0:
                    return q
                self._stat(key, KIND_INT64, 0)
            elif c == 110:
                q = self._literal(p, b"null", 4)
                if q < 0:
                    return q
                self._stat(key, KIND_NONE, 0)
            elif c == 78:
                q = self._literal(p, b"NaN", 3)
                if q < 0:
                    return q
                self._stat(key, KIND_DOUBLE, _bits(NAN))
            elif c == 73:
                q = self._literal(p, b"Infinity", 8)
                if q < 0:
                    return q
                self._stat(key, KIND_DOUBLE, _bits(INFINITY))
            elif c == 91 or c == 123:
                q = self._skip(p, 3)
                if q < 0:
                    return q
                self.cbuf_len = 0
                if c == 91 and self._canon(p, &v, 0) == 0:
                    tok = self._intern(83, self.cbuf, self.cbuf_len)
                    if tok < 0:
                        return self._fail(E_TOO_MANY, p)
                    self._stat(key, KIND_STR, tok)
                else:
                    tok = self._intern(82, b + p, q - p)
                    if tok < 0:
                        return self._fail(E_TOO_MANY, p)
                    self._stat(key, K_JSON, tok)
            else:
                return self._fail(E_CHAR, p)
            p = self._skip_ws(q)
            if p >= self.end:
                return self._eof(p)
            if b[p] == 125:
                return p + 1
            if b[p] != 44:
                return self._fail(E_CHAR, p)
            p = self._skip_ws(p + 1)
            if p >= self.end:
                return self._eof(p)

    # --- one event ----------------------------------------------------------------------------
    cdef Py_ssize_t _ident(self, Py_ssize_t p, int32_t* out) except? -1 nogil:
        """An identity field's value: a string as its decoded text, anything else as its JSON text."""
        cdef int64_t n
        cdef Py_ssize_t q
        if self.buf[p] == 34:
            q = self._string(p, True, &n)
            if q < 0:
                return q
            out[0] = self._intern(83, self.sbuf, n)
        else:
            q = self._skip(p, 3)
            if q < 0:
                return q
            out[0] = self._intern(82, self.buf + p, q - p)
        if out[0] < 0:
            return self._fail(E_TOO_MANY, p)
        return q

    cdef Py_ssize_t _num_field(self, Py_ssize_t p, int64_t* whole_us, int32_t* sub_ps) except? -1 nogil:
        """ts/dur: a JSON number of microseconds, exactly (``_exact_us``); any other value, or one
        beyond int64 microseconds, TS_MISSING (the reader drops it)."""
        cdef int fl
        cdef Py_ssize_t q
        cdef uint8_t c = self.buf[p]
        whole_us[0] = TS_MISSING
        sub_ps[0] = 0
        if c == 45 or 48 <= c <= 57:
            q = self._number(p, &fl)
            if q < 0:
                return q
            if fl != 2:
                _exact_us(self.buf, p, q, whole_us, sub_ps)
            return q
        return self._skip(p, 3)

    cdef Py_ssize_t _event(self, Py_ssize_t p) except? -1 nogil:
        cdef const uint8_t* b = self.buf
        cdef int64_t stat0 = self.n_st, n
        cdef int32_t ph = -1, pid = -1, tid = -1, name = -1, cat = -1, id_ = -1, bind = -1
        cdef int64_t ts = TS_MISSING, dur = 0
        cdef int32_t ts_sub = 0, dur_sub = 0
        cdef uint8_t flags = 0
        cdef Py_ssize_t q
        cdef int32_t klen
        cdef uint8_t c0
        cdef int64_t sn
        if self.n_ev == self.ev_cap:
            if self._grow_events():
                return self._fail(E_TOO_MANY, p)
        p = self._skip_ws(p + 1)
        if p >= self.end:
            return self._eof(p)
        if b[p] == 125:
            flags = F_EMPTY
            q = p + 1
        else:
            while True:
                if b[p] != 34:
                    self.n_st = stat0
                    return self._fail(E_CHAR, p)
                q = self._string(p, True, &n)
                if q < 0:
                    self.n_st = stat0
                    return q
                p = self._skip_ws(q)
                if p >= self.end:
                    self.n_st = stat0
                    return self._eof(p)
                if b[p] != 58:
                    self.n_st = stat0
                    return self._fail(E_CHAR, p)
                p = self._skip_ws(p + 1)
                if p >= self.end:
                    self.n_st = stat0
                    return self._eof(p)
                klen = <int32_t>n
                c0 = self.sbuf[0] if n else 0
                if klen == 2 and c0 == 112 and self.sbuf[1] == 104:  # ph
                    if b[p] == 34:
                        q = self._string(p, True, &sn)
                        if q >= 0:
                            ph = self._intern(83, self.sbuf, sn)
                            if ph < 0:
                                q = self._fail(E_TOO_MANY, p)
                    else:
                        q = self._skip(p, 3)
                        ph = -1 if b[p] == 110 else -2  # null counts as missing
                elif klen == 2 and c0 == 116 and self.sbuf[1] == 115:  # ts
                    q = self._num_field(p, &ts, &ts_sub)
                elif klen == 3 and memcmp(self.sbuf, b"dur", 3) == 0:
                    q = self._num_field(p, &dur, &dur_sub)
                elif klen == 3 and memcmp(self.sbuf, b"pid", 3) == 0:
                    q = self._ident(p, &pid)
                elif klen == 3 and memcmp(self.sbuf, b"tid", 3) == 0:
                    q = self._ident(p, &tid)
                elif klen == 4 and memcmp(self.sbuf, b"name", 4) == 0:
                    q = self._ident(p, &name)
                elif klen == 3 and memcmp(self.sbuf, b"cat", 3) == 0:
                    q = self._ident(p, &cat)
                elif klen == 2 and c0 == 105 and self.sbuf[1] == 100:  # id
                    q = self._ident(p, &id_)
                elif klen == 7 and memcmp(self.sbuf, b"bind_id", 7) == 0:
                    q = self._ident(p, &bind)
                elif (klen == 2 and c0 == 98 and self.sbuf[1] == 112) or (klen == 1 and c0 == 115):  # bp, s
                    if b[p] == 34:
                        q = self._string(p, True, &sn)
                        if q >= 0:
                            if sn == 1 and self.sbuf[0] == (101 if klen == 2 else 103):
                                flags |= (F_BP_E if klen == 2 else F_SCOPE_G)
                            else:
                                flags &= ~(F_BP_E if klen == 2 else F_SCOPE_G)
                    else:
                        q = self._skip(p, 3)
                        flags &= ~(F_BP_E if klen == 2 else F_SCOPE_G)
                elif klen == 4 and memcmp(self.sbuf, b"args", 4) == 0:
                    self.n_st = stat0  # a repeated "args": the last one wins
                    if b[p] == 123:
                        q = self._args(p)
                    else:
                        q = self._skip(p, 3)
                else:
                    q = self._skip(p, 3)
                if q < 0:
                    self.n_st = stat0
                    return q
                p = self._skip_ws(q)
                if p >= self.end:
                    self.n_st = stat0
                    return self._eof(p)
                if b[p] == 125:
                    q = p + 1
                    break
                if b[p] != 44:
                    self.n_st = stat0
                    return self._fail(E_CHAR, p)
                p = self._skip_ws(p + 1)
                if p >= self.end:
                    self.n_st = stat0
                    return self._eof(p)
        n = self.n_ev
        self.ev_ph[n] = ph
        self.ev_ts[n] = ts
        self.ev_ts_sub[n] = ts_sub
        # A duration in picoseconds: int64 holds 106 days (the reader's limit is below that).
        if dur == TS_MISSING or dur > MAX_DUR_US or dur < -MAX_DUR_US:
            self.ev_dur[n] = TS_MISSING
        else:
            self.ev_dur[n] = dur * 1000000 + dur_sub
        self.ev_pid[n] = pid
        self.ev_tid[n] = tid
        self.ev_name[n] = name
        self.ev_cat[n] = cat
        self.ev_id[n] = id_
        self.ev_bind[n] = bind
        self.ev_flags[n] = flags
        self.n_ev += 1
        return q

    # --- the top level ----------------------------------------------------------------------
    def feed(self, const uint8_t[::1] data not None, int64_t base, bint final):
        """Parses the whole units of ``data`` (the stream's bytes from absolute offset ``base``);
        returns the number of bytes consumed, or -2 on an error (err_code, err_at)."""
        cdef Py_ssize_t p = 0, q, done = 0
        cdef uint8_t c
        cdef const char* point
        if self.err_code:
            return ERR
        if self.slots == NULL:
            raise ValueError("the scanner's token index was dropped: it reads no more bytes")
        if data.shape[0]:
            self.buf = &data[0]
        else:
            self.buf = <const uint8_t*>b""
        self.end = data.shape[0]
        self.final = final
        self.base = base
        point = localeconv().decimal_point
        self.dot_ok = point != NULL and point[0] == 46 and point[1] == 0
        while True:
            p = self._skip_ws(done)
            if p >= self.end:
                done = p
                break
            c = self.buf[p]
            if self.state == S_START:
                if c == 123:
                    self.top_kind = 1
                    self.state = S_OBJ_FIRST
                    done = p + 1
                elif c == 91:
                    self.top_kind = 2
                    self.bare = True
                    self.state = S_ARR_FIRST
                    done = p + 1
                else:
                    q = self._skip(p, 0)
                    if q < 0:
                        break
                    self.top_kind = 3
                    self.state = S_END
                    done = q
            elif self.state == S_OBJ_FIRST or self.state == S_OBJ_MEMBER:
                if c == 125 and self.state == S_OBJ_FIRST:
                    self.state = S_END
                    done = p + 1
                    continue
                q = self._member(p)
                if q < 0:
                    break
                done = q
            elif self.state == S_OBJ_NEXT:
                if c == 44:
                    self.state = S_OBJ_MEMBER
                    done = p + 1
                elif c == 125:
                    self.state = S_END
                    done = p + 1
                else:
                    self._fail(E_CHAR, p)
                    break
            elif self.state == S_ARR_FIRST or self.state == S_ARR_ELEM or self.state == S_ARR_NEXT:
                # The events: parsed with the GIL released (the hot loop creates no Python object).
                self.halt = False
                with nogil:
                    done = self._array_run(done)
                if self.halt:
                    break
            else:  # S_END
                self._fail(E_EXTRA, p)
                break
        if self.err_code:
            return ERR
        if final:
            if done < self.end:
                self._fail(E_EOF, done)
                return ERR
            if self.state != S_END:
                # chrome://tracing reads an event array cut short (a tracer killed mid-write).
                if not (self.bare and self.state in (S_ARR_FIRST, S_ARR_NEXT, S_ARR_ELEM)):
                    self._fail(E_EOF, self.end)
                    return ERR
        return done

    cdef Py_ssize_t _array_run(self, Py_ssize_t done) except? -1 nogil:
        """Events and their separators from ``done`` while in the event array; returns the new
        ``done``. Sets ``halt`` when the buffer ends inside an element or on an error."""
        cdef Py_ssize_t p, q
        cdef uint8_t c
        while True:
            p = self._skip_ws(done)
            if p >= self.end:
                return p
            c = self.buf[p]
            if self.state == S_ARR_FIRST or self.state == S_ARR_ELEM:
                if c == 93 and self.state == S_ARR_FIRST:
                    self.state = S_END if self.bare else S_OBJ_NEXT
                    return p + 1
                if c == 123:
                    q = self._event(p)
                else:
                    q = self._skip(p, 1)
                    if q >= 0:
                        self.non_objects += 1
                if q < 0:
                    self.halt = True
                    return done
                self.state = S_ARR_NEXT
                done = q
            elif self.state == S_ARR_NEXT:
                if c == 44:
                    self.state = S_ARR_ELEM
                    done = p + 1
                elif c == 93:
                    self.state = S_END if self.bare else S_OBJ_NEXT
                    return p + 1
                else:
                    self._fail(E_CHAR, p)
                    self.halt = True
                    return done
            else:
                return done

    cdef Py_ssize_t _member(self, Py_ssize_t p):
        """A top-level ``"key": value``; "traceEvents": [ opens the event array."""
        cdef int64_t n
        cdef Py_ssize_t q, v
        cdef bytes key
        if self.buf[p] != 34:
            return self._fail(E_CHAR, p)
        q = self._string(p, True, &n)
        if q < 0:
            return q
        key = PyBytes_FromStringAndSize(<char*>self.sbuf, n)
        q = self._skip_ws(q)
        if q >= self.end:
            return self._eof(q)
        if self.buf[q] != 58:
            return self._fail(E_CHAR, q)
        v = self._skip_ws(q + 1)
        if v >= self.end:
            return self._eof(v)
        if key == b"traceEvents":
            # A repeated key: the last one wins (json.loads), so forget the earlier events
            # (and a reader that drained columns already drops those: ``event_resets``).
            self.n_ev = 0
            self.n_st = 0
            self.event_resets += 1
            self.non_objects = 0
            if self.buf[v] == 91:
                self.trace_events = 1
                self.state = S_ARR_FIRST
                return v + 1
            q = self._skip(v, 1)
            if q < 0:
                return q
            self.trace_events = 2
            self.state = S_OBJ_NEXT
            return q
        q = self._skip(v, 1)
        if q < 0:
            return q
        if q - v <= TOP_VALUE_MAX_BYTES:  # a trace is not a metadata store: bound what is kept
            self.top[key.decode()] = PyBytes_FromStringAndSize(<char*>(self.buf + v), q - v)
        self.state = S_OBJ_NEXT
        return q

    # --- results ------------------------------------------------------------------------------
    @property
    def n_events(self):
        return self.n_ev

    @property
    def n_stats(self):
        return self.n_st

    @property
    def n_tokens(self):
        """Distinct tokens (names, ids, values kept as text) so far."""
        return self.n_tok

    @property
    def token_bytes(self):
        """Bytes of the distinct tokens' text so far (the reader turns each into Python strings)."""
        return self.arena_len

    def token(self, int64_t t):
        """Token ``t``'s bytes (prefix first): the reader converts the few it uses, not every one."""
        if t < 0 or t >= self.n_tok:
            raise IndexError("no such token")
        return PyBytes_FromStringAndSize(self.arena + self.tok_off[t], self.tok_len[t])

    def token_ints(self, np):
        """(is_int, value) per token: 1 and its value for a JSON integer token that fits int64
        (an ``R`` token of digits), else 0 (the reader converts those in Python)."""
        cdef int64_t n = self.n_tok
        flags = np.zeros(n, dtype=np.uint8)
        values = np.zeros(n, dtype=np.int64)
        cdef uint8_t[::1] f = flags
        cdef int64_t[::1] v = values
        cdef int64_t t, k, length
        cdef const uint8_t* at
        cdef uint64_t mag
        cdef bint neg, ok
        for t in range(n):
            at = <const uint8_t*>(self.arena + self.tok_off[t])
            length = self.tok_len[t] - 1
            if at[0] != 82 or length == 0 or length > 20:
                continue
            at += 1
            neg = at[0] == 45
            k = 1 if neg else 0
            if k == length:
                continue
            mag = 0
            ok = True
            while k < length:
                if not (48 <= at[k] <= 57) or mag > 922337203685477580ULL:
                    ok = False
                    break
                mag = mag * 10 + (at[k] - 48)
                k += 1
            if ok and mag <= 0x7FFFFFFFFFFFFFFFULL:
                f[t] = 1
                v[t] = -<int64_t>mag if neg else <int64_t>mag
        return flags, values

    # --- one trace scanned by several scanners ----------------------------------------------
    @property
    def between_events(self):
        """True when the scanner stopped just before an element of the event array (after a
        ','): the only place where a scanner started there (``resume_in_events``) may take over."""
        return self.state == S_ARR_ELEM and not self.err_code

    def resume_in_events(self, bint bare):
        """Starts this new scanner just before an element of the event array (``bare``: the
        trace is the array itself, else the array of ``traceEvents``)."""
        self.state = S_ARR_ELEM
        self.bare = bare
        self.top_kind = 2 if bare else 1
        self.trace_events = 1

    def drop_index(self):
        """Frees the token table's hash index (4 bytes per slot, two slots per token or more) once
        the scan is whole: the tokens stay readable by id, no more are interned (``feed`` and
        ``merge_tokens`` refuse)."""
        free(self.slots)
        self.slots = NULL
        self.n_slots = 0
        memset(self.recent, 0xFF, RECENT * sizeof(int32_t))

    def merge_tokens(self, list others not None, np):
        """Merges the token tables of ``others`` (the scanners of the segments after this one's, in
        file order) into this one's, each token given the id one scanner reading the whole file
        would have given it (the order of first occurrences: this table's, then each other's in
        its id order); returns, per scanner of ``others``, the id here of each of its tokens
        (int32). On one thread per scanner: the tokens are hashed, deduplicated in partitions of
        their hashes, numbered per scanner after a count, and copied into this table. The merged
        table has no hash index (``drop_index``): it reads no more bytes. Raises ValueError past
        2^31 tokens."""
        cdef Scanner sc
        cdef int64_t m = len(others) + 1, k, n_all = 0
        if self.slots == NULL:
            raise ValueError("the scanner's token index was dropped: it interns no more tokens")
        scanners = [self, *others]
        offsets = np.zeros(m + 1, dtype=np.int64)
        cdef int64_t[::1] off = offsets
        for k in range(m):
            sc = scanners[k]
            off[k + 1] = off[k] + sc.n_tok
        n_all = off[m]
        hashes = np.empty(n_all, dtype=np.uint64)
        starts = np.empty(n_all, dtype=np.uintp)  # each token's bytes (prefix first)
        lengths = np.empty(n_all, dtype=np.int32)
        first = np.empty(n_all, dtype=np.int64)  # the token's first occurrence (its own index if first)
        ids = np.empty(n_all, dtype=np.int32)
        counts = np.zeros(2 * m, dtype=np.int64)  # per scanner: first occurrences, their bytes
        run_parts(_hash_tokens, [(scanners[k], hashes, starts, lengths, off[k]) for k in range(m)],
                  name="tbprof-json-merge")
        run_parts(_first_occurrences, [(hashes, starts, lengths, first, k, m) for k in range(m)],
                  name="tbprof-json-merge")
        run_parts(_count_first, [(first, lengths, counts, off[k], off[k + 1], k) for k in range(m)],
                  name="tbprof-json-merge")
        cdef int64_t[::1] cnt = counts
        cdef int64_t n_new = 0, new_bytes = 0
        for k in range(1, m):
            n_new += cnt[2 * k]
            new_bytes += cnt[2 * k + 1]
        if self.n_tok + n_new >= 0x7FFFFFF0:
            raise ValueError(ERRORS[E_TOO_MANY])
        if self.tok_cap < self.n_tok + n_new:
            self.tok_cap = self.n_tok + n_new
            self.tok_off = <int64_t*>_grow(self.tok_off, self.tok_cap * sizeof(int64_t))
            self.tok_len = <int32_t*>_grow(self.tok_len, self.tok_cap * sizeof(int32_t))
        if self.arena_cap < self.arena_len + new_bytes:
            self.arena_cap = self.arena_len + new_bytes
            self.arena = <char*>_grow(self.arena, self.arena_cap)
        # Scanner k's first occurrences take the ids and arena bytes after those of scanners < k.
        cdef int64_t id_at = self.n_tok, byte_at = self.arena_len
        jobs = []
        for k in range(m):
            jobs.append((self, first, starts, lengths, ids, off[k], off[k + 1], k == 0, id_at, byte_at))
            if k:
                id_at += cnt[2 * k]
                byte_at += cnt[2 * k + 1]
        run_parts(_number_first, jobs, name="tbprof-json-merge")
        self.n_tok = <int32_t>id_at
        self.arena_len = byte_at
        run_parts(_number_repeats, [(first, ids, off[k], off[k + 1]) for k in range(1, m)], name="tbprof-json-merge")
        self.drop_index()
        return [ids[off[k]:off[k + 1]] for k in range(1, m)]

    def columns_into(self, dict out, int64_t ev_at, int64_t st_at, remap=None):
        """Moves the columns into ``out``'s arrays (those ``columns`` returns, sized for every
        scanner of the trace) from row ``ev_at`` of the events and ``st_at`` of the stats: token
        ids through ``remap`` (``merge_tokens``), stat owners shifted by ``ev_at``. The copy runs
        with the GIL released (scanners of one trace move theirs at once); the C buffers are freed."""
        cdef int64_t n = self.n_ev, m = self.n_st
        cdef bint mapped = remap is not None
        cdef int32_t[::1] rm = remap if mapped else _NO_REMAP
        cdef int32_t[::1] ph = out["ph"], pid = out["pid"], tid = out["tid"], name = out["name"]
        cdef int32_t[::1] cat = out["cat"], id_ = out["id"], bind = out["bind_id"], ts_sub = out["ts_sub_ps"]
        cdef int64_t[::1] ts = out["ts_us"], dur = out["dur_ps"], st_value = out["st_value"]
        cdef uint8_t[::1] flags = out["flags"]
        cdef int32_t[::1] st_owner = out["st_owner"], st_key = out["st_key"]
        cdef int8_t[::1] st_kind = out["st_kind"]
        if ev_at < 0 or st_at < 0 or ev_at + n > 0x7FFFFFFF:
            raise ValueError(ERRORS[E_TOO_MANY])
        for col_name in ("ph", "pid", "tid", "name", "cat", "id", "bind_id", "ts_sub_ps", "ts_us", "dur_ps", "flags"):
            if ev_at + n > out[col_name].shape[0]:
                raise ValueError("columns_into: the arrays are too short")
        for col_name in ("st_owner", "st_key", "st_kind", "st_value"):
            if st_at + m > out[col_name].shape[0]:
                raise ValueError("columns_into: the arrays are too short")
        if mapped and rm.shape[0] < self.n_tok:
            raise ValueError("columns_into: the token map is too short")
        cdef int32_t* r = &rm[0]
        cdef int64_t i
        cdef int32_t shift = <int32_t>ev_at
        cdef int8_t k
        with nogil:
            # Each column freed once moved: the peak is the columns once, plus one column twice.
            if n:
                _tokens_into(&ph[ev_at], self.ev_ph, n, r, mapped)
                free(self.ev_ph); self.ev_ph = NULL
                _tokens_into(&pid[ev_at], self.ev_pid, n, r, mapped)
                free(self.ev_pid); self.ev_pid = NULL
                _tokens_into(&tid[ev_at], self.ev_tid, n, r, mapped)
                free(self.ev_tid); self.ev_tid = NULL
                _tokens_into(&name[ev_at], self.ev_name, n, r, mapped)
                free(self.ev_name); self.ev_name = NULL
                _tokens_into(&cat[ev_at], self.ev_cat, n, r, mapped)
                free(self.ev_cat); self.ev_cat = NULL
                _tokens_into(&id_[ev_at], self.ev_id, n, r, mapped)
                free(self.ev_id); self.ev_id = NULL
                _tokens_into(&bind[ev_at], self.ev_bind, n, r, mapped)
                free(self.ev_bind); self.ev_bind = NULL
                memcpy(&ts[ev_at], self.ev_ts, n * 8)
                free(self.ev_ts); self.ev_ts = NULL
                memcpy(&ts_sub[ev_at], self.ev_ts_sub, n * 4)
                free(self.ev_ts_sub); self.ev_ts_sub = NULL
                memcpy(&dur[ev_at], self.ev_dur, n * 8)
                free(self.ev_dur); self.ev_dur = NULL
                memcpy(&flags[ev_at], self.ev_flags, n)
                free(self.ev_flags); self.ev_flags = NULL
            if m:
                for i in range(m):
                    st_owner[st_at + i] = self.st_owner[i] + shift
                free(self.st_owner); self.st_owner = NULL
                _tokens_into(&st_key[st_at], self.st_key, m, r, mapped)
                free(self.st_key); self.st_key = NULL
                for i in range(m):
                    k = self.st_kind[i]
                    if mapped and (k == KIND_STR or k == K_JSON):
                        st_value[st_at + i] = r[<int32_t>self.st_value[i]]
                    else:
                        st_value[st_at + i] = self.st_value[i]
                free(self.st_value); self.st_value = NULL
                memcpy(&st_kind[st_at], self.st_kind, m)
        self._free_columns()

    cdef void** _event_slot(self, str name):
        if name == "ph":
            return <void**>&self.ev_ph
        if name == "ts_us":
            return <void**>&self.ev_ts
        if name == "ts_sub_ps":
            return <void**>&self.ev_ts_sub
        if name == "dur_ps":
            return <void**>&self.ev_dur
        if name == "pid":
            return <void**>&self.ev_pid
        if name == "tid":
            return <void**>&self.ev_tid
        if name == "name":
            return <void**>&self.ev_name
        if name == "cat":
            return <void**>&self.ev_cat
        if name == "id":
            return <void**>&self.ev_id
        if name == "bind_id":
            return <void**>&self.ev_bind
        return <void**>&self.ev_flags

    def columns(self, np):
        """The columns as numpy arrays (the C buffers are freed as they are copied)."""
        out = {}
        cdef int64_t n = self.n_ev, m = self.n_st
        for name, dtype, width in (("ph", np.int32, 4), ("ts_us", np.int64, 8), ("ts_sub_ps", np.int32, 4),
                                   ("dur_ps", np.int64, 8),
                                   ("pid", np.int32, 4), ("tid", np.int32, 4), ("name", np.int32, 4),
                                   ("cat", np.int32, 4), ("id", np.int32, 4), ("bind_id", np.int32, 4),
                                   ("flags", np.uint8, 1)):
            arr = np.empty(n, dtype=dtype)
            self._copy_event_column(name, arr, n * width)
            out[name] = arr
        for name, dtype, width in (("st_owner", np.int32, 4), ("st_key", np.int32, 4), ("st_kind", np.int8, 1),
                                   ("st_value", np.int64, 8)):
            arr = np.empty(m, dtype=dtype)
            self._copy_stat_column(name, arr, m * width)
            out[name] = arr
        self._free_columns()
        return out

    cdef void _copy_event_column(self, str name, object arr, int64_t nbytes):
        cdef uint8_t[::1] dst = arr.view("u1") if nbytes else None
        cdef void** slot = self._event_slot(name)
        if nbytes:
            memcpy(&dst[0], slot[0], nbytes)
        free(slot[0])
        slot[0] = NULL

    cdef void _copy_stat_column(self, str name, object arr, int64_t nbytes):
        cdef uint8_t[::1] dst = arr.view("u1") if nbytes else None
        cdef void** slot
        if name == "st_owner":
            slot = <void**>&self.st_owner
        elif name == "st_key":
            slot = <void**>&self.st_key
        elif name == "st_kind":
            slot = <void**>&self.st_kind
        else:
            slot = <void**>&self.st_value
        if nbytes:
            memcpy(&dst[0], slot[0], nbytes)
        free(slot[0])
        slot[0] = NULL


cdef int32_t[::1] _NO_REMAP = array_of_one_int32()


cdef int32_t[::1] array_of_one_int32():
    import array
    return array.array("i", [0])


cdef inline void _tokens_into(int32_t* dst, const int32_t* src, int64_t n, const int32_t* remap,
                              bint mapped) noexcept nogil:
    """Token ids src[0:n] into dst, through ``remap`` when ``mapped`` (absent and non-string ids,
    which are negative, as they are)."""
    cdef int64_t i
    cdef int32_t v
    if not mapped:
        memcpy(dst, src, n * 4)
        return
    for i in range(n):
        v = src[i]
        dst[i] = remap[v] if v >= 0 else v


cdef void _exact_us(const uint8_t* b, Py_ssize_t p, Py_ssize_t q, int64_t* whole_us, int32_t* sub_ps) noexcept nogil:
    """The checked JSON number text b[p:q], in microseconds, as whole microseconds (the floor)
    and the picoseconds above them, from its decimal digits (no float on the way: a float64
    holds an epoch-based microsecond timestamp only to a quarter microsecond, and rounds a
    Kineto one to the nearest 2^-10 µs). Digits below the picosecond round to the nearest
    picosecond, a half away from zero. Beyond int64 microseconds: TS_MISSING."""
    cdef bint neg = b[p] == 45
    cdef Py_ssize_t i = p + 1 if neg else p
    cdef Py_ssize_t int0, int1, frac0, frac1, k, n_digits
    cdef int64_t exp10 = 0, point, whole = 0, sub = 0, place
    cdef bint exp_neg = False
    cdef int d
    int0 = i
    while i < q and 48 <= b[i] <= 57:
        i += 1
    int1 = i
    frac0 = frac1 = i
    if i < q and b[i] == 46:
        frac0 = i + 1
        i = frac0
        while i < q and 48 <= b[i] <= 57:
            i += 1
        frac1 = i
    if i < q and (b[i] == 101 or b[i] == 69):
        i += 1
        if i < q and (b[i] == 43 or b[i] == 45):
            exp_neg = b[i] == 45
            i += 1
        while i < q:
            if exp10 < 100000000:  # saturates: any larger exponent gives 0 or out of range alike
                exp10 = exp10 * 10 + (b[i] - 48)
            i += 1
        if exp_neg:
            exp10 = -exp10
    # The digits d_0 d_1 ... (integer part, then fraction): d_k weighs 10^(point - 1 - k) µs.
    n_digits = (int1 - int0) + (frac1 - frac0)
    point = (int1 - int0) + exp10
    for k in range(n_digits):
        d = (b[int0 + k] if k < int1 - int0 else b[frac0 + k - (int1 - int0)]) - 48
        if k < point:
            if whole > (INT64_MAX - d) // 10:
                whole_us[0] = TS_MISSING
                return
            whole = whole * 10 + d
        elif k < point + 6:
            place = point + 5 - k  # the power of ten of this digit in picoseconds
            while place > 0:
                d *= 10
                place -= 1
            sub += d
        elif k == point + 6:
            if d >= 5:
                sub += 1
            break
        else:
            break
    k = n_digits
    while k < point and whole != 0:  # an exponent past the digits: trailing zeros
        if whole > INT64_MAX // 10:
            whole_us[0] = TS_MISSING
            return
        whole *= 10
        k += 1
    if sub == 1000000:  # rounded up into the next microsecond
        if whole == INT64_MAX:
            whole_us[0] = TS_MISSING
            return
        whole += 1
        sub = 0
    if neg and sub:
        whole = -whole - 1
        sub = 1000000 - sub
    elif neg:
        whole = -whole
    whole_us[0] = whole
    sub_ps[0] = <int32_t>sub


cdef inline int64_t _bits(double d) nogil:
    cdef int64_t out
    memcpy(&out, &d, 8)
    return out


cdef inline int _put_utf8(uint8_t* out, uint32_t u) nogil:
    if u < 0x80:
        out[0] = <uint8_t>u
        return 1
    if u < 0x800:
        out[0] = <uint8_t>(0xC0 | (u >> 6))
        out[1] = <uint8_t>(0x80 | (u & 0x3F))
        return 2
    if u < 0x10000:
        out[0] = <uint8_t>(0xE0 | (u >> 12))
        out[1] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
        out[2] = <uint8_t>(0x80 | (u & 0x3F))
        return 3
    out[0] = <uint8_t>(0xF0 | (u >> 18))
    out[1] = <uint8_t>(0x80 | ((u >> 12) & 0x3F))
    out[2] = <uint8_t>(0x80 | ((u >> 6) & 0x3F))
    out[3] = <uint8_t>(0x80 | (u & 0x3F))
    return 4


cdef inline uint32_t _get_utf8(const uint8_t* s, int n) nogil:
    if n == 2:
        return ((s[0] & 0x1F) << 6) | (s[1] & 0x3F)
    if n == 3:
        return ((s[0] & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)
    return ((s[0] & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F)


# --- the token tables of one trace's scanners merged (Scanner.merge_tokens) ------------------------
def _hash_tokens(Scanner sc, uint64_t[::1] hashes, size_t[::1] starts, int32_t[::1] lengths, int64_t at):
    cdef int64_t t
    cdef const char* tok
    with nogil:
        for t in range(sc.n_tok):
            tok = sc.arena + sc.tok_off[t]
            hashes[at + t] = _hash(<const uint8_t*>tok + 1, sc.tok_len[t] - 1, <uint8_t>tok[0])
            starts[at + t] = <size_t>tok
            lengths[at + t] = sc.tok_len[t]


def _first_occurrences(const uint64_t[::1] hashes, const size_t[::1] starts, const int32_t[::1] lengths,
                       int64_t[::1] first, int64_t part, int64_t parts):
    """Partition ``part`` of ``parts`` (tokens by their hash's high bits): each token's first
    occurrence in the order of all the scanners' tokens."""
    cdef int64_t n = hashes.shape[0], g, i, mine = 0, n_slots = 16, mask, other
    cdef int64_t* slots
    for g in range(n):
        if <int64_t>((hashes[g] >> 40) % <uint64_t>parts) == part:
            mine += 1
    while n_slots < 2 * mine:
        n_slots *= 2
    slots = <int64_t*>malloc(n_slots * sizeof(int64_t))
    if slots == NULL:
        raise MemoryError()
    mask = n_slots - 1
    with nogil:
        memset(slots, 0xFF, n_slots * sizeof(int64_t))
        for g in range(n):
            if <int64_t>((hashes[g] >> 40) % <uint64_t>parts) != part:
                continue
            i = <int64_t>(hashes[g] & <uint64_t>mask)
            while True:
                other = slots[i]
                if other < 0:
                    slots[i] = g
                    first[g] = g
                    break
                if (hashes[other] == hashes[g] and lengths[other] == lengths[g]
                        and memcmp(<const void*>starts[other], <const void*>starts[g], lengths[g]) == 0):
                    first[g] = other
                    break
                i = (i + 1) & mask
    free(slots)


def _count_first(const int64_t[::1] first, const int32_t[::1] lengths, int64_t[::1] counts, int64_t lo, int64_t hi,
                 int64_t k):
    cdef int64_t g, n = 0, nbytes = 0
    with nogil:
        for g in range(lo, hi):
            if first[g] == g:
                n += 1
                nbytes += lengths[g]
    counts[2 * k] = n
    counts[2 * k + 1] = nbytes


def _number_first(Scanner into, const int64_t[::1] first, const size_t[::1] starts, const int32_t[::1] lengths,
                  int32_t[::1] ids, int64_t lo, int64_t hi, bint own, int64_t id_at, int64_t byte_at):
    """A scanner's first occurrences (the tokens ``lo:hi``) numbered from ``id_at`` and copied into
    ``into``'s table at ``byte_at`` (``own``: ``into``'s own tokens, numbered and there already)."""
    cdef int64_t g
    if own:
        with nogil:
            for g in range(lo, hi):
                ids[g] = <int32_t>(g - lo)
        return
    with nogil:
        for g in range(lo, hi):
            if first[g] != g:
                continue
            memcpy(into.arena + byte_at, <const void*>starts[g], lengths[g])
            into.tok_off[id_at] = byte_at
            into.tok_len[id_at] = lengths[g]
            ids[g] = <int32_t>id_at
            id_at += 1
            byte_at += lengths[g]


def _number_repeats(const int64_t[::1] first, int32_t[::1] ids, int64_t lo, int64_t hi):
    cdef int64_t g
    with nogil:
        for g in range(lo, hi):
            if first[g] != g:
                ids[g] = ids[first[g]]


cdef void* _grow(void* ptr, int64_t nbytes) except NULL nogil:
    cdef void* out = realloc(ptr, nbytes if nbytes > 0 else 1)
    if out == NULL:
        with gil:
            raise MemoryError()
    return out
