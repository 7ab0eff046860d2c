"""Reader of Chrome trace JSON (``*.trace.json(.gz)``, TF1 ``timeline-<step>.json``, tfprof
timeline JSON, PyTorch ``*.pt.trace.json``) into the same ``ProfileStore`` as XSpace.

Mapping (format ``"chrome_trace"``):

- a plane per ``pid`` (named by ``process_name`` metadata, ordered by ``process_sort_index``),
  a line per ``tid`` (named by ``thread_name``, ordered by ``thread_sort_index``);
- ``X`` complete events, ``B``/``E`` pairs (matched per thread, last-open-first-closed, as
  chrome://tracing does; the ``E``'s args are merged into the slice) and ``i``/``I`` instant
  events (duration 0) become events; names are interned, ``args`` become event stats
  (ints, floats, strings; bools as 0/1; lists and objects as their JSON text); ``cat`` is a
  stat of the event metadata (one metadata row per distinct (name, cat));
- ``C`` counters become one *counter line* per (pid, counter name[, id]): a zero-duration
  event per sample whose stats are the series values. ``plane.plane_stats["counter_lines"]``
  lists those line indices (see ``is_counter_line``) so event analyses can skip them;
- ``N``/``O``/``D`` object events (TF1 timelines' tensors) become one event per object
  lifetime (creation to deletion, or to the end of the trace), carrying the last snapshot's
  args as stats;
- ``s``/``t``/``f`` flow points are bound to a slice of their thread (the deepest slice
  enclosing the point; ``f`` without ``"bp": "e"`` binds to the next slice starting at or
  after it, as the format specifies) and stored as the stat ``flow_id`` on that event: every
  event of one flow chain carries the same ``flow_id``, the chain's order is their time
  order, and the stat ``flow_category`` names the chain's ``cat``.

PyTorch (Kineto) traces: the GPU processes (labelled ``GPU <n>``) become ``/device:GPU:<n>``
planes and the profiled process (``CPU``) ``/host:CPU``, as in an XSpace, with the
``deviceProperties`` as plane stats; ``deviceProperties``, ``distributedInfo`` and the
versions are kept in ``store.metadata``.

Timestamps are microseconds in the format; they are stored as picoseconds relative to the
earliest event, exactly as the file's decimal text says (the scanner reads the digits, no
float on the way: a float64 holds an epoch-based microsecond timestamp (~1.8e15) only to a
quarter microsecond, and a Kineto one (~5e12) lands a nanosecond off a third of the time).
Digits below the picosecond round to the nearest picosecond (a half away from zero).

Reading: the file is read in bounded windows (local ``pread``, ranged GETs for a URL, gzip
decompressed as a stream) and tokenised by the compiled scanner ``_core/jsonscan.pyx`` straight
into columns (phase, ts, dur, pid/tid/name/cat/id as interned tokens, every ``args`` entry as a
stat row); the builder below works on those columns with numpy and runs Python once per
distinct token, thread or object, never once per event. Peak memory is the columns (a small
multiple of the JSON text: bench/measurements.md#conversion-memory), not the file nor a Python
object per event. The JSON rules the scanner
follows, and where they differ from ``json.loads``, are in docs/differences.md.

Tolerated, counted in ``store.warnings`` (the rest of the trace is still shown):
events without a numeric ``ts``, ``X`` events with a negative or non-numeric ``dur`` or one
that ends past the span limit (``chrome_events.MAX_SPAN_US`` after the first event) (dropped),
``E`` without an open ``B`` (dropped), ``B`` never closed (ends at the end of the trace), flow
points that bind to no slice (dropped), unsupported phases (async ``b``/``e``/``n``,
``S``/``T``/``F``, ``P`` samples, ...: ignored).
Not tolerated (``ProfileReadError``): bytes that are not JSON, JSON that is not a trace
(neither an event array nor an object with ``traceEvents``), an empty file.
"""

from __future__ import annotations

import itertools
import json
import math
import zlib
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tbprof._core import jsonscan, kernels
from tbprof.cache.memory_guard import decompressed_limit_bytes, release_free_memory
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.fs import Location, UrlPath, shown_name
from tbprof.fs import location as as_location
from tbprof.readers import chrome_scan, kineto
from tbprof.readers.byte_sources import LocalFile, StreamSource, UrlFile
from tbprof.readers.chrome_columns import MemoryWork, Spill, StatSink, Work, chunks
from tbprof.readers.chrome_events import MAX_ABS_TS_US, MAX_SPAN_PS, MAX_SPAN_US
from tbprof.readers.chrome_scan import Scan
from tbprof.readers.files import GZIP_MAGIC
from tbprof.readers.plane_builder import line_rows
from tbprof.readers.step_files import json_host
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique
from tbprof.store.markers import COUNTER_LINES_STAT, FLOW_CATEGORY_STAT, FLOW_ID_STAT
from tbprof.store.strings import StringTable

FORMAT = "chrome_trace"
GLOBAL_PID = "Global instant events"

_PS_PER_US = 1_000_000
_NO_TIME = jsonscan.TIME_MISSING  # a ts or dur that is absent, not a number or beyond the limits
_INSTANT_PHASES = frozenset(("i", "I", "R"))
_OBJECT_PHASES = frozenset(("N", "O", "D"))
_FLOW_PHASES = frozenset(("s", "t", "f"))


def host_of(path: Location) -> str:
    """The host a file is named after, as listed (a non-UTF-8 name shows its bytes as \\xNN)."""
    return json_host(shown_name(path.name))


# Bytes read per window, and the most decompressed bytes one gzip step may produce: the reader's
# memory is its columns, not the file (see read_chrome_trace).
WINDOW_BYTES = 16 << 20
# zlib gets this much input per step (see _gunzip_windows); real files have a member or a few.
_GZIP_INPUT_BYTES = 64 << 10
MAX_GZIP_MEMBERS = 4096


def read_chrome_trace(path: str | Location, host: str | None = None) -> tables.ProfileStore:
    """Reads one Chrome trace JSON file (optionally gzip-compressed, detected by content).

    The file is read in windows of ``WINDOW_BYTES`` (``pread`` locally, ranged GETs for a URL,
    gzip decompressed as a stream with bounded output per step) and tokenised window by window
    by the compiled scanner (``_core/jsonscan.pyx``): peak memory is the event and stat columns,
    never the file's text nor a Python object per event. A large local file that is not gzip is
    scanned in segments on several threads (``chrome_scan.scan_file``).
    """
    path = as_location(path)
    f: StreamSource = UrlFile(path, WINDOW_BYTES) if isinstance(path, UrlPath) else LocalFile(Path(path))
    try:
        if f.size == 0:
            raise ProfileReadError(str(path), "the file is empty (0 bytes)")
        host = host if host is not None else host_of(path)
        threads = chrome_scan.segment_threads(f.size)
        if isinstance(f, LocalFile) and threads > 1 and f.pread(0, 2) != GZIP_MAGIC:
            store = store_of(chrome_scan.scan_file(f, WINDOW_BYTES, str(path), threads), str(path), host)
        else:
            store = read_windows(file_windows(f, WINDOW_BYTES), str(path), host, WINDOW_BYTES)
        f.check_unchanged()
    finally:
        f.close()
    return store


def chrome_trace_from_bytes(data: bytes, source: str, host: str, window_bytes: int = WINDOW_BYTES,
                            ) -> tables.ProfileStore:
    """Reads a Chrome trace held in memory (``window_bytes``: how much the scanner sees at once)."""
    if len(data) == 0:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    view = memoryview(data)
    return read_windows((bytes(view[i:i + window_bytes]) for i in range(0, len(data), window_bytes)),
                         source, host, window_bytes)


def file_windows(f: StreamSource, window_bytes: int) -> Iterator[bytes]:
    pos = 0
    while pos < f.size:
        n = min(window_bytes, f.size - pos)
        yield f.pread(pos, n)
        pos += n


def _gunzip_windows(raw: Iterator[bytes], source: str, out_bytes: int, spill: Spill | None = None) -> Iterator[bytes]:
    """Decompresses every gzip member of the stream, at most ``out_bytes`` per step. A gzip bomb
    is refused before its columns fill memory (or, streaming, the disk: ``spill.json_limit_bytes``).

    zlib copies the input it did not use into ``unused_data`` at a member's end: it is handed at
    most ``_GZIP_INPUT_BYTES`` at a time, and at most ``MAX_GZIP_MEMBERS`` members are read, so a
    stream of many tiny members costs time linear in its length, not members x window."""
    limit = decompressed_limit_bytes() if spill is None else spill.json_limit_bytes
    total = 0
    members = 0
    d = zlib.decompressobj(wbits=31)  # 31: gzip header and trailer
    fed = False  # the current member has had input
    full = False  # the last step filled its bound: zlib may hold more output
    data = b""  # the input being read, from ``pos``
    pos = 0
    try:
        for chunk in raw:
            data = data[pos:] + chunk if pos < len(data) else chunk  # at most a byte is left over
            pos = 0
            while pos < len(data) or full:
                if d.eof:  # a member ended: another may follow (after padding)
                    pos = _skip_zeros(data, pos)
                    rest = data[pos:pos + 2]
                    if len(rest) < 2 and GZIP_MAGIC.startswith(rest):
                        break  # wait for more input
                    if not rest.startswith(GZIP_MAGIC):
                        return  # trailing garbage after the last member: ignored, as gzip(1) does
                    members += 1
                    if members >= MAX_GZIP_MEMBERS:
                        raise ProfileReadError(source, f"the gzip stream has more than {MAX_GZIP_MEMBERS:,} members")
                    d, fed = zlib.decompressobj(wbits=31), False
                with memoryview(data) as view:
                    piece = view[pos:pos + _GZIP_INPUT_BYTES]
                    out = d.decompress(piece, out_bytes)
                    pos += len(piece) - len(d.unused_data if d.eof else d.unconsumed_tail)
                    piece.release()
                fed = True
                full = len(out) == out_bytes and not d.eof
                total += len(out)
                if limit is not None and total > limit:
                    if spill is not None:
                        raise MemoryRefusal(source, spill.too_much_json(limit))
                    raise MemoryRefusal(source, (
                        f"the gzip content expands beyond {limit / 1e6:.0f} MB, more than this machine can "
                        "convert now; open it on a machine with more memory, or set $TBPROF_CONVERT_MEMORY_BYTES"))
                if out:
                    yield out
        while full:
            out = d.decompress(b"", out_bytes)
            full = len(out) == out_bytes and not d.eof
            if out:
                yield out
        if fed and not d.eof:
            raise ProfileReadError(source, "the gzip stream is damaged or truncated: it ends early")
    except zlib.error as e:
        raise ProfileReadError(source, f"the gzip stream is damaged or truncated: {e}") from e


def _skip_zeros(data: bytes, pos: int) -> int:
    """The first offset from ``pos`` that is not a zero byte (gzip's padding between members),
    looked at a block at a time (no copy of the rest of ``data``)."""
    while pos < len(data):
        block = data[pos:pos + 4096]
        left = len(block.lstrip(b"\x00"))
        pos += len(block) - left
        if left:
            break
    return pos


def read_windows(raw: Iterator[bytes], source: str, host: str, window_bytes: int, spill: Spill | None = None,
                  ) -> tables.ProfileStore:
    """The store of a Chrome trace's bytes; ``spill`` (a streaming conversion) drains the
    scanner's columns to files of the cache entry being written and builds there."""
    head = b""
    for chunk in raw:  # enough bytes to tell gzip by its magic
        head += chunk
        if len(head) >= 2:
            break
    if not head:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    windows: Iterator[bytes] = itertools.chain([head], raw)
    if head[:2] == GZIP_MAGIC:
        windows = _gunzip_windows(windows, source, window_bytes, spill)
    return store_of(chrome_scan.scan(windows, source, spill), source, host, spill)


def store_of(scan: Scan, source: str, host: str, spill: Spill | None = None) -> tables.ProfileStore:
    """The store of what the scanner found."""
    if scan.top_kind == 1 and scan.trace_events == 2:
        raise ProfileReadError(source, "not a Chrome trace: 'traceEvents' is not a list")
    if not (scan.top_kind == 2 or (scan.top_kind == 1 and scan.trace_events == 1)):
        raise ProfileReadError(source, "not a Chrome trace: expected a JSON array of events or an object with "
                               "a 'traceEvents' array")
    top: dict[str, Any] = {}
    try:
        # Decoded only for the keys _trace_metadata keeps (the scanner returns every one's text).
        for key, text in scan.top.items():
            if key in _METADATA_KEYS:
                top[key] = _loads(text)
    except RecursionError:
        raise ProfileReadError(source, "not a Chrome trace: the JSON is nested too deeply") from None
    except _LongNumber as e:
        e.field = f"the top-level {key!r}"
        raise ProfileReadError(source, e.reason()) from None
    metadata = _trace_metadata(source, top) if scan.top_kind == 1 else None
    try:
        store = _Builder(source, host, spill.work if spill is not None else None).build(scan)
    except RecursionError:  # args nested just below the scanner's limit, re-encoded as text
        raise ProfileReadError(source, "an event's args are nested too deeply") from None
    except _LongNumber as e:
        raise ProfileReadError(source, e.reason()) from None
    if metadata is not None:
        store.metadata = metadata
    kineto.finish(store)
    release_free_memory()  # the builder's temporaries, for the tools that run next
    return store


# Top-level keys of a trace object worth keeping (Kineto writes them beside ``traceEvents``):
# the GPUs (``deviceProperties``), the rank and process groups (``distributedInfo``), versions.
_METADATA_KEYS = ("deviceProperties", "distributedInfo", "schemaVersion", "cuda_runtime_version",
                  "cuda_driver_version", "cupti_version", "displayTimeUnit", "baseTimeNanoseconds", "profile_memory")
_METADATA_MAX_BYTES = 1 << 20  # a trace is not a metadata store: bound what is kept


class _LongNumber(ValueError):
    """A JSON integer with more digits than Python converts (``sys.get_int_max_str_digits``)."""

    def __init__(self, digits: int) -> None:
        super().__init__(f"an integer of {digits} digits")
        self.digits = digits
        self.token = _MISSING  # the token holding it, when it came from the token table
        self.field = "a value"

    def reason(self) -> str:
        return f"{self.field} holds an integer of {self.digits} digits, more than tbprof reads"


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # valid digits: only too many of them
        raise _LongNumber(len(text.lstrip("-"))) from None


def _loads(text: str | bytes) -> Any:
    """``json.loads`` whose over-long integers raise ``_LongNumber`` (a refusal naming the field)."""
    return json.loads(text, parse_int=_parse_int)


# Token columns of the scanner, with the field each holds (to name where a bad value is).
_TOKEN_FIELDS = (("name", "an event's 'name'"), ("pid", "an event's 'pid'"), ("tid", "an event's 'tid'"),
                 ("id", "an event's 'id'"), ("cat", "an event's 'cat'"), ("ph", "an event's 'ph'"),
                 ("st_key", "an event's args"), ("st_value", "an event's args"))


def _field_of(cols: dict[str, np.ndarray], token: int) -> str:
    """The field of the token columns still held that holds ``token``."""
    for column, field in _TOKEN_FIELDS:
        values = cols.get(column)
        if values is not None and token >= 0 and bool((values == token).any()):
            return field
    return "a value"


_INT64 = 1 << 63
# Kineto writes a rank and a world size as C ints.
_RANK_FIELDS = ("rank", "world_size")


def _check_metadata(source: str, key: str, value: Any) -> None:
    """Refuses (naming the field) metadata a reader or tool would index with or store as int64."""
    stack: list[tuple[str, Any]] = [(key, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool) and not -_INT64 <= v < _INT64:
            raise ProfileReadError(source, f"the top-level {where!r} is {v.bit_length()} bits, more than 64")
        if isinstance(v, dict):
            stack.extend((f"{where}.{k}", x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))
    if value is None:  # written as null: absent
        return
    if key == "deviceProperties" and not (isinstance(value, list) and all(isinstance(d, dict) for d in value)):
        raise ProfileReadError(source, "the top-level 'deviceProperties' is not a list of objects (one per GPU)")
    if key == "distributedInfo":
        if not isinstance(value, dict):
            raise ProfileReadError(source, "the top-level 'distributedInfo' is not an object")
        for field in _RANK_FIELDS:
            n = value.get(field)
            if n is not None and (not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 1 << 31):
                raise ProfileReadError(source, f"the top-level 'distributedInfo.{field}' is not an integer "
                                       f"from 0 to 2**31-1")
    if key == "baseTimeNanoseconds" and (isinstance(value, bool) or not isinstance(value, int)
                                         or value < 0):
        raise ProfileReadError(source, "the top-level 'baseTimeNanoseconds' is not a count of nanoseconds")


def _trace_metadata(source: str, doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _METADATA_KEYS:
        if key in doc:
            value = doc[key]
            _check_metadata(source, key, value)
            try:
                text = json.dumps(value)
            except (TypeError, ValueError):
                continue
            if len(text) <= _METADATA_MAX_BYTES:
                out[key] = json.loads(text)
    return out


def _hashable(value: Any) -> Hashable:
    if value is None or isinstance(value, (int, str, float)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


_MISSING = -1  # token id of an absent field
_GLOBAL = -3  # token id standing for the global-instant track's pid / tid


class _Tokens:
    """The scanner's token table, each token converted once per use (a name, an identity, ...)."""

    def __init__(self, raw: list[bytes]) -> None:
        self.raw = raw
        self._values: dict[int, Any] = {}

    def value(self, t: int) -> Any:
        """The field's value as the reader uses it: a string as itself, lists and objects as their
        JSON text (at most 4 KiB), a non-finite number as its text, absent as None."""
        if t == _MISSING:
            return None
        if t == _GLOBAL:
            return GLOBAL_PID
        found = self._values.get(t, self)
        if found is not self:
            return found
        raw = self.raw[t]
        text = raw[1:]
        if raw[:1] == b"S":
            v: Any = text.decode("utf-8")
        elif len(text) < 1000 and (text.isdigit() or (text[:1] == b"-" and text[1:].isdigit())):
            v = int(text)  # the common id: an integer, without json.loads' cost
        else:
            try:
                v = _loads(text)
            except _LongNumber as e:
                e.token = t
                raise
            if isinstance(v, float) and not math.isfinite(v):
                v = str(v)
            elif v is not None and not isinstance(v, (str, int, float)):
                v = json.dumps(v, sort_keys=True, default=str)[:4096]
        self._values[t] = v
        return v

    def key(self, t: int) -> Hashable:
        return _hashable(self.value(t))

    def text(self, t: int) -> str:
        """A name as text (absent: "")."""
        v = self.value(t)
        return "" if t == _MISSING else v if isinstance(v, str) else str(v)

    def canonical(self, t: int) -> str:
        """A string token's text, or a JSON token as ``json.dumps(v, sort_keys=True)``."""
        raw = self.raw[t]
        if raw[:1] == b"S":
            return raw[1:].decode("utf-8")
        try:
            return json.dumps(_loads(raw[1:]), sort_keys=True, default=str)
        except _LongNumber as e:
            e.field = "an event's args"  # canonical text is asked for args values only
            raise


def _lut_table(parts: Iterable[np.ndarray], fn: Any, dtype: Any, n_tokens: int) -> np.ndarray:
    """``fn(t)`` at ``t + 3`` for every token id ``t`` (ids >= -3) found in ``parts``, computed once per
    distinct id in id order (first seen in the file first, so string ids are reproducible)."""
    mask = np.zeros(n_tokens + 3, dtype=np.bool_)
    for toks in parts:
        mask[toks + 3] = True
    used = np.flatnonzero(mask)
    table = np.zeros(n_tokens + 3, dtype=dtype)
    table[used] = [fn(int(t) - 3) for t in used.tolist()]
    return table


def _lut(toks: np.ndarray, fn: Any, dtype: Any, n_tokens: int) -> np.ndarray:
    """``fn(t)`` for every token id in ``toks`` (see ``_lut_table``)."""
    if toks.shape[0] == 0:
        return np.zeros(0, dtype=dtype)
    return _lut_table([toks], fn, dtype, n_tokens)[toks + 3]


class _TokenTable:
    """``fn(t)`` per token id, computed once per distinct id across calls: each call computes the
    ids it is the first to see, in ascending order (the order a fresh ``_lut`` per call would
    intern new strings in), without a table over every token per call."""

    def __init__(self, fn: Callable[[int], Any], dtype: Any, n_tokens: int) -> None:
        self.fn = fn
        self.done = np.zeros(n_tokens + 3, dtype=np.bool_)
        self.table = np.zeros(n_tokens + 3, dtype=dtype)

    def __call__(self, toks: np.ndarray) -> np.ndarray:
        at = toks.astype(np.int64) + 3
        new = at[~self.done[at]]
        if new.shape[0]:
            ids = sorted_unique(new)
            self.table[ids] = [self.fn(int(t) - 3) for t in ids.tolist()]
            self.done[ids] = True
        return self.table[at]


def _line_batches(line_start: np.ndarray, step: int) -> Iterator[tuple[int, int]]:
    """[a, b) row ranges of whole lines (``line_start``: each line's first row, then the end), of
    at most ``step`` rows each unless one line alone is longer."""
    n = int(line_start[-1])
    a = 0
    while a < n:
        # The last line boundary within a + step, else the first one after a.
        b = int(line_start[int(np.searchsorted(line_start, a + step, "right")) - 1])
        if b <= a:
            b = int(line_start[int(np.searchsorted(line_start, a, "right"))])
        yield a, b
        a = b


def _where(codes: np.ndarray, code: int, step: int) -> np.ndarray:
    """Indices of the events of phase code ``code``, found a chunk at a time."""
    parts = [lo + np.flatnonzero(codes[lo:hi] == code) for lo, hi in chunks(codes.shape[0], step)]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# Phase codes of the reader (the scanner gives each event's phase as a token).
_PH_NONE, _PH_X, _PH_BE, _PH_INSTANT, _PH_C, _PH_OBJECT, _PH_FLOW, _PH_M, _PH_OTHER = range(9)
_PHASE_CODES = {"X": _PH_X, "B": _PH_BE, "E": _PH_BE, "i": _PH_INSTANT, "I": _PH_INSTANT, "R": _PH_INSTANT,
                "C": _PH_C, "N": _PH_OBJECT, "O": _PH_OBJECT, "D": _PH_OBJECT, "s": _PH_FLOW, "t": _PH_FLOW,
                "f": _PH_FLOW, "M": _PH_M, "": _PH_NONE}


def _earliest(whole_us: np.ndarray, sub_ps: np.ndarray) -> tuple[int, int]:
    """The smallest (whole µs, picoseconds above them) of a non-empty set of times."""
    w = int(whole_us.min())
    return w, int(sub_ps[whole_us == w].min())


def _latest(whole_us: np.ndarray, sub_ps: np.ndarray) -> tuple[int, int]:
    """The largest (whole µs, picoseconds above them) of a non-empty set of times."""
    w = int(whole_us.max())
    return w, int(sub_ps[whole_us == w].max())


def _kept(code: np.ndarray) -> np.ndarray:
    """Events of a phase tbprof shows (not metadata, not absent, not unsupported)."""
    return (code != _PH_NONE) & (code != _PH_M) & (code != _PH_OTHER)


# Anonymous bytes per row of the steps that hold whole columns even when streaming: events of the
# phases read whole (begin/end, instants, counters, objects: indices, times, lines, names and
# their sorts), flow points of a part (binding, chains), one thread's rows sorted by time.
_BYTES_PER_WHOLE_EVENT = 128
_BYTES_PER_FLOW = 160
_BYTES_PER_FLOW_KEY = 48  # every point's index, (cat, id) keys and part, while the parts are bound
_SORT_BYTES_PER_ROW = 64
# Stat owners counted per slice (bounds the counting's temporaries).
_STAT_SLICE = 1 << 20
# Events whose args are turned into stat rows per batch (a few int64 temporaries per stat row).
_ARGS_EVENTS = 1 << 17
# Stat rows freed between two hand-backs of the C heap's free pages while they are placed.
_TRIM_BYTES = 16 << 20


class _Builder:
    """Builds the store from the scanner's columns: numpy over all events, Python once per
    distinct token, thread or object (never once per event)."""

    def __init__(self, source: str, host: str, work: Work | None = None) -> None:
        self.source = source
        self.host = host
        self.work: Work = work if work is not None else MemoryWork()
        self.strings = StringTable()
        self.warnings: list[str] = []
        self.line_keys: dict[tuple[Hashable, Hashable, str], int] = {}  # (pid, tid|counter, kind) -> line
        self.process_names: dict[Hashable, str] = {}
        self.process_labels: dict[Hashable, str] = {}
        self.process_sort: dict[Hashable, float] = {}
        self.thread_names: dict[tuple[Hashable, Hashable], str] = {}
        self.thread_sort: dict[tuple[Hashable, Hashable], float] = {}
        # Event columns in collection order (start: picoseconds from the earliest event).
        self.ev_line = self.work.sink("ev_line", np.int64)
        self.ev_start = self.work.sink("ev_start_ps", np.int64)
        self.ev_dur = self.work.sink("ev_dur_ps", np.int64)
        self.ev_name = self.work.sink("ev_name", np.int32)
        self.ev_cat = self.work.sink("ev_cat", np.int32)
        self.n_events = 0
        # Stats: (event index in collection order, stat name id, kind, value).
        self.st_rows = StatSink(self.work)
        self.counter_lines: set[int] = set()
        self.t0 = (0, 0)  # the earliest kept event's (whole µs, picoseconds above them)
        self.trace_end_ps = 0
        self.tok = _Tokens([])
        self.n_tokens = 0
        self.int_flag = np.zeros(0, np.uint8)  # per token: an integer that fits int64 (value below)
        self.int_value = np.zeros(0, np.int64)
        self.cols: dict[str, np.ndarray] = {}
        self._stat_bounds: np.ndarray | None = None
        # Args keys and text values -> string ids (set once the token table is known).
        self._arg_keys = _TokenTable(int, np.int32, 0)
        self._arg_texts = _TokenTable(int, np.int64, 0)

    # --- helpers ---------------------------------------------------------------------------
    def _warn(self, count: int, what: str) -> None:
        if count:
            self.warnings.append(f"{count} {what}")

    def _line(self, pid: Any, tid: Any, kind: str = "thread") -> int:
        key = (_hashable(pid), _hashable(tid), kind)
        found = self.line_keys.get(key)
        if found is None:
            found = self.line_keys[key] = len(self.line_keys)
        return found

    def _lines(self, pid_tok: np.ndarray, tid_tok: np.ndarray) -> np.ndarray:
        """Line index of each (pid, tid) token pair: ``_line`` once per distinct pair, in the
        order the pairs first appear."""
        if pid_tok.shape[0] == 0:
            return np.zeros(0, np.int64)
        code = (pid_tok.astype(np.int64) + 3) * (self.n_tokens + 3) + (tid_tok.astype(np.int64) + 3)
        uniq, first, inv = np.unique(code, return_index=True, return_inverse=True)
        mapping = np.zeros(uniq.shape[0], dtype=np.int64)
        for u in np.argsort(first, kind="stable").tolist():
            pair = int(uniq[u])
            p, t = pair // (self.n_tokens + 3) - 3, pair % (self.n_tokens + 3) - 3
            tid = "Global" if t == _GLOBAL else self.tok.value(t)
            mapping[u] = self._line(self.tok.value(p), tid)
        return mapping[inv.reshape(-1)]

    def _key_ids(self, toks: np.ndarray) -> np.ndarray:
        """One id per distinct identity of the token ids ``toks``, as a dict keyed by the values
        would give (``1``, ``1.0`` and ``true`` are one key): integer tokens are numbered in
        bulk, the others one by one in Python."""
        if toks.shape[0] == 0:
            return np.zeros(0, np.int64)
        mask = np.zeros(self.n_tokens + 3, dtype=np.bool_)
        mask[toks + 3] = True
        used = np.flatnonzero(mask) - 3
        flag = np.zeros(used.shape[0], dtype=np.bool_)
        real = used >= 0
        flag[real] = self.int_flag[used[real]] == 1
        ints = sorted_unique(self.int_value[used[flag]])
        table = np.zeros(self.n_tokens + 3, dtype=np.int64)
        table[used[flag] + 3] = np.searchsorted(ints, self.int_value[used[flag]])
        others: dict[Hashable, int] = {}
        for t in used[~flag].tolist():
            key = self.tok.key(t)
            if isinstance(key, int) or (isinstance(key, float) and key.is_integer()):  # floats here are finite
                as_int = int(key)
                at = int(np.searchsorted(ints, as_int)) if -(1 << 63) <= as_int < (1 << 63) else ints.shape[0]
                if at < ints.shape[0] and int(ints[at]) == as_int:
                    table[t + 3] = at
                    continue
                key = as_int
            table[t + 3] = ints.shape[0] + others.setdefault(key, len(others))
        return table[toks + 3]

    def _name_ids(self, toks: np.ndarray) -> np.ndarray:
        return _lut(toks, lambda t: self.strings.intern(self.tok.text(t)), np.int32, self.n_tokens)

    def _cat_id(self, t: int) -> int:
        v = self.tok.value(t)
        return 0 if v is None else self.strings.intern(v if isinstance(v, str) else str(v))

    def _cat_ids(self, toks: np.ndarray) -> np.ndarray:
        return _lut(toks, self._cat_id, np.int32, self.n_tokens)

    def _start_ps(self, idx: np.ndarray) -> np.ndarray:
        """The exact picoseconds of events ``idx`` (timed, not metadata) from the earliest one;
        they fit int64: the events span at most MAX_SPAN_US."""
        c = self.cols
        t0_us, t0_sub = self.t0
        return (c["ts_us"][idx] - np.int64(t0_us)) * _PS_PER_US + (c["ts_sub_ps"][idx].astype(np.int64) - t0_sub)

    def _append(self, line: np.ndarray, ts: np.ndarray, dur: np.ndarray, name_id: np.ndarray,
                cat_id: np.ndarray) -> int:
        first = self.n_events
        self.ev_line.append(line.astype(np.int64))
        self.ev_start.append(ts)
        self.ev_dur.append(dur)
        self.ev_name.append(name_id.astype(np.int32))
        self.ev_cat.append(cat_id.astype(np.int32))
        self.n_events += line.shape[0]
        return first

    def _append_events(self, idx: np.ndarray, line: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> int:
        c = self.cols
        return self._append(line, ts, dur, self._name_ids(c["name"][idx]), self._cat_ids(c["cat"][idx]))

    def _bounds(self) -> np.ndarray:
        """Each event's first stat row in the scanner's columns, then their end (computed once)."""
        if self._stat_bounds is None:
            # The scanner writes an event's rows together, events in file order: owners ascend.
            n = self.cols["ph"].shape[0]
            owner = self.cols["st_owner"]
            bounds = self.work.empty("stat_bounds", np.int64, n + 1)
            if n + 1 <= self.work.chunk_events:  # in memory: counted in one pass over the owners
                bounds[0] = 0
                np.cumsum(np.bincount(owner, minlength=n)[:n], out=bounds[1:])
            else:
                for lo, hi in chunks(n + 1, self.work.chunk_events):
                    bounds[lo:hi] = np.searchsorted(owner, np.arange(lo, hi, dtype=owner.dtype))
            self._stat_bounds = bounds
            del owner
            self.work.drop(self.cols.pop("st_owner"))  # the bounds say it all now
        return self._stat_bounds

    def _stat_rows(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scanner's stat rows of ``events`` (event by event, keys in file order) and, for
        each row, its event's position in ``events``."""
        bounds = self._bounds()
        lo = bounds[events]
        counts = bounds[events + 1] - lo
        pos = np.repeat(np.arange(events.shape[0]), counts)
        starts = np.cumsum(counts) - counts
        rows = lo[pos] + (np.arange(pos.shape[0]) - starts[pos])
        return rows, pos

    def _add_args(self, first: int, events: np.ndarray) -> None:
        """Every ``args`` entry of ``events`` (collected as first, first + 1, ...) as a stat."""
        self._add_args_to(first + np.arange(events.shape[0]), events)

    def _add_args_to(self, owners: np.ndarray, events: np.ndarray) -> None:
        """The args of ``events`` as stats of the collected events ``owners`` (one each), in
        batches of events so that the temporaries stay small."""
        step = _ARGS_EVENTS
        for lo in range(0, events.shape[0], step):
            self._add_batch(owners[lo:lo + step], events[lo:lo + step])

    def _add_batch(self, owners: np.ndarray, events: np.ndarray) -> None:
        c = self.cols
        # The stat rows of the events, but for null arguments (they say nothing).
        rows, pos = kernels.args_rows(events, self._bounds(), c["st_kind"], tables.KIND_NONE)
        kind = c["st_kind"][rows]
        if rows.shape[0] == 0:
            return
        key = self._arg_keys(c["st_key"][rows])
        value = c["st_value"][rows]
        text = (kind == tables.KIND_STR) | (kind == jsonscan.KIND_JSON)
        if text.any():
            # Strings, huge integers' digits, arrays' canonical text: each distinct one interned once.
            value[text] = self._arg_texts(value[text])
            kind[text] = tables.KIND_STR
        self.st_rows.append(owners[pos].astype(np.int32), key, kind.astype(np.int8), value)

    # --- the pass --------------------------------------------------------------------------
    def build(self, scan: Scan) -> tables.ProfileStore:
        try:
            return self._build(scan)
        except _LongNumber as e:
            if e.token != _MISSING:
                e.field = _field_of(self.cols, e.token)
            raise

    def _build(self, scan: Scan) -> tables.ProfileStore:
        c = self.cols = scan.cols
        scan.cols = {}  # the builder owns the columns now and drops each when done with it
        self.tok = _Tokens(scan.tokens)
        self.n_tokens = len(scan.tokens)
        self.int_flag, self.int_value = scan.int_flag, scan.int_value
        self._arg_keys = _TokenTable(lambda t: self.strings.intern(self.tok.text(t)), np.int32, self.n_tokens)
        self._arg_texts = _TokenTable(lambda t: self.strings.intern(self.tok.canonical(t)), np.int64, self.n_tokens)
        n = c["ph"].shape[0]
        step = self.work.chunk_events
        self.work.check(n, f"the phases of {n:,} events")
        # Phases: the phase token's code (-1 absent or null, -2 not a string).
        ph_tok = c["ph"]
        ph_table = _lut_table((ph_tok[lo:hi] for lo, hi in chunks(n, step)),
                              lambda t: _PH_NONE if t < 0 else _PHASE_CODES.get(self.tok.value(t), _PH_OTHER),
                              np.int8, self.n_tokens)
        codes = np.empty(n, np.int8)
        not_str = no_phase = 0
        other_counts = np.zeros(self.n_tokens, np.int64)
        for lo, hi in chunks(n, step):
            tok = ph_tok[lo:hi]
            code = codes[lo:hi] = ph_table[tok + 3]
            not_str += int((tok == -2).sum())
            empty = (c["flags"][lo:hi] & jsonscan.FLAG_EMPTY) != 0
            no_phase += int(((code == _PH_NONE) & ~empty).sum())
            other = tok[code == _PH_OTHER]
            if other.shape[0]:
                other_counts += np.bincount(other, minlength=self.n_tokens)
        self._warn(not_str, "events whose phase ('ph') is not a string were ignored")
        self._warn(scan.non_objects, "trace entries that are not JSON objects were ignored")
        self._warn(no_phase, "events without a phase ('ph') were ignored")
        for ph, k in sorted((self.tok.value(t), int(other_counts[t])) for t in np.flatnonzero(other_counts).tolist()):
            self._warn(k, f"events of phase {ph!r}, which tbprof does not show, were ignored")

        # Usable numbers (the rules of chrome_events.py): present, within the limits.
        ts, ts_sub, dur = c["ts_us"], c["ts_sub_ps"], c["dur_ps"]
        lo_us: float = math.inf
        hi_us: float = -math.inf
        t0: tuple[int, int] | None = None
        end: tuple[int, int] | None = None
        for lo, hi in chunks(n, step):
            t, sub, d = ts[lo:hi], ts_sub[lo:hi], dur[lo:hi]
            t[(t < -MAX_ABS_TS_US) | (t > MAX_ABS_TS_US)] = _NO_TIME
            d[(d < -MAX_SPAN_PS) | (d > MAX_SPAN_PS)] = _NO_TIME
            code = codes[lo:hi]
            finite = t != _NO_TIME
            timed = t[(code != _PH_M) & finite]
            if timed.shape[0]:
                lo_us, hi_us = min(lo_us, int(timed.min())), max(hi_us, int(timed.max()))
            kept = _kept(code) & finite
            if kept.any():
                first, last = _earliest(t[kept], sub[kept]), _latest(t[kept], sub[kept])
                t0 = first if t0 is None else min(t0, first)
                end = last if end is None else max(end, last)
        if hi_us - lo_us > MAX_SPAN_US:
            raise ProfileReadError(self.source, f"the event timestamps span {(hi_us - lo_us) / 86400e6:.0f} days; "
                                   f"tbprof shows traces of up to {MAX_SPAN_US / 86400e6:.0f} days (is a 'ts' in "
                                   "the wrong unit?)")

        self._metadata(_where(codes, _PH_M, step))
        if t0 is None or end is None:
            return self._finish(None)
        # Unclosed slices and objects end where the trace ends: its last timestamp or the
        # end of its last complete event, whichever is later.
        self.t0 = t0
        self.trace_end_ps = (end[0] - t0[0]) * _PS_PER_US + (end[1] - t0[1])

        self._events_by_chunk(codes, _PH_X)
        for code, handle in ((_PH_BE, self._begin_end), (_PH_INSTANT, None), (_PH_C, self._counters),
                             (_PH_OBJECT, self._objects)):
            if handle is None:
                self._events_by_chunk(codes, code)
                continue
            idx = _where(codes, code, step)
            self.work.check(_BYTES_PER_WHOLE_EVENT * idx.shape[0], f"{idx.shape[0]:,} begin/end, counter or object "
                            "events")
            handle(idx)
        flows = _where(codes, _PH_FLOW, step)
        self.work.check(_BYTES_PER_FLOW_KEY * flows.shape[0], f"the identities of {flows.shape[0]:,} flow events")
        flows = self._timed(flows, "flow ('s'/'t'/'f') events")
        # Every args entry is read now; the flows need only their identity columns.
        for name in ("st_owner", "st_key", "st_kind", "st_value", "dur_ps", "name"):
            if name in c:
                self.work.drop(c.pop(name))
        if self._stat_bounds is not None:
            self.work.drop(self._stat_bounds)
            self._stat_bounds = None
        del c, ph_tok, codes, ts, ts_sub, dur
        return self._finish(flows if flows.shape[0] else None)

    def _metadata(self, meta: np.ndarray) -> None:
        c, tok = self.cols, self.tok
        for i in meta.tolist():
            args: dict[str, Any] = {}
            for r in self._stat_rows(np.array([i]))[0].tolist():
                kind, value = int(c["st_kind"][r]), int(c["st_value"][r])
                v: Any = value
                if kind == tables.KIND_NONE:
                    v = None
                elif kind == tables.KIND_DOUBLE:
                    v = float(np.int64(value).view(np.float64))
                elif kind == tables.KIND_UINT64:
                    v = value + (1 << 64)
                elif kind in (tables.KIND_STR, jsonscan.KIND_JSON):
                    v = tok.canonical(value)
                args[tok.text(int(c["st_key"][r]))] = v
            pid = tok.key(int(c["pid"][i]))
            tid = tok.key(int(c["tid"][i]))
            name = tok.value(int(c["name"][i]))
            if name == "process_name" and "name" in args:
                self.process_names[pid] = str(args["name"])
            elif name == "process_labels" and "labels" in args:
                self.process_labels[pid] = str(args["labels"])
            elif name == "process_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self.process_sort[pid] = float(args["sort_index"])
            elif name == "thread_name" and "name" in args:
                self.thread_names[(pid, tid)] = str(args["name"])
            elif name == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self.thread_sort[(pid, tid)] = float(args["sort_index"])

    def _timed(self, idx: np.ndarray, what: str) -> np.ndarray:
        ok = self.cols["ts_us"][idx] != _NO_TIME
        if not ok.all():
            self._warn(int((~ok).sum()), f"{what} without a numeric 'ts' were dropped")
            idx = idx[ok]
        return idx

    def _events_by_chunk(self, codes: np.ndarray, ph_code: int) -> None:
        """The ``X`` (complete) or the instant events, a chunk at a time: each is one event of its
        thread (a global instant: of the global track), its args its stats."""
        c = self.cols
        step = self.work.chunk_events
        n = codes.shape[0]
        complete = ph_code == _PH_X
        dropped_ts = dropped_dur = too_long = 0

        def ends_in_span(idx: np.ndarray) -> np.ndarray:
            # A complete event's start is at least the earliest event's: its end, when within
            # the limit, fits int64 picoseconds.
            return c["dur_ps"][idx] <= MAX_SPAN_PS - self._start_ps(idx)

        def kept(lo: int, hi: int) -> np.ndarray:
            idx = lo + np.flatnonzero(codes[lo:hi] == ph_code)
            idx = idx[c["ts_us"][idx] != _NO_TIME]
            if complete:
                idx = idx[c["dur_ps"][idx] >= 0]  # not a negative or non-numeric 'dur'
                idx = idx[ends_in_span(idx)]
            return idx

        # Names and categories are interned first, over every kept event in token order (as one
        # pass over all of them would), then the chunks' args.
        whole = [kept(0, n)] if step >= n else None

        def tokens_of(col: str) -> Iterator[np.ndarray]:
            if whole is not None:
                yield c[col][whole[0]]
                return
            for lo, hi in chunks(n, step):
                yield c[col][kept(lo, hi)]

        name_table = _lut_table(tokens_of("name"), lambda t: self.strings.intern(self.tok.text(t)), np.int32,
                                self.n_tokens)
        cat_table = _lut_table(tokens_of("cat"), self._cat_id, np.int32, self.n_tokens)
        whole = None
        for lo, hi in chunks(n, step):
            idx = lo + np.flatnonzero(codes[lo:hi] == ph_code)
            if not idx.shape[0]:
                continue
            ok = c["ts_us"][idx] != _NO_TIME
            dropped_ts += int((~ok).sum())
            idx = idx[ok]
            if complete:
                dur = c["dur_ps"][idx]
                bad = dur < 0  # negative or not a number
                dropped_dur += int(bad.sum())
                idx, dur = idx[~bad], dur[~bad]
                bad = ~ends_in_span(idx)
                too_long += int(bad.sum())
                idx, dur = idx[~bad], dur[~bad]
                ts = self._start_ps(idx)
                if ts.shape[0]:
                    self.trace_end_ps = max(self.trace_end_ps, int((ts + dur).max()))
                line = self._lines(c["pid"][idx], c["tid"][idx])
            else:
                ts = self._start_ps(idx)
                dur = np.zeros(ts.shape[0], np.int64)
                # Global-scope instants ("s": "g") belong to no thread: chrome://tracing draws
                # them across the whole trace; here they get a track of their own.
                is_global = (c["flags"][idx] & jsonscan.FLAG_SCOPE_G) != 0
                line = self._lines(np.where(is_global, _GLOBAL, c["pid"][idx]).astype(np.int32),
                                   np.where(is_global, _GLOBAL, c["tid"][idx]).astype(np.int32))
            first = self._append(line, ts, dur, name_table[c["name"][idx] + 3], cat_table[c["cat"][idx] + 3])
            self._add_args(first, idx)
        what = "complete ('X') events" if complete else "instant ('i') events"
        self._warn(dropped_ts, f"{what} without a numeric 'ts' were dropped")
        if complete:
            self._warn(dropped_dur, "complete ('X') events with a negative or non-numeric 'dur' were dropped")
            self._warn(too_long, f"complete ('X') events ending more than {MAX_SPAN_US / 86400e6:.0f} days after the "
                       "trace's first event were dropped")

    def _begin_end(self, idx: np.ndarray) -> None:
        if not idx.shape[0]:
            return
        c = self.cols
        idx = self._timed(idx, "begin/end ('B'/'E') events")
        ts = self._start_ps(idx)
        line = self._lines(c["pid"][idx], c["tid"][idx])
        is_begin = _lut(c["ph"][idx], lambda t: t >= 0 and self.tok.value(t) == "B", np.bool_, self.n_tokens)
        # Time order per thread, ties in file order (an E and the next B at one timestamp).
        order = np.lexsort((np.arange(idx.shape[0]), ts, line))
        partner_sorted = kernels.match_begin_end(line[order], is_begin[order])
        partner = np.full(idx.shape[0], -1, dtype=np.int64)
        matched = partner_sorted >= 0
        partner[order[matched]] = order[partner_sorted[matched]]
        b_idx = np.flatnonzero(is_begin)
        b_partner = partner[b_idx]
        self._warn(int((partner[~is_begin] < 0).sum()),
                   "end ('E') events without an open begin on their thread were dropped")
        unclosed = b_partner < 0
        self._warn(int(unclosed.sum()), "begin ('B') events were never ended; they run to the end of the trace")
        b_ts = ts[b_idx]
        end = np.where(unclosed, self.trace_end_ps, ts[np.maximum(b_partner, 0)])
        dur = np.maximum(end - b_ts, 0)
        first = self._append_events(idx[b_idx], line[b_idx], b_ts, dur)
        self._add_args(first, idx[b_idx])
        # The E's args complete the slice's (chrome://tracing merges them the same way).
        closed = np.flatnonzero(~unclosed)
        self._add_args_to(first + closed, idx[b_partner[closed]])

    def _counters(self, idx: np.ndarray) -> None:
        if not idx.shape[0]:
            return
        c, tok = self.cols, self.tok
        idx = self._timed(idx, "counter ('C') events")
        # One line per (pid, name[, id]): the name with the id is the line's and the events' name.
        pid_name = (c["pid"][idx].astype(np.int64) + 3) * (self.n_tokens + 3) + c["name"][idx] + 3
        pid_name = np.unique(pid_name, return_inverse=True)[1].reshape(-1)  # dense: the next product fits
        code = pid_name * (self.n_tokens + 3) + c["id"][idx] + 3
        uniq, first_at, inv = np.unique(code, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        line_of = np.zeros(uniq.shape[0], np.int64)
        name_of = np.zeros(uniq.shape[0], np.int32)
        for u in np.argsort(first_at, kind="stable").tolist():
            i = int(idx[int(first_at[u])])
            ident = tok.value(int(c["id"][i]))
            name = str(tok.value(int(c["name"][i])) if int(c["name"][i]) != _MISSING else "") + \
                (f" {ident}" if ident is not None else "")
            line_of[u] = self._line(tok.value(int(c["pid"][i])), name, "counter")
            name_of[u] = self.strings.intern(name)
        line = line_of[inv]
        self.counter_lines.update(sorted_unique(line).tolist())
        ts = self._start_ps(idx)
        first = self._append(line, ts, np.zeros(ts.shape[0], np.int64), name_of[inv], self._cat_ids(c["cat"][idx]))
        self._add_args(first, idx)

    def _objects(self, idx: np.ndarray) -> None:
        """Object events (N create, O snapshot, D delete) as one event per object lifetime."""
        if not idx.shape[0]:
            return
        c, tok = self.cols, self.tok
        idx = self._timed(idx, "object ('N'/'O'/'D') events")
        ts = self._start_ps(idx)
        phases = [tok.value(int(t)) for t in c["ph"][idx].tolist()]
        order = np.argsort(ts, kind="stable")  # ties keep file order
        alive: dict[tuple[Hashable, Hashable, Hashable], list[Any]] = {}
        done: list[list[Any]] = []
        for k in order.tolist():
            e = int(idx[k])
            key = (tok.key(int(c["pid"][e])), tok.key(int(c["id"][e])), tok.key(int(c["name"][e])))
            ph = phases[k]
            rec = alive.get(key)
            if rec is not None and ph == "N" and rec[4]:
                done.append(alive.pop(key))  # the id is reused by a new object
                rec = None
            if rec is None:
                # creation, start, end, last snapshot, created by an 'N' (a snapshot may
                # precede its 'N' by a microsecond: then the 'N' adopts it)
                alive[key] = [e, int(ts[k]), None, e, ph == "N"]
            elif ph == "N":
                rec[4] = True
            if ph == "O":
                alive[key][3] = e
            elif ph == "D":
                rec = alive.pop(key)
                rec[2] = int(ts[k])
                done.append(rec)
        done.extend(alive.values())
        made = np.array([r[0] for r in done], dtype=np.int64)
        start = np.array([r[1] for r in done], dtype=np.int64)
        end = np.array([r[2] if r[2] is not None else self.trace_end_ps for r in done], dtype=np.int64)
        line = self._lines(c["pid"][made], c["tid"][made])
        first = self._append_events(made, line, start, end - start)
        self._add_args_to(first + np.arange(len(done)), np.array([r[3] for r in done], dtype=np.int64))

    # --- assembling planes -----------------------------------------------------------------
    def _finish(self, flows: np.ndarray | None) -> tables.ProfileStore:
        work, step = self.work, self.work.chunk_events
        release_free_memory()  # the passes' temporaries, freed into the C heap, before the planes
        n = self.n_events
        start_ps, dur_ps, line_g = self.ev_start.done(), self.ev_dur.done(), self.ev_line.done()
        name_id, cat_id = self.ev_name.done(), self.ev_cat.done()
        span_ps = 0
        for lo, hi in chunks(n, step):
            if hi > lo:
                span_ps = max(span_ps, int((start_ps[lo:hi] + dur_ps[lo:hi]).max()))
        origin_ps = self.t0[0] * _PS_PER_US + self.t0[1] if n else 0

        # Line -> (plane, local line) in display order.
        keys = list(self.line_keys)  # index == global line id
        pids = sorted({k[0] for k in keys}, key=self._process_order)
        planes: list[tables.Plane] = []
        plane_of_line = np.zeros(len(keys), dtype=np.int64)
        local_of_line = np.zeros(len(keys), dtype=np.int64)
        plane_lines: list[list[int]] = []
        for pi, pid in enumerate(pids):
            mine = [g for g, k in enumerate(keys) if k[0] == pid]
            mine.sort(key=lambda g: self._line_order(keys[g]))
            for local, g in enumerate(mine):
                plane_of_line[g] = pi
                local_of_line[g] = local
            plane_lines.append(mine)

        # Rows in store order: by plane, line, start, then longest first; ties in collection
        # order. Counted into lines (in display order), then each line's rows sorted by time.
        display = np.array([g for mine in plane_lines for g in mine], dtype=np.int64)
        rank_of_line = np.zeros(len(keys), dtype=np.int64)
        rank_of_line[display] = np.arange(display.shape[0])
        per_line = np.zeros(len(keys), dtype=np.int64)  # by display rank
        for lo, hi in chunks(n, step):
            per_line += np.bincount(rank_of_line[line_g[lo:hi]], minlength=len(keys))
        line_start = np.concatenate([[0], np.cumsum(per_line)]).astype(np.int64)
        order = work.empty("order", np.int64, n)  # row in store order -> event in collection order
        fill = line_start[:-1].copy()
        for lo, hi in chunks(n, step):
            rank = rank_of_line[line_g[lo:hi]]
            perm = np.argsort(rank, kind="stable")
            rank = rank[perm]
            counts = np.bincount(rank, minlength=len(keys))
            order[fill[rank] + (np.arange(rank.shape[0]) - (np.cumsum(counts) - counts)[rank])] = lo + perm
            fill += counts
        work.drop(line_g)
        del line_g, fill
        longest = int(per_line.max()) if per_line.shape[0] else 0
        work.check(_SORT_BYTES_PER_ROW * longest, f"the time order of a thread of {longest:,} events")
        # Sorted by (line, start, -dur) in batches of whole lines of about a chunk each (in memory:
        # one batch, the whole trace; streaming: a thread longer than a chunk is a batch alone).
        for a, b in _line_batches(line_start, step):
            r0, r1 = int(np.searchsorted(line_start, a, "right")) - 1, int(np.searchsorted(line_start, b, "left"))
            rows = np.array(order[a:b])
            rank = np.repeat(np.arange(r0, r1), per_line[r0:r1])
            order[a:b] = rows[np.lexsort((-dur_ps[rows], start_ps[rows], rank))]
        first_line = np.cumsum([0] + [len(mine) for mine in plane_lines])
        plane_bounds = line_start[first_line]
        row_in_plane = work.empty("row_in_plane", np.int64, n)
        for pi in range(len(pids)):
            plo, phi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            for a, b in chunks(phi - plo, step):
                row_in_plane[order[plo + a:plo + b]] = np.arange(a, b)

        # Each plane's rows in store order, computed once (the flows bind to them).
        sorted_planes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for pi in range(len(pids)):
            plo, phi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            n_lines = len(plane_lines[pi])
            p_line = work.plane_column(pi, "line_idx", np.int32, phi - plo)
            for local in range(n_lines):
                r = int(first_line[pi]) + local
                p_line[int(line_start[r]) - plo:int(line_start[r + 1]) - plo] = local
            p_start = work.plane_column(pi, "start_ps", np.int64, phi - plo)
            p_dur = work.plane_column(pi, "dur_ps", np.int64, phi - plo)
            for a, b in chunks(phi - plo, step):
                rows = order[plo + a:plo + b]
                p_start[a:b] = start_ps[rows]
                p_dur[a:b] = dur_ps[rows]
            work.check(2 * (phi - plo), f"the nesting depths of {phi - plo:,} events")
            line_offsets, depth = line_rows(p_line, p_start, p_dur, n_lines)
            sorted_planes.append((p_line, p_start, p_dur, line_offsets, depth))
        work.drop(start_ps, dur_ps)
        del start_ps, dur_ps
        self._bind_flows(flows, order, plane_bounds, sorted_planes, local_of_line, plane_of_line)
        work.drop(*self.cols.values())
        self.cols = {}
        del flows
        release_free_memory()  # the flows' temporaries, before the stats' placed columns
        st_row, st_name, st_kind, st_value, st_bounds = self._place_stats(order, plane_bounds, row_in_plane)
        work.drop(row_in_plane)
        del row_in_plane
        cat_stat = self.strings.intern("cat")

        for pi, pid in enumerate(pids):
            plo, phi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            p_line, p_start, p_dur, line_offsets, depth = sorted_planes[pi]
            n_lines = len(plane_lines[pi])
            # Metadata: one row per distinct (name, cat).
            base = len(self.strings) + 1
            uniq = np.zeros(0, np.int64)
            for a, b in chunks(phi - plo, step):
                rows = order[plo + a:plo + b]
                uniq = sorted_unique(np.concatenate([uniq, name_id[rows].astype(np.int64) * base + cat_id[rows]]))
            meta_idx = work.plane_column(pi, "meta_idx", np.int32, phi - plo)
            p_name = work.plane_column(pi, "name_id", np.int32, phi - plo)
            for a, b in chunks(phi - plo, step):
                rows = order[plo + a:plo + b]
                p_name[a:b] = name_id[rows]
                meta_idx[a:b] = np.searchsorted(uniq, name_id[rows].astype(np.int64) * base + cat_id[rows])
            meta_name = (uniq // base).astype(np.int32)
            meta_cat = (uniq % base).astype(np.int64)
            has_cat = np.nonzero(meta_cat > 0)[0]
            meta_stats = tables.StatTable(has_cat.astype(np.int32), np.full(has_cat.shape[0], cat_stat, np.int32),
                                          np.full(has_cat.shape[0], tables.KIND_STR, np.int8), meta_cat[has_cat])
            s_lo, s_hi = int(st_bounds[pi]), int(st_bounds[pi + 1])
            stats = tables.StatTable(st_row[s_lo:s_hi], st_name[s_lo:s_hi], st_kind[s_lo:s_hi], st_value[s_lo:s_hi])
            line_keys = [keys[g] for g in plane_lines[pi]]
            counter_local = [i for i, g in enumerate(plane_lines[pi]) if g in self.counter_lines]
            line_names = [self._line_name(k) for k in line_keys]
            plane_stats: dict[str, Any] = {"pid": pid if isinstance(pid, (int, str)) else str(pid)}
            if pid in self.process_labels:
                plane_stats["process_labels"] = self.process_labels[pid]
            if counter_local:
                plane_stats[COUNTER_LINES_STAT] = counter_local
            planes.append(tables.Plane(
                index=pi, id=_int_id(pid), name="",
                line_ids=np.array([_int_id(k[1]) for k in line_keys], dtype=np.int64),
                line_names=line_names, line_display_names=list(line_names),
                line_timestamp_ns=np.zeros(n_lines, dtype=np.int64), line_offsets=line_offsets,
                start_ps=p_start, dur_ps=p_dur, meta_idx=meta_idx, name_id=p_name,
                depth=depth, line_idx=p_line, stats=stats,
                meta_ids=np.arange(uniq.shape[0], dtype=np.int64), meta_name_id=meta_name,
                meta_display_name_id=np.zeros(uniq.shape[0], dtype=np.int32), meta_stats=meta_stats,
                plane_stats=plane_stats,
            ))
        work.drop(order, name_id, cat_id)
        self._name_planes(planes, pids)
        return tables.ProfileStore(source_path=self.source, host=self.host, format=FORMAT, strings=self.strings,
                                   planes=planes, origin_ps=origin_ps, span_ps=span_ps, warnings=self.warnings)

    def _place_stats(self, order: np.ndarray, plane_bounds: np.ndarray, row_in_plane: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every stat row moved to its place: by plane, then event row, an event's rows in
        collection order (as a stable sort would put them). Counted, not sorted: each event's first
        slot is a prefix sum; segments go in slices so the temporaries stay small."""
        work, step = self.work, self.work.chunk_events
        n = row_in_plane.shape[0]
        per_event = work.zeros("stats_per_event", np.int64, n)
        for owner, _, _, _ in self.st_rows.segments(consume=False):
            for lo, hi in chunks(owner.shape[0], _STAT_SLICE):
                if hi > lo:
                    o = owner[lo:hi]
                    first = int(o.min())
                    counts = np.bincount(o - first)
                    per_event[first:first + counts.shape[0]] += counts
        fill = work.empty("stats_fill", np.int64, n)  # each event's next free slot
        bounds = np.zeros(plane_bounds.shape[0], dtype=np.int64)
        total = 0
        for pi in range(plane_bounds.shape[0] - 1):
            for a, b in chunks(int(plane_bounds[pi + 1] - plane_bounds[pi]), step):
                rows = order[int(plane_bounds[pi]) + a:int(plane_bounds[pi]) + b]
                in_order = per_event[rows]
                ends = np.cumsum(in_order)
                fill[rows] = total + ends - in_order
                total += int(ends[-1]) if ends.shape[0] else 0
            bounds[pi + 1] = total
        work.drop(per_event)
        del per_event
        st_row = work.empty("st_row", np.int32, total)
        st_name = work.empty("st_name", np.int32, total)
        st_kind = work.empty("st_kind", np.int8, total)
        st_value = work.empty("st_value", np.int64, total)
        freed = 0
        for owner, name, kind, value in self.st_rows.segments(consume=True):
            # In collection order, each row to its event's next slot (an event's rows keep their order).
            kernels.place_rows(owner, fill, row_in_plane, name, kind, value, st_row, st_name, st_kind, st_value)
            freed += owner.nbytes + name.nbytes + kind.nbytes + value.nbytes
            del owner, name, kind, value
            if freed >= _TRIM_BYTES:
                # The segments placed are freed into the C heap (each is under glibc's mmap
                # threshold) while the placed columns fill pages of their own: handed back as
                # they go, the peak is one copy of the stat rows, not two.
                release_free_memory()
                freed = 0
        work.drop(fill)
        return st_row, st_name, st_kind, st_value, bounds

    def _bind_flows(self, flows: np.ndarray | None, order: np.ndarray, plane_bounds: np.ndarray,
                    sorted_planes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                    local_of_line: np.ndarray, plane_of_line: np.ndarray) -> None:
        """Binds flow points to slices; their stats join the stat rows (owner in collection order):
        every part's ``flow_id`` rows, then every part's ``flow_category`` rows.

        Points are taken in parts by identity (every point of one (cat, id) in the same part):
        in memory, one part; streaming, as many as keep a part within a chunk of points and its
        temporaries within half the budget."""
        if flows is None:
            return
        c = self.cols
        ident_tok = np.where(c["id"][flows] != _MISSING, c["id"][flows], c["bind_id"][flows])
        cat_key = self._key_ids(c["cat"][flows])
        id_key = self._key_ids(ident_tok)
        del ident_tok
        # At most a chunk of points a part, and a part's temporaries within half the budget.
        n_points = flows.shape[0]
        parts = max(1, -(-n_points // self.work.chunk_events))
        if self.work.limit is not None:
            parts = max(parts, -(-_BYTES_PER_FLOW * n_points // max(1, self.work.limit.budget_bytes // 2)))
        part_of = ((cat_key * (int(id_key.max()) + 1) + id_key) % parts).astype(np.int32) if parts > 1 else None
        ids = StatSink(self.work)
        cat_sink = StatSink(self.work)
        unbound = 0
        chain_base = 0
        for part in range(parts):
            sel = np.arange(n_points) if part_of is None else np.flatnonzero(part_of == part)
            owner, chain_of, cat_ids, n_unbound, n_chains = self._bind_part(
                flows[sel], cat_key[sel], id_key[sel], order, plane_bounds, sorted_planes, local_of_line,
                plane_of_line)
            del sel
            unbound += n_unbound
            has_cat = cat_ids > 0
            owner32 = owner.astype(np.int32)
            # Names and kinds are written below (the stat names are interned after every part).
            ids.append(owner32, np.zeros(owner32.shape[0], np.int32), np.zeros(owner32.shape[0], np.int8),
                       chain_of + chain_base)
            k = int(has_cat.sum())
            cat_sink.append(owner32[has_cat], np.zeros(k, np.int32), np.zeros(k, np.int8), cat_ids[has_cat])
            chain_base += n_chains
        del cat_key, id_key, part_of
        self._warn(unbound, "flow points that bind to no slice of their thread were dropped")
        flow_stat = self.strings.intern(FLOW_ID_STAT)
        cat_stat = self.strings.intern(FLOW_CATEGORY_STAT)
        for sink, stat, kind in ((ids, flow_stat, tables.KIND_INT64), (cat_sink, cat_stat, tables.KIND_STR)):
            for owner, _, _, value in sink.segments(consume=True):
                self.st_rows.append(np.asarray(owner), np.full(owner.shape[0], stat, np.int32),
                                    np.full(owner.shape[0], kind, np.int8), np.asarray(value))

    def _bind_part(self, flows: np.ndarray, cat_key: np.ndarray, id_key: np.ndarray, order: np.ndarray,
                   plane_bounds: np.ndarray,
                   sorted_planes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                   local_of_line: np.ndarray, plane_of_line: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
        """One part's points bound and chained: (owner event, chain in the part, chain category id)
        per (event, chain), the points bound to nothing, the part's chains."""
        c, tok = self.cols, self.tok
        n_flows = flows.shape[0]
        if n_flows == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty, 0, 0
        # Points on threads that have no slices cannot bind.
        code = (c["pid"][flows].astype(np.int64) + 3) * (self.n_tokens + 3) + c["tid"][flows] + 3
        uniq, inv = np.unique(code, return_inverse=True)
        line_of = np.array([self.line_keys.get((tok.key(int(u) // (self.n_tokens + 3) - 3),
                                                tok.key(int(u) % (self.n_tokens + 3) - 3), "thread"), -1)
                            for u in uniq.tolist()], dtype=np.int64)
        line_g = line_of[inv.reshape(-1)]
        del code, uniq, inv
        point_ps = self._start_ps(flows)
        phase = _lut(c["ph"][flows], lambda t: tok.value(t) if t >= 0 else "", object, self.n_tokens)
        is_next = (phase == "f") & ((c["flags"][flows] & jsonscan.FLAG_BP_E) == 0)
        bound = np.full(n_flows, -1, dtype=np.int64)  # collection-order event index
        has_line = line_g >= 0
        # A trace of flow points only has no line to index.
        p_plane = (np.where(has_line, plane_of_line[np.maximum(line_g, 0)], -1) if plane_of_line.shape[0]
                   else np.full(n_flows, -1, dtype=np.int64))
        for pi, (_, p_start, p_dur, line_offsets, depth) in enumerate(sorted_planes):
            sel = np.nonzero(p_plane == pi)[0]
            if sel.shape[0] == 0:
                continue
            rows = order[int(plane_bounds[pi]):int(plane_bounds[pi + 1])]
            parent = kernels.depth_parents(depth, line_offsets)
            got = kernels.bind_points(p_start, p_start + p_dur, parent, line_offsets, local_of_line[line_g[sel]],
                                      point_ps[sel], is_next[sel])
            del parent
            ok = got >= 0
            bound[sel[ok]] = rows[got[ok]]
        unbound = int((bound < 0).sum())
        # Chains: points of one (cat, id) in time order; an 's' after the chain's first point
        # starts a new chain (ids are reused once a flow has finished).
        # Identities numbered in the order they first appear (as a dict of (cat, id) would).
        uniq, first_at, inv = np.unique(cat_key * (int(id_key.max()) + 1) + id_key, return_index=True,
                                        return_inverse=True)
        rank = np.empty(uniq.shape[0], dtype=np.int64)
        rank[np.argsort(first_at, kind="stable")] = np.arange(uniq.shape[0])
        ident_idx = rank[inv.reshape(-1)]
        is_start = phase == "s"
        pt_order = np.lexsort((~is_start, point_ps, ident_idx))
        new_ident = np.ones(n_flows, dtype=np.bool_)
        new_ident[1:] = ident_idx[pt_order][1:] != ident_idx[pt_order][:-1]
        chain_break = new_ident | is_start[pt_order]
        chain_sorted = np.cumsum(chain_break) - 1
        chain = np.empty(n_flows, dtype=np.int64)
        chain[pt_order] = chain_sorted
        keep = np.nonzero(bound >= 0)[0]
        # A chain with a single bound point links nothing; drop it.
        n_chains = int(chain.max()) + 1
        counts = np.bincount(chain[keep], minlength=n_chains)
        keep = keep[counts[chain[keep]] >= 2]
        # One stat per (event, chain), even when two points of a chain bind to one event.
        # Sorted by (event, chain), as one int64 key: events and chains are fewer than 2^31.
        pairs = sorted_unique(bound[keep] * n_chains + chain[keep])
        owner = pairs // n_chains
        chain_of = pairs % n_chains
        first_point = np.full(n_chains, -1, dtype=np.int64)
        first_point[chain[pt_order][::-1]] = pt_order[::-1]
        cat_ids = self._cat_ids(c["cat"][flows[first_point[chain_of]]]).astype(np.int64) if chain_of.shape[0] \
            else np.zeros(0, np.int64)
        return owner, chain_of, cat_ids, unbound, n_chains

    # --- names and order -------------------------------------------------------------------
    def _process_order(self, pid: Hashable) -> tuple[float, int, str]:
        sort = self.process_sort.get(pid)
        if sort is None:
            sort = float(pid) if isinstance(pid, int) else math.inf
        return (sort, 0 if isinstance(pid, int) else 1, str(pid))

    def _line_order(self, key: tuple[Hashable, Hashable, str]) -> tuple[int, float, int, str]:
        pid, tid, kind = key
        if kind == "counter":
            return (0, 0.0, 0, str(tid))
        sort = self.thread_sort.get((pid, tid))
        if sort is None:
            sort = float(tid) if isinstance(tid, int) else math.inf
        return (1, sort, 0 if isinstance(tid, int) else 1, str(tid))

    def _line_name(self, key: tuple[Hashable, Hashable, str]) -> str:
        pid, tid, kind = key
        if kind == "counter":
            return str(tid)
        name = self.thread_names.get((pid, tid))
        if name:
            return name
        return str(tid) if isinstance(tid, str) and tid else f"Thread {tid}"

    def _name_planes(self, planes: list[tables.Plane], pids: list[Hashable]) -> None:
        """Process names, with labels ("python3 (GPU 0)"), made unique with the pid when needed."""
        names = []
        for pid in pids:
            name = self.process_names.get(pid) or (str(pid) if isinstance(pid, str) and pid else f"Process {pid}")
            label = self.process_labels.get(pid)
            names.append(f"{name} ({label})" if label else name)
        seen: dict[str, int] = defaultdict(int)
        for n in names:
            seen[n] += 1
        for plane, pid, name in zip(planes, pids, names, strict=False):
            plane.name = f"{name} (pid {pid})" if seen[name] > 1 else name


def _int_id(value: Hashable) -> int:
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return value
    return zlib.crc32(str(value).encode())
