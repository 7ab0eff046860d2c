"""tf_data_bottleneck_analysis: the slowest stage of each tf.data input pipeline, and what to do.

tf.data writes one event per ``GetNext`` call of every iterator, named by its path
(``Iterator::Root::Prefetch::MapAndBatch::Shuffle``) with ``id``/``parent_id`` stats. A
pipeline is the tree under one ``Iterator::Root`` id. Per iterator: first start, calls, calls
slower than 50 us, total time, self time (total minus the iterator calls nested in it on the same
thread; an asynchronous stage such as Prefetch therefore keeps the time it waits). The critical
path follows, from the root, the child with the largest total time; the bottleneck is the
iterator on it with the largest self time, and the suggestion depends on its kind. XProf 2.24.2
dropped this tool; tbprof keeps it (see docs/differences.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.results.whole_run import PipelinePath, TfDataPipeline, TfDataResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.event_groups import parents_of
from tbprof.domain.planes import HOST_PLANE
from tbprof.store.arrays import sorted_unique
from tbprof.store.derived import Derived
from tbprof.store.tables import ProfileStore

SLOW_CALL_PS = 50_000_000  # 50 us
WAITING_KINDS = ("Root", "Prefetch")
_KIND = re.compile(r"\[\d+\]$")

SUGGESTIONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("TFRecord", "TextLine", "FixedLengthRecord", "SSTable", "RecordIO"),
     "Reading files is the bottleneck: read several files in parallel with "
     "interleave(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets, or move the files to "
     "faster storage."),
    (("ParallelMap", "ParallelMapV2", "MapAndBatch"),
     "The map function is the bottleneck even in parallel: raise num_parallel_calls (tf.data.AUTOTUNE), "
     "vectorize it (batch before map), or move the work offline / cache() its result."),
    (("Map",), "The map function runs one element at a time: use map(..., num_parallel_calls=tf.data.AUTOTUNE), "
               "or vectorize it by batching first."),
    (("ParallelInterleave", "ParallelInterleaveV2", "ParallelInterleaveV4", "Interleave"),
     "Interleave is the bottleneck: set num_parallel_calls=tf.data.AUTOTUNE and deterministic=False, or raise "
     "cycle_length."),
    (("Shuffle",), "Shuffle is the bottleneck: a large buffer fills slowly; reduce buffer_size or shuffle file names "
                   "instead of elements, and cache() before shuffling."),
    (("Batch", "PaddedBatch"), "Batching is the bottleneck: batch after a vectorized map, or use "
                               "map_and_batch-style fusion (options.experimental_optimization.map_and_batch_fusion)."),
    (("Generator", "FlatMap"), "The Python generator is the bottleneck: it holds the GIL; build the dataset from "
                               "tensors or files instead, or parallelize with interleave."),
    (("TensorSlice", "Range", "FromTensor", "Zip"),
     "Producing elements one by one is the bottleneck: batch as early as possible and vectorize the following "
     "transformations, or cache() the prepared data."),
    (("Prefetch",), "Prefetch waits for its producer: the stages below it are too slow; parallelize them. If the "
                    "pipeline has no prefetch at its end, add .prefetch(tf.data.AUTOTUNE)."),
)

DEFAULT_SUGGESTION = ("Add .prefetch(tf.data.AUTOTUNE) at the end of the pipeline and parallelize the most expensive "
                      "transformation (num_parallel_calls=tf.data.AUTOTUNE); cache() data that fits in memory.")


def iterator_kind(path: str) -> str:
    return _KIND.sub("", path.rsplit("::", 1)[-1])


def suggestion_for(path: str) -> str:
    kind = iterator_kind(path)
    for kinds, text in SUGGESTIONS:
        if kind in kinds:
            return text
    return DEFAULT_SUGGESTION


def _host_pipelines(store: ProfileStore) -> list[dict[str, Any]]:
    p = store.plane(HOST_PLANE)
    if p is None or p.n_events == 0:
        return []
    uniq = np.nonzero(np.bincount(p.name_id))[0]  # names present (O(n); np.unique would sort every id)
    it_ids = np.array([u for u in uniq.tolist() if store.strings[u].startswith("Iterator::")], np.int32)
    if len(it_ids) == 0:
        return []
    rows = np.nonzero(np.isin(p.name_id, it_ids))[0]
    id_sid, pid_sid = store.stat_id("id"), store.stat_id("parent_id")
    ids = p.event_stat(id_sid).dense_int(p.n_events)[rows] if id_sid >= 0 else np.full(len(rows), -1)
    pids = p.event_stat(pid_sid).dense_int(p.n_events)[rows] if pid_sid >= 0 else np.full(len(rows), -1)
    # Iterator id -> parent id -> ... -> root id (a few hundred ids at most).
    parent_of = dict(zip(ids.tolist(), pids.tolist(), strict=False))
    root_cache: dict[int, int] = {}

    def root_of(i: int) -> int:
        seen: list[int] = []
        while i in parent_of and parent_of[i] not in (-1, i) and i not in root_cache and len(seen) < 64:
            seen.append(i)
            i = parent_of[i]
        r = root_cache.get(i, i)
        for x in seen:
            root_cache[x] = r
        return r

    roots = np.array([root_of(i) for i in ids.tolist()], np.int64) if len(ids) else ids
    # Self time: minus the iterator calls nested in it on the same thread (other events are
    # transparent, as in the op tables), from the nesting of the iterator events alone.
    line_counts = np.bincount(p.line_idx[rows], minlength=p.n_lines)
    sub_offsets = np.concatenate([[0], np.cumsum(line_counts)]).astype(np.int64)
    par = parents_of(p.start_ps[rows], p.dur_ps[rows], sub_offsets)
    child_ps = np.zeros(p.n_events, np.int64)
    nested = np.nonzero(par >= 0)[0]
    np.add.at(child_ps, rows[par[nested]], p.dur_ps[rows[nested]])
    out = []
    for root in sorted_unique(roots).tolist():
        m = roots == root
        r = rows[m]
        names, inv = np.unique(p.name_id[r], return_inverse=True)
        n = len(names)
        dur = p.dur_ps[r].astype(np.float64)
        calls = np.bincount(inv, minlength=n)
        total = np.bincount(inv, weights=dur, minlength=n)
        self_t = np.bincount(inv, weights=(p.dur_ps[r] - child_ps[r]).astype(np.float64), minlength=n)
        slow = np.bincount(inv, weights=(p.dur_ps[r] > SLOW_CALL_PS).astype(np.float64), minlength=n)
        first = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(first, inv, p.start_ps[r])
        paths = [store.strings[int(x)] for x in names.tolist()]
        out.append({"root_id": int(root), "paths": paths, "calls": calls, "total_ps": total, "self_ps": self_t,
                    "slow_calls": slow.astype(np.int64), "first_ps": first})
    return out


def _analyse(pipe: dict[str, Any]) -> PipelinePath:
    paths: list[str] = pipe["paths"]
    index = {x: i for i, x in enumerate(paths)}
    children: dict[str, list[str]] = {x: [] for x in paths}
    tops = []
    for x in paths:
        head = x.rsplit("::", 1)[0]
        # "...::ForeverRepeat[0]::Prefetch" is the input 0 of "...::ForeverRepeat".
        parent = head if head in index else _KIND.sub("", head)
        if parent in index and parent != x:
            children[parent].append(x)
        else:
            tops.append(x)
    root = min(tops, key=lambda x: (x.count("::"), -pipe["total_ps"][index[x]]))
    path = [root]
    while children[path[-1]]:
        path.append(max(children[path[-1]], key=lambda x: pipe["total_ps"][index[x]]))
    # Root and Prefetch stages mostly wait for their producer; blame the stage doing the work.
    working = [x for x in path if iterator_kind(x) not in WAITING_KINDS] or path[-1:]
    bottleneck = max(working, key=lambda x: pipe["self_ps"][index[x]])
    ri = index[root]
    return {"root": root, "critical_path": path, "bottleneck": bottleneck,
            "root_calls": int(pipe["calls"][ri]), "root_slow_calls": int(pipe["slow_calls"][ri]),
            "root_avg_latency_us": float(pipe["total_ps"][ri] / max(1, pipe["calls"][ri]) / 1e6)}


def _compute_has_iterator_events(store: ProfileStore) -> bool:
    return bool(store.n_events > 0
                and store.strings.ids_matching(lambda s: s.startswith("Iterator::")).shape[0] > 0)


HAS_ITERATOR_EVENTS: Derived[bool] = Derived(("tf_data", "has_iterator_events"), _compute_has_iterator_events)


def has_iterator_events(store: ProfileStore) -> bool:
    """Whether the profile names any tf.data iterator: the tool is listed only for runs that use
    tf.data (a JAX or PyTorch run listed it, to show "no pipelines")."""
    return store.derive(HAS_ITERATOR_EVENTS)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> TfDataResult:
    it_rows: dict[str, list[Any]] = {k: [] for k in ("host", "pipeline", "iterator", "kind", "depth", "start_ms",
                                                     "calls", "slow_calls", "total_time_ms", "self_time_ms",
                                                     "avg_time_us", "on_critical_path")}
    pipes_out: list[TfDataPipeline] = []
    for s in stores:
        for k, pipe in enumerate(_host_pipelines(s)):
            a = _analyse(pipe)
            name = f"{s.host}#{k}"
            on_path = set(a["critical_path"])
            order = np.argsort(pipe["first_ps"], kind="stable")
            for i in order.tolist():
                x = pipe["paths"][i]
                it_rows["host"].append(s.host)
                it_rows["pipeline"].append(name)
                it_rows["iterator"].append(x)
                it_rows["kind"].append(iterator_kind(x))
                it_rows["depth"].append(x.count("::") - 1)
                it_rows["start_ms"].append(float(pipe["first_ps"][i]) / 1e9)
                it_rows["calls"].append(int(pipe["calls"][i]))
                it_rows["slow_calls"].append(int(pipe["slow_calls"][i]))
                it_rows["total_time_ms"].append(float(pipe["total_ps"][i]) / 1e9)
                it_rows["self_time_ms"].append(float(pipe["self_ps"][i]) / 1e9)
                it_rows["avg_time_us"].append(float(pipe["total_ps"][i]) / max(1, int(pipe["calls"][i])) / 1e6)
                it_rows["on_critical_path"].append(x in on_path)
            slow_pct = 100.0 * a["root_slow_calls"] / a["root_calls"] if a["root_calls"] else 0.0
            pipes_out.append({"host": s.host, "pipeline": name, "root_iterator_id": pipe["root_id"], **a,
                              "slow_call_percent": slow_pct, "bottleneck_kind": iterator_kind(a["bottleneck"]),
                              "suggestion": suggestion_for(a["bottleneck"]),
                              # About the pipeline's calls only: whether the steps wait on it
                              # is the input-bound verdict's (step time), which this must not
                              # contradict ("consumer waits" beside "not input-bound").
                              "input_bound_hint": ("most GetNext calls of the root are slower than 50 us: the "
                                                   "pipeline is slow to produce elements; whether the steps wait "
                                                   "for them is the input-bound verdict's (overview, input pipeline)"
                                                   if slow_pct >= 50 else
                                                   "most GetNext calls of the root are fast: the pipeline "
                                                   "keeps up with the consumer")})
    it_cols = [Column("host", "Host", "str"), Column("pipeline", "Pipeline", "str"),
               Column("iterator", "Iterator", "str"), Column("kind", "Kind", "str"), Column("depth", "Depth", "int"),
               Column("start_ms", "First call", "float", "ms"), Column("calls", "Calls", "int"),
               Column("slow_calls", "Calls > 50 us", "int"), Column("total_time_ms", "Total time", "float", "ms"),
               Column("self_time_ms", "Self time", "float", "ms"), Column("avg_time_us", "Average", "float", "us"),
               Column("on_critical_path", "On critical path", "bool")]
    p_cols = [Column("host", "Host", "str"), Column("pipeline", "Pipeline", "str"),
              Column("root_calls", "GetNext calls", "int"),
              Column("root_avg_latency_us", "Average GetNext", "float", "us"),
              Column("slow_call_percent", "Calls > 50 us", "float", "%"),
              Column("bottleneck", "Bottleneck iterator", "str"), Column("suggestion", "Suggestion", "str")]
    by_key: Sequence[Mapping[str, object]] = pipes_out
    p_vals = {c.name: [p[c.name] for p in by_key] for c in p_cols}
    diag: list[str] = []
    if not pipes_out:
        diag.append("No tf.data iterator events (Iterator::...) in this profile: the program does not use tf.data, "
                    "or the host tracer level was too low to record them (use host_tracer_level >= 2).")
    return {
        "schema_version": SCHEMA_VERSION, "tool": "tf_data_bottleneck_analysis",
        "hosts": [s.host for s in stores], "pipelines": pipes_out, "slow_call_threshold_us": SLOW_CALL_PS / 1e6,
        "diagnostics": diag,
        "tables": {"pipelines": Table.from_columns(p_cols, p_vals, default_sort=None),
                   "iterators": Table.from_columns(it_cols, it_rows, default_sort=None)},
    }


TOOLS = (
    Tool(
        name="tf_data_bottleneck_analysis", title="tf.data bottleneck analysis", compute=compute,
        available=has_iterator_events, multi_host=True,
        description="Per tf.data pipeline: iterator times, critical path, bottleneck and a suggestion.",
        result=TfDataResult, needs=frozenset({"xplane"}),
        requires="tf.data iterator events (Iterator::… on the host), written when the input is a tf.data.Dataset.",
        how_to=("Feed the model from a tf.data.Dataset and record host events (host_tracer_level=2 or higher).",),
    ),
)
