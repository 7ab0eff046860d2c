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
earliest event, rounded to the nanosecond: every known producer writes at most three
decimals, and a float64 holding an epoch-based microsecond timestamp (~1.8e15) cannot
represent anything finer anyway.

Tolerated, counted in ``store.warnings`` (the rest of the trace is still shown):
events without a numeric ``ts``, ``X`` events with a negative or non-numeric ``dur``
(dropped), ``E`` without an open ``B`` (dropped), ``B`` never closed (ends at the end of
the trace), flow points that bind to no slice (dropped), unsupported phases (async
``b``/``e``/``n``, ``S``/``T``/``F``, ``P`` samples, ...: ignored).
Not tolerated (``ProfileReadError``): bytes that are not JSON, JSON that is not a trace
(neither an event array nor an object with ``traceEvents``), an empty file.
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import defaultdict
from collections.abc import Hashable
from decimal import Decimal
from typing import Any

import numpy as np

from tbprof._core import kernels
from tbprof.errors import ProfileReadError
from tbprof.readers.chrome_events import sanitize_events
from tbprof.readers.files import GZIP_MAGIC, gunzip_bounded
from tbprof.readers.xplane import read_file_bytes
from tbprof.store import tables
from tbprof.store.arrays import sorted_unique
from tbprof.store.fs import Location, shown_name
from tbprof.store.fs import location as as_location
from tbprof.store.markers import COUNTER_LINES_STAT, FLOW_CATEGORY_STAT, FLOW_ID_STAT
from tbprof.store.memory_guard import decompressed_limit_bytes
from tbprof.store.strings import StringTable

FORMAT = "chrome_trace"
GLOBAL_PID = "Global instant events"
# Suffixes stripped from a file name to get its host name ("vm.trace.json.gz" -> "vm").
HOST_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".json.gz", ".json")

_PS_PER_US = 1_000_000
_INSTANT_PHASES = frozenset(("i", "I", "R"))
_OBJECT_PHASES = frozenset(("N", "O", "D"))
_FLOW_PHASES = frozenset(("s", "t", "f"))


def host_of(path: Location) -> str:
    """The host a file is named after, as listed (a non-UTF-8 name shows its bytes as \\xNN)."""
    name = shown_name(path.name)
    for suffix in HOST_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name



def read_chrome_trace(path: str | Location, host: str | None = None) -> tables.ProfileStore:
    """Reads one Chrome trace JSON file (optionally gzip-compressed, detected by content)."""
    path = as_location(path)
    data = read_file_bytes(path)
    return chrome_trace_from_bytes(data, str(path), host if host is not None else host_of(path))


def _decode_json(data: bytes, source: str) -> Any:
    if len(data) == 0:
        raise ProfileReadError(source, "the file is empty (0 bytes)")
    if data[:2] == GZIP_MAGIC:
        data = gunzip_bounded(data, source, decompressed_limit_bytes())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileReadError(source, f"not a Chrome trace: the bytes are not UTF-8 text (at byte {e.start})") from e
    try:
        return json.loads(text)
    except RecursionError:
        raise ProfileReadError(source, "not a Chrome trace: the JSON is nested too deeply") from None
    except json.JSONDecodeError as e:
        # The JSON Array Format may legally end without its closing bracket (a tracer that
        # was killed mid-write); chrome://tracing accepts that, so do we.
        stripped = text.rstrip().rstrip(",")
        if stripped.startswith("["):
            try:
                return json.loads(stripped + "]")
            except (json.JSONDecodeError, RecursionError):
                pass
        raise ProfileReadError(source, f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e


def chrome_trace_from_bytes(data: bytes, source: str, host: str) -> tables.ProfileStore:
    doc = _decode_json(data, source)
    if isinstance(doc, list):
        events = doc
    elif isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        events = doc["traceEvents"]
    elif isinstance(doc, dict) and "traceEvents" in doc:
        raise ProfileReadError(source, "not a Chrome trace: 'traceEvents' is not a list")
    else:
        raise ProfileReadError(source, "not a Chrome trace: expected a JSON array of events or an object with "
                               "a 'traceEvents' array")
    try:
        store = _Builder(source, host).build(events)
    except RecursionError:  # args nested just below the parser's limit, re-encoded as text
        raise ProfileReadError(source, "an event's args are nested too deeply") from None
    if isinstance(doc, dict):
        store.metadata = _trace_metadata(doc)
    if _is_kineto(store):
        _name_kineto_planes(store)
    return store


_GPU_LABEL = re.compile(r"GPU (\d{1,4})")


def _is_kineto(store: tables.ProfileStore) -> bool:
    """A PyTorch profiler (Kineto) trace: it says so in its metadata or its event categories."""
    return "deviceProperties" in store.metadata or store.strings.id("cpu_op") >= 0 or \
        store.strings.id("gpu_user_annotation") >= 0


def _name_kineto_planes(store: tables.ProfileStore) -> None:
    """XSpace's plane names for Kineto's processes, so the XSpace-shaped analyses find them.

    Kineto labels each GPU's process ``GPU <n>`` (its pid is the device index) and the profiled
    process ``CPU``: they become ``/device:GPU:<n>`` and ``/host:CPU`` (the first one, when a
    trace holds several), with the GPU's ``deviceProperties`` as XSpace's plane stats
    (``gpu_device_name``, ``core_count`` = SMs, ``compute_cap_major/minor``, memory). The
    process name stays as the plane stat ``process_name``.
    """
    props: dict[int, dict[str, Any]] = {}
    for dev in store.metadata.get("deviceProperties") or []:
        if isinstance(dev, dict) and isinstance(dev.get("id"), int):
            props[dev["id"]] = dev
    host_named = any(p.name == "/host:CPU" for p in store.planes)
    for plane in store.planes:
        label = plane.plane_stats.get("process_labels")
        if not isinstance(label, str):
            continue
        m = _GPU_LABEL.fullmatch(label.strip())
        if m:
            index = int(m.group(1))
            plane.plane_stats["process_name"] = plane.name
            plane.name = f"/device:GPU:{index}"
            dev = props.get(index, {})
            for ours, theirs in (("gpu_device_name", "name"), ("core_count", "numSms"),
                                 ("compute_cap_major", "computeMajor"), ("compute_cap_minor", "computeMinor"),
                                 ("memory_size_bytes", "totalGlobalMem")):
                if theirs in dev:
                    plane.plane_stats[ours] = dev[theirs]
        elif label.strip() == "CPU" and not host_named:
            plane.plane_stats["process_name"] = plane.name
            plane.name = "/host:CPU"
            host_named = True
    if not host_named:
        # Some Kineto versions label no process (CPU-only traces): the host is the process with
        # the most operators.
        sid = store.strings.id("cat")
        cpu_op = store.strings.id("cpu_op")
        best, most = None, 0
        for plane in store.planes:
            if plane.name.startswith("/device:") or sid < 0 or cpu_op < 0:
                continue
            n = int((plane.event_stat(sid).dense_str(plane.n_events) == cpu_op).sum())
            if n > most:
                best, most = plane, n
        if best is not None:
            best.plane_stats["process_name"] = best.name
            best.name = "/host:CPU"


# Top-level keys of a trace object worth keeping (Kineto writes them beside ``traceEvents``):
# the GPUs (``deviceProperties``), the rank and process groups (``distributedInfo``), versions.
_METADATA_KEYS = ("deviceProperties", "distributedInfo", "schemaVersion", "cuda_runtime_version",
                  "cuda_driver_version", "cupti_version", "displayTimeUnit", "baseTimeNanoseconds", "profile_memory")
_METADATA_MAX_BYTES = 1 << 20  # a trace is not a metadata store: bound what is kept


def _trace_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _METADATA_KEYS:
        if key in doc:
            value = doc[key]
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


def _floats(values: list[Any]) -> np.ndarray:
    """float64 array of JSON numbers; anything non-numeric (missing, text, bool) becomes NaN."""
    try:
        out = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        out = np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
                        for v in values], dtype=np.float64)
    return out


class _Builder:
    """Collects the trace's events into per-plane columns (one pass over the JSON objects)."""

    def __init__(self, source: str, host: str) -> None:
        self.source = source
        self.host = host
        self.strings = StringTable()
        self.warnings: list[str] = []
        self.line_keys: dict[tuple[Hashable, Hashable, str], int] = {}  # (pid, tid|counter, kind) -> line
        self.process_names: dict[Hashable, str] = {}
        self.process_labels: dict[Hashable, str] = {}
        self.process_sort: dict[Hashable, float] = {}
        self.thread_names: dict[tuple[Hashable, Hashable], str] = {}
        self.thread_sort: dict[tuple[Hashable, Hashable], float] = {}
        # Event columns in collection order (ts/dur in microseconds as float64).
        self.ev_line: list[np.ndarray] = []
        self.ev_ts: list[np.ndarray] = []
        self.ev_dur: list[np.ndarray] = []
        self.ev_name: list[np.ndarray] = []
        self.ev_cat: list[np.ndarray] = []
        self.n_events = 0
        # Stats: (event index in collection order, stat name id, kind, value).
        self.st_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.counter_lines: set[int] = set()
        self.trace_end_us = 0.0

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

    def _lines(self, pids: list[Any], tids: list[Any], kind: str = "thread") -> np.ndarray:
        """Line index of each (pid, tid): one dictionary pass, ``_line`` once per distinct pair."""
        local: dict[tuple[Any, Any], int] = {}
        try:
            codes = [local.setdefault(pt, len(local)) for pt in zip(pids, tids, strict=False)]
        except TypeError:  # unhashable ids (lists, objects) are normalised one by one
            return np.array([self._line(p, t, kind) for p, t in zip(pids, tids, strict=False)], dtype=np.int64)
        mapping = np.array([self._line(p, t, kind) for p, t in local], dtype=np.int64)
        return mapping[np.array(codes, dtype=np.int64)] if codes else np.zeros(0, np.int64)

    def _add_args(self, first: int, objs: list[dict[str, Any]]) -> None:
        """Every ``args`` entry of ``objs`` (events first, first + 1, ...) as a stat.

        One pass gathers (owner, key, value); values are then converted per type in bulk and
        each distinct key and text is interned once (jax_large's trace has 1.7 M args).
        """
        owners: list[int] = []
        keys: list[Any] = []
        values: list[Any] = []
        for k, e in enumerate(objs):
            args = e.get("args")
            if type(args) is dict and args:
                owners.extend([first + k] * len(args))
                keys.extend(args.keys())
                values.extend(args.values())
        if not owners:
            return
        intern = self.strings.intern
        # First-seen order (not a set's, which follows the per-process string hash): the same
        # file interns the same string ids in every process, so stores and caches are reproducible.
        key_ids = {key: intern(str(key)) for key in dict.fromkeys(keys)}
        kinds = [_VALUE_KIND.get(type(v), _OTHER) for v in values]
        kind_arr = np.array(kinds, dtype=np.int8)
        raw = np.zeros(len(values), dtype=np.int64)
        out_kind = np.full(len(values), tables.KIND_INT64, dtype=np.int8)
        for code in sorted_unique(kind_arr).tolist():
            idx = np.nonzero(kind_arr == code)[0]
            picked = [values[i] for i in idx.tolist()]
            if code == tables.KIND_INT64:
                try:
                    raw[idx] = np.array(picked, dtype=np.int64)
                except OverflowError:  # an integer beyond int64: one at a time
                    for i, v in zip(idx.tolist(), picked, strict=False):
                        out_kind[i], raw[i] = _int_stat(v, intern)
                    continue
            elif code == tables.KIND_DOUBLE:
                raw[idx] = np.array(picked, dtype=np.float64).view(np.int64)
            elif code == tables.KIND_STR:
                texts = {t: intern(t) for t in dict.fromkeys(picked)}
                raw[idx] = np.array([texts[t] for t in picked], dtype=np.int64)
            elif code == _BOOL:
                raw[idx] = np.array(picked, dtype=np.int64)
                code = tables.KIND_INT64
            elif code == _NULL:
                code = tables.KIND_NONE
            else:
                texts = {}
                for i, v in zip(idx.tolist(), picked, strict=False):
                    t = json.dumps(v, sort_keys=True, default=str)
                    raw[i] = texts[t] if t in texts else texts.setdefault(t, intern(t))
                code = tables.KIND_STR
            out_kind[idx] = code
        keep = out_kind != tables.KIND_NONE  # a null argument says nothing
        self.st_chunks.append((np.array(owners, dtype=np.int64)[keep],
                               np.array([key_ids[key] for key in keys], dtype=np.int32)[keep],
                               out_kind[keep], raw[keep]))

    def _append(self, line: np.ndarray, ts: np.ndarray, dur: np.ndarray, names: list[Any], cats: list[Any]) -> int:
        first = self.n_events
        intern = self.strings.intern
        self.ev_line.append(line.astype(np.int64))
        self.ev_ts.append(ts)
        self.ev_dur.append(dur)
        self.ev_name.append(np.array([intern(n if isinstance(n, str) else str(n)) for n in names], dtype=np.int32))
        self.ev_cat.append(np.array([intern(c if isinstance(c, str) else str(c)) if c is not None else 0
                                     for c in cats], dtype=np.int32))
        self.n_events += line.shape[0]
        return first

    # --- the pass --------------------------------------------------------------------------
    def build(self, events: list[Any]) -> tables.ProfileStore:
        events, bad_phase = sanitize_events(events, self.source)
        self._warn(bad_phase, "events whose phase ('ph') is not a string were ignored")
        by_phase: dict[str, list[dict[str, Any]]] = defaultdict(list)
        # B/E and N/O/D are matched in time order with ties in file order, so they keep theirs.
        begin_end: list[dict[str, Any]] = []
        objects: list[dict[str, Any]] = []
        not_objects = 0
        for e in events:
            if type(e) is dict:
                ph = e.get("ph", "")
                if ph == "B" or ph == "E":
                    begin_end.append(e)
                elif ph in _OBJECT_PHASES:
                    objects.append(e)
                else:
                    by_phase[ph].append(e)
            else:
                not_objects += 1
        self._warn(not_objects, "trace entries that are not JSON objects were ignored")
        empty = by_phase.pop("", [])
        self._warn(sum(1 for e in empty if e), "events without a phase ('ph') were ignored")

        self._metadata(by_phase.pop("M", []))
        x_events = by_phase.pop("X", [])
        instants = [e for ph in _INSTANT_PHASES for e in by_phase.pop(ph, [])]
        counters = by_phase.pop("C", [])
        flows = [e for ph in _FLOW_PHASES for e in by_phase.pop(ph, [])]
        for ph, evs in sorted(by_phase.items()):
            self._warn(len(evs), f"events of phase {ph!r}, which tbprof does not show, were ignored")

        # Time origin: the earliest timestamp of any event we keep.
        all_ts = [_floats([e.get("ts") for e in group]) for group in (x_events, begin_end, instants,
                                                                         counters, objects, flows) if group]
        finite = [t[np.isfinite(t)] for t in all_ts]
        finite = [t for t in finite if t.shape[0]]
        if not finite:
            return self._finish(np.zeros(0), 0, 0.0, [])
        t0_us = float(min(float(t.min()) for t in finite))
        # Unclosed slices and objects end where the trace ends: its last timestamp or the
        # end of its last complete event, whichever is later.
        self.trace_end_us = max(float(t.max()) for t in finite)

        self._complete(x_events)
        self._begin_end(begin_end)
        self._instants(instants)
        self._counters(counters)
        self._objects(objects)
        end_us = self.trace_end_us
        return self._finish_with_flows(flows, t0_us, end_us)

    def _metadata(self, meta: list[dict[str, Any]]) -> None:
        for e in meta:
            raw_args = e.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            pid = _hashable(e.get("pid"))
            tid = _hashable(e.get("tid"))
            name = e.get("name")
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

    def _timed(self, evs: list[dict[str, Any]], what: str) -> tuple[list[dict[str, Any]], np.ndarray]:
        ts = _floats([e.get("ts") for e in evs])
        ok = np.isfinite(ts)
        if not ok.all():
            self._warn(int((~ok).sum()), f"{what} without a numeric 'ts' were dropped")
            keep = np.nonzero(ok)[0]
            evs = [evs[i] for i in keep.tolist()]
            ts = ts[keep]
        return evs, ts

    def _complete(self, x_events: list[dict[str, Any]]) -> None:
        if not x_events:
            return
        x_events, ts = self._timed(x_events, "complete ('X') events")
        dur = _floats([e.get("dur", 0) for e in x_events])
        bad = ~(dur >= 0)  # negative or NaN
        if bad.any():
            self._warn(int(bad.sum()), "complete ('X') events with a negative or non-numeric 'dur' were dropped")
            keep = np.nonzero(~bad)[0]
            x_events = [x_events[i] for i in keep.tolist()]
            ts, dur = ts[keep], dur[keep]
        if ts.shape[0]:
            self.trace_end_us = max(self.trace_end_us, float((ts + dur).max()))
        line = self._lines([e.get("pid") for e in x_events], [e.get("tid") for e in x_events])
        first = self._append(line, ts, dur, [e.get("name", "") for e in x_events], [e.get("cat") for e in x_events])
        self._add_args(first, x_events)

    def _begin_end(self, points: list[dict[str, Any]]) -> None:
        if not points:
            return
        points, ts = self._timed(points, "begin/end ('B'/'E') events")
        line = self._lines([e.get("pid") for e in points], [e.get("tid") for e in points])
        is_begin = np.array([e["ph"] == "B" for e in points], dtype=np.bool_)
        # Time order per thread, ties in file order (an E and the next B at one timestamp).
        order = np.lexsort((np.arange(len(points)), ts, line))
        partner_sorted = kernels.match_begin_end(line[order], is_begin[order])
        partner = np.full(len(points), -1, dtype=np.int64)
        matched = partner_sorted >= 0
        partner[order[matched]] = order[partner_sorted[matched]]
        b_idx = np.nonzero(is_begin)[0]
        b_partner = partner[b_idx]
        self._warn(int((partner[~is_begin] < 0).sum()),
                   "end ('E') events without an open begin on their thread were dropped")
        unclosed = b_partner < 0
        self._warn(int(unclosed.sum()), "begin ('B') events were never ended; they run to the end of the trace")
        b_ts = ts[b_idx]
        end = np.where(unclosed, self.trace_end_us, ts[np.maximum(b_partner, 0)])
        dur = np.maximum(end - b_ts, 0.0)
        begins = [points[i] for i in b_idx.tolist()]
        first = self._append(line[b_idx], b_ts, dur, [e.get("name", "") for e in begins],
                             [e.get("cat") for e in begins])
        self._add_args(first, begins)
        # The E's args complete the slice's (chrome://tracing merges them the same way).
        closing = [points[p] if p >= 0 else {} for p in b_partner.tolist()]
        self._add_args(first, closing)

    def _instants(self, instants: list[dict[str, Any]]) -> None:
        if not instants:
            return
        instants, ts = self._timed(instants, "instant ('i') events")
        # Global-scope instants ("s": "g") belong to no thread: chrome://tracing draws them
        # across the whole trace; here they get a track of their own.
        is_global = [e.get("s") == "g" for e in instants]
        line = self._lines([GLOBAL_PID if g else e.get("pid") for e, g in zip(instants, is_global, strict=False)],
                           ["Global" if g else e.get("tid") for e, g in zip(instants, is_global, strict=False)])
        first = self._append(line, ts, np.zeros(ts.shape[0]), [e.get("name", "") for e in instants],
                             [e.get("cat") for e in instants])
        self._add_args(first, instants)

    def _counters(self, counters: list[dict[str, Any]]) -> None:
        if not counters:
            return
        counters, ts = self._timed(counters, "counter ('C') events")
        names = [str(e.get("name", "")) + (f" {e['id']}" if e.get("id") is not None else "") for e in counters]
        line = self._lines([e.get("pid") for e in counters], names, "counter")
        self.counter_lines.update(sorted_unique(line).tolist())
        first = self._append(line, ts, np.zeros(ts.shape[0]), names, [e.get("cat") for e in counters])
        self._add_args(first, counters)

    def _objects(self, objects: list[dict[str, Any]]) -> None:
        """Object events (N create, O snapshot, D delete) as one event per object lifetime."""
        if not objects:
            return
        objects, ts = self._timed(objects, "object ('N'/'O'/'D') events")
        order = np.argsort(ts, kind="stable")  # ties keep file order
        alive: dict[tuple[Hashable, Hashable, Hashable], list[Any]] = {}
        done: list[list[Any]] = []
        for i in order.tolist():
            e = objects[i]
            key = (_hashable(e.get("pid")), _hashable(e.get("id")), _hashable(e.get("name")))
            ph = e["ph"]
            rec = alive.get(key)
            if rec is not None and ph == "N" and rec[4]:
                done.append(alive.pop(key))  # the id is reused by a new object
                rec = None
            if rec is None:
                # creation, start, end, last snapshot, created by an 'N' (a snapshot may
                # precede its 'N' by a microsecond: then the 'N' adopts it)
                alive[key] = [e, float(ts[i]), None, e, ph == "N"]
            elif ph == "N":
                rec[4] = True
            if ph == "O":
                alive[key][3] = e
            elif ph == "D":
                rec = alive.pop(key)
                rec[2] = float(ts[i])
                done.append(rec)
        done.extend(alive.values())
        start = np.array([r[1] for r in done], dtype=np.float64)
        end = np.array([r[2] if r[2] is not None else self.trace_end_us for r in done], dtype=np.float64)
        line = self._lines([r[0].get("pid") for r in done], [r[0].get("tid") for r in done])
        first = self._append(line, start, end - start, [r[0].get("name", "") for r in done],
                             [r[0].get("cat") for r in done])
        self._add_args(first, [r[3] for r in done])

    # --- assembling planes -----------------------------------------------------------------
    def _finish_with_flows(self, flows: list[dict[str, Any]], t0_us: float, end_us: float) -> tables.ProfileStore:
        ts_us = np.concatenate(self.ev_ts) if self.ev_ts else np.zeros(0)
        return self._finish(ts_us, t0_us, end_us, flows)

    def _finish(self, ts_us: np.ndarray, t0_us: float, end_us: float,
                flows: list[dict[str, Any]]) -> tables.ProfileStore:
        n = self.n_events
        line_g = np.concatenate(self.ev_line) if n else np.zeros(0, np.int64)
        dur_us = np.concatenate(self.ev_dur) if n else np.zeros(0)
        name_id = np.concatenate(self.ev_name) if n else np.zeros(0, np.int32)
        cat_id = np.concatenate(self.ev_cat) if n else np.zeros(0, np.int32)
        # Round to the nanosecond (see the module docstring), then to picoseconds.
        start_ps = np.rint((ts_us - t0_us) * 1e3).astype(np.int64) * 1000
        dur_ps = np.rint(dur_us * 1e3).astype(np.int64) * 1000
        origin_ps = int(Decimal(repr(t0_us)) * _PS_PER_US) if n else 0
        origin_ps = (origin_ps // 1000) * 1000

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

        ev_plane = plane_of_line[line_g] if n else np.zeros(0, np.int64)
        ev_local = local_of_line[line_g] if n else np.zeros(0, np.int64)
        chunks = self.st_chunks or [(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int8),
                                     np.zeros(0, np.int64))]
        owner = np.concatenate([c[0] for c in chunks])
        st_name = np.concatenate([c[1] for c in chunks])
        st_kind = np.concatenate([c[2] for c in chunks])
        st_value = np.concatenate([c[3] for c in chunks])

        # One sort for all planes: (plane, line, start, -dur); row_of maps collection order -> row.
        order = np.lexsort((-dur_ps, start_ps, ev_local, ev_plane))
        plane_bounds = np.searchsorted(ev_plane[order], np.arange(len(pids) + 1))
        row_in_plane = np.empty(n, dtype=np.int64)
        for pi in range(len(pids)):
            lo, hi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            row_in_plane[order[lo:hi]] = np.arange(hi - lo)

        flow_rows = self._bind_flows(flows, t0_us, pids, order, plane_bounds, start_ps, dur_ps, ev_local,
                                     local_of_line, plane_of_line)
        # Flow stats join the arg stats (owner in collection order).
        if flow_rows is not None:
            f_owner, f_name, f_kind, f_value = flow_rows
            owner = np.concatenate([owner, f_owner])
            st_name = np.concatenate([st_name, f_name])
            st_kind = np.concatenate([st_kind, f_kind])
            st_value = np.concatenate([st_value, f_value])

        st_plane = ev_plane[owner] if owner.shape[0] else np.zeros(0, np.int64)
        st_row = row_in_plane[owner] if owner.shape[0] else np.zeros(0, np.int64)
        st_order = np.lexsort((np.arange(owner.shape[0]), st_row, st_plane))
        st_bounds = np.searchsorted(st_plane[st_order], np.arange(len(pids) + 1))
        cat_stat = self.strings.intern("cat")

        for pi, pid in enumerate(pids):
            lo, hi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            rows = order[lo:hi]
            p_line = ev_local[rows].astype(np.int32)
            p_start = start_ps[rows]
            p_dur = dur_ps[rows]
            n_lines = len(plane_lines[pi])
            line_offsets = np.searchsorted(p_line, np.arange(n_lines + 1)).astype(np.int64)
            depth = kernels.nesting_depth(p_start, p_dur, line_offsets)
            # Metadata: one row per distinct (name, cat).
            pair = name_id[rows].astype(np.int64) * (len(self.strings) + 1) + cat_id[rows]
            uniq, meta_idx = np.unique(pair, return_inverse=True)
            meta_name = (uniq // (len(self.strings) + 1)).astype(np.int32)
            meta_cat = (uniq % (len(self.strings) + 1)).astype(np.int64)
            has_cat = np.nonzero(meta_cat > 0)[0]
            meta_stats = tables.StatTable(has_cat.astype(np.int32), np.full(has_cat.shape[0], cat_stat, np.int32),
                                          np.full(has_cat.shape[0], tables.KIND_STR, np.int8), meta_cat[has_cat])
            s_lo, s_hi = int(st_bounds[pi]), int(st_bounds[pi + 1])
            sel = st_order[s_lo:s_hi]
            stats = tables.StatTable(st_row[sel].astype(np.int32), st_name[sel], st_kind[sel], st_value[sel])
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
                start_ps=p_start, dur_ps=p_dur, meta_idx=meta_idx.astype(np.int32), name_id=name_id[rows],
                depth=depth, line_idx=p_line, stats=stats,
                meta_ids=np.arange(uniq.shape[0], dtype=np.int64), meta_name_id=meta_name,
                meta_display_name_id=np.zeros(uniq.shape[0], dtype=np.int32), meta_stats=meta_stats,
                plane_stats=plane_stats,
            ))
        self._name_planes(planes, pids)
        span_ps = int((start_ps + dur_ps).max()) if n else 0
        return tables.ProfileStore(source_path=self.source, host=self.host, format=FORMAT, strings=self.strings,
                                   planes=planes, origin_ps=origin_ps, span_ps=span_ps, warnings=self.warnings)

    def _bind_flows(self, flows: list[dict[str, Any]], t0_us: float, pids: list[Hashable], order: np.ndarray,
                    plane_bounds: np.ndarray, start_ps: np.ndarray, dur_ps: np.ndarray, ev_local: np.ndarray,
                    local_of_line: np.ndarray, plane_of_line: np.ndarray,
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Binds flow points to slices; returns their stats (owner in collection order)."""
        if not flows:
            return None
        flows, ts = self._timed(flows, "flow ('s'/'t'/'f') events")
        # Points on threads that have no slices cannot bind.
        keys = [(_hashable(e.get("pid")), _hashable(e.get("tid")), "thread") for e in flows]
        line_g = np.array([self.line_keys.get(k, -1) for k in keys], dtype=np.int64)
        point_ps = np.rint((ts - t0_us) * 1e3).astype(np.int64) * 1000
        is_next = np.array([e["ph"] == "f" and e.get("bp") != "e" for e in flows], dtype=np.bool_)
        bound = np.full(len(flows), -1, dtype=np.int64)  # collection-order event index
        has_line = line_g >= 0
        p_plane = np.where(has_line, plane_of_line[np.maximum(line_g, 0)], -1)
        for pi in range(len(pids)):
            sel = np.nonzero(p_plane == pi)[0]
            if sel.shape[0] == 0:
                continue
            lo, hi = int(plane_bounds[pi]), int(plane_bounds[pi + 1])
            rows = order[lo:hi]
            p_start = start_ps[rows]
            p_end = p_start + dur_ps[rows]
            p_line = ev_local[rows]
            n_lines = int(local_of_line[plane_of_line == pi].max()) + 1
            line_offsets = np.searchsorted(p_line, np.arange(n_lines + 1)).astype(np.int64)
            depth = kernels.nesting_depth(p_start, dur_ps[rows], line_offsets)
            parent = kernels.depth_parents(depth, line_offsets)
            got = kernels.bind_points(p_start, p_end, parent, line_offsets, local_of_line[line_g[sel]], point_ps[sel],
                               is_next[sel])
            ok = got >= 0
            bound[sel[ok]] = rows[got[ok]]
        self._warn(int((bound < 0).sum()), "flow points that bind to no slice of their thread were dropped")
        # Chains: points of one (cat, id) in time order; an 's' after the chain's first point
        # starts a new chain (ids are reused once a flow has finished).
        ident = [(_hashable(e.get("cat")), _hashable(e.get("id", e.get("bind_id")))) for e in flows]
        ident_ids: dict[tuple[Hashable, Hashable], int] = {}
        ident_idx = np.array([ident_ids.setdefault(k, len(ident_ids)) for k in ident], dtype=np.int64)
        is_start = np.array([e["ph"] == "s" for e in flows], dtype=np.bool_)
        pt_order = np.lexsort((~is_start, point_ps, ident_idx))
        new_ident = np.ones(len(flows), dtype=np.bool_)
        new_ident[1:] = ident_idx[pt_order][1:] != ident_idx[pt_order][:-1]
        chain_break = new_ident | is_start[pt_order]
        chain_sorted = np.cumsum(chain_break) - 1
        chain = np.empty(len(flows), dtype=np.int64)
        chain[pt_order] = chain_sorted
        keep = np.nonzero(bound >= 0)[0]
        # A chain with a single bound point links nothing; drop it.
        counts = np.bincount(chain[keep], minlength=int(chain.max()) + 1 if chain.shape[0] else 0)
        keep = keep[counts[chain[keep]] >= 2]
        # One stat per (event, chain), even when two points of a chain bind to one event.
        pairs = np.unique(np.stack([bound[keep], chain[keep]], axis=1), axis=0) if keep.shape[0] else \
            np.zeros((0, 2), np.int64)
        owner = pairs[:, 0]
        chain_of = pairs[:, 1]
        first_point = np.full(int(chain.max()) + 1 if chain.shape[0] else 0, -1, dtype=np.int64)
        first_point[chain[pt_order][::-1]] = pt_order[::-1]
        cats = [flows[int(first_point[c])].get("cat") for c in chain_of.tolist()]
        cat_ids = np.array([self.strings.intern(str(c)) if c is not None else 0 for c in cats], dtype=np.int64)
        flow_stat = self.strings.intern(FLOW_ID_STAT)
        cat_stat = self.strings.intern(FLOW_CATEGORY_STAT)
        m = owner.shape[0]
        has_cat = cat_ids > 0
        return (np.concatenate([owner, owner[has_cat]]),
                np.concatenate([np.full(m, flow_stat, np.int32), np.full(int(has_cat.sum()), cat_stat, np.int32)]),
                np.concatenate([np.full(m, tables.KIND_INT64, np.int8),
                                np.full(int(has_cat.sum()), tables.KIND_STR, np.int8)]),
                np.concatenate([chain_of, cat_ids[has_cat]]))

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


_BOOL = 100
_NULL = 101
_OTHER = 102
_VALUE_KIND: dict[type, int] = {int: tables.KIND_INT64, float: tables.KIND_DOUBLE, str: tables.KIND_STR,
                                bool: _BOOL, type(None): _NULL}


def _int_stat(value: int, intern: Any) -> tuple[int, int]:
    """(kind, raw) of a JSON integer: int64, uint64 bit pattern, else its text."""
    if -(1 << 63) <= value < (1 << 63):
        return tables.KIND_INT64, value
    if 0 <= value < (1 << 64):
        return tables.KIND_UINT64, value - (1 << 64)
    return tables.KIND_STR, int(intern(str(value)))


def _int_id(value: Hashable) -> int:
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return value
    return zlib.crc32(str(value).encode())
