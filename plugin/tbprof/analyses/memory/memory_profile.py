"""memory_profile: allocator usage over time, its peak, and what was live at the peak.

Input: the host plane's ``MemoryAllocation`` / ``MemoryDeallocation`` events that the
TensorFlow / XLA BFC allocators record (stats ``allocator_name``, ``bytes_allocated`` (heap),
``bytes_reserved`` (stack), ``bytes_available`` (free), ``fragmentation``,
``peak_bytes_in_use``, ``requested_bytes``, ``allocation_bytes``, ``addr``, ``tf_op``,
``region_type``, ``data_type``, ``shape``, ``group_id``). One allocator per memory id.

Like XProf: the peak in the window is the event with the most stack + heap bytes (ties: the
last one in trace order); capacity = stack + heap + free there; a deallocation takes the op,
region, dtype and shape of the allocation at its address. Unlike XProf, the timeline keeps
the exact peak point when it is downsampled (max of each bucket, the peak's bucket picks the
peak) and times are relative to the profile start. Formulas: docs/formulas.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from tbprof._core.kernels import bucket_max, live_at, match_deallocations
from tbprof.analyses.results.memory import AllocatorSummary, MemoryProfileResult
from tbprof.analyses.steps.assignment import steps_of
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, OptionError, Tool
from tbprof.domain.event_columns import RowStats, rows_of_metas
from tbprof.domain.event_groups import IMPLICIT_ROOT_NAMES, event_groups, parents_of
from tbprof.domain.event_tree import parent_rows
from tbprof.domain.planes import HOST_PLANE, is_accelerator
from tbprof.domain.tf1_planes import ALLOCATORS_PLANE
from tbprof.store.arrays import sorted_unique
from tbprof.store.kineto_names import MEMORY_DEVICE_KIND, MEMORY_EVENT
from tbprof.store.markers import COUNTER_LINES_STAT, step_of
from tbprof.store.tables import Plane, ProfileStore

ALLOCATION = "MemoryAllocation"
DEALLOCATION = "MemoryDeallocation"
DEFAULT_MAX_POINTS = 1000

NO_MEMORY_MESSAGE = (
    "This profile has no memory allocation events. They are recorded by the TensorFlow (and "
    "XLA/JAX GPU) BFC allocators when the host tracer runs at level 2 or more, e.g. "
    "tf.profiler.experimental.start(logdir, options=tf.profiler.experimental.ProfilerOptions("
    "host_tracer_level=2)) or the TensorBoard Keras callback's profile_batch, and appear as "
    "MemoryAllocation/MemoryDeallocation events on the host plane.")

# TensorFlow DataType enum -> DataTypeString (tensorflow/core/framework/types.proto).
DATA_TYPES = ("INVALID", "float", "double", "int32", "uint8", "int16", "int8", "string", "complex64",
              "int64", "bool", "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16",
              "complex128", "half", "resource", "variant", "uint32", "uint64", "float8_e5m2",
              "float8_e4m3fn", "int4", "uint4")


# XProf skips a context id with this many producers and consumers (as domain/event_groups.py).
CONTEXT_FANOUT_LIMIT = 64

DETAIL_STATS = ("bytes_available", "fragmentation", "peak_bytes_in_use", "requested_bytes", "tf_op",
                "region_type", "data_type", "shape")


@dataclass
class MemoryEvents:
    """Memory events of one allocator, time-sorted, as columns.

    The columns every event needs (time, sizes, address, step) are read up front; the rest
    (free bytes, fragmentation, names, ...) only for the rows a table or summary shows.
    """

    memory_id: str
    time_ps: np.ndarray
    is_alloc: np.ndarray
    heap_bytes: np.ndarray
    stack_bytes: np.ndarray
    allocation_bytes: np.ndarray
    address: np.ndarray
    steps: Callable[[], np.ndarray]  # step id of each event, derived on first use (``step_id``)
    source: np.ndarray  # per deallocation the allocation it frees (-1: none / an allocation)
    peak_index: int  # row of the peak (time-sorted order)
    last_trace_index: int  # row of the allocator's last event in trace order
    store: Any
    plane: Any
    rows: np.ndarray  # event row of each (time-sorted) memory event in the host plane
    has_allocations: bool = True  # False: samples of a counter, nothing to break the peak down into

    @property
    def capacity_source(self) -> str:
        return "allocator"

    @property
    def step_id(self) -> np.ndarray:
        """XProf's step id of each event, derived (and memoised) when first asked: smart_suggestion
        reads the allocator events (the peak's fragmentation) but needs no steps."""
        return self.steps()

    def details(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Detail columns of rows ``idx``; a deallocation shows its allocation's names."""
        idx = np.asarray(idx, dtype=np.int64)
        named = np.where(self.source[idx] >= 0, self.source[idx], idx)
        need = sorted_unique(np.concatenate([idx, named]))
        plane_rows = self.rows[need]
        order = np.argsort(plane_rows)  # RowStats walks ascending plane rows
        st = RowStats(self.store, self.plane, plane_rows[order], DETAIL_STATS)
        slot = np.empty_like(order)
        slot[order] = np.arange(order.shape[0])
        at = slot[np.searchsorted(need, idx)]
        at_named = slot[np.searchsorted(need, named)]
        strings = self.store.strings
        codes = np.clip(st.int("data_type")[at_named], -1, len(DATA_TYPES))
        return {
            "free_bytes": st.int("bytes_available")[at],
            "fragmentation": st.float("fragmentation")[at],
            "peak_bytes_in_use": st.int("peak_bytes_in_use")[at],
            "requested_bytes": st.int("requested_bytes")[at],
            "op": _strings(strings, st.str_id("tf_op")[at_named]),
            "region": _strings(strings, st.str_id("region_type")[at_named]),
            "dtype": np.array([*DATA_TYPES, "DT_other", "DT_other"], dtype=object)[codes],
            "shape": _strings(strings, st.str_id("shape")[at_named]),
        }


def _step_ids(store: ProfileStore, plane: Plane, rows: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Step of each memory event (``rows``, ascending): its ``group_id`` stat, else the group
    XProf's event grouping gives it.

    XProf gives an allocation the group of the first root that reaches it (nesting on its thread,
    producer/consumer links), so allocations on tf.data, executor or ``py_xla_execute`` threads
    join the step that consumed them and those no root reaches stay outside (-1; the caller then
    takes the previous step + 1), e.g. JAX's deallocations on ``py_xla_callback`` threads. With
    step markers a group's step is its marker's index in time order and implicit roots' groups
    (FunctionRun & co.) are outside every step; without markers (Keras ``fit``) the implicit
    roots' groups are the steps, as XProf numbers them.
    """
    if (own >= 0).any():
        return own
    on_gpu = any(is_accelerator(p) and p.n_events for p in store.planes)
    if on_gpu:
        linked = _marker_step_ids(store, plane, rows)
        if linked is not None:
            return linked
    groups = event_groups(store)
    pi = next((i for i, p in enumerate(store.planes) if p is plane), -1)
    if pi < 0 or groups.n_groups == 0 or len(groups.group_of[pi]) != plane.n_events:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    group = _groups_of_rows(plane, groups.group_of[pi], rows) if on_gpu else groups.group_of[pi][rows]
    explicit = np.flatnonzero(~groups.root_is_implicit)
    if explicit.shape[0] == 0:
        return group.astype(np.int64)
    starts = np.array([int(store.planes[int(groups.root_plane[g])].start_ps[int(groups.root_row[g])])
                       for g in explicit.tolist()], dtype=np.int64)
    step_of_group = np.full(groups.n_groups, -1, dtype=np.int64)
    step_of_group[explicit[np.argsort(starts, kind="stable")]] = np.arange(explicit.shape[0])
    return np.where(group >= 0, step_of_group[np.maximum(group, 0)], -1)


def _nest(plane: Plane, nodes: np.ndarray) -> np.ndarray:
    """XProf's nesting parent (an index into ``nodes``, ascending plane rows) among ``nodes`` only."""
    counts = np.bincount(plane.line_idx[nodes], minlength=plane.n_lines)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return parents_of(plane.start_ps[nodes], plane.dur_ps[nodes], offsets)


def _ancestor(parent: np.ndarray, mark: np.ndarray, at: np.ndarray, outermost: bool) -> np.ndarray:
    """For each node ``at``, its nearest (or outermost) ancestor-or-self with ``mark`` (-1: none)."""
    best = np.where(mark[at], at, -1)
    up = parent[at]
    live = np.flatnonzero((up >= 0) & ((best < 0) | outermost))
    while live.shape[0]:
        u = up[live]
        hit = mark[u]
        best[live[hit]] = u[hit]
        up[live] = parent[u]
        live = live[(up[live] >= 0) & ((best[live] < 0) | outermost)]
    return best


class _Markers:
    """The outermost step markers of a plane (a nested one joins its ancestor's group), numbered
    by start time as XProf numbers their groups; which one holds an event on its own thread."""

    def __init__(self, plane: Plane, roots: np.ndarray) -> None:
        self.plane = plane
        at = np.arange(roots.shape[0])
        parent = _nest(plane, roots)
        is_root = np.ones(roots.shape[0], dtype=bool)
        self.rows = roots[_ancestor(parent, is_root, at, outermost=True) == at]  # ascending: by line, start
        self.step = np.empty(self.rows.shape[0], dtype=np.int64)
        self.step[np.argsort(plane.start_ps[self.rows], kind="stable")] = np.arange(self.rows.shape[0])

    def step_of(self, rows: np.ndarray) -> np.ndarray:
        """Step of the outermost marker holding each of ``rows`` on its line (-1: none). Outermost
        markers do not nest, so the one that can hold a row is the last starting before it."""
        p = self.plane
        if self.rows.shape[0] == 0:
            return np.full(rows.shape[0], -1, dtype=np.int64)
        k = np.searchsorted(self.rows, rows, side="right") - 1
        m = self.rows[np.maximum(k, 0)]
        holds = ((k >= 0) & (p.line_idx[m] == p.line_idx[rows]) & (p.start_ps[m] <= p.start_ps[rows])
                 & (p.start_ps[rows] + p.dur_ps[rows] <= p.start_ps[m] + p.dur_ps[m]))
        return np.where(holds, self.step[np.maximum(k, 0)], -1)


def _marker_step_ids(store: ProfileStore, plane: Plane, rows: np.ndarray) -> np.ndarray | None:
    """XProf's memory steps on a GPU run from the few events that decide them, several times
    faster on jax_large than grouping the links of its millions of host events (``event_groups``
    on a store just loaded: bench/measurements.md#analyses), which would make listing the run's
    tools (which derives them) wait for it.

    A memory event held (on its thread) by a step marker belongs to the outermost one; one that
    no marker holds belongs to the step of the producer (``_pt``/``_p``) of the nearest consumer
    event (``_ct``/``_c``) holding it, that producer taking its own outermost marker: one link, as
    JAX writes them (``py_xla_execute`` threads consume what the step's dispatch produced). None
    (use the full grouping) when the profile has implicit roots or TensorFlow's executor links,
    whose chains are longer.
    """
    r_id = store.stat_id("_r")
    if r_id < 0:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    if any(store.strings.id(n) >= 0 for n in (*IMPLICIT_ROOT_NAMES, "TraceContext", "IteratorGetNextOp::DoCompute",
                                              "IteratorGetNextAsOptionalOp::DoCompute")):
        return None
    col = plane.event_stat(r_id)
    markers = _Markers(plane, col.rows[col.as_int() > 0])
    out = markers.step_of(rows)
    unmarked = np.flatnonzero(out < 0)
    if unmarked.shape[0]:
        out[unmarked] = _linked_steps(store, plane, rows[unmarked], markers)
    return out


def _key_pairs(store: ProfileStore, plane: Plane, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows carrying both stats ``a`` and ``b`` (a context type and id), and their (a, b) values."""
    ca, cb = plane.event_stat(store.stat_id(a)), plane.event_stat(store.stat_id(b))
    if np.array_equal(ca.rows, cb.rows):  # producers and consumers write both stats
        return ca.rows, np.stack([ca.as_int(), cb.as_int()], axis=1)
    keep_a, keep_b = np.isin(ca.rows, cb.rows), np.isin(cb.rows, ca.rows)
    return ca.rows[keep_a], np.stack([ca.as_int()[keep_a], cb.as_int()[keep_b]], axis=1)


def _enclosing(plane: Plane, rows: np.ndarray) -> np.ndarray:
    """The rows enclosing each of ``rows`` on its line, innermost first (the store's nesting
    depth): shape (levels, len(rows)), -1 past an event's depth. One search per level."""
    depth = plane.depth
    level = np.asarray(depth[rows], dtype=np.int64)
    out = np.full((int(level.max()) if rows.shape[0] else 0, rows.shape[0]), -1, dtype=np.int64)
    for line in np.flatnonzero(np.bincount(plane.line_idx[rows], minlength=plane.n_lines)).tolist():
        span = plane.line_rows(line)
        mine = np.flatnonzero((rows >= span.start) & (rows < span.stop))
        line_depth = np.asarray(depth[span])
        for k in range(int(level[mine].max())):
            deeper = mine[level[mine] > k]
            at_k = np.flatnonzero(line_depth == k) + span.start
            before = np.searchsorted(at_k, rows[deeper]) - 1
            out[level[deeper] - 1 - k, deeper] = np.where(before >= 0, at_k[np.maximum(before, 0)], -1) \
                if at_k.shape[0] else -1
    return out


def _linked_steps(store: ProfileStore, plane: Plane, rows: np.ndarray, markers: _Markers) -> np.ndarray:
    """Steps of memory events no marker holds: through the nearest consumer event holding them.

    Only the events enclosing them are read for consumer stats (a few rows): a profile whose
    unmarked memory events sit in no consumer (jax_large) never scans its millions of stats for links.
    """
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    if min(store.stat_id(x) for x in ("_ct", "_c", "_pt", "_p")) < 0 or rows.shape[0] == 0:
        return out
    around = _enclosing(plane, rows)
    cand = sorted_unique(around[around >= 0])
    st = RowStats(store, plane, cand, ("_ct", "_c"))
    consumer = st.has("_ct") & st.has("_c")
    if not consumer.any():
        return out
    is_cons = np.zeros(plane.n_events, dtype=bool)
    is_cons[cand[consumer]] = True
    holder = np.full(rows.shape[0], -1, dtype=np.int64)
    for level in around[::-1]:  # outermost first, so the innermost consumer is written last
        hit = (level >= 0) & is_cons[np.maximum(level, 0)]
        holder[hit] = level[hit]
    held = np.flatnonzero(holder >= 0)
    if held.shape[0] == 0:
        return out
    need, inv = np.unique(holder[held], return_inverse=True)  # consumer rows holding memory events
    key_of = {int(r): (int(t), int(i)) for r, t, i in zip(cand.tolist(), st.int("_ct").tolist(), st.int("_c").tolist(),
                                                       strict=True)}
    need_key = np.array([key_of[r] for r in need.tolist()], dtype=np.int64).reshape(-1, 2)
    plane.prefetch_stat_columns([store.stat_id(x) for x in ("_ct", "_c", "_pt", "_p")])  # one pass for four
    prod, prod_key = _key_pairs(store, plane, "_pt", "_p")
    cons_key = _key_pairs(store, plane, "_ct", "_c")[1]
    # Producers of each needed consumer: the same (type, id); XProf skips ids crowded on both sides.
    src, dst = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for t in np.unique(need_key[:, 0]).tolist():
        p_rows, p_ids = prod[prod_key[:, 0] == t], prod_key[prod_key[:, 0] == t, 1]
        o = np.argsort(p_ids, kind="stable")
        p_rows, p_ids = p_rows[o], p_ids[o]
        c_ids = np.sort(cons_key[cons_key[:, 0] == t, 1])
        sel = np.flatnonzero(need_key[:, 0] == t)
        ids_t = need_key[sel, 1]
        lo, hi = np.searchsorted(p_ids, ids_t, "left"), np.searchsorted(p_ids, ids_t, "right")
        n_cons = np.searchsorted(c_ids, ids_t, "right") - np.searchsorted(c_ids, ids_t, "left")
        n = np.where((hi - lo >= CONTEXT_FANOUT_LIMIT) & (n_cons >= CONTEXT_FANOUT_LIMIT), 0, hi - lo)
        src.append(p_rows[np.repeat(lo, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)])
        dst.append(np.repeat(sel, n))
    producers, consumer_of = np.concatenate(src), np.concatenate(dst)
    # Each producer takes its outermost marker; a consumer, its producers' first step.
    step = markers.step_of(producers)
    none = np.iinfo(np.int64).max
    best = np.full(need.shape[0], none, dtype=np.int64)
    np.minimum.at(best, consumer_of[step >= 0], step[step >= 0])
    best = best[inv.reshape(-1)]
    out[held] = np.where(best == none, -1, best)
    return out


def _groups_of_rows(plane: Plane, group_of: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Group of each of ``rows`` (ascending plane rows) when only linked events were grouped.

    ``compute_groups`` groups only the events that carry links on GPU runs, and a root claims,
    in group order, every unclaimed event nested in an event it reached: an event's group is
    the smallest among it and its ancestors, which up a chain of grouped events is the nearest
    one's. So only the memory events and the grouped events of their threads are nested here.
    """
    group = group_of[rows].astype(np.int64)
    if not (group < 0).any():
        return group
    parts = []  # the memory events' threads are a few contiguous row ranges
    for line in np.flatnonzero(np.bincount(plane.line_idx[rows], minlength=plane.n_lines)).tolist():
        span = plane.line_rows(line)
        node = group_of[span] >= 0
        node[rows[(rows >= span.start) & (rows < span.stop)] - span.start] = True
        parts.append(np.flatnonzero(node) + span.start)
    nodes = np.concatenate(parts)
    grouped = group_of[nodes] >= 0
    near = _ancestor(_nest(plane, nodes), grouped, np.searchsorted(nodes, rows), outermost=False)
    return np.where(near >= 0, group_of[nodes[np.maximum(near, 0)]], -1).astype(np.int64)


def warm_memory(store: ProfileStore) -> None:
    """Derives the allocator events and their steps in the background once a store is loaded
    (``service/tools.warmups``)."""
    if isinstance(store, ProfileStore):
        for events in memory_events(store).values():
            events.step_id  # noqa: B018 -- derives and memoises the step ids


def has_memory_events(store: ProfileStore) -> bool:
    """Whether the store has allocator events. Asked when a run's tools are listed, it derives
    them and their steps (bench/measurements.md#analyses), as the memory profile and smart_suggestion need
    them right after: their first requests then find them memoised."""
    events = memory_events(store)
    for ev in events.values():
        ev.step_id  # noqa: B018 -- derives and memoises the step ids
    return bool(events)


def memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    """memory id -> that allocator's events (memoised)."""
    return store.memo(("memory_events",), lambda: (_kineto_memory_events(store) or _tf1_memory_events(store)
                                                   or _memory_events(store)))


# --- PyTorch (Kineto) ``[memory]`` events ------------------------------------------------------

KINETO_MEMORY = MEMORY_EVENT


def _kineto_memory_label(device_type: int) -> str:
    """The allocator's name for a c10::DeviceType: "cpu" as XProf names the host allocator (it
    sorts after the GPUs, so the page opens on a GPU); CUDA and HIP (ROCm) memory is a GPU's."""
    if device_type == 0:
        return "cpu"
    return MEMORY_DEVICE_KIND.get(device_type, f"device type {device_type}")


@dataclass
class KinetoMemoryEvents(MemoryEvents):
    """A PyTorch caching allocator's events: ``[memory]`` instants on the host threads.

    Each carries ``Bytes`` (+ allocated, - freed), ``Addr``, ``Total Allocated`` and ``Total
    Reserved`` after the event, and ``Device Type`` / ``Device Id``. PyTorch 1.9 wrote ``Bytes``
    alone: the bytes in use are then the running total of ``Bytes`` in time order, and the
    reserved bytes are not known (shown as the bytes in use). Mapped onto XProf's
    allocator: heap = allocated, stack = 0, free = reserved - allocated (memory the caching
    allocator holds but no tensor uses), capacity = reserved at the peak; the operation is the
    operator (``cpu_op``) the event happened in. PyTorch records no fragmentation, data type or
    shape.
    """

    reserved_bytes: np.ndarray | None = None
    op_names: np.ndarray | None = None  # object, per event

    @property
    def capacity_source(self) -> str:
        # PyTorch's reserved memory is what the caching allocator holds, not the device's size
        # (3.98 GiB "capacity" on a 141 GB H200); TF1 counters say nothing about it.
        return "reserved" if self.has_allocations else "peak"

    def details(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        idx = np.asarray(idx, dtype=np.int64)
        named = np.where(self.source[idx] >= 0, self.source[idx], idx)
        assert self.reserved_bytes is not None and self.op_names is not None
        n = idx.shape[0]
        empty = np.full(n, "", dtype=object)
        return {
            "free_bytes": np.maximum(self.reserved_bytes[idx] - self.heap_bytes[idx], 0),
            "fragmentation": np.full(n, np.nan),
            "peak_bytes_in_use": np.maximum.accumulate(self.heap_bytes)[idx],
            "requested_bytes": self.allocation_bytes[idx],
            "op": self.op_names[named], "region": empty, "dtype": empty.copy(), "shape": empty.copy(),
        }


def _tf1_memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    """A TF1 timeline's ``Allocators`` counters (``show_memory=True``): bytes in use per allocator.

    Counters hold no allocation events: a rise counts as an allocation of its size and a fall as
    a deallocation, there is no breakdown of the peak, and the capacity is not known (free = 0,
    so the capacity shown is the peak). The file is one step (its number)."""
    if getattr(store, "format", "") != "chrome_trace":
        return {}
    plane = store.plane(ALLOCATORS_PLANE)
    if plane is None:
        return {}
    step = step_of(store.host)
    out: dict[str, MemoryEvents] = {}
    for line in sorted(plane.plane_stats.get(COUNTER_LINES_STAT, ())):
        span = plane.line_rows(int(line))
        rows = np.arange(span.start, span.stop)
        name = plane.line_names[line]
        sid = store.stat_id(name)
        if rows.shape[0] == 0 or sid < 0:
            continue
        values = plane.event_stat(sid).dense_float(plane.n_events)[rows]
        keep = np.isfinite(values)
        rows = rows[keep]
        if rows.shape[0] == 0:
            continue
        order = np.argsort(plane.start_ps[rows], kind="stable")
        rows = rows[order]
        heap = values[keep][order].astype(np.int64)
        delta = np.diff(heap, prepend=0)
        n = rows.shape[0]
        peak = int(n - 1 - np.argmax(heap[::-1]))  # ties: the last sample, as for allocator events
        out[name] = KinetoMemoryEvents(
            memory_id=name, time_ps=plane.start_ps[rows], is_alloc=delta > 0, heap_bytes=heap,
            stack_bytes=np.zeros(n, np.int64), allocation_bytes=np.abs(delta),
            address=np.arange(n, dtype=np.int64),
            steps=partial(np.full, n, step if step is not None else 0, np.int64),
            source=np.full(n, -1, np.int64), peak_index=peak, last_trace_index=n - 1, store=store, plane=plane,
            rows=rows, reserved_bytes=heap.copy(), op_names=np.full(n, "", dtype=object), has_allocations=False,
        )
    return out


def _kineto_memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    if getattr(store, "format", "") != "chrome_trace":
        return {}
    plane = store.plane(HOST_PLANE)
    mem_id = store.strings.id(KINETO_MEMORY)
    if plane is None or mem_id < 0:
        return {}
    rows = np.nonzero(plane.name_id == mem_id)[0]
    if rows.shape[0] == 0:
        return {}
    st = RowStats(store, plane, rows, ("Bytes", "Addr", "Total Allocated", "Total Reserved", "Device Type",
                                       "Device Id"))
    nbytes = st.int("Bytes")
    dev_type, dev_id = st.int("Device Type", missing=-1), st.int("Device Id", missing=-1)
    # The operator an event happened in: its closest enclosing cpu_op on the thread.
    parent = parent_rows(plane)
    cat_sid = store.stat_id("cat")
    cat = plane.dense_str_ids(cat_sid) if cat_sid >= 0 else np.full(plane.n_events, -1)
    is_op = cat == store.strings.id("cpu_op")
    owner = parent[rows]
    for _ in range(64):  # climb past annotations; nesting is shallow
        climb = (owner >= 0) & ~is_op[np.maximum(owner, 0)]
        if not climb.any():
            break
        owner = np.where(climb, parent[np.maximum(owner, 0)], owner)
    op_names = np.array([store.strings[int(plane.name_id[o])] if o >= 0 and is_op[o] else "" for o in owner.tolist()],
                        dtype=object)
    steps = steps_of(store)
    time_ps = plane.start_ps[rows]
    k = np.searchsorted(steps.begin_ps, time_ps, side="right") - 1
    in_step = (k >= 0) & (time_ps < steps.end_ps[np.maximum(k, 0)]) if steps.n_steps else np.zeros(rows.shape[0], bool)
    step_all = np.where(in_step, steps.step_nums[np.maximum(k, 0)] if steps.n_steps else -1, -1)
    out: dict[str, MemoryEvents] = {}
    labels = {t: _kineto_memory_label(t) for t in sorted_unique(dev_type).tolist()}
    memory_ids = np.array([labels[t] if labels[t] == "cpu" else f"{labels[t]} {d}"
                           for t, d in zip(dev_type.tolist(), dev_id.tolist(), strict=True)], dtype=object)
    has_total = st.has("Total Allocated")
    total = st.int("Total Allocated")
    reserved_all = st.int("Total Reserved")
    has_reserved = st.has("Total Reserved")
    for memory_id in sorted(set(memory_ids.tolist())):
        sel = np.nonzero(memory_ids == memory_id)[0]  # trace order
        order = np.argsort(time_ps[sel], kind="stable")
        idx = sel[order]
        if has_total[sel].all():
            heap_trace = total[sel]
        else:  # Bytes only: the running total in time order, back in trace order
            heap_trace = np.empty(sel.shape[0], np.int64)
            heap_trace[order] = np.cumsum(nbytes[idx])
        peak_trace = int(sel.shape[0] - 1 - np.argmax(heap_trace[::-1]))
        heap = heap_trace[order]
        reserved = np.where(has_reserved[idx], reserved_all[idx], heap)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        addr = st.int("Addr")[idx]
        is_alloc = nbytes[idx] > 0
        step = _fill_outside(step_all[idx])
        out[memory_id] = KinetoMemoryEvents(
            memory_id=memory_id, time_ps=time_ps[idx], is_alloc=is_alloc, heap_bytes=heap,
            stack_bytes=np.zeros(idx.shape[0], np.int64), allocation_bytes=np.abs(nbytes[idx]), address=addr,
            steps=partial(_identity, step), source=match_deallocations(np.argsort(addr, kind="stable"), addr, is_alloc),
            peak_index=int(rank[peak_trace]), last_trace_index=int(rank[-1]), store=store, plane=plane,
            rows=rows[idx], reserved_bytes=reserved, op_names=op_names[idx],
        )
    return out


def _memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    plane = store.plane(HOST_PLANE)
    alloc_id, dealloc_id = store.strings.id(ALLOCATION), store.strings.id(DEALLOCATION)
    if plane is None or (alloc_id < 0 and dealloc_id < 0):
        return {}
    rows = rows_of_metas(plane, np.flatnonzero(np.isin(plane.meta_name_id, [alloc_id, dealloc_id])))
    if rows.shape[0] == 0:
        return {}
    strings = store.strings
    st = RowStats(store, plane, rows, ("allocator_name", "index_on_host", "device_ordinal", "bytes_allocated",
                                       "bytes_reserved", "allocation_bytes", "addr", "group_id"))
    # Memory id: allocator name (a string id >= 0), else index_on_host / device_ordinal
    # (coded below -1 so one int per event groups the allocators).
    mem_code = np.full(rows.shape[0], -1, dtype=np.int64)
    for name in ("index_on_host", "device_ordinal"):
        has = st.has(name)
        mem_code[has] = -2 - st.int(name)[has]
    alloc_name = st.str_id("allocator_name")
    mem_code = np.where(alloc_name >= 0, alloc_name, mem_code)
    time_ps = plane.start_ps[rows]
    heap, stack = st.int("bytes_allocated"), st.int("bytes_reserved")
    is_alloc = plane.name_id[rows] == alloc_id
    alloc_bytes, address = st.int("allocation_bytes"), st.int("addr")
    own_group = st.int("group_id", missing=-1)

    def step_all() -> np.ndarray:
        return store.memo(("memory_profile", "steps"), lambda: _step_ids(store, plane, rows, own_group))

    out: dict[str, MemoryEvents] = {}
    # Few distinct codes: count them instead of sorting 100 k events.
    shift = int(mem_code.min())
    present = np.flatnonzero(np.bincount(mem_code - shift))
    code_of = np.full(present.max() + 1, -1, dtype=np.int64)
    code_of[present] = np.arange(present.shape[0])
    inv = code_of[mem_code - shift]
    codes = present + shift
    names = [strings[c] if c >= 0 else ("" if c == -1 else str(-2 - c)) for c in codes.tolist()]
    for k in sorted(range(codes.shape[0]), key=names.__getitem__):
        memory_id = names[k]
        sel = np.flatnonzero(inv == k) if codes.shape[0] > 1 else np.arange(rows.shape[0])  # trace order
        used = stack[sel] + heap[sel]
        # Peak: most stack + heap bytes; ties go to the last event in trace order (XProf).
        peak_trace = int(sel.shape[0] - 1 - np.argmax(used[::-1]))
        order = np.argsort(time_ps[sel], kind="stable")
        idx = sel[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0])
        addr = address[idx]
        ev_alloc = is_alloc[idx]
        # A deallocation describes the allocation it frees.
        source = match_deallocations(np.argsort(addr, kind="stable"), addr, ev_alloc)
        out[memory_id] = MemoryEvents(
            memory_id=memory_id, time_ps=time_ps[idx], is_alloc=ev_alloc, heap_bytes=heap[idx],
            stack_bytes=stack[idx], allocation_bytes=alloc_bytes[idx], address=addr,
            steps=partial(_allocator_steps, store, memory_id, step_all, idx),
            source=source, peak_index=int(rank[peak_trace]), last_trace_index=int(rank[-1]),
            store=store, plane=plane, rows=rows[idx],
        )
    return out


def _identity(value: np.ndarray) -> np.ndarray:
    return value


def _fill_outside(step: np.ndarray) -> np.ndarray:
    """Events outside any step (-1) take the previous step + 1 (the first ones step 0), as XProf."""
    valid = step >= 0
    if valid.all():
        return step
    last = np.maximum.accumulate(np.where(valid, np.arange(step.shape[0]), -1))
    prev = np.where(last >= 0, step[np.maximum(last, 0)], -1)
    return np.where(valid, step, prev + 1)


def _allocator_steps(store: ProfileStore, memory_id: str, step_all: Callable[[], np.ndarray],
                     idx: np.ndarray) -> np.ndarray:
    return store.memo(("memory_profile", "steps", memory_id), lambda: _fill_outside(step_all()[idx]))


def _strings(strings: Any, ids: np.ndarray) -> np.ndarray:
    uniq, inv = np.unique(ids, return_inverse=True)
    table = np.array([strings[i] if i >= 0 else "" for i in uniq.tolist()], dtype=object)
    return table[inv.reshape(-1)]


def peak_fragmentation(ev: MemoryEvents) -> float:
    """The allocator's fragmentation at its peak (reads one event's stats; no step ids)."""
    return float(ev.details(np.array([ev.peak_index]))["fragmentation"][0])


# What an allocator's "capacity" is, by capacity_source: (label, meaning). The one statement the
# memory page and compare make about it, so neither calls a PyTorch reservation a capacity.
CAPACITY_MEANING: dict[str, tuple[str, str]] = {
    "allocator": ("Capacity", "the allocator's memory at the peak: bytes in use plus its free bytes "
                              "(XProf's memory capacity)"),
    "reserved": ("Reserved by the allocator", "PyTorch's caching allocator's reserved memory at the peak "
                                              "(in use or cached for reuse), not the device's memory"),
    "peak": ("Capacity", "unknown: the profile records bytes in use only"),
}


def capacity_meaning(source: str) -> tuple[str, str]:
    return CAPACITY_MEANING.get(source, CAPACITY_MEANING["allocator"])


def summarize(ev: MemoryEvents) -> AllocatorSummary:
    p = ev.peak_index
    d = ev.details(np.array([p, ev.last_trace_index]))
    heap, stack, free = int(ev.heap_bytes[p]), int(ev.stack_bytes[p]), int(d["free_bytes"][0])
    return {
        "memory_id": ev.memory_id,
        "num_allocations": int(ev.is_alloc.sum()),
        "num_deallocations": int((~ev.is_alloc).sum()),
        "memory_capacity_bytes": heap + stack + free,
        # What the capacity is: "allocator" (XProf: in use + free of the allocator's limit),
        # "reserved" (PyTorch: the caching allocator's reserved memory at the peak) or "peak"
        # (nothing tells: the peak itself).
        "capacity_source": ev.capacity_source,
        "capacity_label": capacity_meaning(ev.capacity_source)[0],
        "capacity_meaning": capacity_meaning(ev.capacity_source)[1],
        # XProf keeps the allocator's own peak counter of the last event it visits.
        "peak_bytes_usage_lifetime": int(d["peak_bytes_in_use"][1]),
        "peak_bytes_in_use": heap + stack,
        "peak_heap_bytes": heap,
        "peak_stack_bytes": stack,
        "peak_free_bytes": free,
        "peak_fragmentation_fraction": float(d["fragmentation"][0]),
        "peak_time_ps": int(ev.time_ps[p]),
        "peak_time_ms": float(ev.time_ps[p]) / 1e9,
        "peak_step_id": int(ev.step_id[p]),
        "event_count": int(ev.time_ps.shape[0]),
    }


def downsample(values: np.ndarray, max_points: int, keep: int) -> np.ndarray:
    """Indices of at most ``max_points`` points: the max of each of equal buckets.

    The bucket holding ``keep`` (the global peak) yields ``keep`` itself, so the peak point
    is never lost; other buckets yield their first maximum.
    """
    n = values.shape[0]
    if n <= max_points:
        return np.arange(n)
    picked = bucket_max(values, max_points)
    picked[(keep * max_points) // n] = keep
    return picked


TIMELINE_COLUMNS = [
    Column("time_ms", "Time", "float", "ms", "since the profile start"),
    Column("heap_bytes", "Heap", "int", "bytes"),
    Column("stack_bytes", "Stack", "int", "bytes"),
    Column("free_bytes", "Free", "int", "bytes"),
    Column("in_use_bytes", "In use", "int", "bytes", "heap + stack"),
    Column("fragmentation_fraction", "Fragmentation", "float", "fraction"),
    Column("activity", "Activity", "str", "", "allocation or deallocation"),
    Column("operation", "Operation", "str"),
    Column("requested_bytes", "Requested size", "int", "bytes"),
    Column("allocation_bytes", "Allocation size", "int", "bytes"),
    Column("region_type", "Region type", "str"),
    Column("data_type", "Data type", "str"),
    Column("shape", "Shape", "str"),
    Column("step_id", "Step", "int"),
]

BREAKDOWN_COLUMNS = [
    Column("label", "Allocation", "str", "", "the operation, or \"(unnamed)\" with the allocation's size class "
                                           "when the event names none (JAX's allocator events)"),
    Column("operation", "Operation", "str"),
    Column("allocation_bytes", "Allocation size", "int", "bytes"),
    Column("requested_bytes", "Requested size", "int", "bytes"),
    Column("occurrences", "Occurrences", "int"),
    Column("total_allocation_bytes", "Total allocation", "int", "bytes", "allocation size x occurrences"),
    Column("region_type", "Region type", "str"),
    Column("data_type", "Data type", "str"),
    Column("shape", "Shape", "str"),
    Column("special", "Special", "bool", "", "not an allocation event: stack, or heap the window "
                                                "does not explain (allocated before the profile)"),
]


_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def size_class(size_bytes: int) -> str:
    """The power-of-two size class of an allocation, as BFC allocators bin them: "≤128 MiB"."""
    if size_bytes <= 1:
        return "≤1 B"
    exp = (int(size_bytes) - 1).bit_length()  # 2**exp >= size_bytes
    unit = min(exp // 10, len(_BINARY_UNITS) - 1)
    return f"≤{2 ** (exp - 10 * unit)} {_BINARY_UNITS[unit]}"


def timeline_table(ev: MemoryEvents, max_points: int) -> Table:
    in_use = ev.heap_bytes + ev.stack_bytes
    idx = downsample(in_use, max_points, ev.peak_index)
    d = ev.details(idx)
    values = {
        "time_ms": ev.time_ps[idx] / 1e9, "heap_bytes": ev.heap_bytes[idx], "stack_bytes": ev.stack_bytes[idx],
        "free_bytes": d["free_bytes"], "in_use_bytes": in_use[idx], "fragmentation_fraction": d["fragmentation"],
        "activity": np.where(ev.is_alloc[idx], "allocation", "deallocation").astype(object),
        "operation": d["op"], "requested_bytes": d["requested_bytes"], "allocation_bytes": ev.allocation_bytes[idx],
        "region_type": d["region"], "data_type": d["dtype"], "shape": d["shape"], "step_id": ev.step_id[idx],
    }
    return Table.from_columns(TIMELINE_COLUMNS, values, default_sort=None)


def breakdown_table(ev: MemoryEvents, scope: str = "step") -> Table:
    """Allocations live at the peak, identical ones merged (XProf's memory breakdown table).

    ``scope="step"`` walks the events of the peak's step up to the peak time, as XProf does:
    allocations still live from earlier steps join the "unused preallocated device memory" row.
    ``scope="window"`` walks every event up to the peak, so each live allocation of the
    profile window is its own row.
    """
    p = ev.peak_index
    upto = ev.time_ps <= ev.time_ps[p]
    if scope == "step":
        upto &= ev.step_id == ev.step_id[p]
    addr_order = np.argsort(ev.address, kind="stable")
    live, net, unmatched_free = live_at(addr_order, ev.address, ev.is_alloc, ev.allocation_bytes, upto)
    rows = np.nonzero(live)[0]
    unexplained = int(ev.heap_bytes[p]) - net - unmatched_free
    d = ev.details(rows)
    op = list(d["op"])
    alloc = ev.allocation_bytes[rows].tolist()
    req = d["requested_bytes"].tolist()
    region, dtype, shape = list(d["region"]), list(d["dtype"]), list(d["shape"])
    special = [False] * rows.shape[0]
    for label, nbytes, reg in (("unused preallocated device memory", unexplained, "persist/dynamic"),
                               ("stack", int(ev.stack_bytes[p]), "stack")):
        if nbytes > 0:
            op.append(label)
            alloc.append(nbytes)
            req.append(nbytes)
            region.append(reg)
            dtype.append("INVALID")
            shape.append("unknown")
            special.append(True)
    groups: dict[tuple[Any, ...], int] = {}
    for key in zip(alloc, req, op, region, dtype, shape, special, strict=False):
        groups[key] = groups.get(key, 0) + 1
    keys = sorted(groups, key=lambda k: (-k[0], -k[1], k[2], k[3], k[4], k[5]))
    values = {
        "label": [k[2] or f"(unnamed, {size_class(k[0])})" for k in keys],
        "operation": [k[2] for k in keys], "allocation_bytes": [k[0] for k in keys],
        "requested_bytes": [k[1] for k in keys], "occurrences": [groups[k] for k in keys],
        "total_allocation_bytes": [k[0] * groups[k] for k in keys], "region_type": [k[3] for k in keys],
        "data_type": [k[4] for k in keys], "shape": [k[5] for k in keys], "special": [k[6] for k in keys],
    }
    return Table.from_columns(BREAKDOWN_COLUMNS, values, default_sort=None)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> MemoryProfileResult:
    store = stores[0]
    events = memory_events(store)
    out: MemoryProfileResult = {
        "schema_version": SCHEMA_VERSION, "tool": "memory_profile", "host": store.host,
        "memory_ids": sorted(events), "allocators": {k: summarize(v) for k, v in events.items()},
        "memory_id": None,
    }
    if not events:
        out["message"] = NO_MEMORY_MESSAGE
        out["tables"] = {}
        return out
    memory_id = options.get("memory_id") or sorted(events)[0]
    if memory_id not in events:
        raise OptionError(f"option memory_id={memory_id!r} is not an allocator of this profile; "
                                   f"allocators: {sorted(events)}")
    ev = events[memory_id]
    max_points = int(options.get("max_points", DEFAULT_MAX_POINTS))
    timeline = timeline_table(ev, max_points)
    out["memory_id"] = memory_id
    out["timeline_is_downsampled"] = timeline.n_rows < ev.time_ps.shape[0]
    out["breakdown_scope"] = options.get("breakdown_scope", "step")
    out["tables"] = {"breakdown": breakdown_table(ev, options.get("breakdown_scope", "step")) if ev.has_allocations
                     else Table.from_columns(BREAKDOWN_COLUMNS, {c.name: [] for c in BREAKDOWN_COLUMNS}),
                     "timeline": timeline}
    return out


def _parse_scope(text: str) -> str:
    if text not in ("step", "window"):
        raise ValueError("expected step or window")
    return text


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 2:
        raise ValueError("must be >= 2")
    return value


TOOLS = (
    Tool(
        name="memory_profile", title="Memory profile", compute=compute, few_planes=True,
        available=has_memory_events,
        options=(
            Option("memory_id", str, "", "allocator to show (default: the first memory id)"),
            Option("max_points", _positive_int, DEFAULT_MAX_POINTS,
                   "timeline points at most (the peak is always one of them)", min_value=2,
                   max_value=10_000_000),
            Option("breakdown_scope", _parse_scope, "step",
                   "step: allocations of the peak's step (XProf); window: every allocation live at the peak",
                   choices=("step", "window")),
    ),
        description="Allocator memory over time, its peak, and the allocations live at the peak.",
        result=MemoryProfileResult, needs=frozenset({"memory"}),
        requires="allocator events (MemoryAllocation / MemoryDeallocation) on the host plane, or PyTorch's [memory] "
                 "events.",
        how_to=(
            "TensorFlow records them with host_tracer_level=2 or higher (ProfilerOptions).",
            "PyTorch: add profile_memory=True to torch.profiler.profile(...).",
        ),
    ),
)
