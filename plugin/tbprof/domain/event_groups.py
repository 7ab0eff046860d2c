"""Groups events into steps the way XProf's ``GroupTfEvents`` does: from root events outward.

A *root* is an event with the ``_r`` stat (``tf.profiler.experimental.Trace(..., _r=1)``, JAX
``StepTraceAnnotation``) or a legacy ``TraceContext``. Each root, in time order (higher root
levels first), claims every event reachable from it that no earlier root claimed, following

- nesting on the same thread (an event contains its children),
- producer/consumer context links (``_pt``/``_p`` to ``_ct``/``_c`` with the same type and id;
  XProf skips a context id with >= 64 producers and >= 64 consumers, and so do we),
- host launch -> device kernel links (the same ``correlation_id`` on the host and a device plane),
- ``ExecutorState::Process`` -> ``IteratorGetNextOp::DoCompute`` with the same (step_id, iter_num).

The group id of an event is the index of the root that claimed it (0, 1, ... in claim order).
Everything here runs once per store (``store.memo``) in a few compiled loops over numpy columns
(``tbprof._core.kernels``: ``nesting_parents``, ``pair_edges``, ``propagate_groups``; on a GPU run,
where only linked events are grouped, ``tbprof._core.groups``: ``matched_rows``, ``merged_nodes``,
``nest_nodes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from tbprof._core.groups import matched_rows, merged_nodes, nest_nodes
from tbprof._core.kernels import nesting_parents, pair_edges, propagate_groups
from tbprof.domain.planes import HOST_PLANE, is_accelerator, on_device_side
from tbprof.store.arrays import sorted_unique
from tbprof.store.tables import Plane, ProfileStore

# XProf's implicit roots (kFunctionRun, kSessionRun, kRunGraph, kExecutorStateProcess): they group
# events but are not step markers, so their groups carry no step name.
IMPLICIT_ROOT_NAMES = ("FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process")
# XProf skips context ids this crowded on both sides (a shared id, not a real link).
_CONTEXT_FANOUT_LIMIT = 64


class GroupColumns(Sequence[np.ndarray]):
    """Per plane, the group id of each event (int64, -1: not grouped).

    A plane grouped from a few of its events (the host plane of a GPU run: a minority of its
    events carry links) keeps just those rows and ids until someone asks for its column: step
    assignment on a GPU run reads only device planes, and on a VM first touching a column as long
    as a large plane is slow (bench/measurements.md#store-build).
    """

    def __init__(self, n_events: Sequence[int], parts: list[np.ndarray | tuple[np.ndarray, np.ndarray]]) -> None:
        self._n_events = list(n_events)
        self._parts = parts

    def __len__(self) -> int:
        return len(self._parts)

    @overload
    def __getitem__(self, index: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[np.ndarray]: ...

    def __getitem__(self, index: int | slice) -> np.ndarray | Sequence[np.ndarray]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        part = self._parts[index]
        if isinstance(part, tuple):
            rows, group = part
            dense = np.full(self._n_events[index], -1, dtype=np.int64)
            dense[rows] = group
            self._parts[index] = part = dense
        return part


@dataclass
class EventGroups:
    """Group id of every event of every plane (-1: not grouped) and what each group is."""

    group_of: Sequence[np.ndarray]  # per plane, int64 per event (GPU runs: only linked events and device events)
    n_groups: int
    root_plane: np.ndarray  # int32 per group
    root_row: np.ndarray  # int64 per group
    root_is_implicit: np.ndarray  # bool per group: FunctionRun & co. (not a step marker)
    group_names: list[str]  # "train 3" (root name + step_num), else the group id


def parents_of(start_ps: np.ndarray, dur_ps: np.ndarray, line_offsets: np.ndarray) -> np.ndarray:
    """XProf's nesting parent of each event (-1: top level); see ``nesting_parents``."""
    return nesting_parents(start_ps, dur_ps, line_offsets)[0]


def _pair_edges(parent_keys: np.ndarray, parent_nodes: np.ndarray, child_keys: np.ndarray,
                child_nodes: np.ndarray, limit: int | None = None,
                last_parent_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Edges parent -> child between nodes with equal keys (rows of an int64 (type, id) key
    matrix): each parent's children in input order; ``last_parent_only``: one parent per key,
    the last (XProf keeps them in a map, the last one written); ``limit``: a key with that many
    parents and children links nothing. A hash join in compiled code (``pair_edges``)."""
    return pair_edges(parent_keys, parent_nodes, child_keys, child_nodes, limit or 0, last_parent_only)


def _stat_pairs(store: ProfileStore, plane: Plane, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``plane`` that carry both stats ``a`` and ``b``, and their (a, b) values."""
    ida, idb = store.stat_id(a), store.stat_id(b)
    if ida < 0 or idb < 0:
        return np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    ca, cb = plane.event_stat(ida), plane.event_stat(idb)
    # Both row lists are ascending: one merge pass finds the intersection (np.intersect1d
    # would concatenate and sort them again); a binary search of one in the other where not.
    if len(ca.rows) == 0 or len(cb.rows) == 0:
        return np.zeros(0, np.int64), np.zeros((0, 2), np.int64)
    matched = matched_rows(ca.rows, ca.as_int(), cb.rows, cb.as_int())
    if matched is not None:
        return matched
    ib = np.searchsorted(cb.rows, ca.rows)
    ia = np.nonzero(cb.rows[np.minimum(ib, len(cb.rows) - 1)] == ca.rows)[0]
    ib = ib[ia]
    return ca.rows[ia], np.stack([ca.as_int()[ia], cb.as_int()[ib]], axis=1)


def _carry_forward(group: np.ndarray, start_ps: np.ndarray) -> np.ndarray:
    """Device events no launch reaches (async host-to-device copies) join the group running before them.

    XProf 2.24.2 shows this on jax_mlp: every device ``MemcpyH2D`` has a group although its host
    event has none, and it is the group of the device work that started last before it.
    """
    if not np.any(group < 0) or not np.any(group >= 0):
        return group
    order = np.argsort(start_ps, kind="stable")
    g = group[order]
    idx = np.where(g >= 0, np.arange(len(g)), -1)
    last = np.maximum.accumulate(idx)
    filled = np.where(last >= 0, g[np.clip(last, 0, None)], -1)
    out = np.empty_like(group)
    out[order] = filled
    return out


# The kinds of linked rows a plane's nodes are made of (after its roots), in ``compute_groups``' order.
_LINKS = ("prod", "cons", "corr", "exec", "next")


def _merged_nodes(parts: list[np.ndarray], base: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct rows of ``parts``, ascending (a plane's nodes), and each part's rows as node
    ids (their positions plus ``base``), by one compiled merge (``merged_nodes``). A part out of
    order (roots: marked ones, then ``TraceContext`` events) is merged sorted and its ids put
    back in its order."""
    orders: list[np.ndarray | None] = []
    sorted_parts: list[np.ndarray] = []
    for part in parts:
        part = np.asarray(part, dtype=np.int64)
        order = None if len(part) < 2 or not bool(np.any(part[1:] < part[:-1])) else np.argsort(part, kind="stable")
        orders.append(order)
        sorted_parts.append(part if order is None else part[order])
    rows, ids = merged_nodes(sorted_parts, base)
    for i, order in enumerate(orders):
        if order is not None:
            back = np.empty_like(ids[i])
            back[order] = ids[i]
            ids[i] = back
    return rows, ids


def compute_groups(store: ProfileStore, full: bool | None = None) -> EventGroups:
    """Groups every event (``full``) or only the events that carry links (the default on GPU runs).

    A GPU step is built from device events, which roots reach only through linked host events
    (producers, consumers, launches): grouping just those gives the same device groups at a
    fraction of the cost (bench/measurements.md#analyses). CPU-only runs break steps down from all
    host events, so there every event is grouped.
    """
    planes = store.planes
    if full is None:
        full = not any(is_accelerator(p) and p.n_events for p in planes)
    r_id, corr_id = store.stat_id("_r"), store.stat_id("correlation_id")
    executor_name = store.strings.id("ExecutorState::Process")
    getnext_names = [g for g in (store.strings.id(x) for x in ("IteratorGetNextOp::DoCompute",
                                                               "IteratorGetNextAsOptionalOp::DoCompute")) if g >= 0]
    trace_context = store.strings.id("TraceContext")
    wanted = [store.stat_id(x) for x in ("_r", "_pt", "_p", "_ct", "_c", "correlation_id", "step_id", "iter_num",
                                         "step_num", "tensor_shapes")]
    # Pass 1, per plane: the rows that carry links, and the nodes of the grouping graph.
    found: list[dict[str, Any]] = []
    node_rows: list[np.ndarray] = []
    n_nodes = 0
    for p in planes:
        f: dict[str, Any] = {}
        if p.n_events:
            p.prefetch_stat_columns(wanted)
            roots = np.zeros(0, np.int64)
            levels = np.zeros(0, np.int64)
            if r_id >= 0:
                rc = p.event_stat(r_id)
                lvl = rc.as_int()
                roots, levels = rc.rows[lvl > 0], lvl[lvl > 0]
            if trace_context >= 0:
                tc = np.setdiff1d(np.nonzero(p.name_id == trace_context)[0], roots)
                roots = np.concatenate([roots, tc])
                levels = np.concatenate([levels, np.ones(len(tc), np.int64)])
            f["roots"], f["levels"] = roots, levels
            f["prod"] = _stat_pairs(store, p, "_pt", "_p")
            f["cons"] = _stat_pairs(store, p, "_ct", "_c")
            f["corr"] = (np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
            if corr_id >= 0:
                cc = p.event_stat(corr_id)
                f["corr"] = (cc.rows, np.stack([np.zeros(len(cc.rows), np.int64), cc.as_int()], axis=1))
            f["exec"] = f["next"] = (np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
            if executor_name >= 0 or getnext_names:
                rows, kv = _stat_pairs(store, p, "step_id", "iter_num")
                if len(rows):
                    is_exec = p.name_id[rows] == executor_name
                    is_next = np.isin(p.name_id[rows], getnext_names)
                    f["exec"], f["next"] = (rows[is_exec], kv[is_exec]), (rows[is_next], kv[is_next])
        found.append(f)
        if full or not p.n_events:
            node_rows.append(np.arange(p.n_events, dtype=np.int64))
        else:
            rows_p, f["nodes"] = _merged_nodes([f["roots"], *(f[k][0] for k in _LINKS)], n_nodes)
            node_rows.append(rows_p)
        n_nodes += len(node_rows[-1])
    offsets = np.zeros(len(planes) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in node_rows], out=offsets[1:])
    n = int(offsets[-1])
    # Every node's parent and subtree end are written below, plane by plane (unwritten pages of a
    # fresh array cost nothing until then).
    parent = np.empty(n, dtype=np.int64)
    sub_end = np.empty(n, dtype=np.int64)
    root_level = np.zeros(n, dtype=np.int64)  # 0 = not a root
    prod_keys, prod_nodes, cons_keys, cons_nodes = [], [], [], []
    launch_keys, launch_nodes, exec_keys, exec_nodes = [], [], [], []
    executor_keys, executor_nodes, getnext_keys, getnext_nodes = [], [], [], []
    # Pass 2: nesting among the nodes of each plane, and the links between nodes.
    for pi, p in enumerate(planes):
        if p.n_events == 0:
            continue
        f, rows_p, base = found[pi], node_rows[pi], offsets[pi]
        if full:
            par, send = nesting_parents(p.start_ps, p.dur_ps, p.line_offsets)
            parent[base:base + len(rows_p)] = np.where(par >= 0, par + base, -1)
            sub_end[base:base + len(rows_p)] = send + base
            nodes = {k: rows + base for k, rows in zip(("roots", *_LINKS), (f["roots"], *(f[k][0] for k in _LINKS)),
                                                       strict=True)}
        else:
            # A line's nodes: its rows' (``line_offsets``: the store keeps a line's events together).
            nest_nodes(rows_p, p.start_ps, p.dur_ps, np.searchsorted(rows_p, p.line_offsets), int(base),
                       parent[base:base + len(rows_p)], sub_end[base:base + len(rows_p)])
            nodes = dict(zip(("roots", *_LINKS), f["nodes"], strict=True))
        root_level[nodes["roots"]] = f["levels"]
        prod_keys.append(f["prod"][1])
        prod_nodes.append(nodes["prod"])
        cons_keys.append(f["cons"][1])
        cons_nodes.append(nodes["cons"])
        if p.name == HOST_PLANE:
            launch_keys.append(f["corr"][1])
            launch_nodes.append(nodes["corr"])
        elif on_device_side(p):
            exec_keys.append(f["corr"][1])
            exec_nodes.append(nodes["corr"])
        executor_keys.append(f["exec"][1])
        executor_nodes.append(nodes["exec"])
        getnext_keys.append(f["next"][1])
        getnext_nodes.append(nodes["next"])

    def cat(parts: list[np.ndarray], width: int = 0) -> np.ndarray:
        parts = [x for x in parts if len(x)]
        if not parts:
            return np.zeros((0, width) if width else 0, np.int64)
        # One plane's links (a GPU run's producers and consumers are all on the host): no copy.
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    src_parts: list[np.ndarray] = []
    dst_parts: list[np.ndarray] = []
    for pk, pn, ck, cn, limit, last in (
        (prod_keys, prod_nodes, cons_keys, cons_nodes, _CONTEXT_FANOUT_LIMIT, False),
        (launch_keys, launch_nodes, exec_keys, exec_nodes, None, True),
        (executor_keys, executor_nodes, getnext_keys, getnext_nodes, None, True),
    ):
        s, d = _pair_edges(cat(pk, 2), cat(pn), cat(ck, 2), cat(cn), limit=limit, last_parent_only=last)
        src_parts.append(s)
        dst_parts.append(d)

    src, dst = cat(src_parts), cat(dst_parts)
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    # Each source's first edge: where the sorted sources change (np.unique would sort them again).
    first = np.flatnonzero(np.concatenate([[True], src[1:] != src[:-1]])) if len(src) else np.zeros(0, np.int64)
    edge_nodes = src[first]
    edge_ptr = np.append(first, len(src)).astype(np.int64)

    roots = np.nonzero(root_level > 0)[0]
    plane_of = np.searchsorted(offsets, roots, side="right") - 1
    start_abs = np.zeros(len(roots), np.int64)
    dur = np.zeros(len(roots), np.int64)
    for pi in sorted_unique(plane_of).tolist():
        m = plane_of == pi
        rows = node_rows[pi][roots[m] - offsets[pi]]
        start_abs[m] = planes[pi].start_ps[rows]
        dur[m] = planes[pi].dur_ps[rows]
    order = np.lexsort((roots, -dur, start_abs, -root_level[roots]))
    roots = roots[order]
    del plane_of
    group, group_root = propagate_groups(roots, root_level, parent, sub_end, edge_nodes.astype(np.int64), edge_ptr,
                                   dst.astype(np.int64))

    parts: list[np.ndarray | tuple[np.ndarray, np.ndarray]] = []
    for i, p in enumerate(planes):
        g = group[offsets[i]:offsets[i + 1]]
        if on_device_side(p) and p.n_events:
            if not full:
                g_full = np.full(p.n_events, -1, dtype=np.int64)
                g_full[node_rows[i]] = g
                g = g_full
            parts.append(_carry_forward(g, p.start_ps))
        else:
            parts.append(g if full else (node_rows[i], g))
    group_of = GroupColumns([p.n_events for p in planes], parts)
    root_plane = (np.searchsorted(offsets, group_root, side="right") - 1).astype(np.int32)
    root_row = np.array([node_rows[int(pl)][int(r - offsets[pl])]
                         for pl, r in zip(root_plane, group_root, strict=False)],
                        dtype=np.int64)
    implicit_ids = np.array(sorted({store.strings.id(x) for x in IMPLICIT_ROOT_NAMES} - {-1}), np.int64)
    implicit = np.zeros(len(group_root), dtype=bool)
    nums = np.arange(len(group_root), dtype=np.int64)
    name_ids = np.zeros(len(group_root), dtype=np.int64)
    step_num_id, iter_num_id = store.stat_id("step_num"), store.stat_id("iter_num")
    for pi in sorted_unique(root_plane).tolist():
        p = planes[pi]
        sel = np.nonzero(root_plane == pi)[0]
        rows = root_row[sel]
        name_ids[sel] = p.name_id[rows]
        implicit[sel] = np.isin(p.name_id[rows], implicit_ids)
        have_num = np.zeros(len(sel), bool)
        for sid in (iter_num_id, step_num_id):  # XProf prefers iter_num, then step_num
            if sid < 0:
                continue
            col = p.event_stat(sid)
            if len(col.rows) == 0:
                continue
            k = np.searchsorted(col.rows, rows)
            hit = (k < len(col.rows)) & (col.rows[np.clip(k, 0, len(col.rows) - 1)] == rows) & ~have_num
            if hit.any():
                nums[sel[hit]] = col.as_int()[k[hit]]
                have_num |= hit
    group_names = [f"{num}" if imp else f"{store.strings[int(nid)]} {num}"
                   for num, imp, nid in zip(nums.tolist(), implicit.tolist(), name_ids.tolist(), strict=False)]
    return EventGroups(group_of=group_of, n_groups=len(group_root), root_plane=root_plane,
                       root_row=root_row, root_is_implicit=implicit, group_names=group_names)


def recorded_groups(store: ProfileStore) -> EventGroups | None:
    """Groups already in the file: ``group_id`` stats (an XSpace that XProf or a TPU runtime grouped).

    Device events with a ``group_id`` carry their step; a device ``Steps`` line names the steps
    (``step_name`` stat). None when no device event has a ``group_id``.
    """
    gid = store.stat_id("group_id")
    if gid < 0:
        return None
    group_of = [p.event_stat(gid).dense_int(p.n_events) if p.n_events else np.zeros(0, np.int64)
                for p in store.planes]
    if not any(on_device_side(p) and np.any(g >= 0) for p, g in zip(store.planes, group_of, strict=False)):
        return None
    n_groups = int(max(int(g.max()) for g in group_of if len(g)) + 1)
    names = [str(i) for i in range(n_groups)]
    root_plane = np.full(n_groups, -1, np.int32)
    root_row = np.full(n_groups, -1, np.int64)
    step_name = store.stat_id("step_name")
    for pi, p in enumerate(store.planes):
        li = p.line_index("Steps")
        if li < 0 or step_name < 0:
            continue
        sl = p.line_rows(li)
        col = p.dense_str_ids(step_name)[sl]
        for g, sid in zip(group_of[pi][sl].tolist(), col.tolist(), strict=False):
            if 0 <= g < n_groups and sid >= 0:
                names[g] = store.strings[sid]
    return EventGroups(group_of=group_of, n_groups=n_groups, root_plane=root_plane, root_row=root_row,
                       root_is_implicit=np.zeros(n_groups, bool), group_names=names)


def event_groups(store: ProfileStore) -> EventGroups:
    """The grouping of ``store`` (computed once per store): kept with the store in the disk
    cache, else recorded in the file, else computed."""
    return store.memo(("tbprof.event_groups", 1), lambda: from_persisted(store) or recorded_groups(store)
                      or compute_groups(store))


# The name of the grouping in ``store.derived`` (bump when what compute_groups gives changes:
# a cache entry with the old name then simply recomputes).
PERSISTED_NAME = "event_groups_v1"


def to_persisted(groups: EventGroups) -> dict[str, Any]:
    """The grouping as arrays and JSON for ``store.derived`` (the disk cache keeps it): a plane
    grouped from a few rows keeps just those (``GroupColumns``), as in memory."""
    arrays: dict[str, np.ndarray] = {"root_plane": groups.root_plane, "root_row": groups.root_row,
                                     "root_is_implicit": groups.root_is_implicit}
    parts: list[str] = []
    columns = groups.group_of
    for i in range(len(columns)):
        part = columns._parts[i] if isinstance(columns, GroupColumns) else columns[i]
        if isinstance(part, tuple):
            arrays[f"p{i}_rows"], arrays[f"p{i}_groups"] = part
            parts.append("sparse")
        else:
            arrays[f"p{i}"] = part
            parts.append("dense")
    return {"arrays": arrays, "json": {"n_groups": groups.n_groups, "names": groups.group_names, "parts": parts}}


def from_persisted(store: ProfileStore) -> EventGroups | None:
    """The grouping the disk cache kept with ``store``; None when it has none, or one that does
    not fit the store (a damaged entry recomputes rather than misleads)."""
    # (A tfprof profile reaches the step analyses too, as a store without events or kept values.)
    value = getattr(store, "derived", {}).get(PERSISTED_NAME)
    if value is None:
        return None
    try:
        arrays, meta = value["arrays"], value["json"]
        n_groups, names, kinds = int(meta["n_groups"]), list(meta["names"]), list(meta["parts"])
        planes = store.planes
        if len(kinds) != len(planes) or len(names) != n_groups:
            return None
        root_plane, root_row = np.asarray(arrays["root_plane"]), np.asarray(arrays["root_row"])
        implicit = np.asarray(arrays["root_is_implicit"])
        if not root_plane.shape == root_row.shape == implicit.shape == (n_groups,):
            return None
        parts: list[np.ndarray | tuple[np.ndarray, np.ndarray]] = []
        for i, (kind, plane) in enumerate(zip(kinds, planes, strict=True)):
            if kind == "dense":
                dense = np.asarray(arrays[f"p{i}"])
                if dense.shape != (plane.n_events,):
                    return None
                parts.append(dense)
            else:
                rows, groups = np.asarray(arrays[f"p{i}_rows"]), np.asarray(arrays[f"p{i}_groups"])
                if rows.shape != groups.shape or (rows.shape[0] and not 0 <= int(rows.min()) <= int(rows.max())
                                                  < plane.n_events):
                    return None
                parts.append((rows, groups))
        return EventGroups(group_of=GroupColumns([p.n_events for p in planes], parts), n_groups=n_groups,
                           root_plane=root_plane, root_row=root_row, root_is_implicit=implicit.astype(bool),
                           group_names=[str(n) for n in names])
    except (KeyError, TypeError, ValueError):
        return None
