"""torch-tb-profiler's operator view grouped by input shape: ``operators_by_shape``.

As torch-tb-profiler 0.4.3's "Group By: Operator + Input Shape" (``profiler/op_agg.py``,
``node.py``; docs/formulas.md, "Operators by input shape (torch-tb-profiler)"), for traces
recorded with ``record_shapes=True``:

* the operators are the host ``cpu_op`` events but ``ProfilerStep#*``, ``DataParallel.forward``,
  ``DistributedDataParallel.forward`` and ``Optimizer.*``;
* the key is (name, ``Input Dims`` as the trace writes it); per key: calls, host duration, and
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

from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.event_tree import parent_rows
from tbprof.store.tables import ProfileStore

TOOL = "operators_by_shape"
_PS_PER_US = 1e6
_EXCLUDED = ("DataParallel.forward", "DistributedDataParallel.forward")
# Host categories that become nodes of torch-tb-profiler's operator tree (its EventTypeMap).
_TREE_CATEGORIES = ("cpu_op", "operator", "user_annotation", "python", "python_function")


def has_input_shapes(store: object) -> bool:
    strings = getattr(store, "strings", None)
    return (getattr(store, "format", "") == "chrome_trace" and strings is not None
            and strings.id("Input Dims") >= 0 and strings.id("cpu_op") >= 0)


def _rank(store: ProfileStore, index: int) -> int:
    info = store.metadata.get("distributedInfo") if isinstance(store.metadata, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else index


def operator_groups(store: ProfileStore) -> list[tuple[str, str, int, float, float]]:
    """(name, input shape, calls, host us, self host us) per key (memoised)."""
    return store.memo(("operators_by_shape",), lambda: _groups(store))


def _groups(store: ProfileStore) -> list[tuple[str, str, int, float, float]]:
    plane = store.plane("/host:CPU")
    cat_sid, dims_sid = store.stat_id("cat"), store.stat_id("Input Dims")
    if plane is None or plane.n_events == 0 or cat_sid < 0:
        return []
    cat = plane.event_stat(cat_sid).dense_str(plane.n_events)
    tree_ids = np.asarray([i for i in (store.strings.id(c) for c in _TREE_CATEGORIES) if i >= 0], np.int64)
    in_tree = np.isin(cat, tree_ids)
    dur = plane.dur_ps.astype(np.int64)
    parent = parent_rows(plane)
    # Self host time: minus the direct children that are tree nodes.
    taken = np.zeros(plane.n_events, np.int64)
    child = in_tree & (parent >= 0)
    np.add.at(taken, parent[child], dur[child])
    names = store.strings.as_list()
    op_cat = store.strings.id("cpu_op")
    excluded_names = np.array([n.startswith(("ProfilerStep#", "Optimizer.")) or n in _EXCLUDED for n in names])
    is_op = (cat == op_cat) & ~excluded_names[plane.name_id]
    rows = np.nonzero(is_op)[0]
    dims = plane.event_stat(dims_sid).dense_str(plane.n_events)[rows] if dims_sid >= 0 else np.full(rows.shape[0], -1)
    groups: dict[tuple[int, int], list[int]] = {}
    for r, d in zip(rows.tolist(), dims.tolist(), strict=True):
        entry = groups.setdefault((int(plane.name_id[r]), int(d)), [0, 0, 0])
        entry[0] += 1
        entry[1] += int(dur[r])
        entry[2] += int(dur[r] - taken[r])
    out = [(names[n], store.strings[d] if d >= 0 else "[]", c, h / _PS_PER_US, s / _PS_PER_US)
           for (n, d), (c, h, s) in groups.items()]
    out.sort(key=lambda r: (-r[3], r[0], r[1]))
    return out


COLUMNS = [
    Column("rank", "Rank", "int"), Column("name", "Operator", "str"),
    Column("input_shape", "Input shape", "str", "", "Kineto's Input Dims"),
    Column("calls", "Calls", "int"),
    Column("host_duration_us", "Host duration", "float", "us"),
    Column("self_host_duration_us", "Host self duration", "float", "us"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    ranked = sorted(((_rank(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    rows = [(rank, *g) for rank, s in ranked for g in operator_groups(s)]
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "group_count": len(rows),
        "tables": {"operators": Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows]
                                                              for i, c in enumerate(COLUMNS)},
                                                   default_sort="host_duration_us")},
    }


TOOLS = (
    Tool(
        name=TOOL, title="Operators by input shape (torch-tb-profiler)", compute=compute,
        available=has_input_shapes, multi_host=True, formats=("chrome_trace",), kinds=("pytorch",),
        description="torch-tb-profiler's operator view grouped by operator and input shape (record_shapes).",
    ),
)
