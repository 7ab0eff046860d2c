"""torch-tb-profiler's operator view by operator, input shape and call stack: ``operators_by_shape``.

As torch-tb-profiler 0.4.3's operator view (``profiler/op_agg.py``, ``node.py``;
docs/formulas.md, "Operators by input shape and call stack (torch-tb-profiler)"): option
``group_by`` = ``input_shape`` ("Operator + Input Shape", traces recorded with
``record_shapes=True``), ``operator``, ``call_stack`` (its call-stack lists, ``with_stack=True``:
operators without a call stack are left out) or ``input_shape_and_call_stack``:

* the operators are the host ``cpu_op`` events but ``ProfilerStep#*``, ``DataParallel.forward``,
  ``DistributedDataParallel.forward`` and ``Optimizer.*``;
* the call tree's nodes are operators, annotations and ``nn.Module`` calls (plain Python
  functions are transparent);
* the key is the name with ``Input Dims`` and / or ``Call stack`` as the trace writes them; per
  key: calls, host duration, and
  self host duration = duration - the durations of the direct children that are operators,
  annotations or Python events (CUDA runtime calls are not subtracted: torch-tb-profiler 0.4.3
  does not recognise Kineto's ``cuda_runtime`` category, and for the same reason reports no
  device time per operator; tbprof's framework_op_stats has it).

XSpace profiles carry no input shapes per TensorFlow/JAX op event: not applicable there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.results.ops import OperatorsByShapeResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, OptionError, Tool
from tbprof.domain.event_tree import parent_rows
from tbprof.store.tables import ProfileStore

TOOL = "operators_by_shape"
_PS_PER_US = 1e6
_EXCLUDED = ("DataParallel.forward", "DistributedDataParallel.forward")
# Host categories that become nodes of torch-tb-profiler's operator tree (its EventTypeMap); a
# python_function is a node only as an nn.Module call (with a "Python module id").
_TREE_CATEGORIES = ("cpu_op", "operator", "user_annotation", "python")


GROUP_BY = ("input_shape", "operator", "call_stack", "input_shape_and_call_stack")


def has_input_shapes(store: object) -> bool:
    strings = getattr(store, "strings", None)
    return (getattr(store, "format", "") == "chrome_trace" and strings is not None and strings.id("cpu_op") >= 0
            and (strings.id("Input Dims") >= 0 or strings.id("Call stack") >= 0))


def tree_parents(plane: Any, is_node: np.ndarray) -> np.ndarray:
    """Each event's nearest enclosing call-tree node (-1: none): events that are not nodes
    (plain Python functions, runtime calls) are skipped over."""
    parent = parent_rows(plane)
    out = parent.copy()
    for _ in range(int(np.asarray(plane.depth).max(initial=0)) + 1):
        climb = (out >= 0) & ~is_node[np.maximum(out, 0)]
        if not climb.any():
            break
        out[climb] = parent[out[climb]]
    return out


def _rank(store: ProfileStore, index: int) -> int:
    info = store.metadata.get("distributedInfo") if isinstance(store.metadata, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else index


Group = tuple[str, str, str, int, float, float]  # name, input shape, call stack, calls, host us, self us


def operator_groups(store: ProfileStore, group_by: str = "input_shape") -> list[Group]:
    """(name, input shape, call stack, calls, host us, self host us) per key (memoised)."""
    return store.memo(("operators_by_shape", group_by), lambda: _groups(store, group_by))


def _groups(store: ProfileStore, group_by: str) -> list[Group]:
    plane = store.plane("/host:CPU")
    cat_sid, dims_sid, stack_sid = store.stat_id("cat"), store.stat_id("Input Dims"), store.stat_id("Call stack")
    if plane is None or plane.n_events == 0 or cat_sid < 0:
        return []
    cat = plane.dense_str_ids(cat_sid)
    tree_ids = np.asarray([i for i in (store.strings.id(c) for c in _TREE_CATEGORIES) if i >= 0], np.int64)
    in_tree = np.isin(cat, tree_ids)
    module_sid = store.stat_id("Python module id")
    if module_sid >= 0:
        in_tree |= (cat == store.strings.id("python_function")) & (
            plane.event_stat(module_sid).dense_int(plane.n_events) >= 0)
    dur = plane.dur_ps.astype(np.int64)
    parent = tree_parents(plane, in_tree)
    # Self host time: minus the direct children that are tree nodes.
    taken = np.zeros(plane.n_events, np.int64)
    child = in_tree & (parent >= 0)
    np.add.at(taken, parent[child], dur[child])
    names = store.strings.as_list()
    op_cat = store.strings.id("cpu_op")
    excluded_names = np.array([n.startswith(("ProfilerStep#", "Optimizer.")) or n in _EXCLUDED for n in names])
    is_op = (cat == op_cat) & ~excluded_names[plane.name_id]
    rows = np.nonzero(is_op)[0]
    def column(sid: int) -> np.ndarray:
        return plane.dense_str_ids(sid)[rows] if sid >= 0 else np.full(rows.shape[0], -1)

    by_shape = group_by in ("input_shape", "input_shape_and_call_stack")
    by_stack = group_by in ("call_stack", "input_shape_and_call_stack")
    dims = column(dims_sid) if by_shape else np.full(rows.shape[0], -2)
    stacks = column(stack_sid) if by_stack else np.full(rows.shape[0], -2)
    empty_stack = store.strings.id("")
    groups: dict[tuple[int, int, int], list[int]] = {}
    for r, d, st in zip(rows.tolist(), dims.tolist(), stacks.tolist(), strict=True):
        if by_stack and (st < 0 or st == empty_stack):
            continue  # the plugin's call-stack lists leave out operators without one
        entry = groups.setdefault((int(plane.name_id[r]), int(d), int(st)), [0, 0, 0])
        entry[0] += 1
        entry[1] += int(dur[r])
        entry[2] += int(dur[r] - taken[r])

    def text(sid: int, missing: str) -> str:
        return store.strings[sid] if sid >= 0 else (missing if sid == -1 else "")

    out = [(names[n], text(d, "[]"), text(st, ""), c, h / _PS_PER_US, s / _PS_PER_US)
           for (n, d, st), (c, h, s) in groups.items()]
    out.sort(key=lambda r: (-r[4], r[0], r[1], r[2]))
    return out


COLUMNS = [
    Column("rank", "Rank", "int"), Column("name", "Operator", "str"),
    Column("input_shape", "Input shape", "str", "", "Kineto's Input Dims (empty unless grouped by it)"),
    Column("call_stack", "Call stack", "str", "", "Kineto's Call stack (empty unless grouped by it)"),
    Column("calls", "Calls", "int"),
    Column("host_duration_us", "Host duration", "float", "us"),
    Column("self_host_duration_us", "Host self duration", "float", "us"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> OperatorsByShapeResult:
    group_by = str(options.get("group_by", "input_shape"))
    ranked = sorted(((_rank(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    rows = [(rank, *g) for rank, s in ranked for g in operator_groups(s, group_by)]
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "group_by": group_by, "group_count": len(rows),
        "tables": {"operators": Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows]
                                                              for i, c in enumerate(COLUMNS)},
                                                   default_sort="host_duration_us")},
    }


def _parse_group_by(text: str) -> str:
    if text not in GROUP_BY:
        raise OptionError(f"group_by must be one of {', '.join(GROUP_BY)}")
    return text


OPTIONS = (
    Option("group_by", _parse_group_by, "input_shape", "operator + input_shape / call_stack (torch-tb-profiler)",
           choices=GROUP_BY),
)

TOOLS = (
    Tool(
        name=TOOL, title="Operators by input shape / call stack (torch-tb-profiler)", compute=compute,
        available=has_input_shapes, options=OPTIONS, multi_host=True, formats=("chrome_trace",), kinds=("pytorch",),
        description="torch-tb-profiler's operator view grouped by operator, input shape (record_shapes) or "
                    "call stack (with_stack).",
    ),
)
