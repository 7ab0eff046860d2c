"""Converts an ``*.xplane.pb`` larger than the memory budget by streaming it into the disk cache.

The in-memory reader (``xplane.py``) holds the whole file and its columns at once, ~5x the
file's size. Here the file is read in windows of bounded size (``os.pread`` on a descriptor;
never ``mmap``: a profile truncated by another process while mapped would kill the server with
SIGBUS), in two passes:

1. *index*: ``wire.StreamIndex`` walks the space, plane and line headers window by window,
   skipping each event by its length, and records the byte spans of the small fields (plane
   metadata, line names) and the chunks of events, as ``wire.scan``'s index pass does;
2. *decode*: the chunks of each plane, read a window at a time, are decoded by
   ``wire.decode_window`` and appended to the plane's column files in the cache entry being
   written (``store/entry_writer.py``).

Then the columns are finished in place through memory maps (absolute times, the origin over
all planes, metadata rows and names, stat names, texts), with the same kernels and the same
order of string interning as ``xplane.py``, so the entry holds exactly the store the in-memory
reader builds (``tests/readers/test_xplane_stream.py`` compares every column). The entry is
committed whole and reopened by ``DiskCache.load``: tools then see a memory-mapped store.

What stays in anonymous memory: one window and its decoded columns (the window is 1/32 of the
budget, at most 16 MB; decoded columns take ~2.5x the window's bytes on real profiles and at
most ~14x for a file of empty events), the index tables (a row per small field and per chunk;
at most a quarter of the budget), one plane's metadata parsed by upb, the string table, and per
plane a 2-byte nesting depth per event and ~64 bytes per string value while its texts are
deduplicated. Those, and a plane whose rows are out of time order (sorted in memory), are
checked against the budget first (``MemoryRefusal``).
"""

from __future__ import annotations

import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tbprof._core import kernels, wire
from tbprof._core.wire import hash_spans
from tbprof.errors import MemoryRefusal, ProfileReadError, UnsafeCacheDir
from tbprof.protos import xplane_pb2
from tbprof.readers import xplane_columns
from tbprof.readers.files import open_regular
from tbprof.readers.xplane import (
    BUILD_BYTES_PER_METADATA,
    UPB_BYTES_PER_FIELD,
    parse_spans,
    plane_meta,
    without_replaced_stats,
)
from tbprof.store import tables
from tbprof.store.disk_cache import DiskCache, entry_meta, save_blobs
from tbprof.store.entry_writer import EntryWriter
from tbprof.store.fs import UrlPath, shown_name
from tbprof.store.strings import StringTable

_MIN_WINDOW_BYTES = 64 << 10
_MAX_WINDOW_BYTES = 16 << 20
# The window is this share of the budget: its decoded columns take up to ~14x its bytes.
_WINDOW_SHARE = 32
# Anonymous bytes per text of a plane while its strings are deduplicated (rows, offsets,
# lengths, digests, np.unique's sort and inverse).
_BYTES_PER_TEXT = 64
# Windows at least this large are decoded in two halves on two threads (smaller ones cost more
# in thread hand-offs than they save; the 128 KB windows of a 4 MB budget still split).
_SPLIT_BYTES = 64 << 10
# The index tables may take this share of the budget.
_INDEX_SHARE = 4
# Memory of one plane's metadata while upb parses it: its bytes plus this much per field (map
# entry, plane stat). Measured (RssAnon growth): jax_mlp's 0.40 MB in 41 fields (HLO protos as
# bytes) +0.16 MB; keras_cnn's 47 KB in 711 fields +25 KB; jax_large's host plane, 0.88 MB in
# 48.8 k fields (plane stats, mostly), +2.5 MB (~51 bytes a field). Building its tables then costs
# ``BUILD_BYTES_PER_METADATA`` per metadata entry, checked once upb has counted them.
_UPB_BYTES_PER_FIELD = UPB_BYTES_PER_FIELD
# Per event and stat of a plane sorted in memory (lexsort keys, order, inverse, reordered copies).
_SORT_BYTES_PER_EVENT = 64
_SORT_BYTES_PER_STAT = 48


class _Limit:
    """The budget a streaming conversion was given: checked before each step whose memory grows
    with the file rather than with the window."""

    def __init__(self, source: str, budget_bytes: int) -> None:
        self.source = source
        self.budget_bytes = budget_bytes

    def check(self, need_bytes: int, what: str) -> None:
        if need_bytes > self.budget_bytes:
            raise MemoryRefusal(self.source, (
                f"the file is too large to open here: {what} need about {need_bytes / 1e6:.1f} MB, more than the "
                f"{self.budget_bytes / 1e6:.1f} MB this streaming conversion may use. Open it on a machine with "
                "more memory"))


def window_bytes_for(budget_bytes: int) -> int:
    return max(_MIN_WINDOW_BYTES, min(_MAX_WINDOW_BYTES, budget_bytes // _WINDOW_SHARE))


class _File:
    """A regular file read by offset, refusing one that changes while it is read."""

    def __init__(self, path: Path) -> None:
        self.source = str(path)
        self.path = path
        self.fd = open_regular(path)
        st = os.fstat(self.fd)
        self.size = st.st_size
        self._stamp = (st.st_size, st.st_mtime_ns)

    def pread(self, offset: int, n: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            try:
                part = os.pread(self.fd, n - got, offset + got)
            except OSError as e:
                raise ProfileReadError(self.source, f"cannot read the file: {e.strerror or e}") from e
            if not part:
                raise self._changed()
            parts.append(part)
            got += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def check_unchanged(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError as e:
            raise ProfileReadError(self.source, f"cannot read the file: {e.strerror or e}") from e
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise self._changed()

    def _changed(self) -> ProfileReadError:
        return ProfileReadError(self.source, "the file changed while it was being read (is the profiler still "
                                "writing it?); try again when it is complete")

    def close(self) -> None:
        os.close(self.fd)


class _UrlFile:
    """An object in a bucket read by offset: ranged GETs of at least ``block_bytes`` each, the
    last block kept so that the many small reads of headers and texts cost no request each.
    An object whose size differs from the listing's (rewritten since) is refused."""

    def __init__(self, path: UrlPath, block_bytes: int) -> None:
        self.source = str(path)
        self.path = path
        self.size = path.stat().st_size  # from the listing: no request
        self._block_bytes = block_bytes
        self._block_start = 0
        self._block = b""

    def pread(self, offset: int, n: int) -> bytes:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise self._changed()
        if self._block_start <= offset and offset + n <= self._block_start + len(self._block):
            at = offset - self._block_start
            return self._block[at:at + n]
        end = min(self.size, offset + max(n, self._block_bytes))
        data = self.path.read_range(offset, end)
        if len(data) != end - offset:
            raise self._changed()
        if n >= self._block_bytes:
            return data[:n]  # a whole window: not kept (the next one starts after it)
        self._block_start, self._block = offset, data
        return data[:n]

    def check_unchanged(self) -> None:
        if self.path.current_size() != self.size:
            raise self._changed()

    def _changed(self) -> ProfileReadError:
        return ProfileReadError(self.source, "the file changed while it was being read (rewritten since it was "
                                "listed?); reload the page")

    def close(self) -> None:
        self._block = b""


# What a streaming conversion reads from: a local file or an object in a bucket.
_Input = _File | _UrlFile


def _merged_spans(spans: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) rows joined where they are adjacent (as ``xplane.parse_spans`` joins them)."""
    if spans.shape[0] > 1:
        cut = np.flatnonzero(spans[1:, 0] != spans[:-1, 1]) + 1
        first = np.concatenate(([0], cut))
        last = np.concatenate((cut - 1, [spans.shape[0] - 1]))
        spans = np.stack((spans[first, 0], spans[last, 1]), axis=1)
    return [(int(s), int(e)) for s, e in spans.tolist()]


def _parse(message_type: type, f: _Input, spans: np.ndarray) -> Any:
    joined = b"".join(f.pread(s, e - s) for s, e in _merged_spans(spans))
    return message_type.FromString(joined)  # type: ignore[attr-defined]


def _parse_plane(f: _Input, spans: np.ndarray) -> xplane_pb2.XPlane:
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
    f: _Input = _UrlFile(path, window) if isinstance(path, UrlPath) else _File(path)
    try:
        if f.size == 0:
            raise ProfileReadError(source, "the file is empty (0 bytes)")
        try:
            with EntryWriter(disk, key) as writer:
                store = _convert(f, writer, source, host_name, max(wire.STREAM_STEP_BYTES, window), budget_bytes,
                                 phases)
                f.check_unchanged()
                writer.commit(entry_meta(store))
        except wire.WireError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
        except DecodeError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
        except IndexError as e:
            raise ProfileReadError(source, f"not a readable XSpace profile: inconsistent contents ({e})") from e
        except UnsafeCacheDir as e:
            raise MemoryRefusal(source, f"cannot stream the file into the disk cache: {e}") from None
        except OSError as e:
            # The cache's disk (full, unwritable), not the file: a refusal for now, not a failure
            # remembered for this file (MemoryRefusal is the "may work later" kind). The frames of
            # the traceback hold the half-written columns' mappings, whose deleted files keep
            # their disk space until unmapped: clear them now, and do not chain the error (an
            # answer kept in a memo would keep them too).
            reason = e.strerror or str(e)
            traceback.clear_frames(e.__traceback__)
            del e
            raise MemoryRefusal(source, f"cannot write the converted profile to the cache ({disk.root}): "
                                f"{reason}; free some disk there, or point --cache-dir elsewhere") from None
    finally:
        f.close()
    loaded = disk.load(key)
    if loaded is None:
        raise ProfileReadError(source, f"the converted profile could not be reopened from the cache ({disk.root})")
    return loaded


def _convert(f: _Input, w: EntryWriter, source: str, host: str, window: int, budget_bytes: int,
             phases: dict[str, float] | None) -> tables.ProfileStore:
    t0 = time.perf_counter()
    limit = _Limit(source, budget_bytes)
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
        # One plane's metadata at a time, as upb objects (its bytes and ~51 bytes a field).
        meta_bytes = int((pspans[:, 1] - pspans[:, 0]).sum())
        limit.check(meta_bytes + _UPB_BYTES_PER_FIELD * int(pspans.shape[0]),
                    f"the {meta_bytes:,} bytes of a plane's metadata")
        pmsg = _parse_plane(f, pspans)
        n_meta = len(pmsg.event_metadata) + len(pmsg.stat_metadata)
        limit.check(meta_bytes + _UPB_BYTES_PER_FIELD * int(pspans.shape[0]) + BUILD_BYTES_PER_METADATA * n_meta,
                    f"the tables of a plane's {n_meta:,} metadata entries")
        plane_lines = np.nonzero(line_plane == pi)[0]
        ev_lo = int(line_first_event[plane_lines[0]]) if plane_lines.shape[0] else 0
        planes.append(_finish_plane(f, w, pi, pmsg, plane_lines, line_msgs, ev_lo, first_stat[pi], int(origin_ps),
                                    strings, window, limit))
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


def _decode_plane(f: _Input, w: EntryWriter, pi: int, chunks: np.ndarray, stat_row0: int, window: int,
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


def _finish_plane(f: _Input, w: EntryWriter, pi: int, pmsg: xplane_pb2.XPlane, plane_lines: np.ndarray,
                  line_msgs: list[xplane_pb2.XLine], ev_lo: int, first_stat: int, origin_ps: int,
                  strings: StringTable, window: int, limit: _Limit) -> tables.Plane:
    """``xplane._build_plane`` on the plane's column files, in place."""
    blobs: list[bytes] = []
    pm = plane_meta(pmsg, strings, blobs)

    start_ps = w.open(f"p{pi}_start_ps")
    dur_ps = w.open(f"p{pi}_dur_ps")
    local_line = w.open(f"p{pi}_line_idx")
    meta_in = w.open(f"p{pi}_x_meta_in")
    n_ev = int(start_ps.shape[0])
    meta_idx = w.create(f"p{pi}_meta_idx", np.int32, n_ev)
    name_id = w.create(f"p{pi}_name_id", np.int32, n_ev)
    identity = kernels.finish_events(
        start_ps, dur_ps, local_line, meta_in, meta_idx, name_id, origin_ps,
        int(plane_lines[0]) if plane_lines.shape[0] else 0,
        xplane_columns.id_lookup(pm.meta_ids, pm.meta_rows, n_ev, -1), pm.meta_ids, pm.meta_rows, pm.meta_name_id)
    del meta_in

    owner = w.open(f"p{pi}_s_owner")
    stat_in = w.open(f"p{pi}_x_stat_in")
    n_st = int(owner.shape[0])
    stat_id = w.create(f"p{pi}_s_stat_id", np.int32, n_st)
    kind_col = w.open(f"p{pi}_s_kind")
    values = w.open(f"p{pi}_s_value")
    kernels.finish_stats(owner, stat_in, stat_id, kind_col, values, ev_lo,
                         xplane_columns.id_lookup(pm.stat_ids, pm.stat_names, n_st, 0), pm.stat_ids, pm.stat_names)
    del stat_in
    texts = w.open(f"p{pi}_x_texts")
    _decode_texts(f, texts, first_stat, kind_col, values, strings, blobs, window, limit)
    del texts

    if not identity:
        # Rare (a writer that did not emit rows in time order): sorted in memory, written back.
        limit.check(n_ev * _SORT_BYTES_PER_EVENT + n_st * _SORT_BYTES_PER_STAT,
                    f"the {n_ev:,} events of a plane out of time order (sorted in memory)")
        order = np.lexsort((-np.asarray(dur_ps), np.asarray(start_ps), np.asarray(local_line)))
        for col in (local_line, start_ps, dur_ps, meta_idx, name_id):
            col[:] = np.asarray(col)[order]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.shape[0])
        new_owner = inverse[np.asarray(owner)].astype(np.int32)
        sort = np.argsort(new_owner, kind="stable")
        owner[:] = new_owner[sort]
        for col in (stat_id, kind_col, values):
            col[:] = np.asarray(col)[sort]
        del order, inverse, new_owner, sort

    # (Needles in the column's dtype: int64 needles would make numpy copy the mapped column.)
    line_offsets = np.searchsorted(local_line, np.arange(plane_lines.shape[0] + 1, dtype=local_line.dtype)
                                   ).astype(np.int64)
    limit.check(2 * n_ev, f"the nesting depths of {n_ev:,} events")
    depth = kernels.nesting_depth(start_ps, dur_ps, line_offsets)
    lines = [line_msgs[i] for i in plane_lines.tolist()]
    line_ids = np.array([m.id for m in lines], dtype=np.int64)
    line_timestamp_ns = np.array([m.timestamp_ns for m in lines], dtype=np.int64)
    for name, arr in (("line_ids", line_ids), ("line_timestamp_ns", line_timestamp_ns), ("line_offsets", line_offsets),
                      ("depth", depth), ("meta_ids", pm.meta_ids), ("meta_name_id", pm.meta_name_id),
                      ("meta_display_name_id", pm.meta_display_name_id)):
        w.save(f"p{pi}_{name}", arr)
    for col in ("owner", "stat_id", "kind", "value"):
        w.save(f"p{pi}_m_{col}", getattr(pm.meta_stats, col))
    save_blobs(w.folder, pi, blobs)
    for scratch in ("x_meta_in", "x_stat_in", "x_texts"):
        w.remove(f"p{pi}_{scratch}")
    # Only what entry_meta reads matters here; the caller reloads the committed entry.
    return tables.Plane(
        index=pi, id=pmsg.id, name=_text(pmsg.name), line_ids=line_ids,
        line_names=[_text(m.name) for m in lines], line_display_names=[_text(m.display_name) for m in lines],
        line_timestamp_ns=line_timestamp_ns, line_offsets=line_offsets, start_ps=np.zeros(0, np.int64),
        dur_ps=np.zeros(0, np.int64), meta_idx=np.zeros(0, np.int32), name_id=np.zeros(0, np.int32),
        depth=np.zeros(0, np.int16), line_idx=np.zeros(0, np.int32), stats=tables.StatTable.empty(),
        meta_ids=pm.meta_ids, meta_name_id=pm.meta_name_id, meta_display_name_id=pm.meta_display_name_id,
        meta_stats=pm.meta_stats, plane_stats=pm.plane_stats, blobs=[])


def _batches(offsets: np.ndarray, lengths: np.ndarray, window: int) -> list[tuple[int, int]]:
    """Runs [a, b) of byte spans (ascending, not overlapping) that each fit a window (or are one span)."""
    ends = offsets + lengths
    out = []
    a, n = 0, offsets.shape[0]
    while a < n:
        b = max(a + 1, int(np.searchsorted(ends, int(offsets[a]) + window, side="right")))
        out.append((a, b))
        a = b
    return out


def _decode_texts(f: _Input, texts: np.ndarray, first_stat: int, kind: np.ndarray, value: np.ndarray,
                  strings: StringTable, blobs: list[bytes], window: int, limit: _Limit) -> None:
    """``xplane._decode_texts`` reading the texts from the file a window at a time: str stats get
    string ids interned in the same order (distinct texts by digest), bytes stats blob indices."""
    n = int(texts.shape[0])
    if n == 0:
        return
    limit.check(n * _BYTES_PER_TEXT, f"the {n:,} string values of one plane")
    rows = np.asarray(texts[:, 0]) - first_stat
    is_str = np.asarray(kind)[rows] == tables.KIND_STR
    str_at = np.flatnonzero(is_str)
    if str_at.shape[0]:
        offsets = np.asarray(texts[str_at, 1])
        lengths = np.asarray(texts[str_at, 2])
        digest = np.empty(str_at.shape[0], dtype=np.uint64)
        for a, b in _batches(offsets, lengths, window):
            lo = int(offsets[a])
            raw = f.pread(lo, int(offsets[b - 1] + lengths[b - 1]) - lo)
            digest[a:b] = hash_spans(np.frombuffer(raw, dtype=np.uint8), offsets[a:b] - lo, lengths[a:b])
        _, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
        del digest
        # The distinct texts, read in file order and interned in digest order (as in memory).
        by_offset = np.argsort(first, kind="stable")
        decoded: list[str] = [""] * first.shape[0]
        f_off, f_len = offsets[first[by_offset]], lengths[first[by_offset]]
        for a, b in _batches(f_off, f_len, window):
            lo = int(f_off[a])
            raw = f.pread(lo, int(f_off[b - 1] + f_len[b - 1]) - lo)
            for i, o, ln in zip(by_offset[a:b].tolist(), (f_off[a:b] - lo).tolist(), f_len[a:b].tolist(),
                                strict=True):
                decoded[i] = raw[o:o + ln].decode("utf-8", errors="replace")
        ids = np.array([strings.intern(t) for t in decoded], dtype=np.int64)
        value[rows[str_at]] = ids[inverse]
        del decoded, ids, inverse, first, offsets, lengths
    for row, o, ln in np.asarray(texts[~is_str]).tolist():
        blobs.append(f.pread(o, ln) if ln else b"")
        value[row - first_stat] = len(blobs) - 1
