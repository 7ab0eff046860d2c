"""torch-tb-profiler's operator view by operator, input shape and call stack: ``operators_by_shape``.

As torch-tb-profiler 0.4.3's operator view (``profiler/op_agg.py``, ``run_generator.py``;
docs/formulas.md, "Operators by input shape and call stack (torch-tb-profiler)"): option
``group_by`` = ``input_shape`` ("Operator + Input Shape", traces recorded with
``record_shapes=True``), ``operator``, ``call_stack`` (its call-stack lists, ``with_stack=True``:
operators without a call stack are left out) or ``input_shape_and_call_stack``.

The operators and their times are the nodes of the plugin's operator tree (``op_tree.py``: which
events are nodes, same-name merge, runtime calls, device and TensorCore times). The key is the
name with ``Input Dims`` and / or ``Call stack`` as the trace writes them; per key: calls, host
duration, self host duration, device total / self duration (null for a trace without device
work), TensorCore-eligible (any call eligible) and the TensorCore share of the device self /
total time (null where there is no device time, or where no kernel of the trace is one the
plugin's TensorCore names know: not determined).

XSpace profiles carry no input shapes per TensorFlow/JAX op event: not applicable there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.ops.op_tree import op_tree
from tbprof.analyses.results.ops import OperatorsByShapeResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, OptionError, Tool
from tbprof.store.tables import ProfileStore

TOOL = "operators_by_shape"
_PS_PER_US = 1e6


GROUP_BY = ("input_shape", "operator", "call_stack", "input_shape_and_call_stack")


def has_input_shapes(store: object) -> bool:
    strings = getattr(store, "strings", None)
    return (getattr(store, "format", "") == "chrome_trace" and strings is not None and strings.id("cpu_op") >= 0
            and (strings.id("Input Dims") >= 0 or strings.id("Call stack") >= 0))


def _rank(store: ProfileStore, index: int) -> int:
    info = store.metadata.get("distributedInfo") if isinstance(store.metadata, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else index


# name, input shape, call stack, calls, host us, self host us, device us, self device us (None: no
# device work in the trace), TensorCore-eligible, TensorCore % of self device / device time (None: no time)
Group = tuple[str, str, str, int, float, float, float | None, float | None, bool, float | None, float | None]


def operator_groups(store: ProfileStore, group_by: str = "input_shape") -> list[Group]:
    """The operator view's rows, one per key (memoised)."""
    return store.memo(("operators_by_shape", group_by), lambda: _groups(store, group_by))


def _groups(store: ProfileStore, group_by: str) -> list[Group]:
    tree = op_tree(store)
    plane = store.plane("/host:CPU")
    if tree is None or plane is None:
        return []
    rows_i = np.nonzero(tree.listed)[0]
    rows = tree.rows[rows_i]

    def column(*keys: str) -> np.ndarray:
        out = np.full(rows.shape[0], -1, np.int64)
        for key in keys:  # the plugin reads "Input Dims", else "Input dims"
            sid = store.stat_id(key)
            if sid >= 0:
                col = plane.dense_str_ids(sid)[rows]
                out = np.where(out >= 0, out, col)
        return out

    by_shape = group_by in ("input_shape", "input_shape_and_call_stack")
    by_stack = group_by in ("call_stack", "input_shape_and_call_stack")
    dims = column("Input Dims", "Input dims") if by_shape else np.full(rows.shape[0], -2)
    stacks = column("Call stack") if by_stack else np.full(rows.shape[0], -2)
    empty_stack = store.strings.id("")
    names = store.strings.as_list()
    name_ids = plane.name_id[rows].astype(np.int64)
    keep = (stacks >= 0) & (stacks != empty_stack) if by_stack else np.ones(rows.shape[0], bool)
    # the plugin's call-stack lists leave out operators without one
    keys = np.stack([name_ids[keep], dims[keep], stacks[keep]], axis=1)
    node = rows_i[keep]
    # Groups by a stable lexsort of the key columns (a row-wise np.unique sorts far slower), numbered
    # in the order their first operator comes.
    order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0]))
    ordered = keys[order]
    new_key = np.ones(order.shape[0], bool)
    new_key[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = np.nonzero(new_key)[0]
    first = order[starts]  # the stable sort keeps equal keys in operator order
    inv = np.empty(order.shape[0], np.int64)
    inv[order] = np.cumsum(new_key) - 1
    by_first = np.argsort(first, kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.shape[0])
    group = rank[inv]
    n_groups = starts.shape[0]
    uniq = keys[first]

    def total(values: np.ndarray) -> list[int]:
        out = np.zeros(n_groups, np.int64)
        np.add.at(out, group, values[node].astype(np.int64))
        return [int(v) for v in out.tolist()]

    sums = [np.bincount(group, minlength=n_groups).tolist(), total(tree.dur_ps), total(tree.self_host_ps),
            total(tree.device_ps), total(tree.self_device_ps), total(tree.tc_eligible.astype(np.int64)),
            total(tree.tc_self_ps), total(tree.tc_total_ps)]
    groups = {(int(n), int(d), int(st)): [int(c), h, sh, dv, sdv, int(tc > 0), tcs, tct]
              for (n, d, st), c, h, sh, dv, sdv, tc, tcs, tct in zip(uniq[by_first].tolist(), *sums, strict=True)}

    def text(sid: int, missing: str) -> str:
        return store.strings[sid] if sid >= 0 else (missing if sid == -1 else "")

    def device_us(ps: int) -> float | None:
        return ps / _PS_PER_US if tree is not None and tree.has_device else None

    def share(part: int, whole: int) -> float | None:
        return 100.0 * part / whole if whole > 0 and tree is not None and tree.tc_judged else None

    out: list[Group] = [
        (names[n], text(d, "[]"), text(st, ""), c, h / _PS_PER_US, sh / _PS_PER_US, device_us(dv), device_us(sdv),
         bool(tc), share(tcs, sdv), share(tct, dv))
        for (n, d, st), (c, h, sh, dv, sdv, tc, tcs, tct) in groups.items()]
    out.sort(key=lambda r: (-r[4], r[0], r[1], r[2]))
    return out


COLUMNS = [
    Column("rank", "Rank", "int"), Column("name", "Operator", "str"),
    Column("input_shape", "Input shape", "str", "", "Kineto's Input Dims (empty unless grouped by it)"),
    Column("call_stack", "Call stack", "str", "", "Kineto's Call stack (empty unless grouped by it)"),
    Column("calls", "Calls", "int"),
    Column("host_duration_us", "Host duration", "float", "us"),
    Column("self_host_duration_us", "Host self duration", "float", "us"),
    Column("device_duration_us", "Device total duration", "float", "us",
           "kernels, memcpys and memsets it and its children launched (empty: no device work in the trace)"),
    Column("self_device_duration_us", "Device self duration", "float", "us", "those it launched itself"),
    Column("tensor_core_eligible", "TensorCore eligible", "bool", "",
           "torch-tb-profiler's rule: a matmul/convolution name, or a child or kernel that is"),
    Column("tensor_core_self_percent", "TensorCore self", "float", "%",
           "share of the device self time in TensorCore kernels (torch-tb-profiler's kernel names)"),
    Column("tensor_core_total_percent", "TensorCore total", "float", "%",
           "share of the device total time in TensorCore kernels"),
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
        available=has_input_shapes, options=OPTIONS, multi_host=True,
        description="torch-tb-profiler's operator view grouped by operator, input shape (record_shapes) or "
                    "call stack (with_stack).",
        result=OperatorsByShapeResult, needs=frozenset({"framework_ops", "kineto"}),
        requires="PyTorch operators with their input shapes (record_shapes=True) and, for the call stack view, Python"
                 " stacks (with_stack=True).",
        how_to=("Add record_shapes=True and with_stack=True to torch.profiler.profile(...).", rec.TORCH_TRACE),
    ),
)
