"""HTA's frequent CUDA kernel sequences, one tool over the ranks of a run: ``kernel_sequences``.

As HTA 0.5.0's ``get_frequent_cuda_kernel_sequences`` (formulas in docs/formulas.md,
"Frequent kernel sequences (HTA)"): the **roots** are the host operators whose name contains
``operator_name`` and that sit at the shallowest call-stack depth any such operator has; a root
with at least ``min_pattern_len`` device events launched under it (by a launch call anywhere in
its subtree) gives one occurrence of the **pattern** (its name, then the names of those device
events in start order). Per pattern: occurrences, the device time of their events and the
host time of the roots. Patterns that repeat are fusion candidates (one kernel instead of a
chain of small ones).

The call stack is the store's nesting of host events per thread (``domain/event_tree``), joined as
HTA's call graph joins them: when the host has one main thread (with ``ProfilerStep#``) and one
backward thread (with ``autograd::`` events), each top-level event of the backward thread goes
under the first main-thread ``## backward ##`` annotation that contains it (without any: the
first ``ProfilerStep#``), so backward operators sit below the forward ones. Device
events are ``activity.device_activity``'s (HTA's last-step filter), their launches the host
events with the same correlation. Durations are the profile's own (nanoseconds): HTA 0.5.0's
call graph fails on whole-microsecond-rounded Kineto traces (a rounded event can end before it
starts), so its goldens are taken with ``HTA_DISABLE_NS_ROUNDING=1``.

XSpace GPU profiles: the host events of ``/host:CPU`` nest the same way (TraceMe / framework op
events), and CUPTI launches carry the correlation, so the tool runs there too with an operator
name from that profile (``operator_name`` is a plain substring, never a regex).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import device_activity, has_device_activity
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import KernelSequencesResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_nonneg_int
from tbprof.domain.answer_size import capped_len, capped_name, check_answer_bytes
from tbprof.domain.event_tree import parent_rows
from tbprof.store.tables import Plane, ProfileStore

TOOL = "kernel_sequences"
_PS_PER_US = 1e6
_ROW_BYTES = 200  # a row's numbers, keys and host in the answer's table
DEFAULT_OPERATOR = "aten::"


def _host_plane(store: ProfileStore) -> Plane | None:
    """The plane whose events launch the device work (``/host:CPU``; Kineto's reader names it so)."""
    return store.plane("/host:CPU")


def _correlation_rows(store: ProfileStore, plane: Plane) -> tuple[np.ndarray, np.ndarray]:
    """(correlation, host row) of every host event with one, sorted by correlation."""
    sid = store.stat_id("correlation_id" if store.format == "xspace" else "correlation")
    if sid < 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows, corr = plane.event_stat(sid).sparse_int()
    keep = corr >= 0
    rows, corr = rows[keep], corr[keep]
    order = np.argsort(corr, kind="stable")
    return corr[order], rows[order].astype(np.int64)


_MAIN_THREAD_MARK = "ProfilerStep#"
_BACKWARD_THREAD_MARK = "autograd::"
_BACKWARD_ANNOTATION = "## backward ##"


def linked_call_stack(plane: Plane, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(depth, parent) of every host-plane event in HTA's call graph: the store's nesting, with the
    backward thread's top-level events under the main thread's backward annotations (module doc)."""
    depth = np.asarray(plane.depth, dtype=np.int64).copy()
    parent = parent_rows(plane)
    main: list[int] = []
    backward: list[int] = []
    for line in range(plane.n_lines):
        sl = plane.line_rows(line)
        line_names = {names[i] for i in np.unique(plane.name_id[sl]).tolist()}
        if any(n.startswith(_MAIN_THREAD_MARK) for n in line_names):
            main.append(line)
        elif any(_BACKWARD_THREAD_MARK in n for n in line_names):
            backward.append(line)
    if len(main) != 1 or len(backward) != 1:
        return depth, parent
    main_rows = plane.line_rows(main[0])
    bwd = plane.line_rows(backward[0])
    start = plane.start_ps.astype(np.int64)
    end = start + plane.dur_ps.astype(np.int64)
    main_names = [names[i] for i in plane.name_id[main_rows].tolist()]
    anchors: list[int] = []
    for mark in (_BACKWARD_ANNOTATION, _MAIN_THREAD_MARK):
        anchors = [main_rows.start + i for i, n in enumerate(main_names) if n.startswith(mark)]
        if anchors:
            break
    tops = bwd.start + np.nonzero(depth[bwd] == 0)[0]
    subtree_end = np.append(tops[1:], bwd.stop)
    free = np.ones(tops.shape[0], bool)
    for a in anchors:
        take = free & (start[tops] >= start[a]) & (end[tops] <= end[a])
        for t, stop in zip(tops[take].tolist(), subtree_end[take].tolist(), strict=True):
            depth[t:stop] += depth[a] + 1
            parent[t] = a
        free &= ~take
    return depth, parent


def patterns(store: ProfileStore, operator_name: str, min_pattern_len: int) -> list[dict[str, Any]]:
    """The patterns of one host (rank): name, count, device time, host time (us), kernels per
    occurrence, and the occurrences (host-plane row of the root, device ps, host ps)."""
    plane = _host_plane(store)
    act = device_activity(store)
    if plane is None or act.n == 0 or not operator_name:
        return []
    names = store.strings.as_list()
    matching = np.array([operator_name in n for n in names], dtype=bool)
    candidate = matching[plane.name_id]
    if not candidate.any():
        return []
    depth, parent = linked_call_stack(plane, names)
    root_depth = int(depth[candidate].min())
    # Each device event's launch on the host plane.
    sorted_corr, sorted_rows = _correlation_rows(store, plane)
    pos = np.searchsorted(sorted_corr, act.correlation)
    found = (pos < sorted_corr.shape[0]) & (sorted_corr[np.minimum(pos, max(sorted_corr.shape[0] - 1, 0))]
                                           == act.correlation) if sorted_corr.shape[0] else np.zeros(act.n, bool)
    dev = np.nonzero(found)[0]
    launch = sorted_rows[pos[dev]]
    # The launch's ancestor at the roots' depth (one parent step per level; no per-event loop).
    anc = launch.copy()
    for _ in range(int(depth.max()) + 1):
        up = depth[anc] > root_depth
        if not up.any():
            break
        anc[up] = parent[anc[up]]
    under = (depth[anc] == root_depth) & candidate[anc]
    dev, anc = dev[under], anc[under]
    if dev.shape[0] == 0:
        return []
    # Device times as the profile has them (not HTA's rounded ones: see the module doc); two
    # kernels less than a microsecond apart keep their order.
    dev_dur_ps = act.exact_end_ps[dev] - act.exact_start_ps[dev]
    order = np.lexsort((act.exact_start_ps[dev], anc))
    dev, anc, dev_dur_ps = dev[order], anc[order], dev_dur_ps[order]
    roots, first, counts = np.unique(anc, return_index=True, return_counts=True)
    kernel_names = store.strings.lookup(act.name_id[dev])
    # Per pattern, its occurrences: (root row on the host plane, device ps, host ps).
    by_pattern: dict[tuple[str, ...], list[tuple[int, int, int]]] = {}
    for root, f, c in zip(roots.tolist(), first.tolist(), counts.tolist(), strict=True):
        if c < min_pattern_len:
            continue
        key = (names[int(plane.name_id[root])], *kernel_names[f:f + c])
        by_pattern.setdefault(key, []).append((int(root), int(dev_dur_ps[f:f + c].sum()), int(plane.dur_ps[root])))
    # Each pattern repeats its kernels' names: counted (names cut as every answer shows them) before
    # any pattern text is built.
    need_bytes = sum(sum(capped_len(n) + 1 for n in k) + _ROW_BYTES for k in by_pattern)
    check_answer_bytes(need_bytes, f"{len(by_pattern):,} patterns of {sum(map(len, by_pattern)):,} names",
                       "ask for fewer with a longer min_pattern_len or a narrower operator_name")
    out: list[dict[str, Any]] = [{"pattern": "|".join(map(capped_name, k)), "operator": capped_name(k[0]),
                                  "kernels": len(k) - 1, "count": len(occ),
                                  "gpu_kernel_duration_us": sum(o[1] for o in occ) / _PS_PER_US,
                                  "cpu_op_duration_us": sum(o[2] for o in occ) / _PS_PER_US,
                                  "plane": plane.index, "occurrences": occ}
                                 for k, occ in by_pattern.items()]
    # HTA's order: most frequent first, then by pattern text.
    out.sort(key=lambda r: (-r["count"], r["pattern"]))
    return out


COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"),
    Column("operator", "Operator", "str", "", "the root host operator"),
    Column("kernels", "Kernels", "int", "", "device events per occurrence"),
    Column("count", "Occurrences", "int"),
    Column("gpu_kernel_duration_us", "Device time", "float", "us", "of the pattern's events, all occurrences"),
    Column("cpu_op_duration_us", "Host time", "float", "us", "of the root operators, all occurrences"),
    Column("pattern", "Pattern", "str", "", "operator|kernel|kernel|... (HTA's notation)"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> KernelSequencesResult:
    operator_name = str(options.get("operator_name", DEFAULT_OPERATOR))
    min_len = int(options.get("min_pattern_len", 3))
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    rows: list[tuple[Any, ...]] = []
    for rank, store in ranked:
        def build(store: ProfileStore = store) -> list[dict[str, Any]]:
            return patterns(store, operator_name, min_len)

        found: list[dict[str, Any]] = store.memo(("kernel_sequences", operator_name, min_len), build)
        rows.extend((rank, store.host, p["operator"], p["kernels"], p["count"], p["gpu_kernel_duration_us"],
                     p["cpu_op_duration_us"], p["pattern"]) for p in found)
    repeated = [r for r in rows if r[4] > 1]
    table = Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows] for i, c in enumerate(COLUMNS)},
                               default_sort="count")
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "operator_name": operator_name, "min_pattern_len": min_len,
        "pattern_count": len(rows), "repeated_pattern_count": len(repeated),
        "tables": {"patterns": table},
    }


def _parse_operator(text: str) -> str:
    # A plain substring (HTA's test is ``operator_name in name``): bounded, never a regex.
    return text[:256]


OPTIONS = (
    Option("operator_name", _parse_operator, DEFAULT_OPERATOR,
           "host operators whose name contains this start a pattern (HTA's operator_name)"),
    Option("min_pattern_len", parse_nonneg_int, 3, "fewest device events under an operator to count (HTA: 3)"),
)

TOOLS = (
    Tool(
        name=TOOL, title="Frequent kernel sequences (HTA)", compute=compute, available=has_device_activity,
        options=OPTIONS, multi_host=True,
        description="HTA's frequent CUDA kernel sequences: the kernels each operator launches, by pattern.",
        result=KernelSequencesResult, needs=frozenset({"devices"}),
        requires="PyTorch operators (aten::) and the kernels they launch, linked by correlation ids.",
        how_to=(rec.TORCH_TRACE,),
    ),
)
