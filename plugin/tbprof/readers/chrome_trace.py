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
stat row); ``chrome_collect.py`` collects the events from those columns with numpy, running
Python once per distinct token, thread or object, never once per event, and hands them to the
one plane builder (``plane_collected.py``, ``plane_builder.py``). Peak memory is the columns (a
small multiple of the JSON text: bench/measurements.md#conversion-memory), not the file nor a
Python object per event. The JSON rules the scanner follows, and where they differ from
``json.loads``, are in docs/differences.md.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tbprof.cache.memory_guard import release_free_memory
from tbprof.errors import ProfileReadError
from tbprof.fs import Location, UrlPath, shown_name
from tbprof.fs import location as as_location
from tbprof.readers import chrome_scan, kineto
from tbprof.readers.byte_sources import LocalFile, StreamSource, UrlFile
from tbprof.readers.chrome_collect import FORMAT, Collector
from tbprof.readers.chrome_columns import Spill
from tbprof.readers.chrome_gzip import gunzip_windows
from tbprof.readers.chrome_scan import Scan
from tbprof.readers.chrome_tokens import GLOBAL_PID, LongNumber, loads
from tbprof.readers.files import GZIP_MAGIC
from tbprof.readers.step_files import json_host
from tbprof.store import tables

__all__ = ["FORMAT", "GLOBAL_PID", "WINDOW_BYTES", "chrome_trace_from_bytes", "file_windows", "host_of",
           "read_chrome_trace", "read_windows", "store_of"]


def host_of(path: Location) -> str:
    """The host a file is named after, as listed (a non-UTF-8 name shows its bytes as \\xNN)."""
    return json_host(shown_name(path.name))


# Bytes read per window, and the most decompressed bytes one gzip step may produce: the reader's
# memory is its columns, not the file (see read_chrome_trace).
WINDOW_BYTES = 16 << 20



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
            store = store_of(chrome_scan.scan_file(f, str(path), threads), str(path), host)
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
        windows = gunzip_windows(windows, source, window_bytes, spill)
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
                top[key] = loads(text)
    except RecursionError:
        raise ProfileReadError(source, "not a Chrome trace: the JSON is nested too deeply") from None
    except LongNumber as e:
        e.field = f"the top-level {key!r}"
        raise ProfileReadError(source, e.reason()) from None
    metadata = _trace_metadata(source, top) if scan.top_kind == 1 else None
    try:
        store = Collector(source, host, spill.work if spill is not None else None).build(scan)
    except RecursionError:  # args nested just below the scanner's limit, re-encoded as text
        raise ProfileReadError(source, "an event's args are nested too deeply") from None
    except LongNumber as e:
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

