"""torch-tb-profiler's distributed view, collective by collective: ``collectives``.

As torch-tb-profiler 0.4.3 computes its "Communication Operations Stats" and "Synchronizing /
Communication Overview" (``profiler/event_parser.py``, ``loader.py``, ``communication.py``;
docs/formulas.md, "Collectives: waiting vs transferring (torch-tb-profiler)"), over the ranks of
a run:

* a **collective** is an operator or annotation named ``nccl:<op>`` (torch-tb-profiler 0.4.3
  knows ``broadcast``, ``reduce``, ``all_reduce``, ``all_gather``, ``reduce_scatter``; tbprof every
  ProcessGroup collective, ``store/kineto_names.is_collective_name``: FSDP's ``_all_gather_base``
  and ``_reduce_scatter_base``, the ``*_coalesced`` ones, ``all_to_all``, send/recv; ``gloo:``
  too; docs/differences.md), keyed by its ``External id`` (a GPU annotation of the same id
  replaces the host one: Kineto writes it later); its
  ranges are its own span and the spans of the kernels with its ``External id``;
* collectives are matched across ranks by position in (start, -end) order, and each range by
  position; a range's **transfer** part is its last ``d`` microseconds, ``d`` the shortest
  duration of that range over the ranks (the rank that arrived last waited least), the rest is
  **synchronizing** (waiting for the other ranks);
* per rank and collective name: calls, total latency (the union of the ranges), transfer time
  (the union of the transfer parts), synchronizing = latency - transfer. The **slowest rank** of
  a collective name is the one with the least synchronizing time: the others wait for it.

Ranks whose collectives do not line up (different counts) get no transfer split, as in
torch-tb-profiler. Its "Computation/Communication Overview" per rank is the ``overlap`` table:
per ``ProfilerStep#`` event (host markers, then GPU annotations, as the plugin meets them), the
time within it of non-collective kernels (computation), of collectives (their kernels and
``nccl:`` operators / annotations: communication), of both (overlapping) and the rest (other);
a rank's numbers are the mean over those step events. XSpace: XProf's pod viewer answers this
for TPU/GPU all-reduces; not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import merge_intervals, union_ps
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import CollectivesResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.kineto_links import collective_name_ids
from tbprof.store.derived import Derived
from tbprof.store.tables import ProfileStore

TOOL = "collectives"
_PS_PER_US = 1e6
_NODE_CATEGORIES = ("cpu_op", "operator", "user_annotation", "gpu_user_annotation", "python")


def has_collectives(store: object) -> bool:
    return (isinstance(store, ProfileStore) and store.format == "chrome_trace"
            and store.strings.id("External id") >= 0 and collective_name_ids(store).shape[0] > 0)


COLLECTIVE_NODES: Derived[list[tuple[str, list[tuple[int, int]]]]] = Derived(
    ("collectives", "nodes"), lambda s: _nodes(s))


def collective_nodes(store: ProfileStore) -> list[tuple[str, list[tuple[int, int]]]]:
    """(name, ranges in (start, -end) order) per collective, in (start, -end) order (memoised)."""
    return store.derive(COLLECTIVE_NODES)


def _nodes(store: ProfileStore) -> list[tuple[str, list[tuple[int, int]]]]:
    ext_sid, cat_sid = store.stat_id("External id"), store.stat_id("cat")
    if ext_sid < 0 or cat_sid < 0:
        return []
    names = store.strings.as_list()
    wanted = collective_name_ids(store)
    node_cats = {store.strings.id(c) for c in _NODE_CATEGORIES} - {-1}
    gpu_annotation = store.strings.id("gpu_user_annotation")
    kernel_cat = store.strings.id("kernel")
    host_nodes: dict[int, tuple[int, int, int]] = {}
    gpu_nodes: dict[int, tuple[int, int, int]] = {}
    kernels: dict[int, list[tuple[int, int]]] = {}
    for plane in store.planes:
        if plane.n_events == 0:
            continue
        cat = plane.dense_str_ids(cat_sid)
        ext = plane.event_stat(ext_sid).dense_int(plane.n_events)
        start = plane.start_ps.astype(np.int64)
        end = start + plane.dur_ps.astype(np.int64)
        is_node = np.isin(plane.name_id, wanted) & np.isin(cat, np.fromiter(node_cats, np.int64))
        for i in np.nonzero(is_node)[0].tolist():
            target = gpu_nodes if int(cat[i]) == gpu_annotation else host_nodes
            target[int(ext[i])] = (int(plane.name_id[i]), int(start[i]), int(end[i]))
        for i in np.nonzero((cat == kernel_cat) & (ext >= 0))[0].tolist():
            kernels.setdefault(int(ext[i]), []).append((int(start[i]), int(end[i])))
    by_ext = {**host_nodes, **gpu_nodes}  # the GPU annotation, written later, replaces the host op
    out = []
    for ext_id, (name_id, s, e) in by_ext.items():
        ranges = sorted([(s, e), *kernels.get(ext_id, [])], key=lambda r: (r[0], -r[1]))
        out.append((names[name_id], ranges, s, e))
    out.sort(key=lambda n: (n[2], -n[3]))
    return [(n, r) for n, r, _, _ in out]


_Ranges = list[tuple[int, int]]


def _clip_union(start: np.ndarray, end: np.ndarray, lo: int, hi: int) -> int:
    s, e = merge_intervals(start, end)
    return int(np.maximum(np.minimum(e, hi) - np.maximum(s, lo), 0).sum())


def _intersect(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two unions of intervals (each merged first)."""
    sa, ea = merge_intervals(*a)
    sb, eb = merge_intervals(*b)
    if sa.shape[0] == 0 or sb.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i = np.searchsorted(eb, sa, side="right")
    j = np.searchsorted(sb, ea, side="left")
    starts, ends = [], []
    for k in range(sa.shape[0]):  # few collectives: a loop over the merged intervals
        for m in range(int(i[k]), int(j[k])):
            lo, hi = max(int(sa[k]), int(sb[m])), min(int(ea[k]), int(eb[m]))
            if lo < hi:
                starts.append(lo)
                ends.append(hi)
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64)


STEP_OVERLAP: Derived[list[tuple[str, float, float, float, float]]] = Derived(
    ("collectives", "overlap"), lambda s: _step_overlap(s))


def step_overlap(store: ProfileStore) -> list[tuple[str, float, float, float, float]]:
    """Per ProfilerStep event in the plugin's order: (step, computation, overlapping, communication,
    other) in us, as its Computation/Communication Overview."""
    return store.derive(STEP_OVERLAP)


def _step_overlap(store: ProfileStore) -> list[tuple[str, float, float, float, float]]:
    ext_sid, cat_sid = store.stat_id("External id"), store.stat_id("cat")
    if ext_sid < 0 or cat_sid < 0:
        return []
    names = store.strings.as_list()
    comm_ids = collective_name_ids(store)
    node_cats = np.fromiter({store.strings.id(c) for c in _NODE_CATEGORIES} - {-1}, np.int64)
    kernel_cat, gpu_annotation = store.strings.id("kernel"), store.strings.id("gpu_user_annotation")
    step_cats = np.fromiter({store.strings.id(c) for c in ("cpu_op", "operator", "user_annotation",
                                                            "gpu_user_annotation")} - {-1}, np.int64)
    comm_ext: set[int] = set()
    comm_ops: list[tuple[np.ndarray, np.ndarray]] = []
    kernels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    host_steps: list[tuple[int, int, str]] = []
    gpu_steps: list[tuple[int, int, str]] = []
    for plane in store.planes:
        if plane.n_events == 0:
            continue
        cat = plane.dense_str_ids(cat_sid)
        ext = plane.event_stat(ext_sid).dense_int(plane.n_events)
        start = plane.start_ps.astype(np.int64)
        end = start + plane.dur_ps.astype(np.int64)
        is_comm_op = np.isin(plane.name_id, comm_ids) & np.isin(cat, node_cats)
        comm_ext.update(ext[is_comm_op].tolist())
        comm_ops.append((start[is_comm_op], end[is_comm_op]))
        k = cat == kernel_cat
        kernels.append((start[k], end[k], ext[k]))
        for i in np.nonzero(np.isin(cat, step_cats))[0].tolist():
            name = names[int(plane.name_id[i])]
            if name.startswith("ProfilerStep#"):
                (gpu_steps if int(cat[i]) == gpu_annotation else host_steps).append(
                    (int(start[i]), int(end[i]), name[len("ProfilerStep#"):]))
    ks = np.concatenate([k[0] for k in kernels]) if kernels else np.zeros(0, np.int64)
    ke = np.concatenate([k[1] for k in kernels]) if kernels else np.zeros(0, np.int64)
    kx = np.concatenate([k[2] for k in kernels]) if kernels else np.zeros(0, np.int64)
    is_comm_kernel = np.isin(kx, np.fromiter(comm_ext, np.int64)) if comm_ext else np.zeros(ks.shape[0], bool)
    compute = (ks[~is_comm_kernel], ke[~is_comm_kernel])
    comm = (np.concatenate([ks[is_comm_kernel], *[p[0] for p in comm_ops]]),
            np.concatenate([ke[is_comm_kernel], *[p[1] for p in comm_ops]]))
    both = _intersect(compute, comm)
    out = []
    for lo, hi, step in sorted(host_steps) + sorted(gpu_steps):
        comp = _clip_union(*compute, lo, hi)
        com = _clip_union(*comm, lo, hi)
        ov = _clip_union(*both, lo, hi)
        other = (hi - lo) + ov - comp - com
        out.append((step, (comp - ov) / _PS_PER_US, ov / _PS_PER_US, (com - ov) / _PS_PER_US, other / _PS_PER_US))
    return out


def _transfer_ranges(per_rank: list[list[tuple[str, _Ranges]]]) -> list[list[_Ranges]] | None:
    """Per rank and collective: the transfer part of each range; None when the ranks do not line up."""
    if not per_rank or any(len(n) != len(per_rank[0]) for n in per_rank):
        return None
    out: list[list[_Ranges]] = [[] for _ in per_rank]
    for i in range(len(per_rank[0])):
        counts = {len(nodes[i][1]) for nodes in per_rank}
        if len(counts) != 1:
            return None
        shortest = [min(nodes[i][1][j][1] - nodes[i][1][j][0] for nodes in per_rank) for j in range(counts.pop())]
        for k, nodes in enumerate(per_rank):
            out[k].append([(e - d, e) for (_, e), d in zip(nodes[i][1], shortest, strict=True)])
    return out


def _union(ranges: list[tuple[int, int]]) -> int:
    if not ranges:
        return 0
    a = np.asarray(ranges, dtype=np.int64)
    return union_ps(a[:, 0], a[:, 1])


COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("name", "Collective", "str"),
    Column("calls", "Calls", "int"),
    Column("total_latency_us", "Total latency", "float", "us", "union of the collective's op and kernel spans"),
    Column("transfer_us", "Data transfer", "float", "us", "the part as long as the fastest rank's"),
    Column("synchronizing_us", "Synchronizing", "float", "us", "waiting for the other ranks"),
    Column("avg_latency_us", "Avg latency", "float", "us"),
    Column("avg_transfer_us", "Avg data transfer", "float", "us"),
    Column("slowest", "Slowest rank", "bool", "", "least synchronizing: the other ranks wait for it"),
]


OVERLAP_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"),
    Column("computation_us", "Computation", "float", "us", "non-collective kernels only, mean per step"),
    Column("overlapping_us", "Overlapping", "float", "us", "computation and communication at once"),
    Column("communication_us", "Communication", "float", "us", "collectives only"),
    Column("other_us", "Other", "float", "us", "neither"),
    Column("step_events", "Step events", "int", "", "ProfilerStep markers and GPU annotations averaged over"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> CollectivesResult:
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    per_rank = [collective_nodes(s) for _, s in ranked]
    transfer = _transfer_ranges(per_rank) if len(per_rank) > 1 else None
    rows: list[list[Any]] = []
    for k, (rank, store) in enumerate(ranked):
        names = sorted({n for n, _ in per_rank[k]})
        for name in names:
            idx = [i for i, (n, _) in enumerate(per_rank[k]) if n == name]
            latency = _union([r for i in idx for r in per_rank[k][i][1]])
            moved = _union([r for i in idx for r in transfer[k][i]]) if transfer is not None else None
            calls = len(idx)
            rows.append([rank, store.host, name, calls, latency / _PS_PER_US,
                         None if moved is None else moved / _PS_PER_US,
                         None if moved is None else (latency - moved) / _PS_PER_US,
                         latency / calls / _PS_PER_US, None if moved is None else moved / calls / _PS_PER_US, False])
    for name in {r[2] for r in rows}:
        mine = [r for r in rows if r[2] == name and r[6] is not None]
        if len(mine) > 1:
            min(mine, key=lambda r: r[6])[9] = True
    table = Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows] for i, c in enumerate(COLUMNS)})
    sync = [r[6] for r in rows if r[6] is not None]
    overlap_rows = []
    for rank, store in ranked:
        steps = step_overlap(store)
        if steps:
            mean = np.mean(np.asarray([s[1:] for s in steps], np.float64), axis=0).tolist()
            overlap_rows.append((rank, store.host, *mean, len(steps)))
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "matched_across_ranks": transfer is not None,
        "synchronizing_us": float(sum(sync)) if sync else None,
        "tables": {"collectives": table,
                   "overlap": Table.from_columns(OVERLAP_COLUMNS, {c.name: [r[i] for r in overlap_rows]
                                                                    for i, c in enumerate(OVERLAP_COLUMNS)})},
    }


TOOLS = (
    Tool(
        name=TOOL, title="Collectives: waiting vs transfer (torch-tb-profiler)", compute=compute,
        available=has_collectives, multi_host=True,
        description="torch-tb-profiler's distributed view: per rank and collective, latency, data transfer and "
                    "synchronizing time, the slowest rank marked.",
        result=CollectivesResult, needs=frozenset({"devices", "kineto"}),
        requires="two or more ranks with NCCL collective kernels and PyTorch's distributedInfo.",
        how_to=(rec.TORCH_TRACE, rec.TORCH_RANKS),
    ),
)
