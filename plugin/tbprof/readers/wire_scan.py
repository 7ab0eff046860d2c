"""Scan the raw protobuf wire bytes of an XSpace straight into numpy columns.

Why not ``XSpace.FromString`` and a loop: on ``jax_large`` (2.06 M events, 3.76 M stats)
upb parses in 1.3 s, but copying every event and stat out of the message objects takes a
further 4.6 s of Python attribute access. The events and stats are the only bulky part of the
file, and their wire layout is tiny (a handful of varint fields), so a numba-compiled scanner
walks them in one pass over the bytes. Everything else (metadata maps, plane stats, line names,
hostnames) is small: the scanner records the byte spans of those fields and upb parses just
those spans (see ``readers/xplane.py``).

Wire facts used here (proto3, field numbers from ``protos/xplane.proto``):
  XSpace: planes=1 (LEN); XPlane: lines=3 (LEN); XLine: events=4 (LEN);
  XEvent: metadata_id=1, offset_ps=2, duration_ps=3 (VARINT), stats=4 (LEN), num_occurrences=5;
  XStat: metadata_id=1, double=2 (I64), uint64=3, int64=4, ref=7 (VARINT), str=5, bytes=6 (LEN).

The scanner never trusts a length: every read is bounds-checked and a malformed buffer
returns an error code with the byte offset, which the reader turns into a clear message.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tbprof.store import paths as _paths

# numba writes its compiled-code cache next to the source by default; an installed package
# may be read-only, so point it at the user's cache directory unless the user chose one.
# Compiling the scanner takes ~10 s once per machine; the compiled code is reused after.
os.environ.setdefault("NUMBA_CACHE_DIR", str(_paths.numba_cache_dir()))

import numba

# Stat value kinds, stored in the store's ``kind`` column.
KIND_NONE = 0
KIND_DOUBLE = 1
KIND_UINT64 = 2
KIND_INT64 = 3
KIND_STR = 4
KIND_BYTES = 5
KIND_REF = 6

# Error codes returned by the scanner (0 = ok).
ERR_TRUNCATED = 1
ERR_BAD_WIRE_TYPE = 2
ERR_BAD_VARINT = 3
ERR_LENGTH = 4
ERR_CAPACITY = 5  # the output arrays are too small: count first, then fill
ERR_TOO_MANY = 6

# Event and stat rows are int32 in the store.
MAX_ROWS = 2**31 - 1

ERROR_TEXT = {
    ERR_TRUNCATED: "the data ends in the middle of a field (truncated file?)",
    ERR_BAD_WIRE_TYPE: "an invalid protobuf wire type (not an XSpace, or corrupt bytes)",
    ERR_BAD_VARINT: "a malformed varint (corrupt bytes)",
    ERR_LENGTH: "a length that runs past the end of its enclosing message (truncated or corrupt)",
    ERR_TOO_MANY: "more than 2^31 events or stats in one file (not supported)",
}


@numba.njit(cache=True, nogil=True, inline="always")
def _varint(buf: np.ndarray, pos: int, end: int) -> tuple[Any, int, int]:
    """Returns (value as int64 bit pattern, new position, error code)."""
    if pos < end and buf[pos] < 0x80:  # most tags, ids and small values are one byte
        return np.int64(buf[pos]), pos + 1, 0
    result = np.int64(0)
    shift = np.int64(0)
    while True:
        if pos >= end:
            return np.int64(0), pos, ERR_TRUNCATED
        b = np.int64(buf[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos, 0
        shift += 7
        if shift >= 70:
            return np.int64(0), pos, ERR_BAD_VARINT


@numba.njit(cache=True, nogil=True)
def _skip(buf: np.ndarray, pos: int, end: int, wire: int) -> tuple[int, int]:
    """Skips one field value of the given wire type; returns (new position, error)."""
    if wire == 0:
        _, pos, err = _varint(buf, pos, end)
        return pos, err
    if wire == 1:
        pos += 8
    elif wire == 5:
        pos += 4
    elif wire == 2:
        n, pos, err = _varint(buf, pos, end)
        if err != 0:
            return pos, err
        if n < 0 or pos + n > end:
            return pos, ERR_LENGTH
        pos += n
    else:
        return pos, ERR_BAD_WIRE_TYPE
    if pos > end:
        return pos, ERR_TRUNCATED
    return pos, 0


@numba.njit(cache=True, nogil=True)
def _scan(buf, fill, counts, spans, lines, ev_line, ev_meta, ev_start, ev_dur,  # type: ignore[no-untyped-def]
          st_owner, st_meta, st_kind, st_value, texts):
    """Walks an XSpace. With fill=False only counts; with fill=True writes the arrays.

    The outputs are the store's own column types, so the reader can finish most of them in
    place (a first touch of fresh memory costs about 1 ms per MB on a VM; the columns of a
    60 MB profile are ~130 MB).

    counts: int64[7] = n_spans, n_planes, n_lines, n_events, n_stats, n_texts, n_wide_ids (output).
    spans: int64[n, 3] = (owner kind*2^32 + owner index, start, end) of small fields that upb
        parses later; owner kind 0 = space, 1 = plane, 2 = line.
    lines: int64[n, 2] = (plane index, first event index).
    ev_line (int32), ev_meta (metadata_id), ev_start (offset_ps, int64), ev_dur (duration_ps):
        one row per event in wire order.
    st_owner (int32 event row), st_meta (metadata_id), st_kind (int8), st_value (int64 bit
        pattern; for str/bytes the row of ``texts``): one row per stat in wire order.
    texts: int64[n, 3] = (stat row, byte offset, length) of each str/bytes value.
    Metadata ids go into ev_meta / st_meta as they are when those arrays are int64; when they
    are int32, an id outside [0, 2^31) is written as -1 and counted in n_wide_ids (the reader
    then scans again with int64 arrays).
    Returns (error code, byte offset of the error).
    """
    narrow = ev_meta.itemsize == 4
    n_spans = 0
    n_planes = 0
    n_lines = 0
    n_events = 0
    n_stats = 0
    n_texts = 0
    n_wide = 0
    end = buf.shape[0]
    pos = 0
    while pos < end:
        tag_start = pos
        tag, pos, err = _varint(buf, pos, end)
        if err != 0:
            return err, pos
        field = tag >> 3
        wire = tag & 7
        if field == 1 and wire == 2:
            plen, pos, err = _varint(buf, pos, end)
            if err != 0:
                return err, pos
            pend = pos + plen
            if plen < 0 or pend > end:
                return ERR_LENGTH, pos
            plane_idx = n_planes
            n_planes += 1
            # Walk the XPlane.
            while pos < pend:
                ptag_start = pos
                ptag, pos, err = _varint(buf, pos, pend)
                if err != 0:
                    return err, pos
                pfield = ptag >> 3
                pwire = ptag & 7
                if pfield == 3 and pwire == 2:
                    llen, pos, err = _varint(buf, pos, pend)
                    if err != 0:
                        return err, pos
                    lend = pos + llen
                    if llen < 0 or lend > pend:
                        return ERR_LENGTH, pos
                    line_idx = n_lines
                    n_lines += 1
                    if fill and line_idx >= lines.shape[0]:
                        return ERR_CAPACITY, pos
                    if fill:
                        lines[line_idx, 0] = plane_idx
                        lines[line_idx, 1] = n_events
                    while pos < lend:
                        ltag_start = pos
                        ltag, pos, err = _varint(buf, pos, lend)
                        if err != 0:
                            return err, pos
                        lfield = ltag >> 3
                        lwire = ltag & 7
                        if lfield == 4 and lwire == 2:
                            elen, pos, err = _varint(buf, pos, lend)
                            if err != 0:
                                return err, pos
                            eend = pos + elen
                            if elen < 0 or eend > lend:
                                return ERR_LENGTH, pos
                            ev_idx = n_events
                            n_events += 1
                            if ev_idx >= MAX_ROWS:
                                return ERR_TOO_MANY, pos
                            if fill and ev_idx >= ev_line.shape[0]:
                                return ERR_CAPACITY, pos
                            meta_id = np.int64(0)
                            offset_ps = np.int64(0)
                            dur_ps = np.int64(0)
                            while pos < eend:
                                etag, pos, err = _varint(buf, pos, eend)
                                if err != 0:
                                    return err, pos
                                efield = etag >> 3
                                ewire = etag & 7
                                if ewire == 0 and (efield == 1 or efield == 2 or efield == 3):
                                    v, pos, err = _varint(buf, pos, eend)
                                    if err != 0:
                                        return err, pos
                                    if efield == 1:
                                        meta_id = v
                                    elif efield == 2:
                                        offset_ps = v
                                    else:
                                        dur_ps = v
                                elif efield == 4 and ewire == 2:
                                    slen, pos, err = _varint(buf, pos, eend)
                                    if err != 0:
                                        return err, pos
                                    send = pos + slen
                                    if slen < 0 or send > eend:
                                        return ERR_LENGTH, pos
                                    s_meta = np.int64(0)
                                    s_kind = KIND_NONE
                                    s_val = np.int64(0)
                                    s_off = np.int64(0)
                                    s_len = np.int64(0)
                                    while pos < send:
                                        stag, pos, err = _varint(buf, pos, send)
                                        if err != 0:
                                            return err, pos
                                        sfield = stag >> 3
                                        swire = stag & 7
                                        if sfield == 1 and swire == 0:
                                            s_meta, pos, err = _varint(buf, pos, send)
                                        elif sfield == 2 and swire == 1:
                                            if pos + 8 > send:
                                                return ERR_TRUNCATED, pos
                                            s_kind = KIND_DOUBLE
                                            s_val = np.int64(0)
                                            for k in range(8):
                                                s_val |= np.int64(buf[pos + k]) << np.int64(8 * k)
                                            pos += 8
                                        elif swire == 0 and (sfield == 3 or sfield == 4 or sfield == 7):
                                            s_val, pos, err = _varint(buf, pos, send)
                                            if sfield == 3:
                                                s_kind = KIND_UINT64
                                            elif sfield == 4:
                                                s_kind = KIND_INT64
                                            else:
                                                s_kind = KIND_REF
                                        elif (sfield == 5 or sfield == 6) and swire == 2:
                                            s_len, pos, err = _varint(buf, pos, send)
                                            if err != 0:
                                                return err, pos
                                            if s_len < 0 or pos + s_len > send:
                                                return ERR_LENGTH, pos
                                            s_kind = KIND_STR if sfield == 5 else KIND_BYTES
                                            s_off = np.int64(pos)
                                            pos += s_len
                                        else:
                                            pos, err = _skip(buf, pos, send, swire)
                                        if err != 0:
                                            return err, pos
                                    if n_stats >= MAX_ROWS:
                                        return ERR_TOO_MANY, pos
                                    if fill and n_stats >= st_owner.shape[0]:
                                        return ERR_CAPACITY, pos
                                    if s_kind == KIND_STR or s_kind == KIND_BYTES:
                                        if fill and n_texts >= texts.shape[0]:
                                            return ERR_CAPACITY, pos
                                        if fill:
                                            texts[n_texts, 0] = n_stats
                                            texts[n_texts, 1] = s_off
                                            texts[n_texts, 2] = s_len
                                        s_val = np.int64(n_texts)
                                        n_texts += 1
                                    if narrow and (s_meta < 0 or s_meta > MAX_ROWS):
                                        s_meta = np.int64(-1)
                                        n_wide += 1
                                    if fill:
                                        st_owner[n_stats] = ev_idx
                                        st_meta[n_stats] = s_meta
                                        st_kind[n_stats] = s_kind
                                        st_value[n_stats] = s_val
                                    n_stats += 1
                                else:
                                    pos, err = _skip(buf, pos, eend, ewire)
                                    if err != 0:
                                        return err, pos
                            if narrow and (meta_id < 0 or meta_id > MAX_ROWS):
                                meta_id = np.int64(-1)
                                n_wide += 1
                            if fill:
                                ev_line[ev_idx] = line_idx
                                ev_meta[ev_idx] = meta_id
                                ev_start[ev_idx] = offset_ps
                                ev_dur[ev_idx] = dur_ps
                        else:
                            pos, err = _skip(buf, pos, lend, lwire)
                            if err != 0:
                                return err, pos
                            if fill and n_spans >= spans.shape[0]:
                                return ERR_CAPACITY, pos
                            if fill:
                                spans[n_spans, 0] = (2 << 32) + line_idx
                                spans[n_spans, 1] = ltag_start
                                spans[n_spans, 2] = pos
                            n_spans += 1
                else:
                    pos, err = _skip(buf, pos, pend, pwire)
                    if err != 0:
                        return err, pos
                    if fill and n_spans >= spans.shape[0]:
                        return ERR_CAPACITY, pos
                    if fill:
                        spans[n_spans, 0] = (1 << 32) + plane_idx
                        spans[n_spans, 1] = ptag_start
                        spans[n_spans, 2] = pos
                    n_spans += 1
        else:
            pos, err = _skip(buf, pos, end, wire)
            if err != 0:
                return err, pos
            if fill and n_spans >= spans.shape[0]:
                return ERR_CAPACITY, pos
            if fill:
                spans[n_spans, 0] = 0
                spans[n_spans, 1] = tag_start
                spans[n_spans, 2] = pos
            n_spans += 1
    counts[0] = n_spans
    counts[1] = n_planes
    counts[2] = n_lines
    counts[3] = n_events
    counts[4] = n_stats
    counts[5] = n_texts
    counts[6] = n_wide
    return 0, pos


@numba.njit(cache=True, nogil=True)
def hash_spans(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """64-bit FNV-1a of each byte span, mixed with its length, to find repeated texts."""
    out = np.empty(offsets.shape[0], dtype=np.uint64)
    for i in range(offsets.shape[0]):
        h = np.uint64(14695981039346656037)
        for k in range(offsets[i], offsets[i] + lengths[i]):
            h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
        out[i] = h ^ (np.uint64(lengths[i]) * np.uint64(0x9E3779B97F4A7C15))
    return out


class WireError(ValueError):
    """The bytes are not a well-formed XSpace."""

    def __init__(self, code: int, offset: int) -> None:
        super().__init__(f"{ERROR_TEXT.get(code, 'malformed protobuf')} at byte {offset}")
        self.code = code
        self.offset = offset


class ScanResult:
    """Raw columns of one scanned XSpace (indices refer to the wire order); see ``_scan``."""

    def __init__(self, spans: np.ndarray, n_planes: int, lines: np.ndarray, ev_line: np.ndarray,
                 ev_meta: np.ndarray, ev_start: np.ndarray, ev_dur: np.ndarray, st_owner: np.ndarray,
                 st_meta: np.ndarray, st_kind: np.ndarray, st_value: np.ndarray, texts: np.ndarray) -> None:
        self.spans = spans
        self.n_planes = n_planes
        self.lines = lines
        self.ev_line = ev_line
        self.ev_meta = ev_meta
        self.ev_start = ev_start
        self.ev_dur = ev_dur
        self.st_owner = st_owner
        self.st_meta = st_meta
        self.st_kind = st_kind
        self.st_value = st_value
        self.texts = texts

    @property
    def n_events(self) -> int:
        return int(self.ev_line.shape[0])

    @property
    def n_stats(self) -> int:
        return int(self.st_owner.shape[0])


def _outputs(caps: tuple[int, ...], meta_dtype: type) -> tuple[np.ndarray, ...]:
    n_spans, n_lines, n_events, n_stats, n_texts = caps
    return (np.empty((n_spans, 3), dtype=np.int64), np.empty((n_lines, 2), dtype=np.int64),
            np.empty(n_events, dtype=np.int32), np.empty(n_events, dtype=meta_dtype),
            np.empty(n_events, dtype=np.int64), np.empty(n_events, dtype=np.int64),
            np.empty(n_stats, dtype=np.int32), np.empty(n_stats, dtype=meta_dtype),
            np.empty(n_stats, dtype=np.int8), np.empty(n_stats, dtype=np.int64),
            np.empty((n_texts, 3), dtype=np.int64))


def scan(data: bytes | np.ndarray) -> ScanResult:
    """Scans an XSpace; raises WireError on malformed bytes.

    One pass into generously sized arrays (``np.empty`` reserves address space; only the rows
    written become resident memory), falling back to a counting pass when a file is denser
    than the estimate. Real profiles spend >= 16 bytes per event and >= 6 per stat
    (jax_large: 29 and 16), so the estimates below hold with a wide margin. Metadata ids are
    small sequential numbers in every profiler we know, so they are scanned into int32
    columns; a file with an id beyond int32 is scanned again with int64 columns.
    """
    buf = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) else data
    n = int(buf.shape[0])
    counts = np.zeros(7, dtype=np.int64)
    caps: tuple[int, ...] = (n // 64 + 1024, n // 16 + 1024, n // 8 + 1024, n // 4 + 1024, n // 8 + 1024)
    meta_dtype: type = np.int32
    for _ in range(3):
        out = _outputs(caps, meta_dtype)
        err, offset = _scan(buf, True, counts, *out)
        if err == 0 and counts[6] > 0 and meta_dtype is np.int32:
            meta_dtype = np.int64
            continue
        if err == 0:
            n_spans, n_planes, n_lines, n_events, n_stats, n_texts = (int(c) for c in counts[:6])
            # Views, not copies: the untouched tail of each buffer is address space, not memory.
            spans, lines, ev_line, ev_meta, ev_start, ev_dur, st_owner, st_meta, st_kind, st_value, texts = out
            return ScanResult(spans[:n_spans], n_planes, lines[:n_lines], ev_line[:n_events], ev_meta[:n_events],
                              ev_start[:n_events], ev_dur[:n_events], st_owner[:n_stats], st_meta[:n_stats],
                              st_kind[:n_stats], st_value[:n_stats], texts[:n_texts])
        if err != ERR_CAPACITY:
            raise WireError(int(err), int(offset))
        err, offset = _scan(buf, False, counts, *_outputs((0, 0, 0, 0, 0), meta_dtype))
        if err != 0:
            raise WireError(int(err), int(offset))
        caps = (int(counts[0]), int(counts[2]), int(counts[3]), int(counts[4]), int(counts[5]))
        if counts[6] > 0:
            meta_dtype = np.int64
    raise AssertionError("unreachable: the third pass has exact capacities and id widths")
