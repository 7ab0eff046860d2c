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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from tbprof.analyses import registry
from tbprof.analyses.event_columns import RowStats, rows_with_stat
from tbprof.analyses.event_groups import IMPLICIT_ROOT_NAMES
from tbprof.analyses.op_metrics import HOST_PLANE
from tbprof.analyses.table import Column, Table
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


def data_type_name(code: int) -> str:
    return DATA_TYPES[code] if 0 <= code < len(DATA_TYPES) else f"DT_{code}"


@numba.njit(cache=True, nogil=True)
def _match_deallocations(addr_order: np.ndarray, addr: np.ndarray, is_alloc: np.ndarray) -> np.ndarray:
    """For each deallocation the allocation it frees (-1 if none); events in address order.

    Per address in time order, the first allocation not yet freed is remembered (a second
    allocation at a taken address is ignored) and the next deallocation takes it.
    """
    source = np.full(addr.shape[0], -1, dtype=np.int64)
    pending = -1
    prev_addr = 0
    for j in range(addr_order.shape[0]):
        i = addr_order[j]
        if j == 0 or addr[i] != prev_addr:
            pending = -1
            prev_addr = addr[i]
        if is_alloc[i]:
            if pending < 0:
                pending = i
        elif pending >= 0:
            source[i] = pending
            pending = -1
    return source


@numba.njit(cache=True, nogil=True)
def _live_at(addr_order: np.ndarray, addr: np.ndarray, is_alloc: np.ndarray, alloc_bytes: np.ndarray,
             upto: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Allocations live after the events marked ``upto`` (XProf's active-allocation walk).

    Returns the live flags, the bytes of all counted allocations minus deallocations, and the
    bytes of deallocations whose allocation is not in the window.
    """
    live = np.zeros(addr.shape[0], dtype=np.bool_)
    net = 0
    unmatched_free = 0
    pending = -1
    started = False
    prev_addr = 0
    for j in range(addr_order.shape[0]):
        i = addr_order[j]
        if not upto[i]:
            continue
        if not started or addr[i] != prev_addr:
            if pending >= 0:
                live[pending] = True
            pending = -1
            prev_addr = addr[i]
            started = True
        if is_alloc[i]:
            pending = i
            net += alloc_bytes[i]
        else:
            if pending >= 0:
                pending = -1
            else:
                unmatched_free += alloc_bytes[i]
            net -= alloc_bytes[i]
    if pending >= 0:
        live[pending] = True
    return live, net, unmatched_free


@dataclass
class MemoryEvents:
    """Memory events of one allocator, time-sorted, as columns."""

    memory_id: str
    time_ps: np.ndarray
    is_alloc: np.ndarray
    heap_bytes: np.ndarray
    stack_bytes: np.ndarray
    free_bytes: np.ndarray
    fragmentation: np.ndarray
    peak_bytes_in_use: np.ndarray
    requested_bytes: np.ndarray
    allocation_bytes: np.ndarray
    address: np.ndarray
    op: np.ndarray  # object
    region: np.ndarray  # object
    dtype: np.ndarray  # object
    shape: np.ndarray  # object
    step_id: np.ndarray
    peak_index: int  # row of the peak (time-sorted order)


def _step_ids(store: ProfileStore, plane: Plane, rows: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Step of each event: its ``group_id`` stat, else the step marker whose span holds it.

    Step markers are the host's root events (``_r`` stat) other than the implicit roots
    (FunctionRun, ...), numbered in time order; -1 outside every marker. XProf takes the id
    of the event's group, which for allocations inside a step is that step. Looking markers
    up by time keeps the memory profile independent of the (much costlier) event grouping.
    """
    if (own >= 0).any():
        return own
    roots = rows_with_stat(plane, store.stat_id("_r"))
    implicit = np.isin(plane.name_id[roots], [store.strings.id(n) for n in IMPLICIT_ROOT_NAMES])
    roots = roots[~implicit]
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    if roots.shape[0] == 0:
        return out
    order = np.argsort(plane.start_ps[roots], kind="stable")
    begin = plane.start_ps[roots][order]
    end = begin + plane.dur_ps[roots][order]
    t = plane.start_ps[rows]
    k = np.searchsorted(begin, t, side="right") - 1
    inside = (k >= 0) & (t < end[np.maximum(k, 0)])
    out[inside] = k[inside]
    return out


def memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    """memory id -> that allocator's events (memoised)."""
    return store.memo(("memory_events",), lambda: _memory_events(store))


def _memory_events(store: ProfileStore) -> dict[str, MemoryEvents]:
    plane = store.plane(HOST_PLANE)
    alloc_id, dealloc_id = store.strings.id(ALLOCATION), store.strings.id(DEALLOCATION)
    if plane is None or (alloc_id < 0 and dealloc_id < 0):
        return {}
    is_mem = (plane.name_id == alloc_id) | (plane.name_id == dealloc_id)
    rows = np.nonzero(is_mem)[0]
    if rows.shape[0] == 0:
        return {}
    strings = store.strings
    st = RowStats(store, plane, rows, (
        "allocator_name", "index_on_host", "device_ordinal", "bytes_allocated", "bytes_reserved",
        "bytes_available", "fragmentation", "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr",
        "tf_op", "region_type", "data_type", "shape", "group_id"))
    # Memory id: allocator name, else index_on_host / device_ordinal.
    mem_key = np.full(rows.shape[0], "", dtype=object)
    for name in ("index_on_host", "device_ordinal"):
        has = st.has(name)
        mem_key[has] = st.int(name)[has].astype(str)
    alloc_name = st.str_id("allocator_name")
    if (alloc_name >= 0).any():
        mem_key = np.where(alloc_name >= 0, _strings(strings, alloc_name), mem_key)
    codes = np.clip(st.int("data_type"), -1, len(DATA_TYPES))
    dtype_names = np.array([*DATA_TYPES, "DT_other", "DT_other"], dtype=object)
    cols = {
        "time_ps": plane.start_ps[rows],
        "is_alloc": plane.name_id[rows] == alloc_id,
        "heap_bytes": st.int("bytes_allocated"),
        "stack_bytes": st.int("bytes_reserved"),
        "free_bytes": st.int("bytes_available"),
        "fragmentation": st.float("fragmentation"),
        "peak_bytes_in_use": st.int("peak_bytes_in_use"),
        "requested_bytes": st.int("requested_bytes"),
        "allocation_bytes": st.int("allocation_bytes"),
        "address": st.int("addr"),
        "op_id": st.str_id("tf_op"),
        "region_id": st.str_id("region_type"),
        "dtype_code": codes,
        "shape_id": st.str_id("shape"),
        "step_id": _step_ids(store, plane, rows, st.int("group_id", missing=-1)),
    }
    out: dict[str, MemoryEvents] = {}
    for memory_id in sorted(set(mem_key.tolist())):
        sel = np.nonzero(mem_key == memory_id)[0]  # trace (store) order
        used = cols["stack_bytes"][sel] + cols["heap_bytes"][sel]
        # Peak: most stack + heap bytes; ties go to the last event in trace order (XProf).
        peak_trace = int(sel.shape[0] - 1 - np.argmax(used[::-1]))
        order = np.argsort(cols["time_ps"][sel], kind="stable")
        idx = sel[order]
        peak_index = int(np.nonzero(order == peak_trace)[0][0])
        c = {k: v[idx] for k, v in cols.items()}
        # A deallocation describes the allocation it frees.
        addr_order = np.lexsort((np.arange(idx.shape[0]), c["address"]))
        source = _match_deallocations(addr_order, c["address"], c["is_alloc"])
        freed = source >= 0
        for k in ("op_id", "region_id", "dtype_code", "shape_id"):
            c[k][freed] = c[k][source[freed]]
        # Events outside any step take the previous step + 1 (the first ones step 0), as XProf.
        step = c["step_id"]
        valid = step >= 0
        if not valid.all():
            last = np.maximum.accumulate(np.where(valid, np.arange(step.shape[0]), -1))
            prev = np.where(last >= 0, step[np.maximum(last, 0)], -1)
            step = np.where(valid, step, prev + 1)
        out[memory_id] = MemoryEvents(
            memory_id=memory_id, time_ps=c["time_ps"], is_alloc=c["is_alloc"], heap_bytes=c["heap_bytes"],
            stack_bytes=c["stack_bytes"], free_bytes=c["free_bytes"], fragmentation=c["fragmentation"],
            peak_bytes_in_use=c["peak_bytes_in_use"], requested_bytes=c["requested_bytes"],
            allocation_bytes=c["allocation_bytes"], address=c["address"],
            op=_strings(strings, c["op_id"]), region=_strings(strings, c["region_id"]),
            dtype=dtype_names[c["dtype_code"]],
            shape=_strings(strings, c["shape_id"]), step_id=step, peak_index=peak_index,
        )
    return out


def _strings(strings: Any, ids: np.ndarray) -> np.ndarray:
    uniq, inv = np.unique(ids, return_inverse=True)
    table = np.array([strings[i] if i >= 0 else "" for i in uniq.tolist()], dtype=object)
    return table[inv.reshape(-1)]


def summarize(ev: MemoryEvents) -> dict[str, Any]:
    p = ev.peak_index
    heap, stack, free = int(ev.heap_bytes[p]), int(ev.stack_bytes[p]), int(ev.free_bytes[p])
    return {
        "memory_id": ev.memory_id,
        "num_allocations": int(ev.is_alloc.sum()),
        "num_deallocations": int((~ev.is_alloc).sum()),
        "memory_capacity_bytes": heap + stack + free,
        "peak_bytes_usage_lifetime": int(ev.peak_bytes_in_use.max()),
        "peak_bytes_in_use": heap + stack,
        "peak_heap_bytes": heap,
        "peak_stack_bytes": stack,
        "peak_free_bytes": free,
        "peak_fragmentation_fraction": float(ev.fragmentation[p]),
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
    bucket = (np.arange(n, dtype=np.int64) * max_points) // n
    order = np.lexsort((np.arange(n), -values, bucket))
    starts = np.searchsorted(bucket[order], np.arange(max_points))
    picked = order[starts]
    picked[bucket[keep]] = keep
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


def timeline_table(ev: MemoryEvents, max_points: int) -> Table:
    in_use = ev.heap_bytes + ev.stack_bytes
    idx = downsample(in_use, max_points, ev.peak_index)
    values = {
        "time_ms": ev.time_ps[idx] / 1e9, "heap_bytes": ev.heap_bytes[idx], "stack_bytes": ev.stack_bytes[idx],
        "free_bytes": ev.free_bytes[idx], "in_use_bytes": in_use[idx],
        "fragmentation_fraction": ev.fragmentation[idx],
        "activity": np.where(ev.is_alloc[idx], "allocation", "deallocation").astype(object),
        "operation": ev.op[idx], "requested_bytes": ev.requested_bytes[idx],
        "allocation_bytes": ev.allocation_bytes[idx], "region_type": ev.region[idx], "data_type": ev.dtype[idx],
        "shape": ev.shape[idx], "step_id": ev.step_id[idx],
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
    addr_order = np.lexsort((np.arange(ev.address.shape[0]), ev.address))
    live, net, unmatched_free = _live_at(addr_order, ev.address, ev.is_alloc, ev.allocation_bytes, upto)
    rows = np.nonzero(live)[0]
    unexplained = int(ev.heap_bytes[p]) - net - unmatched_free
    op = list(ev.op[rows])
    alloc = ev.allocation_bytes[rows].tolist()
    req = ev.requested_bytes[rows].tolist()
    region, dtype, shape = list(ev.region[rows]), list(ev.dtype[rows]), list(ev.shape[rows])
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
    for key in zip(alloc, req, op, region, dtype, shape, special):
        groups[key] = groups.get(key, 0) + 1
    keys = sorted(groups, key=lambda k: (-k[0], -k[1], k[2], k[3], k[4], k[5]))
    values = {
        "operation": [k[2] for k in keys], "allocation_bytes": [k[0] for k in keys],
        "requested_bytes": [k[1] for k in keys], "occurrences": [groups[k] for k in keys],
        "total_allocation_bytes": [k[0] * groups[k] for k in keys], "region_type": [k[3] for k in keys],
        "data_type": [k[4] for k in keys], "shape": [k[5] for k in keys], "special": [k[6] for k in keys],
    }
    return Table.from_columns(BREAKDOWN_COLUMNS, values, default_sort=None)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    store = stores[0]
    events = memory_events(store)
    out: dict[str, Any] = {
        "schema_version": registry.SCHEMA_VERSION, "tool": "memory_profile", "host": store.host,
        "memory_ids": sorted(events), "allocators": {k: summarize(v) for k, v in events.items()},
    }
    if not events:
        out.update(memory_id=None, message=NO_MEMORY_MESSAGE, tables={})
        return out
    memory_id = options.get("memory_id") or sorted(events)[0]
    if memory_id not in events:
        raise registry.OptionError(f"option memory_id={memory_id!r} is not an allocator of this profile; "
                                   f"allocators: {sorted(events)}")
    ev = events[memory_id]
    max_points = int(options.get("max_points", DEFAULT_MAX_POINTS))
    timeline = timeline_table(ev, max_points)
    out.update(memory_id=memory_id, timeline_is_downsampled=timeline.n_rows < ev.time_ps.shape[0],
               breakdown_scope=options.get("breakdown_scope", "step"),
               tables={"breakdown": breakdown_table(ev, options.get("breakdown_scope", "step")), "timeline": timeline})
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


registry.register(registry.Tool(
    name="memory_profile", title="Memory profile", compute=compute,
    available=lambda store: bool(memory_events(store)),
    options=(
        registry.Option("memory_id", str, "", "allocator to show (default: the first memory id)"),
        registry.Option("max_points", _positive_int, DEFAULT_MAX_POINTS,
                        "timeline points at most (the peak is always one of them)"),
        registry.Option("breakdown_scope", _parse_scope, "step",
                        "step: allocations of the peak's step (XProf); window: every allocation live at the peak"),
    ),
    description="Allocator memory over time, its peak, and the allocations live at the peak.",
))
