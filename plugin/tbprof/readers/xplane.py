"""Reader of ``*.xplane.pb`` (XSpace) files into a ``ProfileStore``.

The bulky part (events and their stats) is scanned from the wire bytes by
``tbprof._core.wire.scan`` (compiled, bounds-checked, parallel); a plane's metadata maps and
stats are read from the byte spans the scanner recorded by ``wire.plane_metadata`` (upb where a
plane takes a form upb reads its own way: ``plane_builder.wire_plane_meta``), the other small
parts (line names, hostnames) parsed by upb. See ``_core/wire.pyx`` for why.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from google.protobuf.message import DecodeError

from tbprof._core import kernels, wire
from tbprof.cache.memory_guard import check_allocation
from tbprof.errors import ProfileReadError
from tbprof.fs import Location, UrlPath, shown_name
from tbprof.fs import location as as_location
from tbprof.readers.byte_sources import MemoryBytes
from tbprof.readers.files import map_profile, read_beside, read_profile_array, read_profile_bytes
from tbprof.readers.plane_builder import MemoryColumns, finish_plane, finish_stats, plane_meta, wire_plane_meta
from tbprof.store import tables
from tbprof.store.strings import StringTable

if TYPE_CHECKING:
    from collections.abc import Callable

    from tbprof.protos import xplane_pb2


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def read_file_bytes(path: str | Location) -> bytes:
    """Reads a profile file: an object's bytes for a URL; locally regular files only (a FIFO
    would block), refusing one that changes while it is read (still being written)."""
    if isinstance(path, UrlPath):
        return _read_url(path)
    return read_profile_bytes(Path(path))


def _read_url(path: UrlPath) -> bytes:
    """An object's bytes; its listed size must still hold (an object store has no partial
    objects, but a rewritten one may differ from what discovery listed)."""
    listed = path.stat().st_size
    data = path.read_bytes()
    if len(data) != listed:
        raise ProfileReadError(str(path), f"the file changed since it was listed ({listed} bytes listed, "
                               f"{len(data)} read); reload the page")
    return data


def read_xspace(path: str | Location, host: str | None = None, lazy: bool = False) -> tables.ProfileStore:
    """Reads one ``.xplane.pb`` file. Raises ProfileReadError with a readable reason.

    ``lazy``: a file of ``LAZY_MIN_BYTES`` or more gets its events now and each plane's stats
    when a tool first reads them (the service's reader, ``read_xspace_lazily``)."""
    path = as_location(path)
    host_name = host if host is not None else shown_name(path.name.removesuffix(".xplane.pb"))
    lazy_min = LAZY_MIN_BYTES if lazy else None
    if isinstance(path, UrlPath):
        return xspace_from_bytes(_read_url(path), str(path), host_name, lazy_min)
    mapped = map_profile(Path(path))
    if mapped is not None:
        array, check = mapped.array, mapped.check
        return _checked(lambda: xspace_from_bytes(array, str(path), host_name, lazy_min, check=check), check)
    beside = read_beside(Path(path))
    if beside is None:
        return xspace_from_bytes(read_profile_array(Path(path)), str(path), host_name, lazy_min)
    # The scan's walk of the headers follows the read on another core (wire.FileRead).
    with beside:
        return _checked(lambda: xspace_from_bytes(beside.array, str(path), host_name, lazy_min,
                                                  reading=beside.reading), beside.finish)


def _checked(convert: Callable[[], tables.ProfileStore], check: Callable[[], object]) -> tables.ProfileStore:
    """``convert()``, then ``check()`` (ProfileReadError for a file that changed while it was
    read), after a failed conversion too: a file that changed is reported as such, not as
    malformed bytes."""
    try:
        store = convert()
    except ProfileReadError:
        check()
        raise
    check()
    return store


def read_xspace_lazily(path: str | Location) -> tables.ProfileStore:
    """``read_xspace(path, lazy=True)``: the reader the run kinds table gives the service."""
    return read_xspace(path, lazy=True)


_FEW_SPANS = 16


def parse_spans(message_type: type, data: memoryview, spans: np.ndarray) -> object:
    """Parses the fields at ``spans`` (start, end rows in wire order) as one message."""
    if spans.shape[0] <= _FEW_SPANS:  # a line's header: joined in Python, not numpy's per-call overhead
        runs: list[list[int]] = []
        for s, e in spans.tolist():
            if runs and runs[-1][1] == s:
                runs[-1][1] = e
            else:
                runs.append([s, e])
        return message_type.FromString(b"".join(data[s:e] for s, e in runs))  # type: ignore[attr-defined]
    if spans.shape[0] > 1:
        # The fields of one message lie back to back except where its lines were cut out, so
        # join runs of adjacent spans (a plane with many stats is one run, not a slice per stat).
        cut = np.flatnonzero(spans[1:, 0] != spans[:-1, 1]) + 1
        first = np.concatenate(([0], cut))
        last = np.concatenate((cut - 1, [spans.shape[0] - 1]))
        spans = np.stack((spans[first, 0], spans[last, 1]), axis=1)
    joined = b"".join(data[s:e] for s, e in spans.tolist())
    return message_type.FromString(joined)  # type: ignore[attr-defined]


# Files from this size on are read lazily by ``read_xspace(lazy=True)`` (below it, decoding the
# stats of every plane is cheap: nothing to save; bench/measurements.md#plane-stats).
LAZY_MIN_BYTES = 8 << 20


def xspace_from_bytes(data: bytes | np.ndarray, source: str, host: str, lazy_min_bytes: int | None = None,
                      reading: wire.FileRead | None = None,
                      check: Callable[[], None] | None = None) -> tables.ProfileStore:
    """The store of an XSpace's bytes; from ``lazy_min_bytes`` on (None: never), its event
    stats decoded plane by plane on first use (``_LazyStats``). ``reading``: ``data`` is being
    read meanwhile (``wire.scan``'s ``reading``). ``check``: ``data`` is a mapped file
    (``MappedProfile.check``), checked after each later decode of its stats."""
    if len(data) == 0:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    def refuse_dense(n_events: int, n_stats: int) -> None:
        # Called by the scanner once it has counted, before it fills a column: a dense file (2-byte
        # empty events) is refused here, not after its columns have taken many times its size
        # (bench/measurements.md#build-bytes).
        check_allocation(source, n_events * (_SCAN_BYTES_PER_EVENT + _BUILD_BYTES_PER_EVENT)
                         + max(n_stats, 0) * (_SCAN_BYTES_PER_STAT + _BUILD_BYTES_PER_STAT),
                         f"{n_events:,} events" + (f" and {n_stats:,} stats" if n_stats >= 0 else ""))

    lazy = lazy_min_bytes is not None and len(data) >= lazy_min_bytes
    try:
        scanned = wire.scan(data, on_counts=refuse_dense, stats=not lazy, reading=reading)
    except wire.WireError as e:
        raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
    try:
        return _build(data, scanned, source, host, lazy=lazy, check=check)
    except DecodeError as e:
        raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
    except IndexError as e:
        # The compiled kernels check every index; one out of range means the file's rows and
        # metadata disagree (corrupt bytes that still scan), not a bug to report as a 500.
        raise ProfileReadError(source, f"not a readable XSpace profile: inconsistent contents ({e})") from e


# Memory the store's columns take per scanned event and stat beyond the scanner's own columns:
# an upper bound of what a file of empty events took, rounded up (bench/measurements.md#build-bytes).
_BUILD_BYTES_PER_EVENT = 32
_BUILD_BYTES_PER_STAT = 32
# The scanner's own columns: line, metadata (int32), start, duration (int64) per event; owner,
# metadata (int32), kind (int8), value (int64) per stat.
_SCAN_BYTES_PER_EVENT = 4 + 4 + 8 + 8
_SCAN_BYTES_PER_STAT = 4 + 4 + 1 + 8


# A plane's metadata entry (event or stat metadata): parsed by upb, then held as Python objects
# (a wrapper, its name as str, the string table's entry) while the plane's tables are built; a
# plane's other fields (its stats: the scope-range plane has tens of thousands) cost upb's share
# only; each distinct text stat value: a str and its string-table entry. The constants bound the
# peak RSS per metadata entry and per text value of files made of little else
# (bench/names_memory_bench.py; bench/measurements.md#build-bytes).
BUILD_BYTES_PER_METADATA = 1000
UPB_BYTES_PER_FIELD = 64
_BUILD_BYTES_PER_TEXT = 288
# XPlane's event_metadata (4) and stat_metadata (5) map entries, as their first byte (the tag).
_METADATA_TAGS = np.array([4 << 3 | 2, 5 << 3 | 2], dtype=np.uint8)


def _metadata_fields(data: bytes | np.ndarray, plane_fields: np.ndarray) -> int:
    if plane_fields.shape[0] == 0:
        return 0
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data.view(np.uint8)
    tags = raw[plane_fields[:, 1]]
    return int(np.count_nonzero((tags == _METADATA_TAGS[0]) | (tags == _METADATA_TAGS[1])))


def build_need_bytes(sc: wire.ScanResult, data: bytes | np.ndarray) -> int:
    """Memory the store of a scanned file takes to build beyond the scanner's columns: from the
    scanner's counts of events, stats, metadata entries (and other plane fields) and texts, and
    their bytes. The guard's size factor assumes typical files; a file whose every event has its
    own name takes many times more (bench/measurements.md#build-bytes)."""
    plane_fields = sc.spans[(sc.spans[:, 0] >> 32) == 1]
    field_bytes = int((plane_fields[:, 2] - plane_fields[:, 1]).sum())
    n_meta = _metadata_fields(data, plane_fields)
    text_bytes = int(sc.texts[:, 2].sum()) if sc.texts.shape[0] else 0
    return (sc.n_events * _BUILD_BYTES_PER_EVENT + int(sc.st_owner.shape[0]) * _BUILD_BYTES_PER_STAT
            + n_meta * BUILD_BYTES_PER_METADATA + int(plane_fields.shape[0]) * UPB_BYTES_PER_FIELD + field_bytes
            + int(sc.texts.shape[0]) * _BUILD_BYTES_PER_TEXT + text_bytes)


def describe_counts(sc: wire.ScanResult, data: bytes | np.ndarray) -> str:
    n_meta = _metadata_fields(data, sc.spans[(sc.spans[:, 0] >> 32) == 1])
    return (f"{sc.n_events:,} events, {int(sc.st_owner.shape[0]):,} stats, {n_meta:,} metadata entries and "
            f"{int(sc.texts.shape[0]):,} text values")


def _build(data: bytes | np.ndarray, sc: wire.ScanResult, source: str, host: str,
           lazy: bool = False, check: Callable[[], None] | None = None) -> tables.ProfileStore:
    # The scanner's counts are the first exact measure of what the file holds: check them before
    # the columns are built (the size-based estimate assumes typical, not dense, files).
    owner_kind = sc.spans[:, 0] >> 32
    owner_idx = sc.spans[:, 0] & 0xFFFFFFFF
    span_se = sc.spans[:, 1:]
    check_allocation(source, build_need_bytes(sc, data), lambda: describe_counts(sc, data))
    # Imported here, not with the module: the read and the scan do not need protobuf's messages
    # (readers/kinds.py ``parser_module_name``: a caller imports them while those run).
    from tbprof.protos import xplane_pb2

    strings = StringTable()
    # The small fields are cut out of the file by Python slicing: of a memoryview, whether the
    # file came as an array (a local read) or as bytes (an object store's answer).
    view = memoryview(data) if isinstance(data, bytes) else data.data

    space = parse_spans(xplane_pb2.XSpace, view, span_se[owner_kind == 0])
    assert isinstance(space, xplane_pb2.XSpace)
    if sc.n_planes == 0:
        raise ProfileReadError(source, "the file parses as protobuf but holds no XSpace planes "
                               "(an empty profile, or another kind of protobuf)")

    line_plane = sc.lines[:, 0]
    line_first_event = sc.lines[:, 1]
    n_lines_total = sc.lines.shape[0]
    line_event_end = np.append(line_first_event[1:], sc.n_events) if n_lines_total else line_first_event

    # Line headers (name, timestamp) through upb, from the recorded spans.
    line_span_rows = np.nonzero(owner_kind == 2)[0]
    line_span_owner = owner_idx[line_span_rows]
    line_msgs: list[xplane_pb2.XLine] = []
    bounds = np.searchsorted(line_span_owner, np.arange(n_lines_total + 1))
    for li in range(n_lines_total):
        rows = line_span_rows[bounds[li]:bounds[li + 1]]
        msg = parse_spans(xplane_pb2.XLine, view, span_se[rows])
        assert isinstance(msg, xplane_pb2.XLine)
        line_msgs.append(msg)
    line_ts_ps = np.array([m.timestamp_ns for m in line_msgs], dtype=np.int64) * 1000

    # The origin is the earliest event of the whole profile: from each line's time bounds (the
    # scanner's), the line times then added as each plane is finished; else absolute starts in place.
    time_range = _origin_from_lines(sc.line_bounds, line_ts_ps) if sc.line_bounds is not None else None
    if time_range is None:
        origin_ps, end_ps = kernels.absolute_starts(sc.ev_start, sc.ev_dur, sc.ev_line, line_ts_ps)
    else:
        origin_ps, end_ps = time_range
    span_ps = int(end_ps - origin_ps)

    plane_span_rows = np.nonzero(owner_kind == 1)[0]
    plane_bounds = np.searchsorted(owner_idx[plane_span_rows], np.arange(sc.n_planes + 1))
    # Row ranges of each plane, found before any plane rewrites its owner rows in place. A
    # plane's lines are contiguous in wire order, and so are their events and stats.
    ranges: list[tuple[np.ndarray, slice, slice, np.ndarray]] = []
    for pi in range(sc.n_planes):
        plane_lines = np.nonzero(line_plane == pi)[0]
        if plane_lines.shape[0]:
            ev_lo, ev_hi = int(line_first_event[plane_lines[0]]), int(line_event_end[plane_lines[-1]])
        else:
            ev_lo = ev_hi = 0
        # (Bounds in the column's own dtype: a Python list would make numpy cast the column.)
        st_lo, st_hi = (int(i) for i in np.searchsorted(sc.st_owner, np.array([ev_lo, ev_hi], sc.st_owner.dtype)))
        tx_lo, tx_hi = (int(i) for i in np.searchsorted(sc.texts[:, 0], np.array([st_lo, st_hi], np.int64)))
        ranges.append((plane_lines, slice(ev_lo, ev_hi), slice(st_lo, st_hi), sc.texts[tx_lo:tx_hi]))
    planes: list[tables.Plane] = []
    source_bytes = MemoryBytes(view, source)
    deferred = _LazyStats(data, source, sc.n_planes, sc.n_events, strings, sc.index, check) if lazy else None
    for pi, (plane_lines, ev_range, st_range, texts) in enumerate(ranges):
        plane_spans = span_se[plane_span_rows[plane_bounds[pi]:plane_bounds[pi + 1]]]
        blobs: list[bytes] = []
        read = wire_plane_meta(data, plane_spans, strings, blobs)
        if read is None:  # what the compiled reader leaves to upb (it interned nothing)
            pmsg = parse_spans(xplane_pb2.XPlane, view, without_replaced_stats(data, view, plane_spans))
            assert isinstance(pmsg, xplane_pb2.XPlane)
            read = pmsg.id, _text(pmsg.name), plane_meta(pmsg, strings, blobs)
        plane_id, plane_name, pm = read
        cols = _scanned_columns(sc, ev_range, st_range, texts)
        later = _PlaneLazy(deferred, pi, ev_range) if deferred is not None and not sc.with_stats else None
        planes.append(finish_plane(cols, source_bytes, pi, plane_id, plane_name, pm, blobs, plane_lines, line_msgs,
                                   ev_range.start, st_range.start, int(origin_ps), strings, len(data), None, later,
                                   line_ts_ps=line_ts_ps if time_range is not None else None))

    return tables.ProfileStore(
        source_path=source, host=host, format="xspace", strings=strings, planes=planes,
        origin_ps=int(origin_ps), span_ps=span_ps,
        hostnames=[_text(h) for h in space.hostnames],
        errors=[_text(e) for e in space.errors], warnings=[_text(w) for w in space.warnings],
    )


_WRAP = 1 << 64
_HALF = 1 << 63


def _wrapped(x: int) -> int:
    """``x`` as int64 arithmetic leaves it (the kernels wrap, built with -fwrapv)."""
    return (x + _HALF) % _WRAP - _HALF


def _origin_from_lines(line_bounds: np.ndarray, line_ts_ps: np.ndarray) -> tuple[int, int] | None:
    """(least start, greatest end) over every event, as ``kernels.absolute_starts`` finds them,
    from each line's least offset and greatest offset + duration (``ScanResult.line_bounds``)
    and its timestamp; None where a line's times, once its timestamp is added, wrap around int64
    part of the way (each event would then compare differently: the kernel's pass decides)."""
    lo: int | None = None
    hi: int | None = None
    for (first, last, has_events), ts in zip(line_bounds.tolist(), line_ts_ps.tolist(), strict=True):
        if not has_events:
            continue
        a, b = first + ts, last + ts
        if (a + _HALF) // _WRAP != (b + _HALF) // _WRAP:
            return None
        a, b = _wrapped(a), _wrapped(b)
        lo = a if lo is None or a < lo else lo
        hi = b if hi is None or b > hi else hi
    return (lo, hi) if lo is not None and hi is not None else (0, 0)


# XPlane.stats is field 6, length-delimited: its tag is this one byte.
_PLANE_STATS_TAG = (6 << 3) | 2
# Fewer plane stats than this are simply all parsed.
_MANY_PLANE_STATS = 256


def without_replaced_stats(data: bytes | np.ndarray, view: memoryview, spans: np.ndarray) -> np.ndarray:
    """A plane's field spans without the plane stats that a later stat of the same name replaces.

    The plane reader keeps the last stat of each name (``_build_plane``). JAX's scope-range plane
    carries tens of thousands of stats, each with its own metadata id and almost none with a
    name: handing all of them to upb and then to Python is a visible share of a jax_large
    conversion (bench/measurements.md#plane-stats). Their ids are read
    in compiled code instead and grouped by the name bytes of their metadata (ids without
    metadata form one more group): finer than the names the reader interns, so the last stat
    of every name is still among those kept. When an id does not parse, every span is kept and
    upb reports the damage.
    """
    if spans.shape[0] < _MANY_PLANE_STATS:
        return spans
    tags = np.frombuffer(data, dtype=np.uint8)[spans[:, 0]]
    is_stat = tags == _PLANE_STATS_TAG
    stat_rows = np.nonzero(is_stat)[0]
    if stat_rows.shape[0] < _MANY_PLANE_STATS:
        return spans
    ids = wire.field_metadata_ids(data, spans[stat_rows, 0], spans[stat_rows, 1])
    if (ids < 0).any():
        return spans
    from tbprof.protos import xplane_pb2

    rest = parse_spans(xplane_pb2.XPlane, view, spans[~is_stat])  # small: all but the stats
    assert isinstance(rest, xplane_pb2.XPlane)
    meta_ids = np.array(sorted(rest.stat_metadata.keys()), dtype=np.int64)
    group_of_name: dict[bytes, int] = {}
    meta_group = np.array([group_of_name.setdefault(rest.stat_metadata[i].name, len(group_of_name))
                           for i in meta_ids.tolist()], dtype=np.int64)
    group = np.full(ids.shape[0], -1, dtype=np.int64)  # -1: an id without metadata
    if meta_ids.shape[0]:
        pos = np.minimum(np.searchsorted(meta_ids, ids), meta_ids.shape[0] - 1)
        known = meta_ids[pos] == ids
        group[known] = meta_group[pos[known]]
    # The last stat of each group: the first of each group in reversed order.
    _, first_reversed = np.unique(group[::-1], return_index=True)
    keep = ~is_stat
    keep[stat_rows[ids.shape[0] - 1 - first_reversed]] = True
    return spans[keep]


def _scanned_columns(sc: wire.ScanResult, ev_range: slice, st_range: slice, texts: np.ndarray) -> MemoryColumns:
    """The scanner's columns of one plane (views: the builder finishes them in place)."""
    cols = {"start_ps": sc.ev_start[ev_range], "dur_ps": sc.ev_dur[ev_range], "line_idx": sc.ev_line[ev_range],
            "x_meta_in": sc.ev_meta[ev_range]}
    if sc.with_stats:
        cols.update({"s_owner": sc.st_owner[st_range], "x_stat_in": sc.st_meta[st_range],
                     "s_kind": sc.st_kind[st_range], "s_value": sc.st_value[st_range], "x_texts": texts})
    return MemoryColumns(cols)


def _stat_rows(sc: wire.ScanResult, ev_range: slice) -> tuple[slice, np.ndarray]:
    """The stat rows and texts of the events ``ev_range`` in ``sc`` (a plane's, contiguous)."""
    # (Bounds in the column's own dtype: a Python list would make numpy cast the column.)
    bounds = np.array([ev_range.start, ev_range.stop], sc.st_owner.dtype)
    st_lo, st_hi = (int(i) for i in np.searchsorted(sc.st_owner, bounds))
    tx_lo, tx_hi = (int(i) for i in np.searchsorted(sc.texts[:, 0], np.array([st_lo, st_hi], np.int64)))
    return slice(st_lo, st_hi), sc.texts[tx_lo:tx_hi]


class _LazyStats:
    """Decodes the stats of a store's planes on first use (``Plane.stats``), one plane at a time.

    A tool that reads a few planes then pays for their stats only: on jax_large the stats are most
    of the file, and kernel_stats, hlo_stats, roofline_model and op_profile read the device planes',
    a few percent of its events (bench/measurements.md#plane-stats). The file's bytes stay
    referenced until every plane has its stats (a disk-cache write asks for them all). One lock per
    store: a plane decodes once, and the string table grows from one thread at a time.
    """

    def __init__(self, data: bytes | np.ndarray, source: str, n_planes: int, n_events: int,
                 strings: StringTable, index: tuple[np.ndarray, np.ndarray, int, int] | None = None,
                 check: Callable[[], None] | None = None) -> None:
        self._data: bytes | np.ndarray | None = data
        # A mapped file's check (``MappedProfile.check``): the file may change after the first scan.
        self._check = check
        # The first scan's lines and chunks: a plane's scan walks only its own chunks.
        self._index = index
        self._n_events = n_events
        self._source = source
        self._n_planes = n_planes
        self._strings = strings
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[slice, np.ndarray, np.ndarray]] = {}

    def defer(self, plane: tables.Plane, ev_range: slice, stat_ids: np.ndarray, stat_names: np.ndarray) -> None:
        self._pending[plane.index] = (ev_range, stat_ids, stat_names)
        # What the memory budget counts for the stats until they exist: the plane's share of the
        # file at the scanner's 17 bytes per >= 16 bytes of wire (a stat's least), rounded up.
        plane.defer_stats(self.load, self._share_bytes(ev_range) * 5 // 4)

    def _share_bytes(self, ev_range: slice) -> int:
        """The plane's share of the file, by its events (what its stats' wire bytes are about)."""
        assert self._data is not None
        return len(self._data) * (ev_range.stop - ev_range.start) // max(self._n_events, 1)

    def load(self, plane: tables.Plane) -> None:
        """Gives ``plane`` its stats (``Plane.stats`` calls this on first use)."""
        with self._lock:
            if plane.stats_loaded:
                return
            ev_range, stat_ids, stat_names = self._pending[plane.index]
            plane.set_stats(self.decode(plane.index, ev_range, stat_ids, stat_names, plane.blobs))
            del self._pending[plane.index]
            if not self._pending:
                self._data = None  # every plane has its stats: the file's bytes can go

    def decode(self, pi: int, ev_range: slice, stat_ids: np.ndarray, stat_names: np.ndarray,
               blobs: list[bytes]) -> tables.StatTable:
        """The stats of plane ``pi``: a scan of that plane's lines only, stats included."""
        data = self._data
        assert data is not None
        want = np.zeros(self._n_planes, dtype=np.uint8)
        want[pi] = 1
        # The stat columns of the plane (~17 bytes per >= 16 bytes of its wire, see defer) and a
        # scan's buffers of as much: refused (MemoryRefusal, 507) rather than risking the OOM killer.
        check_allocation(self._source, 3 * self._share_bytes(ev_range), f"the stats of plane {pi}")
        try:
            # Its stats only (its events are decoded already), from the first scan's chunks.
            sc = wire.scan(data, planes=want, events=False, index=self._index)
            st_range, texts = _stat_rows(sc, ev_range)
            view = memoryview(data) if isinstance(data, bytes) else data.data
            stats = finish_stats(_scanned_columns(sc, ev_range, st_range, texts), MemoryBytes(view, self._source),
                                 ev_range.start, st_range.start, stat_ids, stat_names, self._strings, blobs, len(data),
                                 None)
        except (wire.WireError, IndexError, ProfileReadError) as e:
            if self._check is not None:
                self._check()  # a file changed since it was mapped is reported as such
            if isinstance(e, ProfileReadError):
                raise
            detail = str(e) if isinstance(e, wire.WireError) else f"inconsistent contents ({e})"
            raise ProfileReadError(self._source, f"not a readable XSpace profile: {detail}") from e
        if self._check is not None:
            self._check()
        return stats


class _PlaneLazy:
    """One plane's share of ``_LazyStats`` (``plane_builder.DeferredStats``)."""

    def __init__(self, lazy: _LazyStats, pi: int, ev_range: slice) -> None:
        self.lazy, self.pi, self.ev_range = lazy, pi, ev_range

    def decode_now(self, stat_ids: np.ndarray, stat_names: np.ndarray, blobs: list[bytes]) -> tables.StatTable:
        return self.lazy.decode(self.pi, self.ev_range, stat_ids, stat_names, blobs)

    def defer(self, plane: tables.Plane, stat_ids: np.ndarray, stat_names: np.ndarray) -> None:
        self.lazy.defer(plane, self.ev_range, stat_ids, stat_names)
