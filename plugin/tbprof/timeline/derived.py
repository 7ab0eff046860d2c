"""Derived device lines, as XProf draws them under each GPU stream: "XLA Modules", "XLA Ops",
"Framework Ops", "Framework Name Scope" and "Command Buffers - from #N".

Each is built from the stream's events in time order: consecutive events with the same key
(``hlo_module`` + ``program_id`` -> "jit_train_step(13929)"; ``hlo_op``; the framework op and
name scopes of the HLO op, from the HLO protos; ``cuda_graph_id`` -> "Command Buffer 25")
become one derived event from the first one's start to the latest end. Events without the key
(a memcpy between two kernels of one module) are skipped, not breaking the run; XLA Ops also
skip the memsets/memcpys an op issues; a run ends at a step boundary (XProf splits at
step-group boundaries; here the step is the host step marker holding the event's start). On
jax_mlp this reproduces every derived event at least one bucket long that XProf 2.24.2 shows
in a 10 ms window, to the nanosecond (tests/timeline/test_trace_window.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tbprof._core.kernels import nesting_depth
from tbprof.analyses.steps.assignment import steps_of
from tbprof.domain.hlo_map import hlo_programs
from tbprof.domain.planes import on_host_side
from tbprof.domain.tf_op import name_scopes, parse_tf_op
from tbprof.store.arrays import sorted_unique
from tbprof.store.derived import Derived
from tbprof.store.tables import Plane, ProfileStore


@dataclass
class DerivedEvents:
    """Events that exist only in the viewer, each a run of source events of one line."""

    start_ps: np.ndarray  # int64, ascending
    dur_ps: np.ndarray  # int64
    name_id: np.ndarray  # int32 (interned into the store's string table)
    depth: np.ndarray  # int16
    source_rows: np.ndarray  # int64 plane rows of the events that carry the key, in time order
    run_first: np.ndarray  # int64 index into source_rows of each run's first event
    run_last: np.ndarray  # int64 index of its last event


def _runs(store: ProfileStore, plane: Plane, rows: np.ndarray, key: np.ndarray, step: np.ndarray,
          names: dict[int, str]) -> DerivedEvents | None:
    """Runs of consecutive equal ``key`` within one step; ``names`` names each key.

    Key -1: the event is skipped (it neither joins nor breaks a run); -2: it ends the current
    run and starts none.
    """
    has = key != -1
    rows, key, step = rows[has], key[has], step[has]
    n = rows.shape[0]
    if n == 0:
        return None
    start = plane.start_ps[rows]
    end = start + plane.dur_ps[rows]
    change = np.ones(n, dtype=bool)
    change[1:] = (key[1:] != key[:-1]) | (step[1:] != step[:-1])
    first = np.nonzero(change)[0]
    last = np.append(first[1:], n) - 1
    run_start = start[first]
    run_end = np.maximum.reduceat(end, first)
    run_key = key[first]
    real = run_key >= 0
    if not real.any():
        return None
    first, last, run_start, run_end, run_key = first[real], last[real], run_start[real], run_end[real], run_key[real]
    uniq, inverse = np.unique(run_key, return_inverse=True)
    ids = np.array([store.strings.intern(names[int(k)]) for k in uniq.tolist()], dtype=np.int32)
    dur = run_end - run_start
    depth = nesting_depth(run_start, dur, np.array([0, run_start.shape[0]], dtype=np.int64))
    return DerivedEvents(run_start, dur, ids[inverse], depth, rows, first.astype(np.int64), last.astype(np.int64))


def _framework_lines(store: ProfileStore, plane: Plane, rows: np.ndarray, step: np.ndarray,
                     is_copy: np.ndarray, stream: int) -> list[tuple[str, DerivedEvents]]:
    """"Framework Ops" and nested "Framework Name Scope" lines, from the HLO protos' op metadata.

    Each event's framework op is the ``op_name:op_type`` its HLO op (``program_id`` +
    ``hlo_op``) came from; events without one (a thunk like ``command_buffer_1``, a memcpy) are
    skipped. Name scopes nest: level L is the run of events sharing the first L + 1 scopes (an
    event with fewer scopes ends the level's run); a child that would end with its parent ends
    1 ns earlier (as XProf draws it).
    """
    programs = hlo_programs(store)
    if not programs:
        return []
    op = _string_key(plane, store, "hlo_op", rows)
    program = _int_key(plane, store, "program_id", rows)
    pairs: dict[tuple[int, int], int] = {}
    pair_of = np.array([pairs.setdefault((int(p), int(o)), len(pairs)) for p, o in zip(program.tolist(), op.tolist(),
                                                                                          strict=True)], dtype=np.int64)
    provenance: list[str] = []
    for (p, o) in pairs:
        prog = programs.get(p)
        hop = prog.op(store.strings[o]) if prog is not None and o > 0 else None
        provenance.append(hop.provenance if hop is not None else "")
    prov_ids: dict[str, int] = {}
    prov_of_pair = np.array([prov_ids.setdefault(t, len(prov_ids)) if t else -1 for t in provenance], dtype=np.int64)
    key = np.where(is_copy, -1, prov_of_pair[pair_of]) if pair_of.shape[0] else pair_of
    texts = list(prov_ids)
    parsed = [parse_tf_op(t) for t in texts]
    out: list[tuple[str, DerivedEvents]] = []
    if (key >= 0).any():
        names = {i: (t.type or t.name) for i, t in enumerate(parsed)}
        runs = _runs(store, plane, rows, key, step, names)
        if runs is not None:
            out.append((f"Framework Ops - from #{stream}", runs))
    scopes = [name_scopes(t.name) for t in parsed]
    levels = max((len(sc) for sc in scopes), default=0)
    per_level: list[DerivedEvents] = []
    for level in range(levels):
        prefix_ids: dict[tuple[str, ...], int] = {}
        level_key = np.array([prefix_ids.setdefault(tuple(sc[:level + 1]), len(prefix_ids)) if len(sc) > level else -1
                              for sc in scopes], dtype=np.int64)
        lk = np.where(key >= 0, level_key[np.maximum(key, 0)], key)
        names = {i: prefix[-1] for prefix, i in prefix_ids.items()}
        runs = _runs(store, plane, rows, lk, step, names)
        if runs is None:
            continue
        runs.depth = np.full(runs.start_ps.shape[0], level, dtype=np.int16)
        if per_level:
            parent = per_level[-1]
            pend = parent.start_ps + parent.dur_ps
            i = np.searchsorted(parent.start_ps, runs.start_ps, side="right") - 1
            ok = i >= 0
            end = runs.start_ps + runs.dur_ps
            clip = ok & (end >= pend[np.maximum(i, 0)])
            runs.dur_ps = np.where(clip, pend[np.maximum(i, 0)] - 1000 - runs.start_ps, runs.dur_ps)
        per_level.append(runs)
    if per_level:
        out.append((f"Framework Name Scope - from #{stream}", _merge_levels(per_level)))
    return out


def _merge_levels(levels: list[DerivedEvents]) -> DerivedEvents:
    """One line from per-level runs: events by (start, depth); source ranges re-based."""
    offsets = np.cumsum([0] + [lv.source_rows.shape[0] for lv in levels])
    start = np.concatenate([lv.start_ps for lv in levels])
    depth = np.concatenate([lv.depth for lv in levels])
    order = np.lexsort((depth, start))
    return DerivedEvents(
        start[order], np.concatenate([lv.dur_ps for lv in levels])[order],
        np.concatenate([lv.name_id for lv in levels])[order], depth[order],
        np.concatenate([lv.source_rows for lv in levels]),
        np.concatenate([lv.run_first + off for lv, off in zip(levels, offsets, strict=False)])[order],
        np.concatenate([lv.run_last + off for lv, off in zip(levels, offsets, strict=False)])[order])


def _compute_step_starts(store: ProfileStore) -> np.ndarray:
    sid = store.stat_id("step_num")
    starts = [p.start_ps[p.event_stat(sid).rows] for p in store.planes
              if sid >= 0 and on_host_side(p)]
    return np.sort(np.concatenate(starts)) if starts else np.zeros(0, np.int64)


STEP_STARTS: Derived[np.ndarray] = Derived(("timeline", "step_starts"), _compute_step_starts)


def _step_starts(store: ProfileStore) -> np.ndarray:
    """Start times of the host's step markers (events with ``step_num``), ascending."""
    return store.derive(STEP_STARTS)


def _string_key(plane: Plane, store: ProfileStore, stat: str, rows: np.ndarray) -> np.ndarray:
    sid = store.stat_id(stat)
    if sid < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    return plane.dense_str_ids(sid)[rows].astype(np.int64)


def _int_key(plane: Plane, store: ProfileStore, stat: str, rows: np.ndarray) -> np.ndarray:
    sid = store.stat_id(stat)
    if sid < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    return plane.event_stat(sid).dense_int(plane.n_events, missing=-1)[rows]


def _module_runs(store: ProfileStore, plane: Plane, rows: np.ndarray, step: np.ndarray) -> DerivedEvents | None:
    """Runs of one XLA module execution (``hlo_module`` + ``program_id`` -> "jit_step(13929)")."""
    module = _string_key(plane, store, "hlo_module", rows)
    if not (module > 0).any():
        return None
    program = _int_key(plane, store, "program_id", rows)
    program = np.where(program >= 0, program, 0)
    valid = module > 0
    # One int64 per (module, program) pair (a structured np.unique sorts far slower:
    # bench/measurements.md#analyses).
    span = int(program.max()) + 1
    if int(module.max()) < (1 << 62) // span:
        combined = module[valid] * span + program[valid]
        uniq, inverse = np.unique(combined, return_inverse=True)
        pairs = [(int(c) // span, int(c) % span) for c in uniq.tolist()]
    else:
        stacked, inverse = np.unique(np.stack([module[valid], program[valid]], axis=1), axis=0,
                                     return_inverse=True)
        pairs = [(int(m), int(p)) for m, p in stacked.tolist()]
    key = np.full(rows.shape[0], -1, dtype=np.int64)
    key[valid] = inverse.reshape(-1)
    names = {i: f"{store.strings[m]}({p})" for i, (m, p) in enumerate(pairs)}
    return _runs(store, plane, rows, key, step, names)


def _compute_step_markers(store: ProfileStore) -> tuple[np.ndarray, list[str]]:
    sid = store.stat_id("step_num")
    starts: list[np.ndarray] = []
    names: list[str] = []
    for p in store.planes:
        if sid < 0 or not on_host_side(p):
            continue
        col = p.event_stat(sid)
        starts.append(p.start_ps[col.rows])
        names.extend(f"{store.strings[int(i)]} {n}" for i, n in zip(p.name_id[col.rows].tolist(),
                                                                     col.as_int().tolist(), strict=True))
    if not starts:
        return np.zeros(0, np.int64), []
    start = np.concatenate(starts)
    order = np.argsort(start, kind="stable")
    return start[order], [names[i] for i in order.tolist()]


STEP_MARKERS: Derived[tuple[np.ndarray, list[str]]] = Derived(("timeline", "step_markers"), _compute_step_markers)


def _step_markers(store: ProfileStore) -> tuple[np.ndarray, list[str]]:
    """Start times (ascending) and names ("train 4": marker name and step_num) of the host's step markers."""
    return store.derive(STEP_MARKERS)


def _counted_names(store: ProfileStore, marker_names: list[str]) -> list[str]:
    """Marker names, those the step analysis leaves out marked so: else the Steps track would show
    train 3-12 where the overview counts train 4-11 (it drops the boundary steps, which the
    profile holds only in part)."""
    counted = set(steps_of(store).names)
    if not counted.intersection(marker_names):
        return marker_names  # steps found another way (inferred): nothing to compare
    return [n if n in counted else f"{n} (partial, not counted)" for n in marker_names]


def device_plane_lines(store: ProfileStore, plane: Plane) -> list[tuple[str, DerivedEvents]]:
    """The rows XProf draws at the top of a GPU plane, over all its streams: "Steps" (each host
    step's device work, from its first event's start to its last event's end) and "XLA Modules"
    (runs of one module execution, whichever stream runs it)."""
    rows = np.arange(plane.n_events, dtype=np.int64)
    if rows.shape[0] == 0:
        return []
    rows = rows[np.argsort(plane.start_ps, kind="stable")]
    marker_start, marker_names = _step_markers(store)
    # 1-based step of each event by its start (0: before the first marker, not a step).
    step = np.searchsorted(marker_start, plane.start_ps[rows], side="right").astype(np.int64)
    out: list[tuple[str, DerivedEvents]] = []
    if marker_start.shape[0]:
        steps = _runs(store, plane, rows, step - 1, step, dict(enumerate(_counted_names(store, marker_names))))
        if steps is not None:
            out.append(("Steps", steps))
    modules = _module_runs(store, plane, rows, step)
    if modules is not None:
        out.append(("XLA Modules", modules))
    return out


def derived_lines(store: ProfileStore, plane: Plane, line: int) -> list[tuple[str, DerivedEvents]]:
    """(name, events) of the derived lines of one device stream (none when it has no XLA stats)."""
    rows = np.arange(plane.line_offsets[line], plane.line_offsets[line + 1], dtype=np.int64)
    if rows.shape[0] == 0:
        return []
    order = np.argsort(plane.start_ps[rows], kind="stable")
    rows = rows[order]
    stream = int(plane.line_ids[line])
    out: list[tuple[str, DerivedEvents]] = []
    # Step of each event (0 before the first marker): part of every key, so runs end at steps.
    step = np.searchsorted(_step_starts(store), plane.start_ps[rows], side="right").astype(np.int64)

    modules = _module_runs(store, plane, rows, step)
    if modules is not None:
        out.append((f"XLA Modules - from #{stream}", modules))

    op = _string_key(plane, store, "hlo_op", rows)
    if (op > 0).any():
        # Memsets/memcpys an op issues around its kernels are not the op (XProf leaves them out).
        names_of = store.strings.as_list()
        copy_ids = np.array([i for i in sorted_unique(plane.name_id[rows]).tolist()
                             if names_of[i].startswith(("Memset", "Memcpy"))], dtype=np.int64)
        is_copy = np.isin(plane.name_id[rows], copy_ids)
        key = np.where((op > 0) & ~is_copy, op, -1)
        names = {int(k): store.strings[int(k)] for k in sorted_unique(key[key >= 0])}
        runs = _runs(store, plane, rows, key, step, names)
        if runs is not None:
            out.append((f"XLA Ops - from #{stream}", runs))

    names_of = store.strings.as_list()
    copy_ids = np.array([i for i in sorted_unique(plane.name_id[rows]).tolist()
                         if names_of[i].startswith(("Memset", "Memcpy"))], dtype=np.int64)
    out.extend(_framework_lines(store, plane, rows, step, np.isin(plane.name_id[rows], copy_ids), stream))

    graph = _int_key(plane, store, "cuda_graph_id", rows)
    if (graph >= 0).any():
        names = {int(k): f"Command Buffer {int(k)}" for k in sorted_unique(graph[graph >= 0])}
        runs = _runs(store, plane, rows, graph, step, names)
        if runs is not None:
            out.append((f"Command Buffers - from #{stream}", runs))
    return out
