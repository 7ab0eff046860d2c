"""A batch of a pod's hosts as one frame (analyses/partial_frames.py): what a worker sends back.

A worker converts a batch of consecutive hosts (service/executor.py ``convert_batch``), decodes
their partials itself and combines what the all-hosts tools sum over hosts (the op tables,
``combine_partials``), then answers with ONE frame for the batch: the per-host values that
every all-hosts answer reads at once (the header, the steps, the GPU shares: ``FRAMED``) as
numeric arrays and string columns, each host's own partial (``encode_partials``' blob, decoded
by the server only for a value a tool asks for: kernel reports, memory digests, ...) and the
batch's combined op tables. The server then builds each host's ``HostPartial`` from arrays, with
no JSON to parse and no pickle (``decode_batch``), as the batches arrive.

A value the frame cannot carry as arrays (a plane stat or metadata holding an array, a step
column of another dtype) makes that host travel as its blob alone, decoded on arrival as before:
the frame never changes an answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.partial_frames import Frame, FrameError, FrameWriter
from tbprof.analyses.partials import (
    CARRIED_BY_NAME,
    SUMMARY_KEYS,
    TOOL_LIST,
    HostPartial,
    PlaneInfo,
    decode_on_arrival,
    pack_value,
    partial_from_bytes,
    unpack_value,
)
from tbprof.analyses.steps.assignment import Steps

# A host's way in the frame.
ERROR, NO_PARTIAL, FRAMED, BLOB_ONLY = 0, 1, 2, 3
# Worker timings that travel (seconds, NaN where a host has none).
TIMINGS = ("load_s", "convert_s", "partial_s", "encode_s", "write_s", "cpu_s")
_STEPS_KEY = CARRIED_BY_NAME["steps"].key
_GPU_KEY = CARRIED_BY_NAME["gpu_summary"].key
_STEP_TEXTS = ("source", "method", "detail", "diagnosis")
_STEP_ARRAYS = ("step_nums", "begin_ps", "end_ps", "type_ps", "per_device_type_ps")


@dataclass
class BatchAnswer:
    """A decoded batch: ``results`` as ``convert_host`` gives them (without ``summary``), the
    hosts' ``HostPartial`` by host, and the combined op tables (an ``encode_partials`` blob)."""

    results: list[dict[str, Any]]
    parts: dict[str, HostPartial]
    combined: bytes | None
    combined_hosts: list[str]
    timings: dict[str, float]


def _text(value: Any) -> str:
    """A packed value (``pack_value``'s form) as JSON; TypeError for one holding an array."""
    return json.dumps(pack_value(value), separators=(",", ":"))


def _steps_consistent(steps: Steps, n_planes: int) -> bool:
    """Whether a host's steps agree with themselves: one name, number, begin, end and row of
    times per step, a table of times per device plane of the host. A worker sends a host
    whose steps do not as its blob alone; the server refuses a frame that says otherwise."""
    n = steps.step_nums.shape[0]
    return (steps.begin_ps.shape[0] == steps.end_ps.shape[0] == steps.type_ps.shape[0] == len(steps.names) == n
            and steps.per_device_type_ps.shape[:2] == (len(steps.device_planes), n)
            and all(0 <= i < n_planes for i in steps.device_planes))


def _from_fields(fields: dict[str, Any]) -> HostPartial:
    """The host partial as ``build_partial`` made it, before its binary form (no JSON to parse):
    the header, the plane stats in their packed form, and the carried values unpacked on use."""
    carried = fields["carried"]
    return HostPartial(
        host=fields["host"], format=fields["format"], source_path=fields["source_path"],
        span_ps=fields["span_ps"], hostnames=fields["hostnames"], errors=fields["errors"],
        warnings=fields["warnings"], metadata=unpack_value(fields["metadata"]),
        planes=[PlaneInfo(p["name"], p["n_events"], packed=p["plane_stats"]) for p in fields["planes"]],
        summary=fields["summary"], available_tools=fields["available_tools"],
        lazy={c.key: _unpacker(c.unpack, carried[c.name]) for c in CARRIED_BY_NAME.values() if c.name in carried})


def _unpacker(unpack: Callable[[dict[str, Any]], Any], packed: dict[str, Any]) -> Callable[[], Any]:
    return lambda: unpack(packed)


def _framed_fields(p: HostPartial, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the frame carries of a host (``fields``: the partial before its binary form, when
    the worker built it: its packed plane stats and metadata are written as they are);
    TypeError or ValueError when a value is not of the kinds the frame carries (the host then
    travels as its blob alone)."""
    steps = p.carried(_STEPS_KEY)
    active, idle, comm = p.carried(_GPU_KEY)
    if not isinstance(steps, Steps) or set(p.summary) != set(SUMMARY_KEYS):
        raise TypeError("unexpected carried values")
    for name in _STEP_ARRAYS:
        if getattr(steps, name).dtype != np.int64:
            raise TypeError(f"steps.{name} is not int64")
    if steps.type_ps.ndim != 2 or steps.per_device_type_ps.ndim != 3 or not _steps_consistent(steps, len(p.planes)):
        raise TypeError("unexpected step table shapes")
    ints = (steps.dropped_boundary_steps, steps.candidate_count, p.span_ps, p.summary["device_count"],
            p.summary["event_count"], p.summary["span_ps"], *steps.device_planes)
    if not all(type(v) is int for v in ints) or type(steps.has_device) is not bool or type(active) is not bool:
        raise TypeError("unexpected scalar types")
    texts = [*steps.names, *steps.notes, *p.summary["device_types"], *p.hostnames, *p.errors, *p.warnings,
             *(p.available_tools or []), *(getattr(steps, k) for k in _STEP_TEXTS), p.host, p.format, p.source_path,
             *(pl.name for pl in p.planes)]
    if not all(type(t) is str for t in texts):
        raise TypeError("unexpected texts")
    if fields is not None:  # packed already
        metadata = json.dumps(fields["metadata"], separators=(",", ":"))
        plane_stats = [json.dumps(pl["plane_stats"], separators=(",", ":")) for pl in fields["planes"]]
    else:
        metadata, plane_stats = _text(p.metadata), [_text(pl.plane_stats) for pl in p.planes]
    return {"partial": p, "steps": steps, "gpu": (active, [float(x) for x in idle], [float(x) for x in comm]),
            "metadata": metadata, "plane_stats": plane_stats}


def decoded(results: Sequence[dict[str, Any]]) -> list[HostPartial | None]:
    """The partial of each of ``convert_host``'s results: from the values it was just built from
    (``fields``: no JSON to parse), else decoded from its blob (a partial read from the cache);
    None when it has none, or one that does not decode (it then travels as its blob alone)."""
    out: list[HostPartial | None] = []
    for r in results:
        try:
            if r.get("partial") is None:
                out.append(None)
            elif r.get("fields") is not None:
                out.append(_from_fields(r["fields"]))
            else:
                out.append(partial_from_bytes(r["partial"], checked=False))
        except (ValueError, KeyError, TypeError, IndexError):
            out.append(None)
    return out


def encode_batch(results: Sequence[dict[str, Any]], decoded_parts: Sequence[HostPartial | None],
                 combined: bytes | None, combined_hosts: Sequence[str], timings: dict[str, float]) -> bytes:
    """The worker's answer for a batch: ``convert_host``'s results in task order, their partials
    (``decoded``), the combined op tables and the batch's own timings, as one frame."""
    w = FrameWriter()
    modes, blobs, framed, parts = [], [], [], []
    for r, p in zip(results, decoded_parts, strict=True):
        blob = r.get("partial")
        if "error" in r:
            modes.append(ERROR)
        elif blob is None:
            modes.append(NO_PARTIAL)
        else:
            try:
                if p is None:
                    raise ValueError("not decoded")
                f = _framed_fields(p, r.get("fields"))
            except (TypeError, ValueError, LookupError):
                modes.append(BLOB_ONLY)
            else:
                modes.append(FRAMED)
                framed.append(f)
                parts.append(f["partial"])
        blobs.append(np.frombuffer(blob or b"", dtype=np.uint8))
    w.put("mode", modes, "<u1")
    w.put_strings("host", [r["host"] for r in results])
    w.put_strings("key", [r.get("key", "") for r in results])
    w.put("has_key", ["key" in r for r in results], "?")
    w.put_strings("error", [r.get("error", "") for r in results])
    w.put_strings("file", [r.get("file", "") for r in results])
    w.put("cached", [bool(r.get("cached")) for r in results], "?")
    w.put("stored", [bool(r.get("stored")) for r in results], "?")
    w.put("seconds", [float(r.get("seconds", np.nan)) for r in results], "<f8")
    w.put("timings", [float(r.get("timings", {}).get(k, np.nan)) for r in results for k in TIMINGS], "<f8")
    w.put_ragged("blob", blobs, "<u1")
    # The framed hosts, in order.
    w.put_strings("part_host", [p.host for p in parts])
    w.put_strings("format", [p.format for p in parts])
    w.put_strings("source_path", [p.source_path for p in parts])
    w.put("span_ps", [p.span_ps for p in parts], "<i8")
    for name in ("hostnames", "errors", "warnings"):
        w.put_string_lists(name, [getattr(p, name) for p in parts])
    w.put_string_lists("available_tools", [p.available_tools or [] for p in parts])
    w.put("has_tools", [p.available_tools is not None for p in parts], "?")
    # The carried values each host has (the others are left out of its partial: ``Parts``).
    w.put_string_lists("carried", [sorted(p.parts() - {TOOL_LIST}) for p in parts])
    w.put_strings("metadata", [f["metadata"] for f in framed])
    w.put_string_lists("plane_name", [[pl.name for pl in p.planes] for p in parts])
    w.put_ragged("plane_events", [np.array([pl.n_events for pl in p.planes], dtype=np.int64) for p in parts], "<i8")
    w.put_string_lists("plane_stats", [f["plane_stats"] for f in framed])
    w.put_string_lists("device_types", [p.summary["device_types"] for p in parts])
    for k in ("device_count", "event_count", "span_ps"):
        w.put(f"summary.{k}", [p.summary[k] for p in parts], "<i8")
    steps: list[Steps] = [f["steps"] for f in framed]
    for k in _STEP_TEXTS:
        w.put_strings(f"steps.{k}", [getattr(s, k) for s in steps])
    w.put("steps.has_device", [s.has_device for s in steps], "?")
    w.put("steps.dropped", [s.dropped_boundary_steps for s in steps], "<i8")
    w.put("steps.candidates", [s.candidate_count for s in steps], "<i8")
    w.put_string_lists("steps.names", [s.names for s in steps])
    w.put_string_lists("steps.notes", [s.notes for s in steps])
    for k in ("step_nums", "begin_ps", "end_ps", "type_ps", "per_device_type_ps"):
        w.put_ragged(f"steps.{k}", [getattr(s, k) for s in steps], "<i8")
    w.put("steps.type_shape", [d for s in steps for d in s.type_ps.shape], "<i8")
    w.put("steps.device_shape", [d for s in steps for d in s.per_device_type_ps.shape], "<i8")
    w.put_ragged("steps.device_planes", [np.array(s.device_planes, dtype=np.int64) for s in steps], "<i8")
    w.put("gpu.active", [f["gpu"][0] for f in framed], "?")
    w.put_ragged("gpu.idle", [np.array(f["gpu"][1], dtype=np.float64) for f in framed], "<f8")
    w.put_ragged("gpu.comm", [np.array(f["gpu"][2], dtype=np.float64) for f in framed], "<f8")
    w.put("combined", np.frombuffer(combined or b"", dtype=np.uint8))
    w.put("has_combined", [combined is not None], "?")
    w.put_strings("combined_hosts", list(combined_hosts))
    w.put_strings("batch_timing", list(timings))
    w.put("batch_seconds", list(timings.values()), "<f8")
    return bytes(w)


def _rows(values: np.ndarray, bounds: list[int], i: int, shape: Sequence[int]) -> np.ndarray:
    part = values[bounds[i]:bounds[i + 1]]
    if math.prod(shape) != part.shape[0] or any(d < 0 for d in shape):
        raise FrameError(f"a step table's shape {tuple(shape)} does not match its {part.shape[0]} values")
    return part.reshape(tuple(shape))


def _part(values: np.ndarray, bounds: list[int], i: int) -> np.ndarray:
    return values[bounds[i]:bounds[i + 1]]


def _count(f: Frame, name: str) -> int:
    """The number of texts of a string column whose count the frame alone gives."""
    n = f.get(f"{name}.o", "<i8").shape[0] - 1
    if n < 0:
        raise FrameError(f"section {name!r} has no offsets")
    return n


def _later_from_blob(blob: bytes) -> Callable[[Hashable], Callable[[], Any]]:
    """Decoders of a host's carried values from its own partial (decoded once, on first use)."""
    cell: dict[str, HostPartial] = {}

    def full() -> HostPartial:
        if "p" not in cell:
            cell["p"] = partial_from_bytes(blob, checked=False)
        return cell["p"]

    return lambda key: lambda: full().carried(key)


def decode_batch(frame: bytes | bytearray, hosts: Sequence[str]) -> BatchAnswer:
    """A worker's frame for the batch of ``hosts`` (in order). Raises ``FrameError`` (a
    ValueError) when the frame is damaged or answers for other hosts; a host's own blob is
    decoded here only when the frame could not carry it (``BLOB_ONLY``)."""
    f = Frame(frame)
    n = len(hosts)
    names = f.strings("host", n)
    if names != list(hosts):
        raise FrameError("the frame answers for other hosts than its batch's")
    modes = f.get("mode", "<u1", n).tolist()
    if any(m > BLOB_ONLY for m in modes):
        raise FrameError("unknown host mode in a frame")
    keys, errors, files = f.strings("key", n), f.strings("error", n), f.strings("file", n)
    has_key, cached, stored = (f.get(k, "?", n).tolist() for k in ("has_key", "cached", "stored"))
    seconds = f.get("seconds", "<f8", n).tolist()
    timing_values = f.get("timings", "<f8", n * len(TIMINGS)).tolist()
    blob_values, blob_bounds = f.ragged("blob", n, "<u1")
    raw = memoryview(blob_values.data)
    m = modes.count(FRAMED)
    part_hosts, formats, sources = f.strings("part_host", m), f.strings("format", m), f.strings("source_path", m)
    span = f.get("span_ps", "<i8", m).tolist()
    lists = {k: f.string_lists(k, m) for k in ("hostnames", "errors", "warnings", "available_tools",
                                               "plane_name", "plane_stats", "device_types", "steps.names",
                                               "steps.notes")}
    metadata = f.strings("metadata", m)
    has_tools = f.get("has_tools", "?", m).tolist()
    carried_names = f.string_lists("carried", m)
    plane_events, plane_bounds = f.ragged("plane_events", m, "<i8")
    summary = {k: f.get(f"summary.{k}", "<i8", m).tolist() for k in ("device_count", "event_count", "span_ps")}
    texts = {k: f.strings(f"steps.{k}", m) for k in _STEP_TEXTS}
    has_device = f.get("steps.has_device", "?", m).tolist()
    dropped, candidates = f.get("steps.dropped", "<i8", m).tolist(), f.get("steps.candidates", "<i8", m).tolist()
    # Copies (small): the hosts' step arrays must not keep the frame's bytes alive, and tools
    # may work on them in place.
    arrays = {k: (values.copy(), bounds) for k in _STEP_ARRAYS for values, bounds in [f.ragged(f"steps.{k}", m, "<i8")]}
    type_shape = f.get("steps.type_shape", "<i8", 2 * m).tolist()
    device_shape = f.get("steps.device_shape", "<i8", 3 * m).tolist()
    device_planes, dp_bounds = f.ragged("steps.device_planes", m, "<i8")
    active = f.get("gpu.active", "?", m).tolist()
    idle, idle_bounds = f.ragged("gpu.idle", m, "<f8")
    comm, comm_bounds = f.ragged("gpu.comm", m, "<f8")
    results: list[dict[str, Any]] = []
    parts: dict[str, HostPartial] = {}
    j = 0
    for i, host in enumerate(names):
        mode = modes[i]
        if mode == ERROR:
            results.append({"host": host, "file": files[i], "error": errors[i],
                            **({"key": keys[i]} if has_key[i] else {})})
            continue
        blob = raw[blob_bounds[i]:blob_bounds[i + 1]].tobytes() if mode != NO_PARTIAL else None
        timings = {k: v for k, v in zip(TIMINGS, timing_values[i * len(TIMINGS):(i + 1) * len(TIMINGS)],
                                        strict=True) if v == v}
        results.append({"host": host, "key": keys[i], "cached": cached[i], "stored": stored[i], "partial": blob,
                        "timings": timings, **({"seconds": seconds[i]} if seconds[i] == seconds[i] else {})})
        if blob is None:
            continue
        if mode == BLOB_ONLY:
            try:
                part = partial_from_bytes(blob, checked=False)
            except (ValueError, KeyError, TypeError, IndexError):  # kept out, as a damaged partial is
                continue
            decode_on_arrival(part)
            parts[host] = part
            continue
        steps = Steps(
            source=texts["source"][j], method=texts["method"][j], detail=texts["detail"][j],
            diagnosis=texts["diagnosis"][j], has_device=has_device[j], names=lists["steps.names"][j],
            step_nums=_part(*arrays["step_nums"], j), begin_ps=_part(*arrays["begin_ps"], j),
            end_ps=_part(*arrays["end_ps"], j),
            type_ps=_rows(*arrays["type_ps"], j, type_shape[2 * j:2 * j + 2]),
            device_planes=device_planes[dp_bounds[j]:dp_bounds[j + 1]].tolist(),
            per_device_type_ps=_rows(*arrays["per_device_type_ps"], j, device_shape[3 * j:3 * j + 3]),
            dropped_boundary_steps=dropped[j], candidate_count=candidates[j], notes=lists["steps.notes"][j])
        gpu = (active[j], idle[idle_bounds[j]:idle_bounds[j + 1]].tolist(),
               comm[comm_bounds[j]:comm_bounds[j + 1]].tolist())
        plane_names, stats = lists["plane_name"][j], lists["plane_stats"][j]
        counts = plane_events[plane_bounds[j]:plane_bounds[j + 1]].tolist()
        if not len(plane_names) == len(stats) == len(counts):
            raise FrameError("a host's planes, their stats and event counts differ in number")
        if not _steps_consistent(steps, len(plane_names)):
            raise FrameError(f"host {host!r}: its steps' columns differ in length")
        later = _later_from_blob(blob)
        parts[host] = HostPartial(
            host=part_hosts[j], format=formats[j], source_path=sources[j], span_ps=span[j],
            hostnames=lists["hostnames"][j],
            errors=lists["errors"][j], warnings=lists["warnings"][j], metadata=unpack_value(_json(metadata[j])),
            planes=[PlaneInfo(name, c, text=t) for name, c, t in zip(plane_names, counts, stats, strict=True)],
            summary={"span_ps": summary["span_ps"][j], "event_count": summary["event_count"][j],
                     "device_types": lists["device_types"][j], "device_count": summary["device_count"][j]},
            available_tools=lists["available_tools"][j] if has_tools[j] else None,
            memos={_STEPS_KEY: steps, _GPU_KEY: gpu},
            lazy={key: later(key) for key in _carried_keys(carried_names[j]) if key not in (_STEPS_KEY, _GPU_KEY)})
        j += 1
    combined = f.get("combined", "<u1").tobytes() if f.get("has_combined", "?", 1)[0] else None
    combined_hosts = f.strings("combined_hosts", _count(f, "combined_hosts"))
    if not set(combined_hosts) <= set(hosts):
        raise FrameError("the combined tables name hosts of another batch")
    timing_names = f.strings("batch_timing", _count(f, "batch_timing"))
    timing_seconds = f.get("batch_seconds", "<f8", len(timing_names)).tolist()
    return BatchAnswer(results, parts, combined, combined_hosts, dict(zip(timing_names, timing_seconds, strict=True)))


def _carried_keys(names: Sequence[str]) -> list[Hashable]:
    """The memo keys of carried values by name; FrameError for a name this version lacks."""
    try:
        return [CARRIED_BY_NAME[n].key for n in names]
    except KeyError as e:
        raise FrameError(f"a host carries an unknown value {e.args[0]!r}") from None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise FrameError("a host's metadata is not JSON") from None
