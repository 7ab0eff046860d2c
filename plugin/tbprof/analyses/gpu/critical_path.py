"""HTA's critical path analysis, one tool per host (rank): ``critical_path``.

As HTA 0.5.0's ``TraceAnalysis.critical_path_analysis(rank, annotation, instance_id)``
(docs/formulas.md, "Critical path (HTA)"): the events of one instance of an annotation (e.g.
the third ``ProfilerStep``) become a graph whose nodes are the start and the end of each host
operator, CUDA runtime/driver call and device event (kernel, memcpy, memset), and whose edges
are

* **operator**: a host thread's call stack walked depth-first (an operator's start to its first
  child's start, a child's end to the next child's start, the last child's end to the
  operator's end), and each device event's start to its end; the weight is the time between
  the two nodes, except into the end of a blocking call (``cudaDeviceSynchronize``,
  ``cudaStreamSynchronize``, ``cudaEventSynchronize``, ``cudaEventQuery``, ``cudaMemcpy``,
  ``cudaMemcpyAsync``), whose wait is not the host's work: weight 0;
* **dependency** (weight 0): one top-level operator's end to the next one's start on a thread;
* **kernel_launch_delay**: a launch's start to its device event's start, when the stream was
  idle (the launch found nothing queued on its stream and the device event drained it, and the
  stream's previous event had ended before the launch);
* **kernel_kernel_delay**: otherwise the stream's previous device event's end to this one's start;
* **sync_dependency** (weight 0), from Kineto's ``cuda_sync`` events: a device event's end to the
  end of the host call that waited for it (``Context Sync``: the last event of every stream;
  ``Stream Sync``: its stream's; ``Event Sync``: the event before the recorded CUDA event), and
  a ``Stream Wait Event``'s recorded event's end to the start of the next kernel launched on the
  waiting stream (which then gets a launch or kernel-kernel edge only if the wait ended first);

and the **critical path** is the longest weighted path of that DAG. Each of its edges is bound
by: ``cpu_bound`` (operator edges attributed to a host event), ``gpu_compute_bound`` /
``gpu_communication_bound`` (operator edges of a device event; NCCL kernels are communication),
``gpu_kernel_kernel_overhead``, ``gpu_kernel_launch_overhead``; the breakdown is the share of
the path's length by bound.

A launch that runs several device events (``cudaGraphLaunch``: every kernel of the graph carries
the launch's correlation) has all of them in the graph, as they ran. HTA 0.5.0 links a launch to
one device event only (its correlation index points at the last of them in the trace's order), so
the graph's other kernels are not in its graph; option ``hta_compat=true`` keeps only that one per
launch (the last by start), reproducing HTA (docs/differences.md).

Times are the profile's own (picoseconds from nanosecond events), as HTA's with
``HTA_DISABLE_NS_ROUNDING=1``; option ``times=us`` first rounds every event inward to whole
microseconds, as HTA does by default (which drops sub-microsecond runtime calls from the graph).
Parity goldens exist for both.

What runs per event in Python: nothing over the trace or the graph. Nodes, the call-stack walk's
edges and the device edges are numpy columns over the store's rows; the two loops numpy cannot
express (the call stack of each thread, and the longest path over a topological order) are
``_core.kernels`` ``call_stack_walk`` and ``dag_longest_path``, linear in events and edges. Per
*path* edge (a few to a few hundred) Python builds the answer's rows: names, bounds (the NCCL
name test), the overlay's entries; per stream, the sync edges. bench/critical_path_bench.py
times it against HTA.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof._core import kernels
from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import STEP_MARKER, _inward_us, has_device_activity
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import CriticalPathOverlay, CriticalPathResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, OptionError, Tool, parse_bool, parse_nonneg_int
from tbprof.errors import NoData, ProfileReadError
from tbprof.store.tables import KIND_INT64, KIND_UINT64, Plane, ProfileStore

TOOL = "critical_path"
DEFAULT_ANNOTATION = "ProfilerStep"
_PS_PER_US = 1_000_000

# Edge types (HTA's CPEdgeType values without their "critical_path_" prefix).
OPERATOR, DEPENDENCY, LAUNCH_DELAY, KERNEL_KERNEL_DELAY, SYNC_DEPENDENCY = 0, 1, 2, 3, 4
EDGE_TYPES = ("operator", "dependency", "kernel_launch_delay", "kernel_kernel_delay", "sync_dependency")
# Bounds (HTA's ``bound_by``); "" for the zero-weight dependency edges.
BOUNDS = ("cpu_bound", "gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_kernel_overhead",
          "gpu_kernel_launch_overhead")
_CPU, _GPU_COMPUTE, _GPU_COMM, _KK, _LAUNCH, _NONE = 0, 1, 2, 3, 4, -1

# Host categories whose events are graph nodes (HTA: cpu_op, cuda_runtime, cuda_driver).
_NODE_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")
# Calls that wait for the device: the edge into their end weighs 0 (HTA's BLOCKING_SYNC_CALLS).
BLOCKING_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
                  "cudaMemcpy", "cudaMemcpyAsync")
# Calls that enqueue device work (HTA's runtime launch events), for the stream queue lengths.
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
                "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel", "hipExtModuleLaunchKernel",
                "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream")
_CONTEXT_SYNC, _STREAM_SYNC, _EVENT_SYNC, _STREAM_WAIT_EVENT = "Context Sync", "Stream Sync", "Event Sync", \
    "Stream Wait Event"
# HTA weighs an edge of at most -1 us as 0 (nanosecond parents that end before their child).
_NEGATIVE_CLAMP_PS = -_PS_PER_US


@dataclass(frozen=True)
class _Events:
    """The rank's events as HTA's frame sees them (one row per host or device event)."""

    plane: np.ndarray  # int64 plane index
    row: np.ndarray  # int64 row in the plane
    thread: np.ndarray  # int64 host line index, -1 on a device
    stream: np.ndarray  # int64, -1 on the host
    start_ps: np.ndarray
    dur_ps: np.ndarray
    name_id: np.ndarray  # int32
    is_node_cat: np.ndarray  # bool: a host operator / runtime / driver call
    is_sync: np.ndarray  # bool: a device-side synchronisation (Kineto's ``cuda_sync``)
    peer: np.ndarray  # int64: the correlated event (launch <-> device event), -1 without one
    corr: np.ndarray  # int64 correlation id, -1 without one
    # A sync's CUDA event (Kineto's ``wait_on_stream``, ``wait_on_cuda_event_record_corr_id``): the
    # stream it was recorded on and the correlation of its cudaEventRecord; -1 elsewhere.
    wait_stream: np.ndarray
    wait_record: np.ndarray

    @property
    def n(self) -> int:
        return int(self.start_ps.shape[0])

    @property
    def is_host(self) -> np.ndarray:
        return self.thread >= 0


def _host_plane(store: ProfileStore) -> Plane | None:
    return store.plane("/host:CPU")


def _events(store: ProfileStore, round_us: bool = False) -> _Events:
    """Host events of ``/host:CPU`` and device events (a ``stream`` >= 0) of the other planes."""
    xspace = store.format == "xspace"
    corr_sid = store.stat_id("correlation_id" if xspace else "correlation")
    stream_sid = store.stat_id("stream")
    cat_sid = store.stat_id("cat")
    node_cats = np.array([i for i in (store.strings.id(c) for c in _NODE_CATEGORIES) if i >= 0], np.int64)
    sync_cat = store.strings.id("cuda_sync")
    wait_stream_sid = store.stat_id("wait_on_stream")
    wait_record_sid = store.stat_id("wait_on_cuda_event_record_corr_id")
    # Context and event syncs sit on no stream (-1) but are the device's (HTA's GPU filter).
    streamless_sync = np.array([i for i in (store.strings.id(c) for c in (_CONTEXT_SYNC, _EVENT_SYNC)) if i >= 0],
                               np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    for pi, plane in enumerate(store.planes):
        n = plane.n_events
        if n == 0:
            continue
        corr = plane.event_stat(corr_sid).dense_int(n) if corr_sid >= 0 else np.full(n, -1, np.int64)
        rows = np.arange(n, dtype=np.int64)
        if plane.name == "/host:CPU":
            if xspace:
                # XSpace has no categories: every host event with a duration is an operator.
                is_node = np.ones(n, bool)
            else:
                cat = plane.dense_str_ids(cat_sid) if cat_sid >= 0 else np.full(n, -1, np.int32)
                is_node = np.isin(cat, node_cats)
            parts.append((np.full(n, pi, np.int64), rows, plane.line_idx.astype(np.int64), np.full(n, -1, np.int64),
                          plane.start_ps.astype(np.int64), plane.dur_ps.astype(np.int64), plane.name_id, is_node,
                          np.zeros(n, bool), corr, np.full(n, -1, np.int64), np.full(n, -1, np.int64)))
            continue
        if xspace:
            if not plane.name.startswith("/device:GPU"):
                continue
            line_id = plane.line_ids[plane.line_idx]
            stream = np.where((corr >= 0) & (line_id < 0xDEADBEEF), line_id, -1).astype(np.int64)
        elif stream_sid >= 0:
            col = plane.stat_column(stream_sid)
            stream = np.full(n, -1, np.int64)
            ints = (col.kind == KIND_INT64) | (col.kind == KIND_UINT64)  # HTA drops a stream it cannot read as an int
            stream[col.rows[ints]] = col.value[ints]
        else:
            continue
        cat = plane.dense_str_ids(cat_sid) if cat_sid >= 0 and not xspace else np.full(n, -1, np.int32)
        sync = ((cat == sync_cat) & (sync_cat >= 0)) | np.isin(plane.name_id, streamless_sync)
        dev = np.nonzero((stream >= 0) | (sync & (corr >= 0)))[0]
        if dev.shape[0]:
            wait = [plane.event_stat(sid).dense_int(n)[dev] if sid >= 0 else np.full(dev.shape[0], -1, np.int64)
                    for sid in (wait_stream_sid, wait_record_sid)]
            parts.append((np.full(dev.shape[0], pi, np.int64), dev, np.full(dev.shape[0], -1, np.int64), stream[dev],
                          plane.start_ps[dev].astype(np.int64), plane.dur_ps[dev].astype(np.int64), plane.name_id[dev],
                          np.zeros(dev.shape[0], bool), sync[dev], corr[dev], wait[0], wait[1]))
    if not parts:
        z = np.zeros(0, np.int64)
        return _Events(z, z, z, z, z, z, np.zeros(0, np.int32), np.zeros(0, bool), np.zeros(0, bool), z, z, z, z)
    cols: list[np.ndarray] = [np.concatenate(c) for c in zip(*parts, strict=True)]
    cols.append(cols[2] >= 0)  # on the host: a thread (line) of /host:CPU
    if round_us:
        # HTA's default: every event inward to whole microseconds of the trace's clock (a
        # sub-microsecond event can end before it starts; such events drop out of the graph).
        start_r, end_r = _inward_us(store, cols[4], cols[5])
        cols[4], cols[5] = start_r, end_r - start_r
    last = _last_step_start(store, round_us)
    if last is not None:
        # HTA drops the incomplete last step: host events from the last ProfilerStep's start on,
        # and the device events they launched (activity.py's rule, HTA's Trace filter).
        start, corr, on_host = cols[4], cols[9], cols[12]
        keep_host = on_host & (start < last)
        kept_corr = np.unique(corr[keep_host & (corr >= 0)])
        keep = keep_host | (~on_host & np.isin(corr, kept_corr))
        cols = [c[keep] for c in cols]
    plane_i, row, thread, stream, start, dur, name, is_node, is_sync, corr, wait_stream, wait_record, on_host = cols
    # Launch <-> device event by correlation (HTA's index_correlation).
    peer = np.full(plane_i.shape[0], -1, np.int64)
    host = np.nonzero(on_host & (corr >= 0))[0]
    dev = np.nonzero(~on_host & (corr >= 0))[0]
    if host.shape[0] and dev.shape[0]:
        order = np.argsort(corr[host], kind="stable")
        hc = corr[host][order]
        pos = np.clip(np.searchsorted(hc, corr[dev]), 0, hc.shape[0] - 1)
        found = hc[pos] == corr[dev]
        peer[dev[found]] = host[order[pos[found]]]
        peer[host[order[pos[found]]]] = dev[found]
    return _Events(plane_i, row, thread, stream, start, dur, name.astype(np.int32), is_node, is_sync, peer, corr,
                   wait_stream, wait_record)


def _last_step_start(store: ProfileStore, round_us: bool = False) -> int | None:
    """The start of the last ``ProfilerStep`` event, host or GPU annotation (whichever starts
    later), when the profile has two or more step names; else None."""
    names = store.strings.as_list()
    step_ids = np.array([i for i, n in enumerate(names) if STEP_MARKER in n], np.int64)
    if step_ids.shape[0] < 2:
        return None
    starts = [plane.start_ps[np.isin(plane.name_id, step_ids)] for plane in store.planes if plane.n_events]
    found = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    if round_us and found.shape[0]:
        found = _inward_us(store, found, np.zeros_like(found))[0]
    return int(found.max()) if found.shape[0] else None


def annotation_instances(store: ProfileStore, annotation: str, round_us: bool = False) -> list[tuple[str, int, int]]:
    """(name, start_ps, end_ps) of the host events whose name contains ``annotation``, by start
    (HTA's ``instance_id`` counts them in this order)."""
    plane = _host_plane(store)
    if plane is None or not annotation:
        return []
    names = store.strings.as_list()
    ids = np.array([i for i, n in enumerate(names) if annotation in n], np.int64)
    if ids.shape[0] == 0:
        return []
    rows = np.nonzero(np.isin(plane.name_id, ids))[0]
    start = plane.start_ps[rows].astype(np.int64)
    end = start + plane.dur_ps[rows].astype(np.int64)
    if round_us:
        start, end = _inward_us(store, start, end - start)
    last = _last_step_start(store, round_us)
    keep = start < last if last is not None else np.ones(rows.shape[0], bool)  # the incomplete last step is not one
    rows, start, end = rows[keep], start[keep], end[keep]
    order = np.lexsort((rows, start))
    return [(names[int(plane.name_id[r])], int(start[k]), int(end[k]))
            for k, r in zip(order.tolist(), rows[order].tolist(), strict=True)]


def _queue_lengths(store: ProfileStore, ev: _Events) -> np.ndarray:
    """Per event, the length of its stream's queue just after it (launch: +1, device event: -1),
    over the whole trace (HTA's queue length series); -1 for events that are neither."""
    launch_ids = np.array([i for i in (store.strings.id(c) for c in LAUNCH_CALLS) if i >= 0], np.int64)
    is_launch = ev.is_host & np.isin(ev.name_id, launch_ids) & (ev.peer >= 0)
    launches = np.nonzero(is_launch)[0]
    kernels_ = ev.peer[launches]
    idx = np.concatenate([launches, kernels_])
    delta = np.concatenate([np.ones(launches.shape[0], np.int64), -np.ones(kernels_.shape[0], np.int64)])
    stream = ev.stream[np.concatenate([kernels_, kernels_])]
    t = ev.start_ps[idx]
    order = np.lexsort((np.arange(idx.shape[0]), t, stream))
    idx, delta, stream = idx[order], delta[order], stream[order]
    running = np.cumsum(delta)
    first = np.ones(idx.shape[0], bool)
    first[1:] = stream[1:] != stream[:-1]
    base = np.maximum.accumulate(np.where(first, np.arange(idx.shape[0]), 0))
    before = np.concatenate([[0], running])[base]
    out = np.full(ev.n, -1, np.int64)
    out[idx] = running - before
    return out


@dataclass(frozen=True)
class Graph:
    """The critical path graph of one annotation instance: nodes and edges as columns."""

    node_event: np.ndarray  # int64 event of each node
    node_is_start: np.ndarray  # bool
    node_ps: np.ndarray  # int64 time of each node
    src: np.ndarray  # int64 node
    dst: np.ndarray  # int64 node
    weight_ps: np.ndarray  # int64
    edge_type: np.ndarray  # int8
    attributed: np.ndarray  # int64 event an edge is attributed to (-1: none)


def _parents_and_walk(start: np.ndarray, end: np.ndarray, dur: np.ndarray, thread: np.ndarray,
                      order_key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HTA's call stack of each thread: the markers (start and end of each event) sorted as its
    ``compare_events`` sorts them, walked with a stack. Returns (walk event, walk is_start,
    parent of each event): the depth-first order of the call stack tree, where an end closes the
    event on top of the stack (the one that ends when the events nest)."""
    n = start.shape[0]
    ev = np.concatenate([np.arange(n), np.arange(n)]).astype(np.int64)
    is_start = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    t = np.concatenate([start, end])
    d = np.concatenate([dur, dur])
    k = np.concatenate([order_key, order_key])
    # At one time: ends before starts (every duration > 0); starts longest first, then in file
    # order; ends shortest first, then in reverse file order.
    tie_a = np.where(is_start, -d, d)
    tie_b = np.where(is_start, k, -k)
    order = np.lexsort((tie_b, tie_a, is_start, t, np.concatenate([thread, thread])))
    walk_ev, parent = kernels.call_stack_walk(ev[order], is_start[order], np.concatenate([thread, thread])[order], n)
    return walk_ev, is_start[order], parent


def _last_per_launch(ev: _Events, dev: np.ndarray) -> np.ndarray:
    """Of the device events sharing a launch, the one that starts last (HTA's one per launch)."""
    if dev.shape[0] == 0:
        return dev
    order = np.lexsort((dev, ev.start_ps[dev], ev.peer[dev]))
    d = dev[order]
    last = np.ones(d.shape[0], bool)
    last[:-1] = ev.peer[d[1:]] != ev.peer[d[:-1]]
    return np.sort(d[last])


def build_graph(store: ProfileStore, ev: _Events, window: tuple[int, int], hta_compat: bool = False) -> Graph:
    """HTA's CPGraph for the events of ``window`` (see the module doc); ``hta_compat``: one device
    event per launch, as HTA links them."""
    ws, we = window
    host = ev.is_host
    in_win = (ev.start_ps >= ws) & (ev.start_ps <= we) & (ev.dur_ps > 0)
    cpu = np.nonzero(host & in_win)[0]
    # Device events on a stream whose launch starts inside the window; a sync on no stream
    # (Context Sync) counts where it starts itself (HTA clips it with the host events).
    dev_all = np.nonzero(~host & (ev.peer >= 0))[0]
    if hta_compat:
        dev_all = _last_per_launch(ev, dev_all)
    launch = ev.peer[dev_all]
    on_stream = ev.stream[dev_all] >= 0
    dev = dev_all[np.where(on_stream, in_win[launch], in_win[dev_all]) & host[launch]]
    # Nodes: host operators / runtime calls of the window and its device events on a stream.
    node_ev = np.concatenate([cpu[ev.is_node_cat[cpu]], dev[ev.stream[dev] >= 0]])
    m = node_ev.shape[0]
    n_start = ev.start_ps[node_ev]
    n_end = n_start + ev.dur_ps[node_ev]
    node_event = np.concatenate([node_ev, node_ev])
    node_ps = np.concatenate([n_start, n_end])
    node_is_start = np.concatenate([np.ones(m, bool), np.zeros(m, bool)])
    by_time = np.argsort(node_ps, kind="stable")
    node_event, node_ps, node_is_start = node_event[by_time], node_ps[by_time], node_is_start[by_time]
    start_node = np.full(ev.n, -1, np.int64)
    end_node = np.full(ev.n, -1, np.int64)
    ids = np.arange(2 * m, dtype=np.int64)
    start_node[node_event[node_is_start]] = ids[node_is_start]
    end_node[node_event[~node_is_start]] = ids[~node_is_start]

    blocking_ids = np.array([i for i in (store.strings.id(c) for c in BLOCKING_CALLS) if i >= 0], np.int64)
    edges: list[tuple[np.ndarray, ...]] = []

    # --- host call stacks (every host event of the window, nodes or not, shapes the stack) ---
    if cpu.shape[0]:
        c_start = ev.start_ps[cpu]
        c_dur = ev.dur_ps[cpu]
        walk, walk_start, parent_local = _parents_and_walk(c_start, c_start + c_dur, c_dur, ev.thread[cpu], cpu)
        parent = np.where(parent_local >= 0, cpu[np.maximum(parent_local, 0)], -1)
        w_ev = cpu[walk]
        keep = ev.is_node_cat[w_ev]
        w_ev, w_start, w_local = w_ev[keep], walk_start[keep], walk[keep]
        w_thread = ev.thread[w_ev]
        w_node = np.where(w_start, start_node[w_ev], end_node[w_ev])
        # Open node events after each marker, per thread.
        step = np.where(w_start, 1, -1)
        depth_after = np.cumsum(step)
        first = np.ones(w_ev.shape[0], bool)
        first[1:] = w_thread[1:] != w_thread[:-1]
        base = np.maximum.accumulate(np.where(first, np.arange(w_ev.shape[0]), 0))
        depth_after = depth_after - np.concatenate([[0], depth_after])[base]
        same = ~first[1:]
        a, b = np.arange(w_ev.shape[0] - 1)[same], np.arange(1, w_ev.shape[0])[same]
        closes_top = ~w_start[a] & (depth_after[a] == 0)
        src, dst = w_node[a], w_node[b]
        weight = node_ps[dst] - node_ps[src]
        into_blocking_end = ~w_start[b] & np.isin(ev.name_id[w_ev[b]], blocking_ids)
        weight = np.where(closes_top | into_blocking_end, 0, weight)
        etype = np.where(closes_top, DEPENDENCY, OPERATOR).astype(np.int8)
        # Attribution: from a start -> that event; end -> end: the ending one; end -> start: the
        # parent (in the full call stack) of the event that just ended.
        attributed = np.where(w_start[a], w_ev[a], np.where(~w_start[b], w_ev[b], parent[w_local[a]]))
        attributed = np.where(closes_top, -1, attributed)
        edges.append((src, dst, weight, etype, attributed))

    # --- device events ---
    syncs = dev[ev.is_sync[dev]]
    dev = dev[~ev.is_sync[dev]]
    sync_names = {c: store.strings.id(c) for c in (_CONTEXT_SYNC, _STREAM_SYNC, _EVENT_SYNC, _STREAM_WAIT_EVENT)}
    # Stream Wait Event: the next kernel launched on its stream waits for the kernel before the
    # recorded CUDA event (HTA's kernel_sync), when HTA's loop meets the wait first (by its end).
    waits = syncs[(ev.name_id[syncs] == sync_names[_STREAM_WAIT_EVENT]) & (ev.stream[syncs] >= 0)]
    waits = waits[np.argsort(ev.start_ps[waits] + ev.dur_ps[waits], kind="stable")]
    w_src = _recorded_kernels(store, ev, waits)
    w_dst = _next_launched_kernels(store, ev, waits)
    kernel_sync = np.full(ev.n, -1, np.int64)
    use = (w_src >= 0) & (w_dst >= 0)
    use &= ev.start_ps[waits] + ev.dur_ps[waits] < ev.start_ps[np.maximum(w_dst, 0)]
    kernel_sync[w_dst[use]] = w_src[use]  # a later wait on the same kernel wins, as in HTA's dict
    if dev.shape[0]:
        q = _queue_lengths(store, ev)
        order = np.argsort(ev.start_ps[dev], kind="stable")
        d = dev[order]
        stream = ev.stream[d]
        by_stream = np.lexsort((np.arange(d.shape[0]), stream))
        prev = np.full(d.shape[0], -1, np.int64)
        s_sorted = stream[by_stream]
        has_prev = np.zeros(d.shape[0], bool)
        has_prev[1:] = s_sorted[1:] == s_sorted[:-1]
        prev_sorted = np.where(has_prev, np.concatenate([[-1], by_stream[:-1]]), -1)
        prev[by_stream] = prev_sorted
        launch_ev = ev.peer[d]
        launch_ps = ev.start_ps[launch_ev]
        prev_end_ps = np.where(prev >= 0, ev.start_ps[d[np.maximum(prev, 0)]] + ev.dur_ps[d[np.maximum(prev, 0)]], -1)
        ks = kernel_sync[d]
        ks_node = np.where(ks >= 0, end_node[np.maximum(ks, 0)], -1)
        has_ks = ks_node >= 0
        ks_end_ps = np.where(has_ks, node_ps[np.maximum(ks_node, 0)], -1)
        idle = ((q[launch_ev] == 1) & (q[d] == 0) & ((prev < 0) | (prev_end_ps < launch_ps))
                & (~has_ks | (ks_end_ps < launch_ps)))
        launch_node = start_node[launch_ev]
        use_launch = idle & (launch_node >= 0)
        use_kk = ~idle & (prev >= 0) & (~has_ks | (ks_end_ps < prev_end_ps))
        # Per device event: its span, its wait on another stream's kernel, then its launch or
        # kernel-kernel edge (HTA's loop order).
        n_d = d.shape[0]
        span_src, span_dst = start_node[d], end_node[d]
        e_src = np.full((n_d, 3), -1, np.int64)
        e_dst = np.full((n_d, 3), -1, np.int64)
        e_w = np.zeros((n_d, 3), np.int64)
        e_t = np.zeros((n_d, 3), np.int8)
        e_a = np.full((n_d, 3), -1, np.int64)
        e_src[:, 0], e_dst[:, 0], e_t[:, 0], e_a[:, 0] = span_src, span_dst, OPERATOR, d
        e_w[:, 0] = node_ps[span_dst] - node_ps[span_src]
        e_src[:, 1], e_dst[:, 1], e_t[:, 1] = ks_node, span_src, SYNC_DEPENDENCY
        prev_end_node = np.where(prev >= 0, end_node[d[np.maximum(prev, 0)]], -1)
        e_src[:, 2] = np.where(use_launch, launch_node, np.where(use_kk, prev_end_node, -1))
        e_dst[:, 2] = span_src
        e_t[:, 2] = np.where(use_launch, LAUNCH_DELAY, KERNEL_KERNEL_DELAY)
        e_a[:, 2] = np.where(use_kk, d[np.maximum(prev, 0)], -1)
        ok = e_src[:, 2] >= 0
        e_w[:, 2] = np.where(ok, node_ps[span_src] - node_ps[np.maximum(e_src[:, 2], 0)], 0)
        flat_ok = np.stack([np.ones(n_d, bool), has_ks, ok], axis=1).reshape(-1)
        edges.append(tuple(x.reshape(-1)[flat_ok] for x in (e_src, e_dst, e_w, e_t, e_a)))
    # Event Sync: the host call (cudaEventSynchronize) waited for the kernel before the event.
    ev_syncs = syncs[ev.name_id[syncs] == sync_names[_EVENT_SYNC]] if sync_names[_EVENT_SYNC] >= 0 else syncs[:0]
    if ev_syncs.shape[0]:
        ev_syncs = ev_syncs[np.argsort(ev.start_ps[ev_syncs] + ev.dur_ps[ev_syncs], kind="stable")]
        src_k = _recorded_kernels(store, ev, ev_syncs)
        s_node = np.where(src_k >= 0, end_node[np.maximum(src_k, 0)], -1)
        w_node = end_node[ev.peer[ev_syncs]]
        ok_e = (s_node >= 0) & (w_node >= 0)
        n_e = int(ok_e.sum())
        edges.append((s_node[ok_e], w_node[ok_e], np.zeros(n_e, np.int64), np.full(n_e, SYNC_DEPENDENCY, np.int8),
                      np.full(n_e, -1, np.int64)))
    stream_waits = np.array([i for i in (sync_names[_CONTEXT_SYNC], sync_names[_STREAM_SYNC]) if i >= 0], np.int64)
    syncs = syncs[np.isin(ev.name_id[syncs], stream_waits)]
    if syncs.shape[0] and dev.shape[0]:
        edges.append(_sync_edges(ev, dev, syncs, end_node))
    if edges:
        src, dst, weight, etype, attributed = (np.concatenate(c) for c in zip(*edges, strict=True))
    else:
        z = np.zeros(0, np.int64)
        src, dst, weight, etype, attributed = z, z, z, np.zeros(0, np.int8), z
    return Graph(node_event, node_is_start, node_ps, src.astype(np.int64), dst.astype(np.int64),
                 weight.astype(np.int64), etype.astype(np.int8), attributed.astype(np.int64))


def _launches(store: ProfileStore, ev: _Events) -> np.ndarray:
    """Host launch calls (HTA's runtime launch events) that have a device event, by start."""
    launch_ids = np.array([i for i in (store.strings.id(c) for c in LAUNCH_CALLS) if i >= 0], np.int64)
    rows = np.nonzero(ev.is_host & np.isin(ev.name_id, launch_ids) & (ev.peer >= 0))[0]
    return rows[np.argsort(ev.start_ps[rows], kind="stable")]


def _recorded_kernels(store: ProfileStore, ev: _Events, syncs: np.ndarray) -> np.ndarray:
    """Per sync on a CUDA event: the device event that event waits for (HTA): the last launch on
    the event's recorded stream and device at or before its ``cudaEventRecord`` (the host call with
    the sync's ``wait_on_cuda_event_record_corr_id``); -1 when any link is missing."""
    out = np.full(syncs.shape[0], -1, np.int64)
    rec_id = store.strings.id("cudaEventRecord")
    if rec_id < 0 or syncs.shape[0] == 0:
        return out
    records = np.nonzero(ev.is_host & (ev.name_id == rec_id) & (ev.corr >= 0))[0]
    records = records[np.argsort(ev.corr[records], kind="stable")]
    if records.shape[0] == 0:
        return out
    pos = np.clip(np.searchsorted(ev.corr[records], ev.wait_record[syncs]), 0, records.shape[0] - 1)
    found = (ev.corr[records[pos]] == ev.wait_record[syncs]) & (ev.wait_stream[syncs] >= 0)
    record_ps = ev.start_ps[records[pos]]
    launches = _launches(store, ev)
    kernel = ev.peer[launches]
    for plane, stream in {(int(a), int(b)) for a, b in zip(ev.plane[syncs][found].tolist(),
                                                             ev.wait_stream[syncs][found].tolist(), strict=True)}:
        on = launches[(ev.plane[kernel] == plane) & (ev.stream[kernel] == stream)]
        sel = np.nonzero(found & (ev.plane[syncs] == plane) & (ev.wait_stream[syncs] == stream))[0]
        k = np.searchsorted(ev.start_ps[on], record_ps[sel], side="right") - 1
        out[sel[k >= 0]] = ev.peer[on[k[k >= 0]]]
    return out


def _next_launched_kernels(store: ProfileStore, ev: _Events, waits: np.ndarray) -> np.ndarray:
    """Per ``Stream Wait Event``: the device event of the first launch on its stream from the same
    host thread at or after its ``cudaStreamWaitEvent`` call (HTA's dependent kernel); -1 if none."""
    out = np.full(waits.shape[0], -1, np.int64)
    launches = _launches(store, ev)
    kernel = ev.peer[launches]
    call = ev.peer[waits]
    ok = call >= 0
    for thread, stream in {(int(a), int(b)) for a, b in zip(ev.thread[call[ok]].tolist(), ev.stream[waits][ok].tolist(),
                                                             strict=True)}:
        on = launches[(ev.thread[launches] == thread) & (ev.stream[kernel] == stream)]
        sel = np.nonzero(ok & (ev.thread[np.maximum(call, 0)] == thread) & (ev.stream[waits] == stream))[0]
        k = np.searchsorted(ev.start_ps[on], ev.start_ps[call[sel]], side="left")
        hit = k < on.shape[0]
        out[sel[hit]] = ev.peer[on[k[hit]]]
    return out


def _sync_edges(ev: _Events, dev: np.ndarray, syncs: np.ndarray, end_node: np.ndarray) -> tuple[np.ndarray, ...]:
    """HTA's device -> host sync edges (weight 0): a ``Stream Sync`` waits for the last device
    event of its stream, a ``Context Sync`` for the last one of every stream, "last" in HTA's
    order (device events by start, syncs by end; device events first at a tie); the edge runs
    from that event's end to the end of the host call that waited (``Event Sync`` and ``Stream
    Wait Event``: build_graph)."""
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    sync_end = ev.start_ps[syncs] + ev.dur_ps[syncs]
    waiter = end_node[ev.peer[syncs]]
    dev_start = ev.start_ps[dev]
    # Streams in the order HTA's loop first meets them (its dict of last events per stream).
    streams = ev.stream[dev][np.argsort(dev_start, kind="stable")]
    _, first = np.unique(streams, return_index=True)
    for stream in streams[np.sort(first)].tolist():
        on = dev[ev.stream[dev] == stream]
        on = on[np.argsort(ev.start_ps[on], kind="stable")]
        # The last device event of the stream processed before each sync.
        k = np.searchsorted(ev.start_ps[on], sync_end, side="right") - 1
        waits = (k >= 0) & (waiter >= 0)
        is_context = ev.stream[syncs] < 0
        waits &= is_context | (ev.stream[syncs] == stream)
        src.append(end_node[on[np.maximum(k, 0)]][waits])
        dst.append(waiter[waits])
    s = np.concatenate(src) if src else np.zeros(0, np.int64)
    d = np.concatenate(dst) if dst else np.zeros(0, np.int64)
    return (s, d, np.zeros(s.shape[0], np.int64), np.full(s.shape[0], SYNC_DEPENDENCY, np.int8),
            np.full(s.shape[0], -1, np.int64))


def longest_path(graph: Graph) -> np.ndarray:
    """The edges (indices into the graph's edge columns) of the longest path, in path order."""
    n = graph.node_event.shape[0]
    if n == 0 or graph.src.shape[0] == 0:
        return np.zeros(0, np.int64)
    w = np.where(graph.weight_ps <= _NEGATIVE_CLAMP_PS, 0, graph.weight_ps)
    return kernels.dag_longest_path(n, graph.src, graph.dst, w)


def bounds_of(store: ProfileStore, ev: _Events, graph: Graph, path: np.ndarray) -> np.ndarray:
    """HTA's ``bound_by`` of each path edge (index into BOUNDS, -1 for the dependencies)."""
    t = graph.edge_type[path]
    att = graph.attributed[path]
    out = np.full(path.shape[0], _NONE, np.int64)
    out[t == KERNEL_KERNEL_DELAY] = _KK
    out[t == LAUNCH_DELAY] = _LAUNCH
    op = (t == OPERATOR) & (att >= 0)
    if op.any():
        a = att[op]
        names = store.strings.lookup(ev.name_id[a])
        comm = np.array([n.startswith("nccl") and "Kernel" in n[4:] for n in names], bool)
        out[op] = np.where(ev.stream[a] < 0, _CPU, np.where(comm, _GPU_COMM, _GPU_COMPUTE))
    return out


# --- the tool ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Analysis:
    """One instance's critical path: the graph, the path's edges and their bounds."""

    events: _Events
    graph: Graph
    path: np.ndarray  # edge indices, in path order
    bounds: np.ndarray  # per path edge, index into BOUNDS or -1


def analyse(store: ProfileStore, window: tuple[int, int], round_us: bool = False,
            hta_compat: bool = False) -> Analysis:
    ev: _Events = store.memo(("critical_path_events", round_us), lambda: _events(store, round_us))
    graph = build_graph(store, ev, window, hta_compat)
    try:
        path = longest_path(graph)
    except ValueError as e:
        # Only a trace whose times contradict its links (a kernel before its launch) can close a
        # cycle; HTA stops there too ("Graph is not valid"). A 422 naming the file, not a 500.
        raise ProfileReadError(store.source_path, f"critical path: the event graph is not acyclic ({e})") from e
    return Analysis(ev, graph, path, bounds_of(store, ev, graph, path))


BREAKDOWN_COLUMNS = [
    Column("bound_by", "Bound by", "str", "", "HTA's bound_by of the path's edges"),
    Column("duration_us", "Duration", "float", "us", "of the path's edges with this bound"),
    Column("percent", "Share of path", "float", "%", "HTA's CPGraph.summary()"),
    Column("edges", "Edges", "int", "", "path edges with this bound"),
]

PATH_COLUMNS = [
    Column("order", "#", "int", "", "position on the path"),
    Column("type", "Edge", "str", "", "operator (an event's own time), dependency, kernel_launch_delay, "
           "kernel_kernel_delay, sync_dependency"),
    Column("bound_by", "Bound by", "str"),
    Column("duration_us", "Duration", "float", "us", "the edge's weight"),
    Column("event", "Event", "str", "", "the event the edge is attributed to (HTA), else its target"),
    Column("from_event", "From", "str", "", "event of the edge's first node"),
    Column("to_event", "To", "str", "", "event of the edge's last node"),
    Column("start_us", "Start", "float", "us", "time of the edge's first node, from the profile start"),
    Column("end_us", "End", "float", "us", "time of the edge's last node"),
    Column("plane", "Plane", "int", "", "plane of the event (trace viewer)"),
    Column("row", "Row", "int", "", "row of the event in its plane (trace viewer)"),
]


def _pick_instance(instances: list[tuple[str, int, int]], annotation: str, instance: int, step: int) -> int:
    if step >= 0:
        for i, (name, _, _) in enumerate(instances):
            if name.rsplit("#", 1)[-1] == str(step):
                return i
        raise OptionError(f"option step={step}: no {annotation!r} event of step {step}; steps: "
                          + ", ".join(n for n, _, _ in instances[:20]))
    if instance >= len(instances):
        raise OptionError(f"option instance={instance} is out of range: the profile has {len(instances)} "
                          f"instance(s) of {annotation!r}")
    return instance


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> CriticalPathResult:
    annotation = str(options.get("annotation", DEFAULT_ANNOTATION))
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    want_rank = int(options.get("rank", -1))
    if want_rank < 0:
        rank, store = ranked[0]
    else:
        found = [rs for rs in ranked if rs[0] == want_rank]
        if not found:
            raise OptionError(f"option rank={want_rank}: no such rank; ranks: {[r for r, _ in ranked]}")
        rank, store = found[0]
    round_us = options.get("times", "ns") == "us"
    hta_compat = bool(options.get("hta_compat", False))
    instances = annotation_instances(store, annotation, round_us)
    if not instances:
        raise NoData(f"{store.host}: no host event whose name contains {annotation!r} (the critical path "
                     "is taken over one instance of an annotation, e.g. ProfilerStep)")
    k = _pick_instance(instances, annotation, int(options.get("instance", 0)), int(options.get("step", -1)))
    name, ws, we = instances[k]
    res: Analysis = store.memo(("critical_path", annotation, k, round_us, hta_compat),
                               lambda: analyse(store, (ws, we), round_us, hta_compat))
    ev, g, path, bounds = res.events, res.graph, res.path, res.bounds
    w = g.weight_ps[path]
    total_ps = int(w.sum())
    strings = store.strings
    breakdown: dict[str, list[Any]] = {c.name: [] for c in BREAKDOWN_COLUMNS}
    for b, label in enumerate(BOUNDS):
        m = bounds == b
        if not m.any():
            continue
        ps = int(w[m].sum())
        breakdown["bound_by"].append(label)
        breakdown["duration_us"].append(ps / _PS_PER_US)
        breakdown["percent"].append(100.0 * ps / total_ps if total_ps else 0.0)
        breakdown["edges"].append(int(m.sum()))
    src, dst = g.src[path], g.dst[path]
    src_ev, dst_ev = g.node_event[src], g.node_event[dst]
    att = g.attributed[path]
    shown = np.where(att >= 0, att, dst_ev)
    rows = {
        "order": np.arange(path.shape[0]),
        "type": [EDGE_TYPES[t] for t in g.edge_type[path].tolist()],
        "bound_by": [BOUNDS[b] if b >= 0 else "" for b in bounds.tolist()],
        # HTA keeps an edge between -1 and 0 us (a nanosecond parent that ends a fraction of a
        # microsecond before its child) at its negative weight; its time shown is 0.
        "duration_us": np.maximum(w, 0) / _PS_PER_US,
        "event": strings.lookup(ev.name_id[shown]) if path.shape[0] else [],
        "from_event": strings.lookup(ev.name_id[src_ev]) if path.shape[0] else [],
        "to_event": strings.lookup(ev.name_id[dst_ev]) if path.shape[0] else [],
        "start_us": g.node_ps[src] / _PS_PER_US,
        "end_us": g.node_ps[dst] / _PS_PER_US,
        "plane": ev.plane[shown],
        "row": ev.row[shown],
    }
    # The overlay: the path's events (as the trace viewer finds them: plane, row, line, start,
    # duration, depth) and one arrow per edge between two events (indices into the events, and
    # the times of the edge's two nodes).
    path_events = np.unique(np.concatenate([src_ev, dst_ev])) if path.shape[0] else np.zeros(0, np.int64)
    o_plane, o_row = ev.plane[path_events], ev.row[path_events]
    o_line = np.array([int(store.planes[p].line_idx[r]) for p, r in zip(o_plane.tolist(), o_row.tolist(), strict=True)],
                      np.int64)
    o_depth = np.array([int(store.planes[p].depth[r]) for p, r in zip(o_plane.tolist(), o_row.tolist(), strict=True)],
                       np.int64)
    # Arrows for the edges between events that HTA's overlay draws (dependency, launch delay,
    # sync) and the gaps between kernels; an operator edge stays inside one call stack, whose
    # outlined events already show it (an arrow per nesting step hid the events under them).
    arrows = (src_ev != dst_ev) & (g.edge_type[path] != OPERATOR)
    overlay: CriticalPathOverlay = {
        "events": [[int(x) for x in e] for e in zip(o_plane.tolist(), o_row.tolist(), o_line.tolist(),
                                                     ev.start_ps[path_events].tolist(), ev.dur_ps[path_events].tolist(),
                                                     o_depth.tolist(), strict=True)],
        "flows": [[int(a), int(b), int(c), int(d)] for a, b, c, d in zip(
            np.searchsorted(path_events, src_ev[arrows]).tolist(),
            np.searchsorted(path_events, dst_ev[arrows]).tolist(),
            g.node_ps[src[arrows]].tolist(), g.node_ps[dst[arrows]].tolist(), strict=True)],
    }
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "host": store.host, "rank": rank,
        "ranks": [r for r, _ in ranked], "hosts": [s.host for _, s in ranked],
        "annotation": annotation, "instance": k, "times": "us" if round_us else "ns", "hta_compat": hta_compat,
        "instances": [n for n, _, _ in instances], "step_name": name,
        "window_start_ps": ws, "window_end_ps": we,
        "nodes": int(np.unique(np.concatenate([g.src, g.dst])).shape[0]), "edges": int(g.src.shape[0]),
        "path_edges": int(path.shape[0]),
        "path_events": int(path_events.shape[0]), "total_us": total_ps / _PS_PER_US,
        "breakdown_percent": dict(zip(breakdown["bound_by"], breakdown["percent"], strict=True)),
        "overlay": overlay,
        "tables": {
            "breakdown": Table.from_columns(BREAKDOWN_COLUMNS, breakdown, default_sort="duration_us"),
            "path": Table.from_columns(PATH_COLUMNS, rows, default_sort="order", default_desc=False),
        },
    }


def _parse_annotation(text: str) -> str:
    # A plain substring, as HTA matches it (never a regex): bounded.
    if not text.strip():
        raise ValueError("must not be empty")
    return text[:256]


def _parse_int_or_unset(text: str) -> int:
    value = int(text)
    if value < -1:
        raise ValueError("must be >= 0 (or -1: unset)")
    return value


def _parse_times(text: str) -> str:
    if text not in ("ns", "us"):
        raise ValueError("expected ns or us")
    return text


def available(store: Any) -> bool:
    """Listed where the default annotation exists (a run without ``ProfilerStep`` spans would
    open on "no data"); asked by name with another ``annotation``, it answers for any trace."""
    if getattr(store, "format", "") != "chrome_trace" or not has_device_activity(store):
        return False
    strings = getattr(store, "strings", None)
    return strings is not None and any(DEFAULT_ANNOTATION in s for s in strings.as_list())


OPTIONS = (
    Option("rank", _parse_int_or_unset, -1, "the rank (trace) to analyse; -1: the first", min_value=-1),
    Option("annotation", _parse_annotation, DEFAULT_ANNOTATION,
           "host events whose name contains this text bound the analysis (HTA's annotation)"),
    Option("instance", parse_nonneg_int, 0, "which of those events, by start (HTA's instance_id)"),
    Option("step", _parse_int_or_unset, -1, "the event named <annotation>#<step> instead of an instance; -1: unset",
           min_value=-1),
    Option("times", _parse_times, "ns", "ns: the profile's own times; us: rounded inward to whole microseconds, "
           "as HTA does by default", choices=("ns", "us"), advanced=True),
    Option("hta_compat", parse_bool, False, "one device event per launch, as HTA 0.5.0 links them (a "
           "cudaGraphLaunch's last kernel only); off: every kernel the launch ran", advanced=True),
)

TOOLS = (
    Tool(
        name=TOOL, title="Critical path (HTA)", compute=compute, available=available, options=OPTIONS,
        multi_host=True,
        description="HTA's critical path analysis: the chain of operators, launches and kernels that bounds a step.",
        result=CriticalPathResult, needs=frozenset({"devices", "kineto"}),
        requires="a PyTorch trace with operators, kernels and their links (correlation ids) inside an annotation such"
                 " as ProfilerStep#N.",
        how_to=(rec.TORCH_TRACE,),
    ),
)
