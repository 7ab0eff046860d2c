"""One event's details: its stats decoded and the events it is linked to.

Links (each a list of events with their track, so the viewer can jump to them and draw
arrows):

- ``launched_by`` / ``launches``: a GPU kernel (or memcpy) and the CPU launch event with
  the same ``correlation_id`` (XSpace) or ``correlation`` (PyTorch Chrome traces);
- ``kernels``: for a TF op event, the device events whose ``tf_op`` stat is its name;
- ``flow_from`` / ``flow_to``: TraceMe producer/consumer context (``_p``/``_pt`` ->
  ``_c``/``_ct``, how XProf links host work across threads) and Chrome ``s``/``t``/``f``
  flows (previous and next event of the chain);
- ``step``: the step marker enclosing the event; for a step marker itself, ``step_events``
  gives per track how many events overlap the step (the step may hold millions).
- ``parent``: the enclosing event one level up on the same line.

Every lookup is a vectorised scan of one stat column (bench/measurements.md#plane-stats),
done only for the event clicked.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from tbprof.domain.planes import on_device_side
from tbprof.domain.regex import fixed
from tbprof.errors import NotFound
from tbprof.store.markers import FLOW_ID_STAT
from tbprof.store.tables import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT64,
    KIND_NONE,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
    Plane,
    ProfileStore,
    StatTable,
)
from tbprof.timeline.search import track_of
from tbprof.timeline.tracks import TrackIndex, track_index
from tbprof.timeline.window import window_rows

MAX_LINKS = 50
CORRELATION_STATS = ("correlation_id", "correlation")


def _decode(store: ProfileStore, plane: Plane, kind: int, raw: int) -> Any:
    if kind == KIND_DOUBLE:
        return float(np.int64(raw).view(np.float64))
    if kind == KIND_UINT64:
        return int(np.int64(raw).view(np.uint64))
    if kind == KIND_INT64:
        return int(raw)
    if kind in (KIND_STR, KIND_REF):
        return store.strings[int(raw)]
    if kind == KIND_BYTES:
        blob = plane.blobs[int(raw)] if 0 <= int(raw) < len(plane.blobs) else b""
        return f"<{len(blob)} bytes>"
    if kind == KIND_NONE:
        return None
    return int(raw)


def _stats_of(store: ProfileStore, plane: Plane, table: StatTable, owner: int, source: str) -> list[dict[str, Any]]:
    sl = table.rows_of(owner)
    return [{"name": store.strings[int(table.stat_id[i])],
             "value": _decode(store, plane, int(table.kind[i]), int(table.value[i])), "source": source}
            for i in range(sl.start, sl.stop)]


def parse_details(text: str) -> dict[str, str]:
    """``"regs:32 static_shared:0 grid:1,1,1"`` -> {"regs": "32", ...} (kernel/memcpy details).

    On RE2: the text comes from the profile file, and Python's ``re`` is quadratic here."""
    return dict(fixed(r"(\w+):(\S+)").findall(text))


def _dims(text: str) -> list[int]:
    parts = [int(p) for p in re.findall(r"\d+", text)]
    return [*parts, 1, 1, 1][:3]


def kernel_info(stats: dict[str, Any]) -> dict[str, Any] | None:
    """Launch parameters from XSpace ``kernel_details`` or PyTorch kernel args."""
    if isinstance(stats.get("kernel_details"), str):
        d = parse_details(stats["kernel_details"])
        static = int(d.get("static_shared", 0))
        dynamic = int(d.get("dynamic_shared", 0))
        return {"registers_per_thread": int(d.get("regs", 0)), "static_shared_memory_bytes": static,
                "dynamic_shared_memory_bytes": dynamic, "shared_memory_bytes": static + dynamic,
                "grid": _dims(d.get("grid", "")), "block": _dims(d.get("block", "")),
                "occupancy_pct": float(d["occ_pct"]) if "occ_pct" in d else None}
    if "registers per thread" in stats or ("grid" in stats and "block" in stats):
        shared = stats.get("shared memory", 0)
        return {"registers_per_thread": int(stats.get("registers per thread", 0) or 0),
                "static_shared_memory_bytes": None, "dynamic_shared_memory_bytes": None,
                "shared_memory_bytes": int(shared) if isinstance(shared, (int, float)) else None,
                "grid": _dims(str(stats.get("grid", ""))), "block": _dims(str(stats.get("block", ""))),
                "occupancy_pct": stats.get("est. achieved occupancy %")}
    return None


def _event_ref(store: ProfileStore, index: TrackIndex, plane_index: int, row: int) -> dict[str, Any]:
    plane = store.planes[plane_index]
    return {"plane": plane_index, "row": int(row), "track": track_of(index, store, plane_index, int(row)),
            "name": store.strings[int(plane.name_id[row])], "start_ps": int(plane.start_ps[row]),
            "dur_ps": int(plane.dur_ps[row]), "depth": int(plane.depth[row])}


def _refs(store: ProfileStore, index: TrackIndex, pairs: list[tuple[int, np.ndarray]]) -> tuple[list[Any], int]:
    total = sum(int(r.shape[0]) for _, r in pairs)
    out: list[dict[str, Any]] = []
    for p, rows in pairs:
        for r in rows[: MAX_LINKS - len(out)].tolist():
            out.append(_event_ref(store, index, p, r))
    out.sort(key=lambda e: (e["start_ps"], e["plane"], e["row"]))
    return out, total


def _value_of(plane: Plane, stat_id: int, row: int) -> tuple[int, int] | None:
    """(kind, raw value) of a stat of one event (own, else its metadata's), or None."""
    if stat_id < 0:
        return None
    for table, owner in ((plane.stats, row), (plane.meta_stats, int(plane.meta_idx[row]))):
        sl = table.rows_of(owner)
        ids = table.stat_id[sl]
        hit = np.nonzero(ids == stat_id)[0]
        if hit.shape[0]:
            i = sl.start + int(hit[0])
            return int(table.kind[i]), int(table.value[i])
    return None


def _all_values(plane: Plane, stat_id: int, row: int) -> list[int]:
    """Every value of a repeatable stat on one event (flow ids: one per chain)."""
    sl = plane.stats.rows_of(row)
    ids = plane.stats.stat_id[sl]
    return plane.stats.value[sl][ids == stat_id].tolist()


def _rows_with(plane: Plane, stat_id: int, value: int) -> np.ndarray:
    col = plane.event_stat(stat_id)
    return col.rows[col.value == value]


def _is_device(plane: Plane) -> bool:
    # A TF1 timeline's planes are its Chrome-trace processes, named by the TF device inside
    # ("/job:localhost/replica:0/task:0/device:GPU:0 Compute"): plane kind "other" by name.
    return on_device_side(plane) or "GPU" in plane.name


def _correlation_links(store: ProfileStore, index: TrackIndex, plane_index: int, row: int,
                       links: dict[str, Any]) -> None:
    """CPU launch <-> device events with the same correlation id.

    A CUDA graph launch has one correlation id for all the kernels it runs: from a kernel,
    ``launched_by`` is the host event and ``same_launch`` the graph's other kernels.
    """
    me = store.planes[plane_index]
    for name in CORRELATION_STATS:
        sid = store.stat_id(name)
        got = _value_of(me, sid, row)
        if got is None:
            continue
        host_pairs: list[tuple[int, np.ndarray]] = []
        device_pairs: list[tuple[int, np.ndarray]] = []
        for g in index.groups:
            other = store.planes[g.plane]
            rows = _rows_with(other, sid, got[1])
            if g.plane == plane_index:
                rows = rows[rows != row]
            if rows.shape[0]:
                (device_pairs if _is_device(other) else host_pairs).append((g.plane, rows))
        if _is_device(me):
            groups = (("launched_by", host_pairs), ("same_launch", device_pairs))
        else:
            groups = (("launches", device_pairs), ("same_launch", host_pairs))
        for key, pairs in groups:
            refs, total = _refs(store, index, pairs)
            if refs:
                links[key] = refs
                links[f"{key}_total"] = total
        return


def _context_flow_links(store: ProfileStore, index: TrackIndex, plane_index: int, row: int,
                        links: dict[str, Any]) -> None:
    """TraceMe producer/consumer: _p/_pt on the producer equal _c/_ct on the consumers."""
    plane = store.planes[plane_index]
    ids = {n: store.stat_id(n) for n in ("_p", "_pt", "_c", "_ct")}
    if min(ids.values()) < 0:
        return

    def matching(value_stat: str, type_stat: str, value: int, type_: int | None) -> np.ndarray:
        rows = _rows_with(plane, ids[value_stat], value)
        if type_ is not None and rows.shape[0]:
            types = plane.event_stat(ids[type_stat])
            pos = np.minimum(np.searchsorted(types.rows, rows), max(types.rows.shape[0] - 1, 0))
            ok = (types.rows[pos] == rows) & (types.value[pos] == type_) if types.rows.shape[0] else \
                np.zeros(rows.shape[0], dtype=bool)
            rows = rows[ok]
        return rows[rows != row]

    produced = _value_of(plane, ids["_p"], row)
    if produced is not None:
        ptype = _value_of(plane, ids["_pt"], row)
        refs, total = _refs(store, index, [(plane_index, matching("_c", "_ct", produced[1],
                                                                  ptype[1] if ptype else None))])
        if refs:
            links["flow_to"] = refs
            links["flow_to_total"] = total
    consumed = _value_of(plane, ids["_c"], row)
    if consumed is not None:
        ctype = _value_of(plane, ids["_ct"], row)
        refs, total = _refs(store, index, [(plane_index, matching("_p", "_pt", consumed[1],
                                                                  ctype[1] if ctype else None))])
        if refs:
            links["flow_from"] = refs
            links["flow_from_total"] = total


def _chrome_flow_links(store: ProfileStore, index: TrackIndex, plane_index: int, row: int,
                       links: dict[str, Any]) -> None:
    sid = store.stat_id(FLOW_ID_STAT)
    if sid < 0:
        return
    chains = _all_values(store.planes[plane_index], sid, row)
    if not chains:
        return
    me = store.planes[plane_index]
    my_start = int(me.start_ps[row])
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    for chain in chains:
        members = []
        for g in index.groups:
            other = store.planes[g.plane]
            rows = _rows_with(other, sid, chain)
            members += [(int(other.start_ps[r]), g.plane, int(r)) for r in rows.tolist()]
        members.sort()
        pos = members.index((my_start, plane_index, row))
        if pos > 0:
            before.append(_event_ref(store, index, members[pos - 1][1], members[pos - 1][2]))
        if pos + 1 < len(members):
            after.append(_event_ref(store, index, members[pos + 1][1], members[pos + 1][2]))
    if before:
        links.setdefault("flow_from", []).extend(before)
    if after:
        links.setdefault("flow_to", []).extend(after)


def _tf_op_links(store: ProfileStore, index: TrackIndex, plane_index: int, row: int, links: dict[str, Any]) -> None:
    """A TF op (its name is some kernel's tf_op stat) -> the device events it ran."""
    sid = store.stat_id("tf_op")
    if sid < 0:
        return
    name_id = int(store.planes[plane_index].name_id[row])
    pairs = []
    for g in index.groups:
        other = store.planes[g.plane]
        if g.plane == plane_index or not on_device_side(other):
            continue
        rows = _rows_with(other, sid, name_id)
        if rows.shape[0]:
            pairs.append((g.plane, rows))
    refs, total = _refs(store, index, pairs)
    if refs:
        links["kernels"] = refs
        links["kernels_total"] = total


def _step_links(store: ProfileStore, index: TrackIndex, plane_index: int, row: int, links: dict[str, Any]) -> None:
    if index.steps_track is None:
        return
    steps = index.tracks[index.steps_track]
    assert steps.rows is not None
    step_plane = store.planes[steps.plane]
    me = store.planes[plane_index]
    start = int(me.start_ps[row])
    if plane_index == steps.plane and row in set(steps.rows.tolist()):
        end = start + int(me.dur_ps[row])
        counts = []
        for t in index.tracks:
            if t.kind != "slices" or t.line < 0:
                continue
            plane = store.planes[t.plane]
            lo, hi = int(plane.line_offsets[t.line]), int(plane.line_offsets[t.line + 1])
            a, b = window_rows(store, plane, lo, hi, start, end)
            ends = plane.start_ps[a:b] + plane.dur_ps[a:b]
            n = int((ends > start).sum())
            if n:
                counts.append({"track": t.id, "name": t.name, "count": n})
        links["step_events"] = counts
        links["step_window"] = {"start_ps": start, "end_ps": end}
        return
    s = step_plane.start_ps[steps.rows]
    e = s + step_plane.dur_ps[steps.rows]
    inside = np.nonzero((s <= start) & (e > start))[0]
    if inside.shape[0]:
        links["step"] = [_event_ref(store, index, steps.plane, int(steps.rows[inside[-1]]))]


def _parent(store: ProfileStore, index: TrackIndex, plane_index: int, row: int, links: dict[str, Any]) -> None:
    plane = store.planes[plane_index]
    depth = int(plane.depth[row])
    if depth == 0:
        return
    lo = int(plane.line_offsets[int(plane.line_idx[row])])
    # Parents precede their children: the nearest earlier row one level up.
    earlier = np.nonzero(plane.depth[lo:row] == depth - 1)[0]
    if earlier.shape[0]:
        parent = lo + int(earlier[-1])
        # Overlapping async events (GPU streams) are stacked too; only an enclosing one is a parent.
        if plane.start_ps[parent] + plane.dur_ps[parent] >= plane.start_ps[row] + plane.dur_ps[row]:
            links["parent"] = [_event_ref(store, index, plane_index, parent)]


def event_details(store: ProfileStore, plane_index: int, row: int) -> dict[str, Any]:
    if not 0 <= plane_index < len(store.planes):
        raise NotFound(f"no plane {plane_index}; the profile has {len(store.planes)}")
    plane = store.planes[plane_index]
    if not 0 <= row < plane.n_events:
        raise NotFound(f"no event {row} on plane {plane_index} ({plane.name}); it has {plane.n_events}")
    index = track_index(store)
    stats = _stats_of(store, plane, plane.stats, row, "event")
    own = {s["name"] for s in stats}
    stats += [s for s in _stats_of(store, plane, plane.meta_stats, int(plane.meta_idx[row]), "metadata")
              if s["name"] not in own]
    values = {s["name"]: s["value"] for s in stats}
    decoded: dict[str, Any] = {}
    kernel = kernel_info(values)
    if kernel is not None:
        decoded["kernel"] = kernel
    for key in ("memcpy_details", "Memset_details"):
        if isinstance(values.get(key), str):
            decoded[key.lower()] = parse_details(values[key])
    line = int(plane.line_idx[row])
    display = int(plane.meta_display_name_id[plane.meta_idx[row]]) if plane.meta_display_name_id.shape[0] else 0
    links: dict[str, Any] = {}
    _correlation_links(store, index, plane_index, row, links)
    _context_flow_links(store, index, plane_index, row, links)
    _chrome_flow_links(store, index, plane_index, row, links)
    _tf_op_links(store, index, plane_index, row, links)
    _step_links(store, index, plane_index, row, links)
    _parent(store, index, plane_index, row, links)
    return {
        "event": {**_event_ref(store, index, plane_index, row),
                  "display_name": store.strings[display] if display > 0 else None,
                  "plane_name": plane.name, "line": line,
                  "line_name": plane.line_display_names[line] or plane.line_names[line],
                  "depth": int(plane.depth[row]), "end_ps": int(plane.start_ps[row] + plane.dur_ps[row])},
        "stats": stats,
        "decoded": decoded,
        "links": links,
    }


def derived_event_details(store: ProfileStore, track_id: int, index: int) -> dict[str, Any]:
    """A viewer-only event (XLA Modules / XLA Ops / Command Buffers line): its run of source events."""
    tracks = track_index(store)
    if not 0 <= track_id < len(tracks.tracks) or tracks.tracks[track_id].derived is None:
        raise NotFound(f"track {track_id} is not a derived line")
    track = tracks.tracks[track_id]
    d = track.derived
    assert d is not None
    if not 0 <= index < d.start_ps.shape[0]:
        raise NotFound(f"no event {index} on track {track_id} ({track.name}); it has {d.start_ps.shape[0]}")
    start, dur = int(d.start_ps[index]), int(d.dur_ps[index])
    sources = d.source_rows[int(d.run_first[index]):int(d.run_last[index]) + 1]
    links: dict[str, Any] = {}
    refs, total = _refs(store, tracks, [(track.plane, sources)])
    links["kernels"] = refs
    links["kernels_total"] = total
    plane = store.planes[track.plane]
    return {
        "event": {"plane": track.plane, "row": -1, "track": track_id, "index": index, "derived": True,
                  "name": store.strings[int(d.name_id[index])], "start_ps": start, "dur_ps": dur,
                  "depth": int(d.depth[index]), "end_ps": start + dur, "display_name": None,
                  "plane_name": plane.name, "line": -1, "line_name": track.name},
        "stats": [{"name": "events", "value": total, "source": "derived"}],
        "decoded": {},
        "links": links,
    }
