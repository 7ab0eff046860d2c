"""Converts an ``*.xplane.pb`` larger than the memory budget by streaming it into the disk cache.

The in-memory reader (``xplane.py``) holds the whole file and its columns at once, several times the
file's size (bench/measurements.md#conversion-memory). Here the file is read in windows of bounded
size (``os.pread`` on a descriptor: a window at a time is all this reader holds, where the
in-memory reader maps the whole file, ``readers/files.py`` ``map_profile``), in two passes:

1. *index*: ``wire.StreamIndex`` walks the space, plane and line headers window by window,
   skipping each event by its length, and records the byte spans of the small fields (plane
   metadata, line names) and the chunks of events, as ``wire.scan``'s index pass does;
2. *decode*: the chunks of each plane, read a window at a time, are decoded by
   ``wire.decode_window`` and appended to the plane's column files in the cache entry being
   written (``cache/entry_writer.py``).

Then the columns are finished in place through memory maps (absolute times, the origin over
all planes, metadata rows and names, stat names, texts), with the same kernels and the same
order of string interning as ``xplane.py``, so the entry holds exactly the store the in-memory
reader builds (``tests/readers/test_xplane_stream.py`` compares every column). The entry is
committed whole and reopened by ``DiskCache.load``: tools then see a memory-mapped store.

What stays in anonymous memory: one window and its decoded columns (the window is 1/32 of the
budget, at most 16 MB; decoded columns take a few times the window's bytes on real profiles,
bench/measurements.md#conversion-memory, and at most ~14x for a file of empty events), the index
tables (a row per small field and per chunk; at most a quarter of the budget), one plane's metadata
parsed by upb, the string table, and per plane a 2-byte nesting depth per event and ~64 bytes per
string value while its texts are deduplicated. Those, and a plane whose rows are out of time order
(sorted in memory), are checked against the budget first (``MemoryRefusal``).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tbprof._core import kernels, wire
from tbprof.cache.disk_cache import DiskCache
from tbprof.cache.entry_writer import EntryWriter
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.fs import UrlPath, shown_name
from tbprof.protos import xplane_pb2
from tbprof.readers.byte_sources import StreamSource
from tbprof.readers.plane_builder import EntryColumns, Limit, finish_plane, plane_meta
from tbprof.readers.streamed_entry import stream_into_entry
from tbprof.readers.xplane import (
    BUILD_BYTES_PER_METADATA,
    UPB_BYTES_PER_FIELD,
    parse_spans,
    without_replaced_stats,
)
from tbprof.store import tables
from tbprof.store.strings import StringTable

_MIN_WINDOW_BYTES = 64 << 10
_MAX_WINDOW_BYTES = 16 << 20
# The window is this share of the budget: its decoded columns take up to ~14x its bytes.
_WINDOW_SHARE = 32
# Windows at least this large are decoded in two halves on two threads (smaller ones cost more
# in thread hand-offs than they save; the 128 KB windows of a 4 MB budget still split).
_SPLIT_BYTES = 64 << 10
# The index tables may take this share of the budget.
_INDEX_SHARE = 4
# Memory of one plane's metadata while upb parses it: its bytes plus this much per field (map
# entry, plane stat); it bounds the RssAnon growth of parsing the demo profiles' metadata, whose
# worst case is a host plane of tens of thousands of plane stats (bench/measurements.md#build-bytes).
# Building its tables then costs ``BUILD_BYTES_PER_METADATA`` per metadata entry, checked once upb
# has counted them.
_UPB_BYTES_PER_FIELD = UPB_BYTES_PER_FIELD


def window_bytes_for(budget_bytes: int) -> int:
    return max(_MIN_WINDOW_BYTES, min(_MAX_WINDOW_BYTES, budget_bytes // _WINDOW_SHARE))


def _merged_spans(spans: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) rows joined where they are adjacent (as ``xplane.parse_spans`` joins them)."""
    if spans.shape[0] > 1:
        cut = np.flatnonzero(spans[1:, 0] != spans[:-1, 1]) + 1
        first = np.concatenate(([0], cut))
        last = np.concatenate((cut - 1, [spans.shape[0] - 1]))
        spans = np.stack((spans[first, 0], spans[last, 1]), axis=1)
    return [(int(s), int(e)) for s, e in spans.tolist()]


def _parse(message_type: type, f: StreamSource, spans: np.ndarray) -> Any:
    joined = b"".join(f.pread(s, e - s) for s, e in _merged_spans(spans))
    return message_type.FromString(joined)  # type: ignore[attr-defined]


def _parse_plane(f: StreamSource, spans: np.ndarray) -> xplane_pb2.XPlane:
    """A plane's small fields, read run by run, without the plane stats that a later stat of the
    same name replaces (``xplane.without_replaced_stats``, on the joined bytes)."""
    runs = _merged_spans(spans)
    joined = b"".join(f.pread(s, e - s) for s, e in runs)
    if spans.shape[0]:
        run_start = np.array([s for s, _ in runs], dtype=np.int64)
        run_at = np.concatenate(([0], np.cumsum([e - s for s, e in runs])[:-1])).astype(np.int64)
        which = np.searchsorted(run_start, spans[:, 0], side="right") - 1
        spans = spans + (run_at[which] - run_start[which])[:, None]  # offsets in ``joined``
    view = memoryview(joined)
    msg = parse_spans(xplane_pb2.XPlane, view, without_replaced_stats(joined, view, spans))
    assert isinstance(msg, xplane_pb2.XPlane)
    return msg


def stream_xspace(path: Path | UrlPath, disk: DiskCache, key: str, budget_bytes: int, host: str | None = None,
                  phases: dict[str, float] | None = None, window_bytes: int | None = None) -> tables.ProfileStore:
    """Converts ``path`` into ``disk``'s entry ``key`` in bounded memory and returns the store
    loaded from it (memory-mapped). Raises ProfileReadError as the in-memory reader does.

    ``window_bytes`` (tests: tiny windows put every field on a window boundary somewhere)
    overrides the window derived from ``budget_bytes``; ``phases`` receives seconds per pass."""
    source = str(path)
    host_name = host if host is not None else shown_name(path.name.removesuffix(".xplane.pb"))
    window = window_bytes if window_bytes is not None else window_bytes_for(budget_bytes)

    def build(f: StreamSource, writer: EntryWriter) -> tables.ProfileStore:
        try:
            return _convert(f, writer, source, host_name, max(wire.STREAM_STEP_BYTES, window), budget_bytes, phases)
        except wire.WireError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
        except DecodeError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
        except IndexError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: inconsistent contents ({e})") from e

    return stream_into_entry(path, disk, key, window, build)


def _convert(f: StreamSource, w: EntryWriter, source: str, host: str, window: int, budget_bytes: int,
             phases: dict[str, float] | None) -> tables.ProfileStore:
    t0 = time.perf_counter()
    limit = Limit(source, budget_bytes)
    # Pass 1: headers only (a window per stop; events are skipped by their length).
    idx = wire.StreamIndex(f.size, max(16, window // 4))
    pos = 0
    while pos >= 0:
        pos = idx.feed(f.pread(pos, min(window, f.size - pos)), pos)
        if idx.index_bytes > budget_bytes // _INDEX_SHARE:
            raise MemoryRefusal(source, (
                f"the file is too large to open here: its small fields (names, metadata entries, lines) "
                f"alone need more than {budget_bytes // _INDEX_SHARE / 1e6:.1f} MB to index, a quarter of the "
                f"{budget_bytes / 1e6:.1f} MB this streaming conversion may use. Open it on a machine with more "
                "memory"))
    spans, lines, chunks, n_planes, n_events = idx.result()
    t_index = time.perf_counter()

    owner_kind = spans[:, 0] >> 32
    owner_idx = spans[:, 0] & 0xFFFFFFFF
    span_se = spans[:, 1:]
    space = _parse(xplane_pb2.XSpace, f, span_se[owner_kind == 0])
    if n_planes == 0:
        raise ProfileReadError(source, "the file parses as protobuf but holds no XSpace planes "
                               "(an empty profile, or another kind of protobuf)")
    n_lines_total = lines.shape[0]
    line_plane = lines[:, 0]
    line_first_event = lines[:, 1]
    line_span_rows = np.nonzero(owner_kind == 2)[0]
    bounds = np.searchsorted(owner_idx[line_span_rows], np.arange(n_lines_total + 1))
    line_msgs = [_parse(xplane_pb2.XLine, f, span_se[line_span_rows[bounds[li]:bounds[li + 1]]])
                 for li in range(n_lines_total)]
    line_ts_ps = np.array([m.timestamp_ns for m in line_msgs], dtype=np.int64) * 1000

    # Pass 2: each plane's chunks, a window at a time, appended to its columns.
    chunk_plane = line_plane[chunks[:, 0]] if chunks.shape[0] else np.zeros(0, np.int64)
    chunk_bounds = np.searchsorted(chunk_plane, np.arange(n_planes + 1))
    first_stat = [0] * (n_planes + 1)
    n_stats = 0
    # A second decoder thread when this process may use two CPUs (windows split in halves).
    pool = ThreadPoolExecutor(1, thread_name_prefix="tbprof-stream") if wire.default_threads() > 1 else None
    try:
        for pi in range(n_planes):
            first_stat[pi] = n_stats
            n_stats = _decode_plane(f, w, pi, chunks[chunk_bounds[pi]:chunk_bounds[pi + 1]], n_stats, window, pool)
    finally:
        if pool is not None:
            pool.shutdown()
    first_stat[n_planes] = n_stats
    t_decode = time.perf_counter()

    # The origin: the earliest absolute start over every plane (times made absolute in place).
    lo_hi = []
    for pi in range(n_planes):
        start = w.open(f"p{pi}_start_ps")
        if start.shape[0]:
            lo_hi.append(kernels.absolute_starts(start, w.open(f"p{pi}_dur_ps"), w.open(f"p{pi}_line_idx"),
                                                 line_ts_ps))
        del start
    origin_ps = min(lo for lo, _ in lo_hi) if lo_hi else 0
    span_ps = int((max(hi for _, hi in lo_hi) if lo_hi else 0) - origin_ps)

    strings = StringTable()
    plane_span_rows = np.nonzero(owner_kind == 1)[0]
    plane_bounds = np.searchsorted(owner_idx[plane_span_rows], np.arange(n_planes + 1))
    planes: list[tables.Plane] = []
    for pi in range(n_planes):
        pspans = span_se[plane_span_rows[plane_bounds[pi]:plane_bounds[pi + 1]]]
        # One plane's metadata at a time, as upb objects (its bytes and up to _UPB_BYTES_PER_FIELD a field).
        meta_bytes = int((pspans[:, 1] - pspans[:, 0]).sum())
        limit.check(meta_bytes + _UPB_BYTES_PER_FIELD * int(pspans.shape[0]),
                    f"the {meta_bytes:,} bytes of a plane's metadata")
        pmsg = _parse_plane(f, pspans)
        n_meta = len(pmsg.event_metadata) + len(pmsg.stat_metadata)
        limit.check(meta_bytes + _UPB_BYTES_PER_FIELD * int(pspans.shape[0]) + BUILD_BYTES_PER_METADATA * n_meta,
                    f"the tables of a plane's {n_meta:,} metadata entries")
        plane_lines = np.nonzero(line_plane == pi)[0]
        ev_lo = int(line_first_event[plane_lines[0]]) if plane_lines.shape[0] else 0
        blobs: list[bytes] = []
        pm = plane_meta(pmsg, strings, blobs)
        planes.append(finish_plane(EntryColumns(w, pi), f, pi, pmsg.id, pmsg.name.decode("utf-8", errors="replace"), pm,
                                   blobs, plane_lines, line_msgs, ev_lo, first_stat[pi], int(origin_ps), strings,
                                   window, limit, keep_columns=False))
        del pmsg
    if phases is not None:
        phases.update(index=t_index - t0, decode=t_decode - t_index, finish=time.perf_counter() - t_decode,
                      window_bytes=window, events=n_events, stats=n_stats)
    return tables.ProfileStore(
        source_path=source, host=host, format="xspace", strings=strings, planes=planes,
        origin_ps=int(origin_ps), span_ps=span_ps,
        hostnames=[_text(h) for h in space.hostnames],
        errors=[_text(e) for e in space.errors], warnings=[_text(x) for x in space.warnings],
    )


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _decode_window(raw: bytes, chunks: np.ndarray, lo: int, stat_row0: int,
                   pool: ThreadPoolExecutor | None) -> list[dict[str, np.ndarray]]:
    """The columns of a window's chunks, in row order: decoded here, or split in two halves of
    about equal bytes, the second decoded on the pool's thread (both release the GIL)."""
    if pool is None or chunks.shape[0] < 2 or len(raw) < _SPLIT_BYTES:
        return [wire.decode_window(raw, chunks, lo, stat_row0)]
    middle = (int(chunks[0, 1]) + int(chunks[-1, 2])) // 2
    m = min(max(1, int(np.searchsorted(chunks[:, 2], middle))), chunks.shape[0] - 1)
    # The second half counts its stat rows from 0: its texts' rows are moved once the first
    # half's count is known.
    second = pool.submit(wire.decode_window, raw, chunks[m:], lo, 0)
    try:
        first = wire.decode_window(raw, chunks[:m], lo, stat_row0)
    except wire.WireError:
        second.exception()  # the first half's error is the first in wire order
        raise
    rest = second.result()
    n_first = int(first["st_owner"].shape[0])
    rest["texts"][:, 0] += stat_row0 + n_first
    if stat_row0 + n_first + int(rest["st_owner"].shape[0]) >= wire.MAX_ROWS:
        raise wire.WireError(wire.ERR_TOO_MANY, int(chunks[-1, 2]))
    return [first, rest]


def _decode_plane(f: StreamSource, w: EntryWriter, pi: int, chunks: np.ndarray, stat_row0: int, window: int,
                  pool: ThreadPoolExecutor | None) -> int:
    """Appends the scanner's columns of plane ``pi``'s chunks to its files; returns the stat
    rows decoded so far (global, as the scanner counts them)."""
    cols = {
        "ev_start": w.appender(f"p{pi}_start_ps", np.int64),
        "ev_dur": w.appender(f"p{pi}_dur_ps", np.int64),
        "ev_line": w.appender(f"p{pi}_line_idx", np.int32),
        "ev_meta": w.appender(f"p{pi}_x_meta_in", np.int64),
        "st_owner": w.appender(f"p{pi}_s_owner", np.int32),
        "st_meta": w.appender(f"p{pi}_x_stat_in", np.int64),
        "st_kind": w.appender(f"p{pi}_s_kind", np.int8),
        "st_value": w.appender(f"p{pi}_s_value", np.int64),
        "texts": w.appender(f"p{pi}_x_texts", np.int64, width=3),
    }
    k = 0
    n = chunks.shape[0]
    ends = chunks[:, 2]
    while k < n:
        lo = int(chunks[k, 1])
        # As many chunks as fit in one window (at least one: a chunk ends at the first event
        # boundary past a quarter window, so only a single huge event makes it larger).
        j = max(k + 1, int(np.searchsorted(ends, lo + window, side="right")))
        hi = int(chunks[j - 1, 2])
        for out in _decode_window(f.pread(lo, hi - lo), chunks[k:j], lo, stat_row0, pool):
            for name, appender in cols.items():
                appender.append(out[name])
            stat_row0 += int(out["st_owner"].shape[0])
            del out
        k = j
    for appender in cols.values():
        appender.close()
    return stat_row0
