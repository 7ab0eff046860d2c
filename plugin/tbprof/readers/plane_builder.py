"""The one plane builder of the readers: both XSpace readers finish planes here, and every
reader (Chrome trace JSON too) orders a plane's rows into lines and nesting depths here.

The in-memory reader (``xplane.py``) holds the scanner's columns of the whole file; the streaming
reader (``xplane_stream.py``) appends them, window by window, to column files of the cache entry
it writes. From there a plane is finished by the same steps on either: metadata ids to rows and
names, times made relative to the profile's origin (the in-memory reader's still offsets in their
line: the line's timestamp is added in the same pass), stats' metadata ids to names, texts
interned (distinct texts by a content hash, in digest order: the order of ``strings.intern``
calls fixes every string id), rows sorted when a writer did not emit them in time order, line
offsets and nesting depths (in that same pass where the rows are in order). The readers differ
only in where the columns live (``Columns``: arrays in memory, or files of the entry), where
texts are read from (``byte_sources``: the bytes in memory, or ``pread`` windows of the file)
and the memory limit checked on the way: eager reading is streaming with an unlimited window.

Readers whose events come in any order (Chrome trace JSON: every thread's events interleaved in
file order) hand them to ``plane_collected.build_planes``, which sorts them into planes and
places their stats, then finishes each plane here too (``line_rows``, ``plane``); the flows of
such a trace are bound to their slices by ``plane_flows.py``. ``take_lines`` re-cuts a finished
plane (the Kineto pass moves a device process's host threads to a plane of their own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tbprof._core import kernels, wire
from tbprof._core.wire import hash_spans
from tbprof.cache.disk_cache import save_blobs
from tbprof.cache.entry_writer import EntryWriter
from tbprof.errors import MemoryRefusal
from tbprof.readers import xplane_columns
from tbprof.readers.byte_sources import ByteSource
from tbprof.readers.plane_threads import Later, now_or_beside
from tbprof.store import tables
from tbprof.store.markers import COUNTER_LINES_STAT
from tbprof.store.strings import StringTable

if TYPE_CHECKING:  # the messages are built by readers/xplane.py, which imports protobuf when it parses
    from tbprof.protos import xplane_pb2

# Anonymous bytes per text of a plane while its strings are deduplicated (rows, offsets,
# lengths, digests, the distinct digests' hash table, ranks and inverse).
_BYTES_PER_TEXT = 64
# Per event and stat of a plane sorted in memory (lexsort keys, order, inverse, reordered copies).
_SORT_BYTES_PER_EVENT = 64
_SORT_BYTES_PER_STAT = 48

EMPTY_STATS = tables.StatTable(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int8),
                               np.zeros(0, np.int64))


class Limit:
    """The memory a conversion may use: checked before each step whose memory grows with the
    file rather than with the window (``None`` where the reader checked its whole need first)."""

    def __init__(self, source: str, budget_bytes: int) -> None:
        self.source = source
        self.budget_bytes = budget_bytes

    def check(self, need_bytes: int, what: str) -> None:
        if need_bytes > self.budget_bytes:
            raise MemoryRefusal(self.source, (
                f"the file is too large to open here: {what} need about {need_bytes / 1e6:.1f} MB, more than the "
                f"{self.budget_bytes / 1e6:.1f} MB this streaming conversion may use. Open it on a machine with "
                "more memory"))


def _check(limit: Limit | None, need_bytes: int, what: str) -> None:
    if limit is not None:
        limit.check(need_bytes, what)


class Columns(Protocol):
    """A plane's columns, by name: the scanner's (``start_ps``, ``dur_ps``, ``line_idx``,
    ``s_owner``, ``s_kind``, ``s_value``; scratch ``x_meta_in``, ``x_stat_in``, ``x_texts``), and
    those the builder adds. Arrays returned are written in place."""

    def open(self, name: str) -> Any: ...
    def create(self, name: str, dtype: Any, rows: int) -> Any: ...
    def save(self, name: str, array: np.ndarray) -> None: ...
    def remove(self, name: str) -> None: ...
    def save_blobs(self, blobs: list[bytes]) -> None: ...


class MemoryColumns:
    """Columns held in memory (the in-memory reader: views of the scanner's columns)."""

    def __init__(self, columns: dict[str, np.ndarray]) -> None:
        self.columns = columns

    def open(self, name: str) -> np.ndarray:
        return self.columns[name]

    def create(self, name: str, dtype: Any, rows: int) -> np.ndarray:
        self.columns[name] = np.empty(rows, dtype=dtype)
        return self.columns[name]

    def save(self, name: str, array: np.ndarray) -> None:
        self.columns[name] = array

    def remove(self, name: str) -> None:
        self.columns.pop(name, None)

    def save_blobs(self, blobs: list[bytes]) -> None:
        """The blobs stay in the plane (``Plane.blobs``)."""


class EntryColumns:
    """Plane ``pi``'s column files in a cache entry being written (the streaming reader)."""

    def __init__(self, writer: EntryWriter, pi: int) -> None:
        self.writer = writer
        self.pi = pi

    def open(self, name: str) -> Any:
        return self.writer.open(f"p{self.pi}_{name}")

    def create(self, name: str, dtype: Any, rows: int) -> Any:
        return self.writer.create(f"p{self.pi}_{name}", dtype, rows)

    def save(self, name: str, array: np.ndarray) -> None:
        self.writer.save(f"p{self.pi}_{name}", array)

    def remove(self, name: str) -> None:
        self.writer.remove(f"p{self.pi}_{name}")

    def save_blobs(self, blobs: list[bytes]) -> None:
        save_blobs(self.writer.folder, self.pi, blobs)


class DeferredStats(Protocol):
    """A plane's stats decoded on first use (the in-memory reader's lazy mode)."""

    def decode_now(self, stat_ids: np.ndarray, stat_names: np.ndarray, blobs: list[bytes]) -> tables.StatTable: ...
    def defer(self, plane: tables.Plane, stat_ids: np.ndarray, stat_names: np.ndarray) -> None: ...


@dataclass
class PlaneMeta:
    """A plane's small tables, decoded by upb (the same for the in-memory and streaming readers:
    the order of ``strings.intern`` calls fixes every string id)."""

    stat_ids: np.ndarray  # int64 XStatMetadata ids, ascending
    stat_names: np.ndarray  # int32 string ids of their names
    meta_ids: np.ndarray  # int64 XEventMetadata ids, ascending
    meta_rows: np.ndarray  # int32 0..n-1
    meta_name_id: np.ndarray
    meta_display_name_id: np.ndarray
    meta_stats: tables.StatTable
    plane_stats: dict[str, object]


def plane_meta(pmsg: xplane_pb2.XPlane, strings: StringTable, blobs: list[bytes]) -> PlaneMeta:
    stat_ids, stat_names = _stat_name_ids(pmsg, strings)
    stat_name_of = dict(zip(stat_ids.tolist(), stat_names.tolist(), strict=False))

    # Event metadata table.
    meta_ids = np.array(sorted(pmsg.event_metadata.keys()), dtype=np.int64)
    metas = [pmsg.event_metadata[i] for i in meta_ids.tolist()]
    meta_name_id = np.array([strings.intern(_text(m.name)) for m in metas], dtype=np.int32)
    meta_display_name_id = np.array([strings.intern(_text(m.display_name)) if m.display_name else 0 for m in metas],
                                    dtype=np.int32)
    m_owner: list[int] = []
    m_stat: list[int] = []
    m_kind: list[int] = []
    m_value: list[int] = []
    for row, m in enumerate(metas):
        for st in m.stats:
            kind, value = _value_from_pb(st, stat_name_of, strings, blobs)
            m_owner.append(row)
            m_stat.append(stat_name_of.get(st.metadata_id, 0))
            m_kind.append(kind)
            m_value.append(value)
    meta_stats = tables.StatTable(np.array(m_owner, np.int32), np.array(m_stat, np.int32),
                                  np.array(m_kind, np.int8), np.array(m_value, np.int64))

    # Plane-level stats by name; when a name repeats (JAX's scope-range plane carries tens of
    # thousands of stats under two names: bench/measurements.md#plane-stats) the last value wins,
    # so only the last of each is decoded.
    last_of_name = {stat_name_of.get(st.metadata_id, 0): st for st in pmsg.stats}
    plane_stats: dict[str, object] = {}
    for name_id, st in last_of_name.items():
        kind, value = _value_from_pb(st, stat_name_of, strings, blobs)
        plane_stats[strings[name_id]] = _plain_value(kind, value, strings, blobs)
    return PlaneMeta(stat_ids, stat_names, meta_ids, np.arange(meta_ids.shape[0], dtype=np.int32), meta_name_id,
                     meta_display_name_id, meta_stats, plane_stats)


# A plane with this many fields, this many of them plane stats, keeps only the last stat of each
# metadata name before upb parses it (readers/xplane.py ``without_replaced_stats``): the stats'
# order, and so the order their values are interned in, is that of the kept ones.
MANY_PLANE_STATS = 256


def wire_plane_meta(data: bytes | np.ndarray, spans: np.ndarray, strings: StringTable,
                    blobs: list[bytes]) -> tuple[int, str, PlaneMeta] | None:
    """A plane's id, name and ``plane_meta`` read from its fields' bytes (``spans``: start, end
    rows of whole XPlane fields, lines excluded) by the compiled core, without a upb message
    (what a pod's worker spends most of a small host's plane metadata on); the same tables, the
    same strings interned in the same order. None where only upb reads the plane as it would:
    the caller parses it (``plane_meta``)."""
    got = wire.plane_metadata(data, spans[:, 0], spans[:, 1])
    if got is None:
        return None
    plane_id, plane_name, meta_ids, ev_names, ev_display, stat_ids, names, meta_st, plane_st = got
    prune = (spans.shape[0] >= MANY_PLANE_STATS and plane_st.shape[0] >= MANY_PLANE_STATS
             and bool((plane_st[:, 1] >= 0).all()))
    if prune and any("\ufffd" in n for n in names):
        return None  # the kept stats are grouped by name bytes, which these texts no longer tell apart
    # Nothing interned before this point: a plane left to upb interns its strings from the start.
    stat_names = np.array(strings.intern_all(names), dtype=np.int32)
    stat_name_of = dict(zip(stat_ids.tolist(), stat_names.tolist(), strict=True))
    meta_name_id = np.array(strings.intern_all(ev_names), dtype=np.int32)
    meta_display_name_id = np.array([i if d else 0 for i, d in zip(strings.intern_all(ev_display), ev_display,
                                                                     strict=True)], dtype=np.int32)

    view = memoryview(data) if isinstance(data, bytes) else data.data
    m_stat: list[int] = []
    m_kind: list[int] = []
    m_value: list[int] = []
    for _, meta, kind, value, length in meta_st.tolist():
        k, v = _value_from_wire(view, meta, kind, value, length, stat_name_of, strings, blobs)
        m_stat.append(stat_name_of.get(meta, 0))
        m_kind.append(k)
        m_value.append(v)
    meta_stats = tables.StatTable(meta_st[:, 0].astype(np.int32), np.array(m_stat, np.int32),
                                  np.array(m_kind, np.int8), np.array(m_value, np.int64))

    if prune:
        group_of_name: dict[str, int] = {}
        meta_group = np.array([group_of_name.setdefault(n, len(group_of_name)) for n in names], dtype=np.int64)
        ids = plane_st[:, 1]
        group = np.full(ids.shape[0], -1, dtype=np.int64)
        if stat_ids.shape[0]:
            pos = np.minimum(np.searchsorted(stat_ids, ids), stat_ids.shape[0] - 1)
            known = stat_ids[pos] == ids
            group[known] = meta_group[pos[known]]
        _, first_reversed = np.unique(group[::-1], return_index=True)
        keep = np.zeros(ids.shape[0], dtype=bool)
        keep[ids.shape[0] - 1 - first_reversed] = True
        plane_st = plane_st[keep]
    last_of_name = {stat_name_of.get(row[1], 0): row for row in plane_st.tolist()}
    plane_stats: dict[str, object] = {}
    for name_id, (_, meta, kind, value, length) in last_of_name.items():
        k, v = _value_from_wire(view, meta, kind, value, length, stat_name_of, strings, blobs)
        plane_stats[strings[name_id]] = _plain_value(k, v, strings, blobs)
    return plane_id, plane_name.decode("utf-8", errors="replace"), PlaneMeta(
        stat_ids, stat_names, meta_ids, np.arange(meta_ids.shape[0], dtype=np.int32), meta_name_id,
        meta_display_name_id, meta_stats, plane_stats)


def _value_from_wire(view: memoryview, meta: int, kind: int, value: int, length: int, stat_name_of: dict[int, int],
                     strings: StringTable, blobs: list[bytes]) -> tuple[int, int]:
    """``_value_from_pb`` of a stat row of ``wire.plane_metadata``."""
    if kind == tables.KIND_STR:
        return kind, strings.intern(str(view[value:value + length], "utf-8", "replace"))
    if kind == tables.KIND_BYTES:
        blobs.append(bytes(view[value:value + length]))
        return kind, len(blobs) - 1
    if kind == tables.KIND_REF:
        return kind, stat_name_of.get(value & 0xFFFFFFFFFFFFFFFF, 0)  # a uint64 on the wire
    return kind, value


def _stat_name_ids(pmsg: xplane_pb2.XPlane, strings: StringTable) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array(sorted(pmsg.stat_metadata.keys()), dtype=np.int64)
    name_ids = np.array([strings.intern(_text(pmsg.stat_metadata[i].name)) for i in ids.tolist()], dtype=np.int32)
    return ids, name_ids


def _value_from_pb(stat: xplane_pb2.XStat, stat_name_of: dict[int, int],
                   strings: StringTable, blobs: list[bytes]) -> tuple[int, int]:
    which = stat.WhichOneof("value")
    if which == "double_value":
        return tables.KIND_DOUBLE, int(np.float64(stat.double_value).view(np.int64))
    if which == "uint64_value":
        return tables.KIND_UINT64, int(np.uint64(stat.uint64_value).view(np.int64))
    if which == "int64_value":
        return tables.KIND_INT64, stat.int64_value
    if which == "str_value":
        return tables.KIND_STR, strings.intern(_text(stat.str_value))
    if which == "bytes_value":
        blobs.append(stat.bytes_value)
        return tables.KIND_BYTES, len(blobs) - 1
    if which == "ref_value":
        return tables.KIND_REF, stat_name_of.get(stat.ref_value, 0)
    return tables.KIND_NONE, 0


def _plain_value(kind: int, value: int, strings: StringTable, blobs: list[bytes]) -> object:
    if kind == tables.KIND_DOUBLE:
        return float(np.int64(value).view(np.float64))
    if kind == tables.KIND_UINT64:
        return int(np.int64(value).view(np.uint64))
    if kind in (tables.KIND_STR, tables.KIND_REF):
        return strings[value]
    if kind == tables.KIND_BYTES:
        return blobs[value]
    return value


def batches(offsets: np.ndarray, lengths: np.ndarray, window: int) -> list[tuple[int, int]]:
    """Runs [a, b) of byte spans (ascending, not overlapping) that each fit a window (or are one span)."""
    ends = offsets + lengths
    out = []
    a, n = 0, offsets.shape[0]
    while a < n:
        b = max(a + 1, int(np.searchsorted(ends, int(offsets[a]) + window, side="right")))
        out.append((a, b))
        a = b
    return out


def decode_texts(f: ByteSource, texts: np.ndarray, first_stat: int, kind: np.ndarray, value: np.ndarray,
                 strings: StringTable, blobs: list[bytes], window: int, limit: Limit | None) -> None:
    """Sets the value of str stats to a string id and of bytes stats to a blob index, in place,
    reading the texts from ``f`` a window at a time. A few texts repeat on many events ("$$1" on
    every kernel): each distinct one (by a content hash computed in compiled code) is decoded
    once, read in file order and interned in digest order."""
    n = int(texts.shape[0])
    if n == 0:
        return
    _check(limit, n * _BYTES_PER_TEXT, f"the {n:,} string values of one plane")
    rows = np.asarray(texts[:, 0]) - first_stat
    is_str = np.asarray(kind)[rows] == tables.KIND_STR
    str_at = np.flatnonzero(is_str)
    if str_at.shape[0]:
        offsets = np.asarray(texts[str_at, 1])
        lengths = np.asarray(texts[str_at, 2])
        digest = np.empty(str_at.shape[0], dtype=np.uint64)
        for a, b in batches(offsets, lengths, window):
            lo = int(offsets[a])
            raw = f.pread(lo, int(offsets[b - 1] + lengths[b - 1]) - lo)
            digest[a:b] = hash_spans(np.frombuffer(raw, dtype=np.uint8), offsets[a:b] - lo, lengths[a:b])
        first, inverse = kernels.unique_keys(digest)
        del digest
        by_offset = np.argsort(first, kind="stable")
        decoded: list[str] = [""] * first.shape[0]
        f_off, f_len = offsets[first[by_offset]], lengths[first[by_offset]]
        for a, b in batches(f_off, f_len, window):
            lo = int(f_off[a])
            raw = f.pread(lo, int(f_off[b - 1] + f_len[b - 1]) - lo)
            for i, o, ln in zip(by_offset[a:b].tolist(), (f_off[a:b] - lo).tolist(), f_len[a:b].tolist(),
                                strict=True):
                decoded[i] = str(raw[o:o + ln], "utf-8", errors="replace")
        ids = np.array(strings.intern_all(decoded), dtype=np.int64)
        value[rows[str_at]] = ids[inverse]
        del decoded, ids, inverse, first, offsets, lengths
    for row, o, ln in np.asarray(texts[~is_str]).tolist():
        blobs.append(bytes(f.pread(o, ln)) if ln else b"")
        value[row - first_stat] = len(blobs) - 1


def finish_stats(cols: Columns, f: ByteSource, ev_lo: int, first_stat: int, stat_ids: np.ndarray,
                 stat_names: np.ndarray, strings: StringTable, blobs: list[bytes], window: int,
                 limit: Limit | None) -> tables.StatTable:
    """A plane's stats from the scanner's columns, finished in place: owners relative to the
    plane, metadata ids to stat names, texts to string ids and blob indices."""
    stats, finish = _stat_columns(cols, ev_lo, stat_ids, stat_names)
    finish()
    decode_texts(f, cols.open("x_texts"), first_stat, stats.kind, stats.value, strings, blobs, window, limit)
    return stats


def _stat_columns(cols: Columns, ev_lo: int, stat_ids: np.ndarray,
                  stat_names: np.ndarray) -> tuple[tables.StatTable, Later]:
    """A plane's stat columns and the compiled step that finishes them in place (owners relative
    to the plane, metadata ids to stat names; it releases the GIL): run it before the texts."""
    owner = cols.open("s_owner")
    stat_in = cols.open("x_stat_in")
    n_st = int(owner.shape[0])
    stat_id = stat_in if stat_in.dtype == np.int32 else cols.create("s_stat_id", np.int32, n_st)
    kind_col = cols.open("s_kind")
    values = cols.open("s_value")
    lut = xplane_columns.id_lookup(stat_ids, stat_names, n_st, 0)

    def finish() -> None:
        kernels.finish_stats(owner, stat_in, stat_id, kind_col, values, ev_lo, lut, stat_ids, stat_names)

    return tables.StatTable(owner, stat_id, kind_col, values), finish


# From this many events or stats on, a plane's compiled steps run two at a time (``finish_plane``):
# a step takes ~0.2 ms on 64K rows, starting and joining a thread ~0.03 ms
# (bench/measurements.md#one-host-summary).
PARALLEL_MIN_ROWS = 1 << 16


def finish_plane(cols: Columns, f: ByteSource, pi: int, plane_id: int, plane_name: str, pm: PlaneMeta,
                 blobs: list[bytes], plane_lines: np.ndarray, line_msgs: list[xplane_pb2.XLine], ev_lo: int,
                 first_stat: int, origin_ps: int, strings: StringTable, window: int, limit: Limit | None,
                 deferred: DeferredStats | None = None, keep_columns: bool = True,
                 line_ts_ps: np.ndarray | None = None) -> tables.Plane:
    """Plane ``pi`` from its columns in ``cols`` (``pm``: its metadata tables, ``blobs`` their
    bytes values). ``deferred``: the stats are decoded on first use; ``keep_columns`` False: the
    plane carries only its small tables (the caller reopens the committed entry); ``line_ts_ps``:
    the file's line timestamps, where the starts are still the scanner's offsets in their line."""
    start_ps = cols.open("start_ps")
    dur_ps = cols.open("dur_ps")
    local_line = cols.open("line_idx")
    meta_in = cols.open("x_meta_in")
    n_ev = int(start_ps.shape[0])
    meta_idx = meta_in if meta_in.dtype == np.int32 else cols.create("meta_idx", np.int32, n_ev)
    name_id = cols.create("name_id", np.int32, n_ev)
    # The compiled steps release the GIL: on a large plane the events' names and the stats are
    # finished on a thread while the events' times and depths are (the columns are opened here,
    # on this thread; the thread only runs the kernels on them).
    stats: tables.StatTable | None = None
    finish: Later | None = None
    if deferred is None:
        stats, finish = _stat_columns(cols, ev_lo, pm.stat_ids, pm.stat_names)
    split = n_ev >= PARALLEL_MIN_ROWS
    # The nesting depths in the same pass, valid where the rows are in order (rows out of order
    # are sorted first, and their depths follow the sort).
    _check(limit, 2 * n_ev, f"the nesting depths of {n_ev:,} events")
    depth = np.empty(n_ev, dtype=np.int16)
    lut = xplane_columns.id_lookup(pm.meta_ids, pm.meta_rows, n_ev, -1)
    first_line = int(plane_lines[0]) if plane_lines.shape[0] else 0

    def finish_events(names: bool, times: bool) -> bool:
        return kernels.finish_events(start_ps, dur_ps, local_line, meta_in, meta_idx, name_id, origin_ps, first_line,
                                     lut, pm.meta_ids, pm.meta_rows, pm.meta_name_id, line_ts_ps, depth,
                                     names=names, times=times)

    on_thread = split or (stats is not None and n_ev + int(stats.owner.shape[0]) >= PARALLEL_MIN_ROWS)
    if finish is not None and not on_thread:
        finish()
        finish = None
    beside = _Beside((lambda: finish_events(True, False)) if split else None, finish)
    done = now_or_beside(beside.run, on_thread)
    try:
        identity = finish_events(not split, True)
    except (IndexError, MemoryError):
        done()
        beside.raise_names_error()  # a metadata row's error first, as one pass over both reports it
        raise
    done()
    beside.raise_errors()

    # Stats now; or on first use (``deferred``), unless the rows must be sorted, which re-points them.
    if deferred is None:
        assert stats is not None
        decode_texts(f, cols.open("x_texts"), first_stat, stats.kind, stats.value, strings, blobs, window, limit)
    elif not identity:
        stats = deferred.decode_now(pm.stat_ids, pm.stat_names, blobs)

    if not identity:
        # Rare (a writer that did not emit rows in time order): sorted in memory, written back.
        assert stats is not None
        n_st = int(stats.owner.shape[0])
        _check(limit, n_ev * _SORT_BYTES_PER_EVENT + n_st * _SORT_BYTES_PER_STAT,
               f"the {n_ev:,} events of a plane out of time order (sorted in memory)")
        order = np.lexsort((-np.asarray(dur_ps), np.asarray(start_ps), np.asarray(local_line)))
        for col in (local_line, start_ps, dur_ps, meta_idx, name_id):
            col[:] = np.asarray(col)[order]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.shape[0])
        new_owner = inverse[np.asarray(stats.owner)].astype(np.int32)
        sort = np.argsort(new_owner, kind="stable")
        stats.owner[:] = new_owner[sort]
        for col in (stats.stat_id, stats.kind, stats.value):
            col[:] = np.asarray(col)[sort]
        del order, inverse, new_owner, sort

    if identity:
        line_offsets = line_starts(local_line, plane_lines.shape[0])
    else:
        line_offsets, depth = line_rows(local_line, start_ps, dur_ps, plane_lines.shape[0], limit)
    lines = [line_msgs[i] for i in plane_lines.tolist()]
    line_ids = np.array([m.id for m in lines], dtype=np.int64)
    line_timestamp_ns = np.array([m.timestamp_ns for m in lines], dtype=np.int64)
    for name, arr in (("line_ids", line_ids), ("line_timestamp_ns", line_timestamp_ns), ("line_offsets", line_offsets),
                      ("depth", depth), ("meta_ids", pm.meta_ids), ("meta_name_id", pm.meta_name_id),
                      ("meta_display_name_id", pm.meta_display_name_id)):
        cols.save(name, arr)
    for col in ("owner", "stat_id", "kind", "value"):
        cols.save(f"m_{col}", getattr(pm.meta_stats, col))
    cols.save_blobs(blobs)
    for scratch in ("x_meta_in", "x_stat_in", "x_texts"):
        cols.remove(scratch)
    if keep_columns:
        columns: dict[str, Any] = {"start_ps": start_ps, "dur_ps": dur_ps, "meta_idx": meta_idx, "name_id": name_id,
                                   "depth": depth, "line_idx": local_line, "stats": stats or EMPTY_STATS,
                                   "blobs": blobs}
    else:
        columns = {"start_ps": np.zeros(0, np.int64), "dur_ps": np.zeros(0, np.int64),
                   "meta_idx": np.zeros(0, np.int32), "name_id": np.zeros(0, np.int32),
                   "depth": np.zeros(0, np.int16), "line_idx": np.zeros(0, np.int32),
                   "stats": tables.StatTable.empty(), "blobs": []}
    head = PlaneHead(id=plane_id, name=plane_name, line_ids=line_ids, line_names=[_text(m.name) for m in lines],
                     line_display_names=[_text(m.display_name) for m in lines], line_timestamp_ns=line_timestamp_ns,
                     plane_stats=pm.plane_stats)
    out = plane(pi, head, line_offsets, columns, pm.meta_ids, pm.meta_name_id, pm.meta_display_name_id,
                pm.meta_stats)
    if deferred is not None and stats is None:
        deferred.defer(out, pm.stat_ids, pm.stat_names)
    return out


class _Beside:
    """What ``finish_plane`` runs beside the events' times: their names (the part of
    ``finish_events`` that reads only the metadata column), then the stats' finishing step.
    Errors are kept and raised in the order of the steps run one after the other: the names',
    then the times' (raised by the caller's own step), then the stats'."""

    def __init__(self, names: Later | None, stats: Later | None) -> None:
        self._names = names
        self._stats = stats
        self._names_error: BaseException | None = None
        self._stats_error: BaseException | None = None

    def run(self) -> None:
        if self._names is not None:
            try:
                self._names()
            except (IndexError, MemoryError) as e:
                self._names_error = e
        if self._stats is not None:
            try:
                self._stats()
            except Exception as e:  # raised by raise_errors, after the events' own
                self._stats_error = e

    def raise_names_error(self) -> None:
        if self._names_error is not None:
            raise self._names_error

    def raise_errors(self) -> None:
        self.raise_names_error()
        if self._stats_error is not None:
            raise self._stats_error


@dataclass
class PlaneHead:
    """What a reader says of a plane besides its rows: its id and name, its lines' ids, names and
    timestamps (in the plane's line order) and its plane-level stats."""

    id: int
    name: str
    line_ids: np.ndarray
    line_names: list[str]
    line_display_names: list[str]
    line_timestamp_ns: np.ndarray
    plane_stats: dict[str, Any] = field(default_factory=dict)


def plane(index: int, head: PlaneHead, line_offsets: np.ndarray, columns: dict[str, Any], meta_ids: np.ndarray,
          meta_name_id: np.ndarray, meta_display_name_id: np.ndarray, meta_stats: tables.StatTable) -> tables.Plane:
    """The finished plane ``index``: its head, its rows' columns (``start_ps``, ``dur_ps``,
    ``meta_idx``, ``name_id``, ``depth``, ``line_idx``, ``stats``, ``blobs``) in store order with
    ``line_offsets``, and its event metadata table. Every reader's planes are made here."""
    return tables.Plane(
        index=index, id=head.id, name=head.name, line_ids=head.line_ids, line_names=head.line_names,
        line_display_names=head.line_display_names, line_timestamp_ns=head.line_timestamp_ns,
        line_offsets=line_offsets, meta_ids=meta_ids, meta_name_id=meta_name_id,
        meta_display_name_id=meta_display_name_id, meta_stats=meta_stats, plane_stats=head.plane_stats, **columns)


def take_lines(src: tables.Plane, lines: np.ndarray, index: int, name: str) -> tables.Plane:
    """Plane ``index`` named ``name`` made of the lines ``lines`` (a mask) of ``src``, in their
    order, with their rows, stats and counter lines; the event metadata and blobs shared."""
    picked = np.nonzero(lines)[0]
    offsets = src.line_offsets
    parts = [np.arange(offsets[li], offsets[li + 1], dtype=np.int64) for li in picked.tolist()]
    rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    counts = np.array([offsets[li + 1] - offsets[li] for li in picked.tolist()], dtype=np.int64)
    new_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    new_line = np.full(src.n_lines, -1, dtype=np.int32)
    new_line[picked] = np.arange(picked.shape[0], dtype=np.int32)
    new_row = np.full(src.n_events, -1, dtype=np.int64)
    new_row[rows] = np.arange(rows.shape[0])
    st = src.stats
    st_keep = new_row[st.owner] >= 0 if st.owner.shape[0] else np.zeros(0, bool)
    stats = tables.StatTable(new_row[st.owner[st_keep]].astype(np.int32), st.stat_id[st_keep], st.kind[st_keep],
                             st.value[st_keep])
    plane_stats = dict(src.plane_stats)
    if COUNTER_LINES_STAT in plane_stats:
        plane_stats[COUNTER_LINES_STAT] = [int(new_line[li]) for li in plane_stats[COUNTER_LINES_STAT]
                                           if 0 <= li < src.n_lines and new_line[li] >= 0]
    head = PlaneHead(id=src.id, name=name, line_ids=src.line_ids[picked],
                     line_names=[src.line_names[i] for i in picked.tolist()],
                     line_display_names=[src.line_display_names[i] for i in picked.tolist()],
                     line_timestamp_ns=src.line_timestamp_ns[picked], plane_stats=plane_stats)
    columns = {"start_ps": src.start_ps[rows], "dur_ps": src.dur_ps[rows], "meta_idx": src.meta_idx[rows],
               "name_id": src.name_id[rows], "depth": src.depth[rows], "line_idx": new_line[src.line_idx[rows]],
               "stats": stats, "blobs": src.blobs}
    return plane(index, head, new_offsets, columns, src.meta_ids, src.meta_name_id, src.meta_display_name_id,
                 src.meta_stats)


def line_starts(local_line: np.ndarray, n_lines: int) -> np.ndarray:
    """A plane's line offsets: each line's first row (rows sorted by line), then the row count."""
    # (Needles in the column's dtype: int64 needles would make numpy copy the column.)
    return np.searchsorted(local_line, np.arange(n_lines + 1, dtype=local_line.dtype)).astype(np.int64)


def line_rows(local_line: np.ndarray, start_ps: np.ndarray, dur_ps: np.ndarray, n_lines: int,
              limit: Limit | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A plane's line offsets (rows sorted by line, then start) and each event's nesting depth."""
    line_offsets = line_starts(local_line, n_lines)
    n_ev = int(start_ps.shape[0])
    _check(limit, 2 * n_ev, f"the nesting depths of {n_ev:,} events")
    return line_offsets, kernels.nesting_depth(start_ps, dur_ps, line_offsets)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")
