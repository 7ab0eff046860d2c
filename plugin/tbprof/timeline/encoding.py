"""Encodings of a window answer: a compact binary frame (default) or columnar JSON.

Binary frame (``application/x-tbprof-trace``, documented in docs/api.md)::

    bytes 0..3   magic b"TBTR"
    bytes 4..7   uint32 little-endian: header length H
    bytes 8..8+H header: UTF-8 JSON, padded with spaces so the data starts 8-byte aligned
    then         the columns named in header["buffers"], each at its ``offset`` (bytes from
                 the start of the data section, 8-byte aligned), little-endian, ``length``
                 elements of ``dtype``

so the browser wraps each column in a typed array without copying or parsing numbers.
The JSON encoding carries the same header with ``columns`` (name -> list) instead.
Times are float64 picoseconds relative to the profile start: exact up to 2^53 ps (2.5 h).
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.domain.answer_size import check_answer_bytes
from tbprof.domain.planes import device_planes_of
from tbprof.store.arrays import sorted_unique
from tbprof.store.derived import Derived
from tbprof.store.tables import ProfileStore
from tbprof.timeline.window import WindowResult

MAGIC = b"TBTR"
BINARY_MIME = "application/x-tbprof-trace"
FORMAT_NAME = "tbprof-trace/1"


# Bytes of one event, box and counter time in the binary frame (its columns' dtypes); a series
# adds three float64 values per time.
_EVENT_BYTES = 8 + 8 + 4 + 4 + 2
_BOX_BYTES = 8 + 4 + 4 + 4 + 2
_COUNTER_TIME_BYTES = 8
_SERIES_VALUE_BYTES = 3 * 8
# JSON writes a number in up to ~20 characters where the frame takes 2 to 8 bytes.
_JSON_FACTOR = 3
NARROW_WINDOW = "ask for a narrower window (start_ps=, end_ps=), fewer tracks (tracks=) or a smaller width_px"


def window_bytes(result: WindowResult, strings: list[str], json_form: bool) -> int:
    """About what the window's answer takes, from its counts and names, before it is written."""
    n_ev = sum(int(s.rows.shape[0]) for s in result.slices.values())
    n_bx = sum(int(s.box_bucket.shape[0]) for s in result.slices.values())
    n_ct = sum(int(c.time_ps.shape[0]) * (_COUNTER_TIME_BYTES + _SERIES_VALUE_BYTES * len(c.series_min))
               for c in result.counters.values())
    numbers = n_ev * _EVENT_BYTES + n_bx * _BOX_BYTES + n_ct
    return sum(len(t) + 3 for t in strings) + numbers * (_JSON_FACTOR if json_form else 1)


def _columns(result: WindowResult, store: ProfileStore,
             json_form: bool) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    index = result.index
    slices = result.slices
    # Strings used by this answer, renumbered 0..n-1.
    used = [s.name_id for s in slices.values()] + [s.box_name_id for s in slices.values()]
    name_ids = sorted_unique(np.concatenate(used)) if used else np.zeros(0, np.int32)
    strings = store.strings.lookup(name_ids)
    check_answer_bytes(window_bytes(result, strings, json_form), "the window's events and names", NARROW_WINDOW)

    def local(ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(name_ids, ids).astype(np.uint32)

    tracks_json: list[dict[str, Any]] = []
    ev: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "dur", "name", "depth", "row")}
    bx: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "depth", "count", "busy", "name")}
    ct_time: list[np.ndarray] = []
    ct_vals: dict[str, list[np.ndarray]] = {"min": [], "max": [], "last": []}
    n_ev = n_bx = n_ct = n_cv = 0
    res = result.resolution_ps
    for track in index.tracks:
        # The window's answer extends the track's description (the trace route's own shape).
        tj: dict[str, Any] = dict(track.to_json())
        s = slices.get(track.id)
        if s is not None:
            k = int(s.rows.shape[0])
            m = int(s.box_bucket.shape[0])
            tj["events"] = [n_ev, k]
            tj["boxes"] = [n_bx, m]
            tj["in_window"] = s.in_window
            tj["merged"] = s.merged
            ev["start"].append(s.start_ps.astype(np.float64))
            ev["dur"].append(s.dur_ps.astype(np.float64))
            ev["name"].append(local(s.name_id))
            ev["depth"].append(s.depth.astype(np.uint16))
            ev["row"].append(s.rows.astype(np.uint32))
            bx["start"].append((s.box_bucket * res).astype(np.float64))
            bx["depth"].append(s.box_depth.astype(np.uint16))
            bx["count"].append(s.box_count.astype(np.uint32))
            bx["busy"].append(np.minimum(s.box_busy_ps / res, 1.0).astype(np.float32))
            bx["name"].append(local(s.box_name_id))
            n_ev += k
            n_bx += m
        c = result.counters.get(track.id)
        if c is not None:
            k = int(c.time_ps.shape[0])
            tj["samples"] = [n_ct, k]
            tj["decimated"] = c.decimated
            tj["in_window"] = c.in_window
            series = []
            for name in c.series_min:
                series.append({"name": name, "offset": n_cv})
                ct_vals["min"].append(c.series_min[name].astype(np.float64))
                ct_vals["max"].append(c.series_max[name].astype(np.float64))
                ct_vals["last"].append(c.series_last[name].astype(np.float64))
                n_cv += k
            tj["series"] = series
            ct_time.append(c.time_ps.astype(np.float64))
            n_ct += k
        tracks_json.append(tj)

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    columns = {
        "event_start_ps": cat(ev["start"], np.float64),
        "event_dur_ps": cat(ev["dur"], np.float64),
        "event_name": cat(ev["name"], np.uint32),
        "event_row": cat(ev["row"], np.uint32),
        "event_depth": cat(ev["depth"], np.uint16),
        "box_start_ps": cat(bx["start"], np.float64),
        "box_count": cat(bx["count"], np.uint32),
        "box_busy": cat(bx["busy"], np.float32),
        "box_name": cat(bx["name"], np.uint32),
        "box_depth": cat(bx["depth"], np.uint16),
        "counter_time_ps": cat(ct_time, np.float64),
        "counter_min": cat(ct_vals["min"], np.float64),
        "counter_max": cat(ct_vals["max"], np.float64),
        "counter_last": cat(ct_vals["last"], np.float64),
    }
    header = {
        "schema_version": SCHEMA_VERSION,
        "format": FORMAT_NAME,
        "host": store.host,
        "span_ps": store.span_ps,
        "active_ps": active_range_ps(store),
        "window": {"start_ps": result.start_ps, "end_ps": result.end_ps, "width_px": result.width_px,
                   "resolution_ps": res},
        "counts": {"in_window": result.in_window, "returned": result.returned, "merged": result.merged,
                   "boxes": result.boxes},
        "strings": strings,
        "groups": [g.to_json() for g in index.groups],
        "tracks": tracks_json,
    }
    return header, columns


def _compute_active_range_ps(store: ProfileStore) -> list[int]:
    starts: list[int] = []
    ends: list[int] = []
    for pi in device_planes_of(store):
        p = store.planes[pi]
        if p.n_events:
            starts.append(int(p.start_ps.min()))
            ends.append(int((p.start_ps + p.dur_ps).max()))
    return [min(starts), max(ends)] if starts and max(ends) > min(starts) else [0, int(store.span_ps)]


ACTIVE_RANGE_PS: Derived[list[int]] = Derived(("timeline", "active_range_ps"), _compute_active_range_ps)


def active_range_ps(store: ProfileStore) -> list[int]:
    """[start, end] of the device planes' events (memoised): where the program ran. The whole
    span also holds the profiler's start and stop on the host, often a large share of it with
    nothing to see (bench/measurements.md#trace-viewer), so the viewer opens here. No device
    plane: the whole span."""
    return store.derive(ACTIVE_RANGE_PS)


def encode_json(result: WindowResult, store: ProfileStore) -> dict[str, Any]:
    header, columns = _columns(result, store, json_form=True)
    header["columns"] = {k: v.tolist() for k, v in columns.items()}
    return header


def encode_binary(result: WindowResult, store: ProfileStore) -> bytes:
    header, columns = _columns(result, store, json_form=False)
    buffers = []
    offset = 0
    for name, arr in columns.items():
        buffers.append({"name": name, "dtype": arr.dtype.name, "offset": offset, "length": int(arr.shape[0])})
        offset += (arr.nbytes + 7) // 8 * 8
    header["buffers"] = buffers
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    head += b" " * ((-(len(head) + 8)) % 8)
    check_answer_bytes(len(head) + offset, "the window's events and names", NARROW_WINDOW)
    out = bytearray(MAGIC + struct.pack("<I", len(head)) + head)
    for arr in columns.values():
        out += np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        out += b"\0" * ((-arr.nbytes) % 8)
    return bytes(out)


def decode_binary(body: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The inverse of ``encode_binary`` (tests and benchmarks use it; the browser has its own)."""
    if body[:4] != MAGIC:
        raise ValueError("not a tbprof trace frame")
    (length,) = struct.unpack("<I", body[4:8])
    header = json.loads(body[8:8 + length])
    data = memoryview(body)[8 + length:]
    columns = {}
    for b in header["buffers"]:
        dtype = np.dtype(b["dtype"]).newbyteorder("<")
        columns[b["name"]] = np.frombuffer(data, dtype=dtype, count=b["length"], offset=b["offset"])
    return header, columns
