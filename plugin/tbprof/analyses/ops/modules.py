"""torch-tb-profiler's module view: time per ``nn.Module`` in the module hierarchy (``module_view``).

As torch-tb-profiler 0.4.3 (``profiler/module_op.py``; docs/formulas.md, "Module view
(torch-tb-profiler)"), for traces recorded with ``with_modules=True`` (Kineto writes each Python
call as a ``python_function`` event with ``Python id`` / ``Python parent id``, and an
``nn.Module`` call also with ``Python module id``):

* the **hierarchy**: a module's parent is the nearest module among its Python callers (``Python
  parent id`` links); identical subtrees collapse (each step repeats the same hierarchy);
* per module (name, ``Python module id``): occurrences, operators (those the operator view lists
  directly under it in the plugin's operator tree, ``op_tree.py``: plain Python functions and
  annotations other than ``ProfilerStep#`` and communication names are transparent), host
  duration and self host duration (duration - the durations of its direct tree children),
  average duration.

XSpace: TensorFlow / JAX name scopes are the framework ops' scopes in XProf's op profile and
trace viewer; not this tool.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.ops.op_tree import MODULE, op_tree
from tbprof.analyses.results.ops import ModuleViewResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.derived import Derived
from tbprof.store.tables import ProfileStore

TOOL = "module_view"
_PS_PER_US = 1e6


def has_modules(store: object) -> bool:
    strings = getattr(store, "strings", None)
    return (getattr(store, "format", "") == "chrome_trace" and strings is not None
            and strings.id("Python module id") >= 0)


MODULE_ROWS: Derived[list[tuple[int, str, int, int, int, float, float, float]]] = Derived(
    ("module_view",), lambda s: _rows(s))


def module_rows(store: ProfileStore) -> list[tuple[int, str, int, int, int, float, float, float]]:
    """(depth, name, module id, occurrences, operators, host us, self host us, avg us) in
    hierarchy order (children after their parent, siblings by name) (memoised)."""
    return store.derive(MODULE_ROWS)


def _rows(store: ProfileStore) -> list[tuple[int, str, int, int, int, float, float, float]]:
    plane = store.plane("/host:CPU")
    sids = {k: store.stat_id(k) for k in ("cat", "Python module id", "Python id", "Python parent id")}
    if plane is None or plane.n_events == 0 or min(sids.values()) < 0:
        return []
    n = plane.n_events
    cat = plane.dense_str_ids(sids["cat"])
    module_id = plane.event_stat(sids["Python module id"]).dense_int(n, missing=-1)
    py_id = plane.event_stat(sids["Python id"]).dense_int(n, missing=-1)
    py_parent = plane.event_stat(sids["Python parent id"]).dense_int(n, missing=-1)
    tree = op_tree(store)
    if tree is None:
        return []
    is_module = np.zeros(n, bool)  # the module calls of the tree (one the plugin drops has no row)
    is_module[tree.rows[tree.kind == MODULE]] = True
    names = store.strings.as_list()
    # Statistics per (name, module id), from the operator tree's module nodes.
    listed_children = np.zeros(tree.rows.shape[0], np.int64)
    np.add.at(listed_children, tree.parent[tree.listed & (tree.parent >= 0)], 1)
    # Each module row's (name, module id), as Python ints (indexing numpy scalars one by one is slow).
    module_nodes = np.nonzero(tree.kind == MODULE)[0]
    module_rows = tree.rows[module_nodes]
    key_of = dict(zip(module_rows.tolist(), zip(plane.name_id[module_rows].tolist(),
                                                module_id[module_rows].tolist(), strict=True), strict=True))
    stats: dict[tuple[int, int], list[int]] = {}
    for r, n_listed, dur_ps, self_ps in zip(module_rows.tolist(), listed_children[module_nodes].tolist(),
                                            tree.dur_ps[module_nodes].tolist(),
                                            tree.self_host_ps[module_nodes].tolist(), strict=True):
        s = stats.setdefault(key_of[r], [0, 0, 0, 0])
        s[0] += 1
        s[1] += n_listed
        s[2] += dur_ps
        s[3] += self_ps
    # Hierarchy: a module's parent is the nearest module up its Python caller chain.
    py_rows = np.nonzero(cat == store.strings.id("python_function"))[0]
    by_py_id = dict(zip(py_id[py_rows].tolist(), py_rows.tolist(), strict=True))
    parent_py_id = py_parent.tolist()
    module_parent: dict[int, int | None] = {}
    for r in np.nonzero(is_module)[0].tolist():
        up = by_py_id.get(parent_py_id[r])
        seen = 0
        while up is not None and up not in key_of and seen < len(by_py_id):
            up = by_py_id.get(parent_py_id[up])
            seen += 1
        module_parent[r] = up

    children: dict[int | None, list[int]] = {}
    for r, p in module_parent.items():
        children.setdefault(p, []).append(r)

    def subtree(r: int) -> tuple[Any, ...]:
        return (key_of[r], tuple(sorted(subtree(c) for c in children.get(r, []))))

    out: list[tuple[int, str, int, int, int, float, float, float]] = []

    def emit(tree: tuple[Any, ...], depth: int) -> None:
        (name_id, mid), kids = tree
        s = stats[(name_id, mid)]
        out.append((depth, names[name_id].replace("nn.Module: ", ""), mid, s[0], s[1], s[2] / _PS_PER_US,
                    s[3] / _PS_PER_US, s[2] / s[0] / _PS_PER_US))
        for k in sorted(set(kids), key=lambda t: names[t[0][0]]):
            emit(k, depth + 1)

    roots = {subtree(r) for r in children.get(None, [])}  # identical hierarchies collapse
    for hierarchy in sorted(roots, key=lambda t: names[t[0][0]]):
        emit(hierarchy, 0)
    return out


COLUMNS = [
    Column("rank", "Rank", "int"), Column("depth", "Depth", "int", "", "0: a root module"),
    Column("module", "Module", "str"), Column("module_id", "Module id", "int"),
    Column("occurrences", "Occurrences", "int"), Column("operators", "Operators", "int", "", "directly under it"),
    Column("host_duration_us", "Host duration", "float", "us"),
    Column("self_host_duration_us", "Host self duration", "float", "us"),
    Column("avg_duration_us", "Avg duration", "float", "us"),
]


def _rank(store: ProfileStore, index: int) -> int:
    info = store.metadata.get("distributedInfo") if isinstance(store.metadata, dict) else None
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else index


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> ModuleViewResult:
    ranked = sorted(((_rank(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    rows = [(rank, *r) for rank, s in ranked for r in module_rows(s)]
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "module_count": len(rows),
        "tables": {"modules": Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows]
                                                           for i, c in enumerate(COLUMNS)})},
    }


TOOLS = (
    Tool(
        name=TOOL, title="Module view (torch-tb-profiler)", compute=compute, available=has_modules,
        multi_host=True,
        description="torch-tb-profiler's module view: time per nn.Module in the module hierarchy (with_modules).",
        result=ModuleViewResult, needs=frozenset({"kineto"}),
        requires="PyTorch module events: the nn.Module hierarchy that Kineto writes only when the trace is recorded "
                 "with with_modules=True.",
        how_to=(
            "Add with_modules=True to torch.profiler.profile(...) (TorchScript and eager nn.Modules are both "
            "recorded).",
            rec.TORCH_TRACE,
        ),
    ),
)
