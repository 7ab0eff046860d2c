"""Derived device lines, as XProf draws them under each GPU stream: "XLA Modules - from #N",
"XLA Ops - from #N" and "Command Buffers - from #N".

Each is built from the stream's events in time order: consecutive events with the same key
(``hlo_module`` + ``program_id`` -> "jit_train_step(13929)"; ``hlo_op``; ``cuda_graph_id`` ->
"Command Buffer 25") become one derived event from the first one's start to the latest end.
Events without the key (a memcpy between two kernels of one module) are skipped, not breaking
the run; XLA Ops also skip the memsets/memcpys an op issues; a run ends at a step boundary
(XProf splits at step-group boundaries; here the step is the host step marker holding the
event's start). On jax_mlp this reproduces every derived event XProf 2.24.2 shows at 2000 px in
a 10 ms window to the nanosecond. XProf also derives framework op and name-scope lines from the
HLO protos' op metadata; tbprof does not (docs/differences.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tbprof.store.nesting import nesting_depth
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
    """Runs of consecutive equal ``key`` within one step; ``names`` names each key."""
    has = key >= 0
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
    uniq, inverse = np.unique(run_key, return_inverse=True)
    ids = np.array([store.strings.intern(names[int(k)]) for k in uniq.tolist()], dtype=np.int32)
    dur = run_end - run_start
    depth = nesting_depth(run_start, dur, np.array([0, run_start.shape[0]], dtype=np.int64))
    return DerivedEvents(run_start, dur, ids[inverse], depth, rows, first.astype(np.int64), last.astype(np.int64))


def _step_starts(store: ProfileStore) -> np.ndarray:
    """Start times of the host's step markers (events with ``step_num``), ascending."""
    def compute() -> np.ndarray:
        sid = store.stat_id("step_num")
        starts = [p.start_ps[p.event_stat(sid).rows] for p in store.planes
                  if sid >= 0 and p.name.startswith("/host:")]
        return np.sort(np.concatenate(starts)) if starts else np.zeros(0, np.int64)
    return store.memo(("timeline", "step_starts"), compute)


def _string_key(plane: Plane, store: ProfileStore, stat: str, rows: np.ndarray) -> np.ndarray:
    sid = store.stat_id(stat)
    if sid < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    return plane.event_stat(sid).dense_str(plane.n_events)[rows].astype(np.int64)


def _int_key(plane: Plane, store: ProfileStore, stat: str, rows: np.ndarray) -> np.ndarray:
    sid = store.stat_id(stat)
    if sid < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    return plane.event_stat(sid).dense_int(plane.n_events, missing=-1)[rows]


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

    module = _string_key(plane, store, "hlo_module", rows)
    program = _int_key(plane, store, "program_id", rows)
    if (module > 0).any():
        program = np.where(program >= 0, program, 0)
        valid = module > 0
        # One int64 per (module, program) pair (a structured np.unique would sort 10x slower).
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
        runs = _runs(store, plane, rows, key, step, names)
        if runs is not None:
            out.append((f"XLA Modules - from #{stream}", runs))

    op = _string_key(plane, store, "hlo_op", rows)
    if (op > 0).any():
        # Memsets/memcpys an op issues around its kernels are not the op (XProf leaves them out).
        names_of = store.strings.as_list()
        copy_ids = np.array([i for i in np.unique(plane.name_id[rows]).tolist()
                             if names_of[i].startswith(("Memset", "Memcpy"))], dtype=np.int64)
        is_copy = np.isin(plane.name_id[rows], copy_ids)
        key = np.where((op > 0) & ~is_copy, op, -1)
        names = {int(k): store.strings[int(k)] for k in np.unique(key[key >= 0])}
        runs = _runs(store, plane, rows, key, step, names)
        if runs is not None:
            out.append((f"XLA Ops - from #{stream}", runs))

    graph = _int_key(plane, store, "cuda_graph_id", rows)
    if (graph >= 0).any():
        names = {int(k): f"Command Buffer {int(k)}" for k in np.unique(graph[graph >= 0])}
        runs = _runs(store, plane, rows, graph, step, names)
        if runs is not None:
            out.append((f"Command Buffers - from #{stream}", runs))
    return out
