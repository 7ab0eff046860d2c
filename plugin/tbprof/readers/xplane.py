"""Reader of ``*.xplane.pb`` (XSpace) files into a ``ProfileStore``.

The bulky part (events and their stats) is scanned from the wire bytes by
``wire_scan.scan``; the small parts (plane metadata, line names, hostnames) are parsed by upb
from the byte spans the scanner recorded. See ``wire_scan`` for why.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from tbprof.protos import xplane_pb2
from tbprof.readers import wire_scan
from tbprof.readers.errors import ProfileReadError
from tbprof.readers.wire_scan import hash_spans
from tbprof.store import tables
from tbprof.store.nesting import nesting_depth
from tbprof.store.strings import StringTable


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def read_file_bytes(path: str | Path) -> bytes:
    """Reads a profile file, refusing one that changes while it is read (still being written)."""
    path = Path(path)
    try:
        before = os.stat(path)
        with open(path, "rb") as f:
            data = f.read()
        after = os.stat(path)
    except OSError as e:
        raise ProfileReadError(str(path), f"cannot read the file: {e.strerror or e}") from e
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or len(data) != after.st_size:
        raise ProfileReadError(str(path), "the file changed while it was being read (is the profiler "
                               "still writing it?); try again when it is complete")
    return data


def read_xspace(path: str | Path, host: str | None = None) -> tables.ProfileStore:
    """Reads one ``.xplane.pb`` file. Raises ProfileReadError with a readable reason."""
    path = Path(path)
    data = read_file_bytes(path)
    host_name = host if host is not None else path.name.removesuffix(".xplane.pb")
    return xspace_from_bytes(data, str(path), host_name)


def _parse_spans(message_type: type, data: bytes, spans: np.ndarray) -> object:
    joined = b"".join(data[s:e] for s, e in spans.tolist())
    return message_type.FromString(joined)  # type: ignore[attr-defined]


def xspace_from_bytes(data: bytes, source: str, host: str) -> tables.ProfileStore:
    if len(data) == 0:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    try:
        scanned = wire_scan.scan(data)
    except wire_scan.WireError as e:
        raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e
    try:
        return _build(data, scanned, source, host)
    except DecodeError as e:
        raise ProfileReadError(source, f"not a readable XSpace profile: {e}") from e


def _build(data: bytes, sc: wire_scan.ScanResult, source: str, host: str) -> tables.ProfileStore:
    strings = StringTable()
    owner_kind = sc.spans[:, 0] >> 32
    owner_idx = sc.spans[:, 0] & 0xFFFFFFFF
    span_se = sc.spans[:, 1:]

    space = _parse_spans(xplane_pb2.XSpace, data, span_se[owner_kind == 0])
    assert isinstance(space, xplane_pb2.XSpace)
    if sc.n_planes == 0:
        raise ProfileReadError(source, "the file parses as protobuf but holds no XSpace planes "
                               "(an empty profile, or another kind of protobuf)")

    line_plane = sc.lines[:, 0]
    line_first_event = sc.lines[:, 1]
    n_lines_total = sc.lines.shape[0]
    n_events_total = sc.events.shape[0]
    line_event_end = np.append(line_first_event[1:], n_events_total) if n_lines_total else line_first_event

    # Line headers (name, timestamp) through upb, from the recorded spans.
    line_span_rows = np.nonzero(owner_kind == 2)[0]
    line_span_owner = owner_idx[line_span_rows]
    line_msgs: list[xplane_pb2.XLine] = []
    bounds = np.searchsorted(line_span_owner, np.arange(n_lines_total + 1))
    for li in range(n_lines_total):
        rows = line_span_rows[bounds[li]:bounds[li + 1]]
        msg = _parse_spans(xplane_pb2.XLine, data, span_se[rows])
        assert isinstance(msg, xplane_pb2.XLine)
        line_msgs.append(msg)
    line_ts_ps = np.array([m.timestamp_ns for m in line_msgs], dtype=np.int64) * 1000

    ev = sc.events
    abs_start = line_ts_ps[ev[:, 0]] + ev[:, 2] if n_events_total else np.zeros(0, np.int64)
    origin_ps = int(abs_start.min()) if n_events_total else 0
    span_ps = int((abs_start + ev[:, 3]).max() - origin_ps) if n_events_total else 0

    plane_span_rows = np.nonzero(owner_kind == 1)[0]
    plane_bounds = np.searchsorted(owner_idx[plane_span_rows], np.arange(sc.n_planes + 1))
    planes: list[tables.Plane] = []
    for pi in range(sc.n_planes):
        pmsg = _parse_spans(xplane_pb2.XPlane, data, span_se[plane_span_rows[plane_bounds[pi]:plane_bounds[pi + 1]]])
        assert isinstance(pmsg, xplane_pb2.XPlane)
        plane_lines = np.nonzero(line_plane == pi)[0]
        planes.append(_build_plane(pi, pmsg, plane_lines, line_msgs, line_first_event, line_event_end,
                                   abs_start, origin_ps, sc, data, strings))

    return tables.ProfileStore(
        source_path=source, host=host, format="xspace", strings=strings, planes=planes,
        origin_ps=origin_ps, span_ps=span_ps,
        hostnames=[_text(h) for h in space.hostnames],
        errors=[_text(e) for e in space.errors], warnings=[_text(w) for w in space.warnings],
    )


def _stat_name_ids(pmsg: xplane_pb2.XPlane, strings: StringTable) -> tuple[np.ndarray, np.ndarray]:
    ids = np.array(sorted(pmsg.stat_metadata.keys()), dtype=np.int64)
    name_ids = np.array([strings.intern(_text(pmsg.stat_metadata[i].name)) for i in ids.tolist()], dtype=np.int32)
    return ids, name_ids


def _map_ids(sorted_ids: np.ndarray, mapped: np.ndarray, query: np.ndarray, missing: int) -> np.ndarray:
    """Maps ids (e.g. stat metadata ids) to values; ids not in ``sorted_ids`` map to ``missing``."""
    out = np.full(query.shape[0], missing, dtype=mapped.dtype)
    if sorted_ids.shape[0] == 0 or query.shape[0] == 0:
        return out
    hi = int(sorted_ids[-1])
    if int(sorted_ids[0]) >= 0 and hi < 4 * query.shape[0] + 1024:
        # Dense small ids (the usual case): a lookup table beats a binary search 10x.
        # One extra slot at hi + 1 holds `missing`; clipping sends every unknown id there, so the
        # lookup is one gather with no boolean compaction.
        lut = np.full(hi + 2, missing, dtype=mapped.dtype)
        lut[sorted_ids] = mapped
        idx = np.minimum(query.astype(np.uint64, copy=False), hi + 1)  # negative ids wrap high, then clip
        return lut[idx]
    pos = np.minimum(np.searchsorted(sorted_ids, query), sorted_ids.shape[0] - 1)
    found = sorted_ids[pos] == query
    out[found] = mapped[pos[found]]
    return out


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


def _decode_stat_values(kinds: np.ndarray, values: np.ndarray, raw: bytes, stat_ids: np.ndarray,
                        stat_names: np.ndarray, strings: StringTable, blobs: list[bytes]) -> np.ndarray:
    """Turns wire values into store values: strings interned, refs to name ids."""
    kind = kinds & 0xFF
    length = kinds >> 32
    out = values.copy()
    is_ref = kind == tables.KIND_REF
    if is_ref.any():
        out[is_ref] = _map_ids(stat_ids, stat_names.astype(np.int64), values[is_ref], 0)
    is_str = np.nonzero(kind == tables.KIND_STR)[0]
    if is_str.shape[0]:
        # A few texts repeat on many events ("$$1" on every kernel): decode each distinct text
        # once, found by a content hash computed in compiled code.
        offsets = values[is_str]
        lengths = length[is_str]
        digest = hash_spans(np.frombuffer(raw, dtype=np.uint8), offsets, lengths)
        _, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
        ids = np.array([strings.intern(raw[o:o + n].decode("utf-8", errors="replace"))
                        for o, n in zip(offsets[first].tolist(), lengths[first].tolist())], dtype=np.int64)
        out[is_str] = ids[inverse]
    is_bytes = np.nonzero(kind == tables.KIND_BYTES)[0]
    for row in is_bytes.tolist():
        o = int(values[row])
        blobs.append(raw[o:o + int(length[row])])
        out[row] = len(blobs) - 1
    return out


def _build_plane(pi: int, pmsg: xplane_pb2.XPlane, plane_lines: np.ndarray, line_msgs: list[xplane_pb2.XLine],
                 line_first_event: np.ndarray, line_event_end: np.ndarray, abs_start: np.ndarray, origin_ps: int,
                 sc: wire_scan.ScanResult, data: bytes, strings: StringTable) -> tables.Plane:
    blobs: list[bytes] = []
    stat_ids, stat_names = _stat_name_ids(pmsg, strings)
    stat_name_of = dict(zip(stat_ids.tolist(), stat_names.tolist()))

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

    plane_stats: dict[str, object] = {}
    for st in pmsg.stats:
        name = strings[stat_name_of.get(st.metadata_id, 0)]
        kind, value = _value_from_pb(st, stat_name_of, strings, blobs)
        plane_stats[name] = _plain_value(kind, value, strings, blobs)

    # Events of this plane: its lines are contiguous in wire order, and so are their events.
    if plane_lines.shape[0]:
        ev_lo = int(line_first_event[plane_lines[0]])
        ev_hi = int(line_event_end[plane_lines[-1]])
    else:
        ev_lo = ev_hi = 0
    ev = sc.events[ev_lo:ev_hi]
    local_line = (ev[:, 0] - (plane_lines[0] if plane_lines.shape[0] else 0)).astype(np.int32)
    start_ps = abs_start[ev_lo:ev_hi] - origin_ps
    dur_ps = ev[:, 3].copy()
    identity = _is_sorted(local_line, start_ps, dur_ps)
    order = np.arange(0) if identity else np.lexsort((-dur_ps, start_ps, local_line))
    if not identity:
        local_line, start_ps, dur_ps = local_line[order], start_ps[order], dur_ps[order]
    meta_idx_raw = ev[:, 1] if identity else ev[order, 1]
    # Events whose metadata id is missing from the plane get row 0 and the empty name.
    meta_idx = _map_ids(meta_ids, np.arange(meta_ids.shape[0], dtype=np.int32), meta_idx_raw, -1)
    name_id = np.where(meta_idx >= 0, meta_name_id[np.maximum(meta_idx, 0)] if meta_ids.shape[0] else 0,
                       0).astype(np.int32)
    np.maximum(meta_idx, 0, out=meta_idx)
    line_offsets = np.searchsorted(local_line, np.arange(plane_lines.shape[0] + 1)).astype(np.int64)
    depth = nesting_depth(start_ps, dur_ps, line_offsets)

    # Stats of this plane's events, re-pointed at the sorted rows.
    if ev_hi > ev_lo:
        st_lo = int(sc.events[ev_lo, 5])
        st_hi = int(sc.events[ev_hi, 5]) if ev_hi < sc.events.shape[0] else sc.stats.shape[0]
    else:
        st_lo = st_hi = 0
    st = sc.stats[st_lo:st_hi]
    wire_row = st[:, 0] - ev_lo
    if identity:
        owner = wire_row
    else:
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.shape[0])
        owner = inverse[wire_row]
    stat_id = _map_ids(stat_ids, stat_names, st[:, 1], 0)
    values = _decode_stat_values(st[:, 2], st[:, 3], data, stat_ids, stat_names, strings, blobs)
    stats = tables.StatTable(owner.astype(np.int32), stat_id.astype(np.int32), (st[:, 2] & 0xFF).astype(np.int8),
                             values)
    if not identity:
        sort = np.argsort(stats.owner, kind="stable")
        stats = tables.StatTable(stats.owner[sort], stats.stat_id[sort], stats.kind[sort], stats.value[sort])

    lines = [line_msgs[i] for i in plane_lines.tolist()]
    plane = tables.Plane(
        index=pi, id=pmsg.id, name=_text(pmsg.name),
        line_ids=np.array([m.id for m in lines], dtype=np.int64),
        line_names=[_text(m.name) for m in lines],
        line_display_names=[_text(m.display_name) for m in lines],
        line_timestamp_ns=np.array([m.timestamp_ns for m in lines], dtype=np.int64),
        line_offsets=line_offsets,
        start_ps=start_ps, dur_ps=dur_ps, meta_idx=meta_idx, name_id=name_id, depth=depth,
        line_idx=local_line, stats=stats,
        meta_ids=meta_ids, meta_name_id=meta_name_id, meta_display_name_id=meta_display_name_id,
        meta_stats=meta_stats, plane_stats=plane_stats, blobs=blobs,
    )
    return plane


def _is_sorted(line: np.ndarray, start_ps: np.ndarray, dur_ps: np.ndarray) -> bool:
    """True when rows are already in (line, start, -dur) order (profilers usually write them so)."""
    if line.shape[0] < 2:
        return True
    d_line = np.diff(line)
    d_start = np.diff(start_ps)
    d_dur = np.diff(dur_ps)
    same_line = d_line == 0
    ok = (d_line > 0) | (same_line & ((d_start > 0) | ((d_start == 0) & (d_dur <= 0))))
    return bool(ok.all())


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
