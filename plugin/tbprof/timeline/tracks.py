"""The tracks of a profile as the trace viewer shows them, grouped by plane (process).

A device plane gives one track per line (derived lines such as "Steps" / "XLA Modules" /
"XLA Ops" first, then streams); the host plane gives a "Steps" track (events carrying a
``step_num`` stat), one memory counter track per allocator (from MemoryAllocation /
MemoryDeallocation events) and one track per thread; Chrome-trace planes give a counter
track per counter line and a track per thread. A GPU with launches or copies (Kineto or CUPTI
events) also gets HTA's counters (``generate_trace_with_counters``): "CUDA queue length" (one
series per stream) and "Memory bandwidth" (GiB/s, one series per copy type), from
``analyses/gpu/counters.py``. Computed once per store (``store.memo``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tbprof._core.kernels import nesting_depth
from tbprof.analyses.gpu.activity import has_device_activity
from tbprof.analyses.gpu.counters import GIB_PER_GB, StepSeries, device_counters, last_per_time
from tbprof.analyses.results.timeline import TrackGroup, TrackIndexJson, TrackJson
from tbprof.domain.planes import device_display_name, on_device_side, on_host_side
from tbprof.store.arrays import sorted_unique
from tbprof.store.combine import PLANE_LABELS
from tbprof.store.derived import Derived
from tbprof.store.markers import is_counter_line
from tbprof.store.tables import Plane, ProfileStore, StatColumn
from tbprof.timeline.derived import DerivedEvents, derived_lines, device_plane_lines

# Derived XSpace device lines, in the order XProf shows them; streams follow in store order.
_DEVICE_LINE_ORDER = ("Steps", "XLA Modules", "XLA Ops", "XLA TraceMe", "Framework Name Scope", "Framework Ops",
                      "TensorFlow Name Scope", "TensorFlow Ops", "Source code", "Async XLA Ops")
MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")


@dataclass
class CounterSeries:
    """Samples of a counter track: times (ps, ascending) and one value column per series."""

    time_ps: np.ndarray  # int64
    values: dict[str, np.ndarray]  # series name -> float64 (forward-filled)
    unit: str = ""


@dataclass
class Track:
    id: int
    group: int
    name: str
    kind: str  # "slices" | "counter"
    plane: int  # plane index in the store
    line: int  # line index in the plane, -1 for derived tracks
    event_count: int
    max_depth: int
    # Derived slice tracks (Steps) list their plane rows, ascending by start, with depths.
    rows: np.ndarray | None = None
    depth: np.ndarray | None = None
    counter: CounterSeries | None = None
    # Viewer-only events (XLA Modules / XLA Ops / Command Buffers under a GPU stream).
    derived: DerivedEvents | None = None

    def to_json(self) -> TrackJson:
        out: TrackJson = {"id": self.id, "group": self.group, "name": self.name, "kind": self.kind,
                               "plane": self.plane, "line": self.line, "event_count": self.event_count,
                               "max_depth": self.max_depth}
        if self.derived is not None:
            out["derived"] = True
        if self.counter is not None:
            out["series"] = list(self.counter.values)
            out["unit"] = self.counter.unit
        return out


@dataclass
class Group:
    id: int
    name: str
    kind: Literal["device", "host", "process"]
    plane: int
    tracks: list[int] = field(default_factory=list)

    def to_json(self) -> TrackGroup:
        return {"id": self.id, "name": self.name, "kind": self.kind, "plane": self.plane, "tracks": self.tracks}


@dataclass
class TrackIndex:
    groups: list[Group]
    tracks: list[Track]
    by_line: dict[tuple[int, int], int]  # (plane, line) -> track id
    steps_track: int | None = None

    def to_json(self) -> TrackIndexJson:
        return {"groups": [g.to_json() for g in self.groups], "tracks": [t.to_json() for t in self.tracks]}


def _natural_key(text: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _plane_order(plane: Plane) -> tuple[int, list[Any]]:
    if on_device_side(plane):
        return (0, _natural_key(plane.name))
    if on_host_side(plane):
        return (1, _natural_key(plane.name))
    return (2, [plane.index])


def _group_name(plane: Plane) -> tuple[str, Literal["device", "host", "process"]]:
    if on_device_side(plane):
        device = device_display_name(plane)
        return (f"{plane.name} ({device})" if device else plane.name), "device"
    if on_host_side(plane):
        return f"Host {plane.name.removeprefix('/host:')}", "host"
    return plane.name, "process"


def _line_name(plane: Plane, line: int) -> str:
    return plane.line_display_names[line] or plane.line_names[line] or f"Line {int(plane.line_ids[line])}"


TRACK_INDEX: Derived[TrackIndex] = Derived(("timeline", "tracks"), lambda s: _build(s))


def track_index(store: ProfileStore) -> TrackIndex:
    return store.derive(TRACK_INDEX)


def _build(store: ProfileStore) -> TrackIndex:
    groups: list[Group] = []
    tracks: list[Track] = []
    by_line: dict[tuple[int, int], int] = {}
    steps_track = None
    counts_all = {p.index: np.diff(p.line_offsets) for p in store.planes}
    gpu_counters = _gpu_counter_tracks(store)
    # Several ranks in one store (store/combine.py): rank by rank, each group named by its rank.
    labels: list[str] = list(store.metadata.get(PLANE_LABELS) or [])
    rank_pos = {label: i for i, label in reversed(list(enumerate(labels)))}

    def order(plane: Plane) -> tuple[int, tuple[int, list[Any]]]:
        label = labels[plane.index] if plane.index < len(labels) else ""
        return (rank_pos.get(label, 0), _plane_order(plane))

    for plane in sorted(store.planes, key=order):
        if plane.n_events == 0:
            continue
        name, kind = _group_name(plane)
        if plane.index < len(labels) and labels[plane.index]:
            name = f"{labels[plane.index]} · {name}"
        group = Group(len(groups), name, kind, plane.index)
        groups.append(group)

        def add(track: Track, group: Group = group) -> None:
            track.id = len(tracks)
            tracks.append(track)
            group.tracks.append(track.id)

        counts = counts_all[plane.index]
        lines = [i for i in range(plane.n_lines) if counts[i] > 0]
        if kind == "host":
            stats = _event_stats(plane, [store.stat_id(n) for n in
                                         ("step_num", "bytes_allocated", "bytes_reserved", "allocator_name")])
            steps = _steps_track(store, plane, group.id, stats)
            if steps is not None:
                add(steps)
                steps_track = steps.id
            for counter in _memory_tracks(store, plane, group.id, stats):
                add(counter)
        if kind == "device":
            for derived_name, events in device_plane_lines(store, plane):
                add(Track(0, group.id, derived_name, "slices", plane.index, -1, int(events.start_ps.shape[0]),
                          int(events.depth.max()), derived=events))
            for name, series in gpu_counters.get(plane.index, []):
                add(Track(0, group.id, name, "counter", plane.index, -1, int(series.time_ps.shape[0]), 0,
                          counter=series))

            def device_order(i: int, plane: Plane = plane) -> tuple[int, int]:
                name = _line_name(plane, i)
                return (_DEVICE_LINE_ORDER.index(name) if name in _DEVICE_LINE_ORDER else len(_DEVICE_LINE_ORDER), i)
            lines.sort(key=device_order)
        if store.format == "chrome_trace":
            for counter in _pytorch_memory_tracks(store, plane, group.id):
                add(counter)
        for i in lines:
            rows = plane.line_rows(i)
            if store.format == "chrome_trace" and is_counter_line(plane, i):
                add(Track(0, group.id, _line_name(plane, i), "counter", plane.index, i, int(counts[i]), 0,
                          counter=_chrome_counter(store, plane, rows)))
                continue
            max_depth = int(plane.depth[rows].max()) if counts[i] else 0
            add(Track(0, group.id, _line_name(plane, i), "slices", plane.index, i, int(counts[i]), max_depth))
            by_line[(plane.index, i)] = tracks[-1].id
            if kind == "device":
                for name, events in derived_lines(store, plane, i):
                    add(Track(0, group.id, name, "slices", plane.index, -1, int(events.start_ps.shape[0]),
                              int(events.depth.max()), derived=events))
    return TrackIndex(groups, tracks, by_line, steps_track)


def _event_stats(plane: Plane, stat_ids: list[int]) -> dict[int, StatColumn]:
    """Several stats of a plane's events in one scan of its stats table.

    ``Plane.event_stat`` scans the whole table once per stat (bench/measurements.md#plane-stats
    says what that costs on jax_large); the tracks need four. Stats that also live on event metadata fall back
    to ``event_stat``, which merges both as XProf does.
    """
    wanted = [i for i in stat_ids if i >= 0]
    out: dict[int, StatColumn] = {}
    if not wanted:
        return out
    mask = np.isin(plane.stats.stat_id, wanted)
    sel = np.nonzero(mask)[0]
    ids = plane.stats.stat_id[sel]
    for sid in wanted:
        if (plane.meta_stats.stat_id == sid).any():
            out[sid] = plane.event_stat(sid)
            continue
        pick = sel[ids == sid]
        out[sid] = StatColumn(plane.stats.owner[pick].astype(np.int64), plane.stats.kind[pick], plane.stats.value[pick])
    return out


def _steps_track(store: ProfileStore, plane: Plane, group: int, stats: dict[int, StatColumn]) -> Track | None:
    """Step markers (StepTraceAnnotation / tf.profiler Trace with step_num) as one track."""
    col = stats.get(store.stat_id("step_num"))
    if col is None or col.rows.shape[0] == 0:
        return None
    rows = col.rows[np.argsort(plane.start_ps[col.rows], kind="stable")]
    depth = nesting_depth(plane.start_ps[rows], plane.dur_ps[rows], np.array([0, rows.shape[0]], dtype=np.int64))
    return Track(0, group, "Steps", "slices", plane.index, -1, int(rows.shape[0]), int(depth.max()),
                 rows=rows.astype(np.int64), depth=depth)


def _values_at(col: StatColumn | None, rows: np.ndarray) -> np.ndarray:
    """float64 value of a numeric stat at ``rows`` (ascending; NaN where missing)."""
    out = np.full(rows.shape[0], np.nan)
    if col is None or col.rows.shape[0] == 0:
        return out
    pos = np.minimum(np.searchsorted(col.rows, rows), col.rows.shape[0] - 1)
    found = col.rows[pos] == rows
    out[found] = col.as_float()[pos[found]]
    return out


def _memory_tracks(store: ProfileStore, plane: Plane, group: int, stats: dict[int, StatColumn]) -> list[Track]:
    """Memory in use per allocator: bytes_allocated + bytes_reserved after each (de)allocation.

    XProf's memory profile calls these heap_allocated and stack_reserved; their sum is its
    "memory in use". One counter track per allocator, samples in time order.
    """
    ids = [store.strings.id(n) for n in MEMORY_EVENT_NAMES]
    ids = [i for i in ids if i >= 0]
    if not ids:
        return []
    rows = np.nonzero(np.isin(plane.name_id, ids))[0]
    if rows.shape[0] == 0:
        return []
    allocated = _values_at(stats.get(store.stat_id("bytes_allocated")), rows)
    reserved = np.nan_to_num(_values_at(stats.get(store.stat_id("bytes_reserved")), rows))
    in_use = allocated + reserved
    alloc_col = stats.get(store.stat_id("allocator_name"))
    allocator = np.zeros(rows.shape[0], np.int64)
    if alloc_col is not None and alloc_col.rows.shape[0]:
        pos = np.minimum(np.searchsorted(alloc_col.rows, rows), alloc_col.rows.shape[0] - 1)
        found = alloc_col.rows[pos] == rows
        allocator[found] = alloc_col.value[pos[found]]
    order = np.argsort(plane.start_ps[rows], kind="stable")
    rows, in_use, allocator = rows[order], in_use[order], allocator[order]
    out = []
    for a in sorted_unique(allocator).tolist():
        sel = (allocator == a) & np.isfinite(in_use)
        if not sel.any():
            continue
        name = store.strings[a] if a > 0 else "memory"
        series = CounterSeries(plane.start_ps[rows[sel]].astype(np.int64), {"in_use_bytes": in_use[sel]}, "bytes")
        out.append(Track(0, group, f"Memory in use: {name}", "counter", plane.index, -1, int(sel.sum()), 0,
                         counter=series))
    return out


def _pytorch_memory_tracks(store: ProfileStore, plane: Plane, group: int) -> list[Track]:
    """PyTorch ``[memory]`` instant events: allocated and reserved bytes per device after each.

    Kineto writes one per allocation/free with ``Total Allocated`` / ``Total Reserved`` and a
    ``Device Id`` (-1 is the CPU).
    """
    name = store.strings.id("[memory]")
    if name < 0:
        return []
    rows = np.nonzero(plane.name_id == name)[0]
    if rows.shape[0] == 0:
        return []
    rows = rows[np.argsort(plane.start_ps[rows], kind="stable")]
    allocated = _values_at(plane.event_stat(store.stat_id("Total Allocated")), rows) \
        if store.stat_id("Total Allocated") >= 0 else np.full(rows.shape[0], np.nan)
    reserved = _values_at(plane.event_stat(store.stat_id("Total Reserved")), rows) \
        if store.stat_id("Total Reserved") >= 0 else np.full(rows.shape[0], np.nan)
    device = _values_at(plane.event_stat(store.stat_id("Device Id")), rows) \
        if store.stat_id("Device Id") >= 0 else np.zeros(rows.shape[0])
    out = []
    for dev in sorted_unique(device[np.isfinite(device)]).tolist():
        sel = (device == dev) & np.isfinite(allocated)
        if not sel.any():
            continue
        values = {"allocated_bytes": allocated[sel]}
        if np.isfinite(reserved[sel]).all():
            values["reserved_bytes"] = reserved[sel]
        label = "CPU" if dev < 0 else f"device {int(dev)}"
        out.append(Track(0, group, f"Memory: {label}", "counter", plane.index, -1, int(sel.sum()), 0,
                         counter=CounterSeries(plane.start_ps[rows[sel]].astype(np.int64), values, "bytes")))
    return out


def _merge_steps(series: list[StepSeries], prefix: str, unit: str, scale: float = 1.0) -> CounterSeries:
    """Several step functions on one counter track: the union of their times, each forward-filled
    (0 before its first point), each with its value after all the changes at a time (× scale)."""
    last = [last_per_time(s.time_ps, s.value.astype(np.float64) * scale) for s in series]
    times = sorted_unique(np.concatenate([t for t, _ in last]))
    values: dict[str, np.ndarray] = {}
    for s, (t, v) in zip(series, last, strict=True):
        pos = np.searchsorted(t, times, side="right") - 1
        values[f"{prefix}{s.key}"] = np.where(pos >= 0, v[np.maximum(pos, 0)], 0.0)
    return CounterSeries(times.astype(np.int64), values, unit)


def _gpu_counter_tracks(store: ProfileStore) -> dict[int, list[tuple[str, CounterSeries]]]:
    """Per device plane index: HTA's queue-length and memory-bandwidth counter tracks."""
    if not any(p.name.startswith("/device:GPU") for p in store.planes) or not has_device_activity(store):
        return {}
    out: dict[int, list[tuple[str, CounterSeries]]] = {}
    for plane_index, _, queues, bandwidths in device_counters(store):
        tracks = []
        if queues:
            tracks.append(("CUDA queue length", _merge_steps(queues, "stream ", "")))
        if bandwidths:
            # HTA's GB/s in GiB/s, the dashboard's one bandwidth unit.
            tracks.append(("Memory bandwidth", _merge_steps(bandwidths, "", "GiB/s", GIB_PER_GB)))
        out[plane_index] = tracks
    return out


def _chrome_counter(store: ProfileStore, plane: Plane, rows: slice) -> CounterSeries:
    """A Chrome ``C`` counter line: each sample sets some series; the others keep their value."""
    row_ids = np.arange(rows.start, rows.stop, dtype=np.int64)
    sel = slice(*np.searchsorted(plane.stats.owner, [rows.start, rows.stop]))
    names = sorted_unique(plane.stats.stat_id[sel])
    values = {}
    for sid in names.tolist():
        v = _values_at(plane.event_stat(int(sid)), row_ids)
        # Forward-fill: a sample that omits a series leaves it unchanged.
        idx = np.where(np.isfinite(v), np.arange(v.shape[0]), 0)
        np.maximum.accumulate(idx, out=idx)
        filled = v[idx]
        values[store.strings[int(sid)]] = np.nan_to_num(filled)
    return CounterSeries(plane.start_ps[rows].astype(np.int64), values)
