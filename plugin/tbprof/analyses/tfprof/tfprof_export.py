"""Exports of a tfprof view: a Chrome trace timeline (JSON) and a gzipped pprof profile.

Timeline, as tfprof's ``-output timeline`` lays it out:

* scope and code views: a flame chart, not a time line. Process ``Scope:<d>`` holds the
  nodes at depth d; a node spans its total execution time and its children (those with a
  positive total) are laid side by side from its start, so widths add up like a profile.
* graph view (needs one step): the real kernel executions of the displayed nodes of that
  step, one process per device (``Op scheduling threads: <dev>``, or ``Op execution
  threads:`` for stream devices), stacked into lanes so that no two overlap, with flow
  arrows from an input on another device. tfprof also draws accelerator memory counters;
  tbprof does not (see docs/differences.md).
* op view: tfprof has no timeline for it; neither has tbprof.

pprof (``pprof -http`` reads it): the code view as tfprof writes it (a sample per graph
node under each displayed leaf call site, its stack the displayed call path) and, as a
tbprof extension, the other views with the display path as the stack and each displayed
row's own value as a sample.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from typing import Any

import numpy as np

from tbprof.analyses.tfprof.tfprof_engine import METRICS, ViewResult
from tbprof.errors import BadParameter
from tbprof.protos import pprof_profile_pb2
from tbprof.store.tfprof import TfprofProfile


class ExportError(BadParameter):
    """An export the view cannot give."""


# --- Chrome trace timeline ------------------------------------------------------------------------


def _region(ts: int, dur: int, pid: int, tid: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": "Op", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _process(name: str, pid: int) -> dict[str, Any]:
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def _tree_timeline(result: ViewResult) -> list[dict[str, Any]]:
    total_slot = METRICS.index("exec_micros")
    events: list[dict[str, Any]] = []
    seen_depths: set[int] = set()
    # (row, start, duration, depth)
    stack = [(0, 0, result.root.total_stats[total_slot], 0)]
    while stack:
        row, start, duration, depth = stack.pop()
        if depth not in seen_depths:
            events.append(_process(f"Scope:{depth}", depth))
            seen_depths.add(depth)
        name = result.rows[row].name
        events.append(_region(start, duration, depth, 0, name, {"name": name, "op": name}))
        placed = []
        child_start = start
        for c in result.children[row]:
            total = result.rows[c].total_stats[total_slot]
            if total <= 0:
                continue
            placed.append((c, child_start, total, depth + 1))
            child_start += total
        stack.extend(reversed(placed))
    return events


def _trackable_nodes(p: TfprofProfile, step: int) -> set[int]:
    """Nodes tfprof draws for a step: a record with a start time, and known devices."""
    rows = np.nonzero((p.execs.step == step) & (p.execs.values["all_start_micros"] != 0))[0]
    return {g for g in p.execs.node[rows].tolist() if p.canonical_device[g] and p.host_device[g]}


def _graph_timeline(p: TfprofProfile, result: ViewResult, step: int) -> list[dict[str, Any]]:
    k = p.kernels
    # Kernel executions of each node in this step, as tfprof's op_execs map orders them:
    # by device name, accelerator records before CPU ones, then as recorded.
    picked = np.nonzero(k.step == step)[0].tolist()
    picked.sort(key=lambda i: (p.devices[int(k.device[i])], not bool(k.accelerator[i]), i))
    by_node: dict[int, list[int]] = {}
    for i in picked:
        by_node.setdefault(int(k.node[i]), []).append(i)
    trackable = _trackable_nodes(p, step)
    metadata: list[dict[str, Any]] = []
    pids: dict[str, int] = {}
    tnodes: dict[str, dict[int, tuple[int, int]]] = {}  # device -> start -> (graph node, exec micros)
    # Pre-order over the displayed graph (each node is displayed once).
    stack = list(reversed(result.children[0]))
    while stack:
        row = stack.pop()
        g = result.rows[row].node
        if g in trackable:
            for i in by_node.get(g, []):
                device = p.devices[int(k.device[i])]
                if device not in pids:
                    pids[device] = len(pids)
                    kind = "Op execution threads: " if "stream" in device else "Op scheduling threads: "
                    metadata.append(_process(kind + device, pids[device]))
                tnodes.setdefault(device, {}).setdefault(int(k.start_micros[i]), (g, int(k.exec_micros[i])))
        stack.extend(reversed(result.children[row]))
    regions: list[tuple[int, int, int, dict[str, Any]]] = []
    for device in sorted(tnodes):
        lanes: list[list[tuple[int, int]]] = []  # per lane: (start, end) in start order
        for start in sorted(tnodes[device]):
            g, dur = tnodes[device][start]
            end = start + dur
            lane = -1
            for li, lane_items in enumerate(lanes):
                lane = li
                # tfprof walks the lane from its latest start back to the first one that
                # ends strictly before this start; any overlap (end > start) rejects the lane.
                for _, e in reversed(lane_items):
                    if e > start:
                        lane = -1
                        break
                    if start > e:
                        break
                if lane >= 0:
                    break
            if lane < 0:
                lanes.append([(start, end)])
                lane = len(lanes) - 1
            else:
                lanes[lane].append((start, end))
            name = p.names[g]
            regions.append((pids[device], lane, start, _region(start, dur, pids[device], lane, name,
                                                               {"name": name})))
    regions.sort(key=lambda r: (r[0], r[1], r[2]))
    return metadata + [r[3] for r in regions]


def timeline_trace(p: TfprofProfile, result: ViewResult) -> dict[str, Any]:
    """The Chrome trace JSON object of a view (``{"traceEvents": [...]}``)."""
    if result.view == "op":
        raise ExportError("the op view is a list of op types and has no timeline (as in tfprof); "
                          "use the scope, graph or code view")
    if result.view == "graph":
        if result.options.step < 0:
            raise ExportError(f"the graph view's timeline shows one step: choose step= one of {p.steps}")
        events = _graph_timeline(p, result, result.options.step)
    else:
        events = _tree_timeline(result)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": "tbprof tfprof_views", "view": result.view,
                          "step": result.options.step}}


# --- pprof -------------------------------------------------------------------------------------

# pprof metric -> (METRICS slot, unit, comment).
PPROF_METRICS = {
    "micros": ("exec_micros", "microseconds", "Sum of accelerator and CPU execution time."),
    "accelerator_micros": ("accelerator_exec_micros", "microseconds", "Accelerator execution time."),
    "cpu_micros": ("cpu_exec_micros", "microseconds", "CPU execution time."),
    "bytes": ("requested_bytes", "bytes", "Sum of the memory the operations requested (deallocations not "
                                          "subtracted)."),
    "peak_bytes": ("peak_bytes", "bytes", "Sum of the operations' peak memory."),
    "residual_bytes": ("residual_bytes", "bytes", "Sum of the memory still allocated when operations finished."),
    "output_bytes": ("output_bytes", "bytes", "Sum of the operations' output sizes."),
    "params": ("parameters", "count", "Model parameters."),
    "float_ops": ("float_ops", "count", "Float operations (only ops with registered statistics)."),
}


class _Strings:
    def __init__(self) -> None:
        self.items = [""]
        self.ids = {"": 0}

    def __call__(self, text: str) -> int:
        i = self.ids.get(text)
        if i is None:
            i = self.ids[text] = len(self.items)
            self.items.append(text)
        return i


class _PprofBuilder:
    def __init__(self, metric: str) -> None:
        self.s = _Strings()
        self.functions: dict[tuple[str, str, int], int] = {}
        self.locations: dict[tuple[str, str, int], tuple[int, int]] = {}  # key -> (id, function id)
        self.location_lines: dict[int, int] = {}
        self.samples: dict[str, tuple[list[int], list[int], str]] = {}
        self.metric = metric

    def function(self, file: str, name: str, start_line: int) -> int:
        key = (file, name, start_line)
        fid = self.functions.get(key)
        if fid is None:
            fid = self.functions[key] = len(self.functions) + 1
        return fid

    def location(self, file: str, line: int, called: str, called_file: str, called_start: int) -> int:
        key = (file, called, line)
        hit = self.locations.get(key)
        if hit is None:
            fid = self.function(called_file, called, called_start)
            hit = self.locations[key] = (len(self.locations) + 1, fid)
            self.location_lines[hit[0]] = line
        return hit[0]

    def sample(self, label: str, stack: Sequence[int], value: int) -> None:
        key = label
        while key in self.samples:
            key += "@"
        self.samples[key] = (list(stack), [1, value], label)

    def build(self) -> bytes:
        prof = pprof_profile_pb2.Profile()
        _, unit, comment = PPROF_METRICS[self.metric]
        prof.sample_type.add(type=self.s("count"), unit=self.s("count"))
        prof.sample_type.add(type=self.s(self.metric), unit=self.s(unit))
        prof.comment.append(self.s(comment))
        label_key = self.s("graph node:")
        for key in sorted(self.samples):
            stack, values, label = self.samples[key]
            sample = prof.sample.add(location_id=stack, value=values)
            sample.label.add(key=label_key, str=self.s(label))
        for (file, name, start), fid in sorted(self.functions.items(), key=lambda kv: kv[1]):
            base = file.rsplit("/", 1)[-1]
            base = base[:base.rfind(".")] if "." in base else base
            display = f"{base}:{name}" if file else name
            prof.function.add(id=fid, name=self.s(display), filename=self.s(file), start_line=max(start, 0))
        for _key, (lid, fid) in sorted(self.locations.items(), key=lambda kv: kv[1][0]):
            prof.location.add(id=lid, line=[pprof_profile_pb2.Line(function_id=fid, line=self.location_lines[lid])])
        prof.string_table.extend(self.s.items)
        return prof.SerializeToString()


def _code_pprof(p: TfprofProfile, result: ViewResult, b: _PprofBuilder, slot: int) -> None:
    stats = p.node_stats(result.options.step)
    values = stats[METRICS[slot]]
    rows = result.rows
    # All (not only displayed) code-tree leaves below a displayed leaf carry its samples; the
    # view result keeps displayed rows, whose graph nodes are the accounted members.
    stack: list[tuple[int, list[int]]] = [(0, [])]
    while stack:
        row, call_ids = stack.pop()
        children = result.children[row]
        has_trace = rows[row].trace is not None
        if not children and has_trace:
            for g in _leaf_members(result, row):
                b.sample(p.names[g], list(reversed(call_ids)), int(values[g]))
        for c in reversed(children):
            ids = call_ids
            if has_trace:
                caller, callee = rows[row].trace, rows[c].trace
                assert caller is not None and callee is not None
                ids = [*call_ids, b.location(caller[0], caller[1], callee[2], callee[0], callee[3])]
            stack.append((c, ids))


def _leaf_members(result: ViewResult, row: int) -> tuple[int, ...]:
    return result.rows[row].leaf_graph_nodes


def _tree_pprof(p: TfprofProfile, result: ViewResult, b: _PprofBuilder, slot: int) -> None:
    rows = result.rows
    stack: list[tuple[int, list[int]]] = [(c, []) for c in reversed(result.children[0])]
    while stack:
        row, path = stack.pop()
        name = rows[row].name
        loc = b.location(name, 0, name, "", 0)
        here = [*path, loc]
        value = rows[row].self_stats[slot]
        if value:
            b.sample(name, list(reversed(here)), value)
        for c in reversed(result.children[row]):
            stack.append((c, here))


def pprof_gz(p: TfprofProfile, result: ViewResult, metric: str) -> bytes:
    """The gzipped pprof ``Profile`` of a view for one metric (tfprof allows one per file)."""
    if metric not in PPROF_METRICS:
        raise ExportError(f"pprof metric {metric!r} is not one of {', '.join(PPROF_METRICS)}")
    slot = METRICS.index(PPROF_METRICS[metric][0])
    b = _PprofBuilder(metric)
    if result.view == "code":
        _code_pprof(p, result, b, slot)
    else:
        _tree_pprof(p, result, b, slot)
    return gzip.compress(b.build(), mtime=0)
