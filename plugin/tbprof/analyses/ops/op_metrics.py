"""Per-op time of a profile (XProf's OpMetricsDb): occurrences, total and self time per op.

Host side: every event whose name is a framework op (``dense/MatMul:MatMul``, ``Iterator::..``)
is an op; its self time is its duration minus the time of the framework ops nested in it on
the same thread. XProf walks begin/end activities per thread with a stack, and an op whose
end it reaches while a child is still open discards that child (it ends at the same instant,
so ordering is by emission); a compiled loop (``walk_activities``) replays exactly that walk. Each thread's op span
(first begin to last end) minus its busy self time is that thread's IDLE time.

Device side (GPU): each event naming an HLO op (``hlo_op`` + ``program_id``) that exists in
its program's HLO proto is one occurrence of that HLO op; events without HLO but with a
``tf_op`` stat (TensorFlow GPU kernels) are ops named ``<tf op>/<kernel>``. A device's op span
(first event start to last end) minus the op time is its IDLE time. ``framework_ops`` groups
device ops by the framework op they came from; a framework op's occurrences are the maximum
over its device ops (a MatMul that runs 2 kernels 10 times ran 10 times).

Device side (TPU), XProf's rules for a ``/device:TPU:N`` plane with an "XLA Ops" line: the
events of that line are the ops (the "Async XLA Ops" line spans each async start/done pair, the
"XLA Modules" line the programs, "XLA TraceMe" runtime waits: none of them is an op). An op is
named by its event metadata's display name (``copy-done.1``; the metadata name is the HLO text),
its program is the metadata's ``program_id``; an ``-start``/``-done`` pair is two ops, each
timed by its own event (a ``copy-done`` that waits for its copy holds the wait). An event's
time is its ``device_duration_ps`` stat when present (the TPU's own clock), else its duration,
and is all self time: events that overlap on the line (a ``copy-done`` waiting while a fusion
runs) are not nested ops (XProf 2.24.2 gives every op on tpu_inference self time = time).

Everything is computed once per store (memoised) and vectorised: one ``np.unique`` over op
keys and ``np.bincount`` per measure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tbprof._core.kernels import walk_activities
from tbprof.analyses.ops import kineto_ops, tf1_ops
from tbprof.domain import tf_op
from tbprof.domain.event_columns import RowStats, factorize, rows_of_metas, rows_with_stat
from tbprof.domain.hlo_map import HloProgram, hlo_programs
from tbprof.domain.planes import HOST_PLANE, device_planes
from tbprof.store.tables import Plane, ProfileStore
from tbprof.store.view import CarriedValue, Derived, StoreView

IDLE = "IDLE"
# OpMetricsDb.extra column: the HBM bytes a program total counts. XProf sums a program's HBM bytes
# from its ops' memory-access breakdowns, where a TPU op with an empty breakdown adds none, while
# the op's own row counts all its bytes as HBM (tpu_inference: 66.3 vs 99.3 GiB/s).
PROGRAM_HBM = "program_hbm_bytes"
# XProf's derived lines ("Steps", "XLA Ops", ...) use thread ids from 0xdeadbeef up.
_DERIVED_LINE_MIN = 0xDEADBEEF
_DERIVED_LINE_MAX = 0xDEADBEEF + 64


@dataclass
class OpMetricsDb:
    """Ops of one side (host or device) as parallel columns, plus the side's total time."""

    name: np.ndarray  # object: op name (host: framework op; device: HLO op or "tf_op/kernel")
    type: np.ndarray  # object: framework op type (host/TF level) or HLO category (device)
    provenance: np.ndarray  # object: framework op fullname "name:type" of a device op ("" if none)
    program_id: np.ndarray  # int64: HLO program of a device op (0 otherwise)
    occurrences: np.ndarray  # int64
    time_ps: np.ndarray  # int64
    self_time_ps: np.ndarray  # int64
    flops: np.ndarray  # float64: flops stats, else (device HLO ops) the HLO cost analysis; 0 if neither
    bytes_accessed: np.ndarray  # float64: bytes_accessed stats, else (device HLO ops) the HLO cost analysis
    is_eager: np.ndarray  # bool
    total_time_ps: int  # op span of every thread/device, idle included
    # float64: the part of bytes_accessed XProf's memory breakdown puts in HBM (the op profile's
    # bytes); None: same as bytes_accessed.
    hbm_bytes: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def hbm(self) -> np.ndarray:
        return self.bytes_accessed if self.hbm_bytes is None else self.hbm_bytes

    @property
    def program_hbm(self) -> np.ndarray:
        """HBM bytes as a program total counts them (``PROGRAM_HBM``), else ``hbm``."""
        got = self.extra.get(PROGRAM_HBM)
        return self.hbm if got is None else got

    @property
    def n_ops(self) -> int:
        return int(self.name.shape[0])

    @property
    def total_op_time_ps(self) -> int:
        return int(self.self_time_ps.sum())

    @property
    def idle_time_ps(self) -> int:
        return max(0, self.total_time_ps - self.total_op_time_ps)

    @staticmethod
    def empty() -> OpMetricsDb:
        e = np.zeros(0, dtype=np.int64)
        o = np.zeros(0, dtype=object)
        return OpMetricsDb(o, o.copy(), o.copy(), e, e.copy(), e.copy(), e.copy(), e.astype(np.float64),
                           e.astype(np.float64), e.astype(bool), 0)


# --- host -----------------------------------------------------------------------------------

def _stable_order(line: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Order by (line, ts), ties in input order; one stable sort of a packed key when it fits."""
    if ts.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(ts.min()), int(ts.max())
    span = hi - lo + 1
    if (int(line.max()) + 1) * span < (1 << 62):
        return np.argsort(line.astype(np.int64) * span + (ts - lo), kind="stable")
    return np.lexsort((np.arange(ts.shape[0]), ts, line))


def _live_lines(plane: Plane) -> np.ndarray:
    """Per line: not one of XProf's derived lines (which analyses skip)."""
    return ~((plane.line_ids >= _DERIVED_LINE_MIN) & (plane.line_ids <= _DERIVED_LINE_MAX))


def _group(keys: np.ndarray, n_keys: int, rows: np.ndarray, occurrences: np.ndarray, time_ps: np.ndarray,
           self_ps: np.ndarray, flops: np.ndarray, bytes_accessed: np.ndarray,
           eager: np.ndarray, hbm: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Sums per key (keys[i] in [0, n_keys)); ``first`` is the first row of each key."""
    first = np.full(n_keys, -1, dtype=np.int64)
    uniq, first_pos = np.unique(keys, return_index=True)
    first[uniq] = rows[first_pos]
    return {
        "occurrences": np.bincount(keys, weights=occurrences, minlength=n_keys).astype(np.int64),
        "time_ps": np.bincount(keys, weights=time_ps, minlength=n_keys).round().astype(np.int64),
        "self_time_ps": np.bincount(keys, weights=self_ps, minlength=n_keys).round().astype(np.int64),
        "flops": np.bincount(keys, weights=flops, minlength=n_keys),
        "bytes_accessed": np.bincount(keys, weights=bytes_accessed, minlength=n_keys),
        "hbm_bytes": np.bincount(keys, weights=bytes_accessed if hbm is None else hbm, minlength=n_keys),
        "is_eager": np.bincount(keys, weights=eager.astype(np.float64), minlength=n_keys) > 0,
        "first": first,
    }


def _cost_stats(store: ProfileStore, plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """flops, bytes_accessed (0 when absent) and is_eager of the given events."""
    st = RowStats(store, plane, rows, ("flops", "bytes_accessed", "is_eager"))
    return st.float("flops"), st.float("bytes_accessed"), st.int("is_eager") != 0


# Memo keys of the per-store op tables (analyses/partials.py carries them to the server).
HOST_KEY = ("op_metrics", "host")
DEVICE_KEY = ("op_metrics", "device")
DEVICE_FRAMEWORK_KEY = ("op_metrics", "device_framework")
DEVICE_TIMES_KEY = ("op_metrics", "device_times")


def host_op_metrics(store: StoreView) -> OpMetricsDb:
    """Framework ops on the host threads (memoised per store)."""
    return store.derive(HOST_OPS)


def _host_op_metrics(store: ProfileStore) -> OpMetricsDb:
    if kineto_ops.is_kineto(store):
        return OpMetricsDb(**kineto_ops.host_ops(store))
    if tf1_ops.is_tf1_timeline(store):
        return OpMetricsDb(**tf1_ops.side_ops(store, "Host"))
    plane = store.plane(HOST_PLANE)
    if plane is None or plane.n_events == 0:
        return OpMetricsDb.empty()
    strings = store.strings
    key_index: dict[str, int] = {}
    key_types: list[str] = []

    def key_of(parsed: tf_op.TfOp) -> int:
        k = key_index.get(parsed.name)
        if k is None:
            k = key_index[parsed.name] = len(key_index)
            key_types.append(parsed.type)
        return k

    # Parse each distinct event name once; events find their op key through their metadata.
    def name_key_of(text: str) -> int:
        parsed = tf_op.parse_tf_op(text) if text else None
        return key_of(parsed) if parsed is not None and parsed.is_op else -1

    uniq_names, name_of_meta = np.unique(plane.meta_name_id, return_inverse=True)
    key_of_name = np.array([name_key_of(strings[int(i)]) for i in uniq_names.tolist()], dtype=np.int64)
    meta_key = key_of_name[name_of_meta.reshape(-1)] if uniq_names.shape[0] else np.zeros(0, dtype=np.int64)
    live = _live_lines(plane)
    name_rows = rows_of_metas(plane, np.flatnonzero(meta_key >= 0))
    name_rows = name_rows[live[plane.line_idx[name_rows]]]
    name_key = meta_key[plane.meta_idx[name_rows]]
    # Events that carry a tf_op stat (memory allocations, ...) are activities of that op too.
    stat_rows = rows_with_stat(plane, store.stat_id("tf_op"))
    stat_rows = stat_rows[live[plane.line_idx[stat_rows]]]
    sval = RowStats(store, plane, stat_rows, ["tf_op"]).str_id("tf_op")
    keep = sval > 0
    stat_rows, sval = stat_rows[keep], sval[keep]
    uniq_vals, val_inv = np.unique(sval, return_inverse=True)
    val_key = np.array([key_of(tf_op.parse_tf_op(strings[v])) for v in uniq_vals.tolist()], dtype=np.int64)
    stat_key = val_key[val_inv.reshape(-1)] if stat_rows.shape[0] else np.zeros(0, dtype=np.int64)
    # Emission order: per event, its name activity before its tf_op-stat activity.
    rows = np.concatenate([name_rows, stat_rows])
    op_keys = np.concatenate([name_key, stat_key])
    emit = np.lexsort((np.concatenate([np.zeros(name_rows.shape[0]), np.ones(stat_rows.shape[0])]), rows))
    rows, op_keys = rows[emit], op_keys[emit]
    if rows.shape[0] == 0:
        return OpMetricsDb.empty()
    n_ops = rows.shape[0]
    start = plane.start_ps[rows]
    end = start + plane.dur_ps[rows]
    line = plane.line_idx[rows].astype(np.int64)
    # Activities: begin then end of each op, in event order; stable sort by (line, time).
    act_ts = np.empty(2 * n_ops, dtype=np.int64)
    act_ts[0::2] = start
    act_ts[1::2] = end
    act_line = np.repeat(line, 2)
    act_end = np.zeros(2 * n_ops, dtype=bool)
    act_end[1::2] = True
    act_op = np.repeat(np.arange(n_ops, dtype=np.int64), 2)
    order = _stable_order(act_line, act_ts)
    time_ps, child_ps = walk_activities(act_line[order], act_ts[order], act_op[order], act_end[order], n_ops)
    kept = time_ps >= 0
    # Each thread's op span: first activity to last activity.
    line_first = np.full(plane.n_lines, np.iinfo(np.int64).max, dtype=np.int64)
    line_last = np.full(plane.n_lines, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(line_first, line, start)
    np.maximum.at(line_last, line, end)
    has = line_last >= line_first
    total_time_ps = int((line_last[has] - line_first[has]).sum())

    keys = op_keys[kept]
    n_keys = len(key_index)
    krows = rows[kept]
    flops, nbytes, eager = _cost_stats(store, plane, krows)
    sums = _group(keys, n_keys, krows, np.ones(keys.shape[0]), time_ps[kept].astype(np.float64),
                  (time_ps[kept] - child_ps[kept]).astype(np.float64), flops, nbytes, eager)
    present = sums["occurrences"] > 0
    names = np.empty(n_keys, dtype=object)
    types = np.empty(n_keys, dtype=object)
    for name, k in key_index.items():
        names[k] = name
        types[k] = key_types[k]
    first_type = types[present]
    n = int(present.sum())
    return OpMetricsDb(
        name=names[present], type=first_type, provenance=np.full(n, "", dtype=object),
        program_id=np.zeros(n, dtype=np.int64), occurrences=sums["occurrences"][present],
        time_ps=sums["time_ps"][present], self_time_ps=sums["self_time_ps"][present],
        flops=sums["flops"][present], bytes_accessed=sums["bytes_accessed"][present],
        is_eager=sums["is_eager"][present], total_time_ps=total_time_ps,
    )


# --- device ---------------------------------------------------------------------------------


DEVICE_STATS = ("hlo_op", "program_id", "tf_op", "kernel_details", "equation", "flops", "bytes_accessed", "is_eager",
                "device_duration_ps", "memory_access_breakdown", "hlo_category")
# XProf's MemoryAccessBreakdown (op_metrics.proto): repeated MemoryAccessed memory_accessed = 1, each
# {operation_type = 1, memory_space = 2, bytes_accessed = 3}; memory space 1 is HBM.
_HBM_MEMORY_SPACE = 1
TPU_PLANE_PREFIX = "/device:TPU:"
TPU_OPS_LINE = "XLA Ops"  # XProf's kXlaOpLineName: the one line of a TPU plane whose events are ops


@dataclass
class DeviceEvents:
    """The live (non-derived-line) events of one device plane and the stats the op tools read."""

    plane: Plane
    rows: np.ndarray  # int64 event rows
    stats: RowStats
    tpu: bool = False  # a TPU plane: rows are its "XLA Ops" line, named by their metadata display names


def tpu_ops_line(plane: Plane) -> int:
    """The "XLA Ops" line of a TPU plane (XProf's ops on TPU), else -1."""
    return plane.line_index(TPU_OPS_LINE) if plane.name.startswith(TPU_PLANE_PREFIX) else -1


def _compute_device_events(store: ProfileStore) -> list[DeviceEvents]:
    out = []
    for plane in device_planes(store):
        ops_line = tpu_ops_line(plane)
        if ops_line >= 0:
            sl = plane.line_rows(ops_line)
            rows = np.arange(sl.start, sl.stop, dtype=np.int64)
        else:
            rows = np.flatnonzero(_live_lines(plane)[plane.line_idx])
        out.append(DeviceEvents(plane, rows, RowStats(store, plane, rows, DEVICE_STATS), tpu=ops_line >= 0))
    return out


DEVICE_EVENTS: Derived[list[DeviceEvents]] = Derived(("op_metrics", "device_stats"), _compute_device_events)


def device_events(store: ProfileStore) -> list[DeviceEvents]:
    """Per device plane (as ``device_planes``): one stats pass shared by the op tools (memoised)."""
    return store.derive(DEVICE_EVENTS)


@dataclass
class DeviceOpEvents:
    """Device events that are ops, with the device op each one is (shared by several tools)."""

    plane_index: np.ndarray  # int64 index into device_planes(store)
    row: np.ndarray  # int64 event row in its plane
    pos: np.ndarray  # int64 index into that plane's device_events(store)[i].rows
    op: np.ndarray  # int64 index into the op tables below
    op_name: list[str]  # HLO op name, or "<tf op name>/<kernel>"
    op_category: list[str]  # HLO category, or the tf_op type
    op_provenance: list[str]  # framework op fullname ("" when unknown)
    op_program_id: list[int]
    total_time_ps: int  # sum over devices of (last event end - first event start)


DEVICE_OP_EVENTS: Derived[DeviceOpEvents] = Derived(("op_metrics", "device_events"), lambda s: _device_op_events(s))


def device_op_events(store: ProfileStore) -> DeviceOpEvents:
    return store.derive(DEVICE_OP_EVENTS)


def _device_op_events(store: ProfileStore) -> DeviceOpEvents:
    programs = hlo_programs(store)
    strings = store.strings
    op_index: dict[tuple[int, str], int] = {}
    names: list[str] = []
    cats: list[str] = []
    provs: list[str] = []
    progs: list[int] = []
    out_plane: list[np.ndarray] = []
    out_row: list[np.ndarray] = []
    out_op: list[np.ndarray] = []
    total_time_ps = 0

    def intern(program_id: int, name: str, category: str, provenance: str) -> int:
        key = (program_id, name)
        k = op_index.get(key)
        if k is None:
            k = op_index[key] = len(names)
            names.append(name)
            cats.append(category)
            provs.append(provenance)
            progs.append(program_id)
        return k

    out_pos: list[np.ndarray] = []
    for pi, dev in enumerate(device_events(store)):
        plane, live_rows, st = dev.plane, dev.rows, dev.stats
        if live_rows.shape[0] == 0:
            continue
        ends = plane.start_ps[live_rows] + plane.dur_ps[live_rows]
        total_time_ps += int(ends.max() - plane.start_ps[live_rows].min())
        hlo, tfop = st.str_id("hlo_op"), st.str_id("tf_op")
        has_prog, prog = st.has("program_id"), st.int("program_id")
        tpu_category = np.full(live_rows.shape[0], -1, dtype=np.int64)
        if dev.tpu:
            # The op's name is its metadata's display name (the metadata name is the HLO text), its
            # category the metadata's hlo_category (XProf's, e.g. "copy-done", not the opcode's class).
            hlo = plane.meta_display_name_id[plane.meta_idx[live_rows]].astype(np.int64)
            hlo = np.where(hlo > 0, hlo, -1)
            tpu_category = st.str_id("hlo_category")
        op_of_event = np.full(live_rows.shape[0], -1, dtype=np.int64)
        # XLA ops: one lookup per distinct (program, hlo_op).
        is_xla = (hlo > 0) & has_prog
        if is_xla.any():
            xr = np.flatnonzero(is_xla)
            code, first = factorize(prog[xr], hlo[xr])
            pair_op = np.full(first.shape[0], -1, dtype=np.int64)
            for j, (pid, hid) in enumerate(zip(prog[xr][first].tolist(), hlo[xr][first].tolist(), strict=False)):
                hlo_name = strings[hid].rsplit("::", 1)[-1]
                program: HloProgram | None = programs.get(pid)
                if program is not None:
                    op = program.op(hlo_name)
                    if op is not None:
                        cat_id = int(tpu_category[xr[first[j]]])
                        pair_op[j] = intern(pid, hlo_name, strings[cat_id] if cat_id >= 0 else op.category,
                                            op.provenance)
                elif not programs:
                    # No HLO protos at all (XProf then shows no device ops): fall back to the
                    # event's own names so such profiles still list their XLA ops.
                    pair_op[j] = intern(pid, hlo_name, "unknown", "")
            op_of_event[xr] = pair_op[code]
        # TensorFlow GPU kernels: "<tf op name>/<kernel name>".
        is_tf = ~is_xla & (tfop > 0)
        if is_tf.any():
            tr = np.flatnonzero(is_tf)
            names_tr = plane.name_id[live_rows[tr]].astype(np.int64)
            code, first = factorize(tfop[tr], names_tr)
            pair_op = np.empty(first.shape[0], dtype=np.int64)
            for j, (tid, nid) in enumerate(zip(tfop[tr][first].tolist(), names_tr[first].tolist(), strict=False)):
                full = strings[tid]
                parsed = tf_op.parse_tf_op(full)
                pair_op[j] = intern(0, f"{parsed.name}/{strings[nid]}", parsed.type or "unknown", full)
            op_of_event[tr] = pair_op[code]
        sel = np.flatnonzero(op_of_event >= 0)
        out_plane.append(np.full(sel.shape[0], pi, dtype=np.int64))
        out_row.append(live_rows[sel].astype(np.int64))
        out_pos.append(sel.astype(np.int64))
        out_op.append(op_of_event[sel])
    return DeviceOpEvents(_cat(out_plane), _cat(out_row), _cat(out_pos), _cat(out_op), names, cats, provs, progs,
                          total_time_ps)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def device_op_metrics(store: StoreView) -> OpMetricsDb:
    """HLO-level (or tf_op/kernel) device ops of all devices of the host, combined."""
    return store.derive(DEVICE_OPS)


def _durations(store: ProfileStore, ev: DeviceOpEvents) -> tuple[np.ndarray, np.ndarray]:
    """Per device op event: its duration (a TPU op's device duration where it has one) and
    whether it ran eagerly."""
    n = ev.row.shape[0]
    dur = np.zeros(n, dtype=np.float64)
    eager = np.zeros(n, dtype=bool)
    for pi, dev in enumerate(device_events(store)):
        sel = np.flatnonzero(ev.plane_index == pi)
        if sel.shape[0] == 0:
            continue
        pos = ev.pos[sel]
        dur[sel] = dev.plane.dur_ps[ev.row[sel]]
        if dev.tpu:
            dev_dur = dev.stats.has("device_duration_ps")[pos]
            dur[sel] = np.where(dev_dur, dev.stats.float("device_duration_ps")[pos], dur[sel])
        eager[sel] = dev.stats.int("is_eager")[pos] != 0
    return dur, eager


def _per_event(store: ProfileStore, ev: DeviceOpEvents) -> dict[str, np.ndarray]:
    n = ev.row.shape[0]
    dur, eager = _durations(store, ev)
    flops = np.zeros(n)
    nbytes = np.zeros(n)
    hbm = np.zeros(n)
    program_hbm = np.full(n, np.nan)  # NaN: as hbm
    op_flops, op_bytes, op_hbm = _hlo_op_costs(store, ev)
    for pi, dev in enumerate(device_events(store)):
        sel = np.flatnonzero(ev.plane_index == pi)
        if sel.shape[0] == 0:
            continue
        pos = ev.pos[sel]
        # An event's own flops stat wins; otherwise its HLO op's FLOPs from the cost analysis.
        flops[sel] = np.where(dev.stats.has("flops")[pos], dev.stats.float("flops")[pos], op_flops[ev.op[sel]])
        # Likewise bytes; an event's own stat stands for the HBM part too.
        has_bytes = dev.stats.has("bytes_accessed")[pos]
        nbytes[sel] = np.where(has_bytes, dev.stats.float("bytes_accessed")[pos], op_bytes[ev.op[sel]])
        hbm[sel] = np.where(has_bytes, nbytes[sel], op_hbm[ev.op[sel]])
        if dev.tpu:
            # A TPU op states where its bytes go: its HBM bytes are the HBM part of that breakdown.
            blob = dev.stats.blob("memory_access_breakdown")[pos]
            has_breakdown = blob >= 0
            if has_breakdown.any():
                uniq, inv = np.unique(blob[has_breakdown], return_inverse=True)
                per_blob = np.array([hbm_bytes_of_breakdown(dev.plane.blobs[int(b)]) for b in uniq.tolist()])
                got = per_blob[inv.reshape(-1)]
                # An empty breakdown says nothing: the op row counts all its bytes as HBM, as XProf's.
                idx = sel[has_breakdown]
                hbm[idx] = np.where(np.isnan(got), nbytes[idx], got)
                program_hbm[idx] = np.where(np.isnan(got), 0.0, got)
    program_hbm = np.where(np.isnan(program_hbm), hbm, program_hbm)
    return {"dur": dur, "flops": flops, "bytes": nbytes, "hbm": hbm, "program_hbm": program_hbm, "eager": eager}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """The varint at ``data[i:]`` and the offset after it; raises ValueError when cut short."""
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def hbm_bytes_of_breakdown(data: bytes) -> float:
    """The HBM bytes of a serialized MemoryAccessBreakdown: NaN when it is empty (no breakdown), 0
    when it is malformed or names no HBM access."""
    if not data:
        return float("nan")
    total = 0
    try:
        i = 0
        while i < len(data):
            key, i = _varint(data, i)
            if key != (1 << 3 | 2):  # only field 1, length-delimited, is expected
                return 0.0
            length, i = _varint(data, i)
            end = i + length
            if end > len(data):
                return 0.0
            space = nbytes = 0
            while i < end:
                k, i = _varint(data, i)
                if k & 7 != 0:
                    return 0.0
                v, i = _varint(data, i)
                if k >> 3 == 2:
                    space = v
                elif k >> 3 == 3:
                    nbytes = v
            if space == _HBM_MEMORY_SPACE:
                total += nbytes
    except ValueError:
        return 0.0
    return float(total)


def _hlo_op_costs(store: ProfileStore, ev: DeviceOpEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per device op, one execution from the HLO cost analysis: FLOPs, bytes accessed and their
    HBM part (0 where the op is no HLO op of the profile's programs, e.g. a TensorFlow GPU
    kernel, or XLA does not know)."""
    # Imported here: the device ops' times alone (``DEVICE_OP_TIMES``, a pod's summary) need no
    # cost analysis, and a pod's worker computing only those does not import it.
    from tbprof.domain.hlo_cost import hlo_op_bytes, hlo_op_flops

    programs = hlo_programs(store)
    flops, total, hbm = (np.zeros(len(ev.op_name), dtype=np.float64) for _ in range(3))
    for k, (name, program_id) in enumerate(zip(ev.op_name, ev.op_program_id, strict=False)):
        if program_id not in programs:
            continue
        flops[k] = hlo_op_flops(store, program_id).get(name, 0)
        b = hlo_op_bytes(store, program_id).get(name)
        if b is not None:
            total[k], hbm[k] = b.total, b.hbm
    return flops, total, hbm


def _device_op_metrics(store: ProfileStore) -> OpMetricsDb:
    if kineto_ops.is_kineto(store):
        return OpMetricsDb(**kineto_ops.device_ops(store))
    if tf1_ops.is_tf1_timeline(store):
        return OpMetricsDb(**tf1_ops.side_ops(store, "Device"))
    ev = device_op_events(store)
    n_keys = len(ev.op_name)
    if n_keys == 0:
        db = OpMetricsDb.empty()
        db.total_time_ps = ev.total_time_ps
        return db
    per = _per_event(store, ev)
    # Every event is one occurrence: XProf merges adjacent events of one HLO op only when they
    # share a step group id, and a profile without step grouping compares no ids as equal.
    sums = _group(ev.op, n_keys, np.arange(ev.op.shape[0]), np.ones(ev.op.shape[0]), per["dur"], per["dur"],
                  per["flops"], per["bytes"], per["eager"], per["hbm"])
    return OpMetricsDb(
        name=np.array(ev.op_name, dtype=object), type=np.array(ev.op_category, dtype=object),
        provenance=np.array(ev.op_provenance, dtype=object), program_id=np.array(ev.op_program_id, dtype=np.int64),
        occurrences=sums["occurrences"], time_ps=sums["time_ps"], self_time_ps=sums["self_time_ps"],
        flops=sums["flops"], bytes_accessed=sums["bytes_accessed"], is_eager=sums["is_eager"],
        total_time_ps=ev.total_time_ps, hbm_bytes=sums["hbm_bytes"],
        extra={PROGRAM_HBM: np.bincount(ev.op, weights=per["program_hbm"], minlength=n_keys)},
    )


def times_only(db: OpMetricsDb) -> OpMetricsDb:
    """The table's ops, occurrences and times, its FLOPs and bytes not determined (NaN): what
    ``DEVICE_OP_TIMES`` holds."""
    unknown = np.full(db.n_ops, np.nan)
    return OpMetricsDb(db.name, db.type, db.provenance, db.program_id, db.occurrences, db.time_ps, db.self_time_ps,
                       unknown, unknown.copy(), db.is_eager, db.total_time_ps)


def _device_op_times(store: ProfileStore) -> OpMetricsDb:
    """``_device_op_metrics`` without the HLO programs' cost analysis, which only FLOPs and
    bytes read: the same ops, occurrences and times (the headline's top ops)."""
    if (kineto_ops.is_kineto(store) or tf1_ops.is_tf1_timeline(store)  # no HLO costs to skip
            or store.has_derived(DEVICE_OPS)):  # a server's store, its op tables warmed
        return times_only(device_op_metrics(store))
    ev = device_op_events(store)
    n_keys = len(ev.op_name)
    if n_keys == 0:
        return _with_total(OpMetricsDb.empty(), ev.total_time_ps)
    dur, eager = _durations(store, ev)
    unknown = np.full(ev.op.shape[0], np.nan)
    sums = _group(ev.op, n_keys, np.arange(ev.op.shape[0]), np.ones(ev.op.shape[0]), dur, dur,
                  unknown, unknown, eager)
    return times_only(OpMetricsDb(
        name=np.array(ev.op_name, dtype=object), type=np.array(ev.op_category, dtype=object),
        provenance=np.array(ev.op_provenance, dtype=object), program_id=np.array(ev.op_program_id, dtype=np.int64),
        occurrences=sums["occurrences"], time_ps=sums["time_ps"], self_time_ps=sums["self_time_ps"],
        flops=sums["flops"], bytes_accessed=sums["bytes_accessed"], is_eager=sums["is_eager"],
        total_time_ps=ev.total_time_ps))


def device_op_times(store: StoreView) -> OpMetricsDb:
    """The device ops' occurrences and times, FLOPs and bytes not determined (memoised per store)."""
    return store.derive(DEVICE_OP_TIMES)


def framework_ops(db: OpMetricsDb) -> OpMetricsDb:
    """Device ops grouped by the framework op they came from (XProf's TF-level device table).

    Device ops without a framework op keep their own name with type "Unknown".
    """
    if db.n_ops == 0:
        return OpMetricsDb.empty() if db.total_time_ps == 0 else _with_total(OpMetricsDb.empty(), db.total_time_ps)
    index: dict[str, int] = {}
    types: list[str] = []
    keys = np.empty(db.n_ops, dtype=np.int64)
    for i, (name, prov) in enumerate(zip(db.name.tolist(), db.provenance.tolist(), strict=False)):
        if prov:
            parsed = tf_op.parse_tf_op(prov)
            fw_name, fw_type = parsed.name, parsed.type or "Unknown"
        else:
            fw_name, fw_type = name, "Unknown"
        k = index.get(fw_name)
        if k is None:
            k = index[fw_name] = len(types)
            types.append(fw_type)
        keys[i] = k
    n = len(types)
    occ = np.zeros(n, dtype=np.int64)
    np.maximum.at(occ, keys, db.occurrences)
    sums = _group(keys, n, np.arange(db.n_ops), np.zeros(db.n_ops), db.time_ps.astype(np.float64),
                  db.self_time_ps.astype(np.float64), db.flops, db.bytes_accessed, db.is_eager, db.hbm)
    names = np.empty(n, dtype=object)
    for name, k in index.items():
        names[k] = name
    return OpMetricsDb(
        name=names, type=np.array(types, dtype=object), provenance=np.full(n, "", dtype=object),
        program_id=np.zeros(n, dtype=np.int64), occurrences=occ, time_ps=sums["time_ps"],
        self_time_ps=sums["self_time_ps"], flops=sums["flops"], bytes_accessed=sums["bytes_accessed"],
        is_eager=sums["is_eager"], total_time_ps=db.total_time_ps, hbm_bytes=sums["hbm_bytes"],
    )


def combine(dbs: Sequence[OpMetricsDb]) -> OpMetricsDb:
    """Ops of several hosts as one table, as XProf's all-hosts op stats: an op (same name,
    type, framework op and program on every host) sums its occurrences, times, FLOPs and bytes;
    the side's total time is the sum of the hosts' totals."""
    if len(dbs) == 1:
        return dbs[0]
    total_ps = sum(d.total_time_ps for d in dbs)
    parts = [d for d in dbs if d.n_ops]
    if not parts:
        return _with_total(OpMetricsDb.empty(), total_ps)
    index: dict[tuple[Any, ...], int] = {}
    keys = np.empty(sum(d.n_ops for d in parts), dtype=np.int64)
    i = 0
    for d in parts:
        for key in zip(d.name.tolist(), d.type.tolist(), d.provenance.tolist(), d.program_id.tolist(), strict=False):
            keys[i] = index.setdefault(key, len(index))
            i += 1
    n = len(index)

    def cat(col: str) -> np.ndarray:
        return np.concatenate([getattr(d, col) for d in parts])

    sums = _group(keys, n, np.arange(keys.shape[0]), cat("occurrences").astype(np.float64),
                  cat("time_ps").astype(np.float64), cat("self_time_ps").astype(np.float64), cat("flops"),
                  cat("bytes_accessed"), cat("is_eager"), np.concatenate([d.hbm for d in parts]))
    name, op_type, provenance, program_id = (list(col) for col in zip(*index, strict=False))
    extra = {}
    if any(PROGRAM_HBM in d.extra for d in parts):
        extra[PROGRAM_HBM] = np.bincount(keys, weights=np.concatenate([d.program_hbm for d in parts]), minlength=n)
    return OpMetricsDb(
        name=np.array(name, dtype=object), type=np.array(op_type, dtype=object),
        provenance=np.array(provenance, dtype=object), program_id=np.array(program_id, dtype=np.int64),
        occurrences=sums["occurrences"], time_ps=sums["time_ps"], self_time_ps=sums["self_time_ps"],
        flops=sums["flops"], bytes_accessed=sums["bytes_accessed"], is_eager=sums["is_eager"], total_time_ps=total_ps,
        hbm_bytes=sums["hbm_bytes"], extra=extra,
    )


def _with_total(db: OpMetricsDb, total_time_ps: int) -> OpMetricsDb:
    db.total_time_ps = total_time_ps
    return db


def device_framework_op_metrics(store: StoreView) -> OpMetricsDb:
    if kineto_ops.is_kineto(store) or tf1_ops.is_tf1_timeline(store):  # already framework ops
        return device_op_metrics(store)
    if isinstance(store, ProfileStore):
        return store.derive(DEVICE_FRAMEWORK_OPS)
    # A per-host partial carries the device ops, not their grouping (one host is never served
    # from partials; grouped here as DEVICE_FRAMEWORK_OPS does, without the memo).
    return framework_ops(device_op_metrics(store))


def hosts_op_metrics(stores: Sequence[StoreView], side: str, costs: bool = True) -> OpMetricsDb:
    """Ops of ``side`` over several hosts: "host" (framework ops on host threads), "device"
    (HLO ops / kernels) or "device_framework" (device ops grouped by framework op). Device ops
    are combined across hosts before grouping, so a framework op's occurrences are the most
    frequent of its combined device ops, as in XProf's all-hosts table. ``costs=False``: the
    device ops' FLOPs and bytes not determined (NaN; ``DEVICE_OP_TIMES``), for a reader of
    times alone, which then needs no HLO cost analysis."""
    if not costs and side != "host":
        return _hosts_op_times(stores, side)
    if len(stores) == 1:
        single = {"host": host_op_metrics, "device": device_op_metrics,
                  "device_framework": device_framework_op_metrics}[side]
        return single(stores[0])
    if side == "host":
        return _combined(stores, HOST_KEY, host_op_metrics)
    if side == "device_framework" and all(kineto_ops.is_kineto(s) or tf1_ops.is_tf1_timeline(s) for s in stores):
        return combine([device_framework_op_metrics(s) for s in stores])
    device = _combined(stores, DEVICE_KEY, device_op_metrics)
    return framework_ops(device) if side == "device_framework" else device


def _hosts_op_times(stores: Sequence[StoreView], side: str) -> OpMetricsDb:
    """``hosts_op_metrics`` of a device side from ``DEVICE_OP_TIMES``."""
    if len(stores) == 1:
        device = device_op_times(stores[0])
    elif side == "device_framework" and all(kineto_ops.is_kineto(s) or tf1_ops.is_tf1_timeline(s) for s in stores):
        return combine([device_op_times(s) for s in stores])
    else:
        device = _combined(stores, DEVICE_TIMES_KEY, device_op_times)
    if side == "device" or (len(stores) == 1 and (kineto_ops.is_kineto(stores[0])
                                                  or tf1_ops.is_tf1_timeline(stores[0]))):
        return device  # a PyTorch or TF1 timeline's device ops are framework ops already
    return framework_ops(device)


def _combined(stores: Sequence[StoreView], key: tuple[str, str],
              per_host: Callable[[StoreView], OpMetricsDb]) -> OpMetricsDb:
    """``combine`` of the hosts' tables. A pod's partials (analyses/partials.PodPartials) may hold
    them combined already, batch by batch in the workers: the same sums, fewer tables to merge."""
    pre = getattr(stores, "combined", None)
    db = pre(key) if callable(pre) else None
    return db if isinstance(db, OpMetricsDb) else combine([per_host(s) for s in stores])


def warm_op_metrics(store: ProfileStore) -> None:
    """Per-op times feed the overview, TF stats and op profile: derive them once a store loads."""
    if getattr(store, "format", "") != "xspace" and not (kineto_ops.is_kineto(store)
                                                           or tf1_ops.is_tf1_timeline(store)):
        return
    host_op_metrics(store)
    device_framework_op_metrics(store)


# The per-host op tables as derived values (store/view.py; analyses/partials.py carries them).
HOST_OPS: CarriedValue[OpMetricsDb] = CarriedValue(HOST_KEY, _host_op_metrics)
DEVICE_OPS: CarriedValue[OpMetricsDb] = CarriedValue(DEVICE_KEY, _device_op_metrics)
# The device ops without FLOPs and bytes (``times_only``): what ``tbprof summary`` reads of a
# pod's hosts, with no HLO cost analysis (partials carry it; a partial holding ``DEVICE_OPS``
# serves it too, analyses/partials.py ``IMPLIED``).
DEVICE_OP_TIMES: CarriedValue[OpMetricsDb] = CarriedValue(DEVICE_TIMES_KEY, _device_op_times)
# Not carried by partials: an all-hosts tool combines the hosts' device ops, then groups them.
DEVICE_FRAMEWORK_OPS: Derived[OpMetricsDb] = Derived(DEVICE_FRAMEWORK_KEY,
                                                     lambda store: framework_ops(device_op_metrics(store)))
