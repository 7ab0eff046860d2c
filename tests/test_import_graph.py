"""The package's module import graph has no cycles.

The graph is built from the source (the AST of every module under plugin/tbprof): an edge runs
from a module to each tbprof module it names in an ``import`` or ``from ... import`` anywhere in
its body, at module level, inside functions (imports deferred to first use) and under
``if TYPE_CHECKING:`` alike. Type-only imports are included on purpose: a circle that exists only
for the type checker still ties two modules together for a reader, and it is a cycle the moment
someone needs the name at run time. ``from pkg import name`` names the submodule ``pkg.name``
where one exists, else ``pkg`` itself; importing a module does not add an edge to its parent
packages (their ``__init__`` is run, but it is not what the importer asked for).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "plugin"
PACKAGE = PACKAGE_ROOT / "tbprof"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py") if "protos" not in p.parts}


def import_graph() -> dict[str, set[str]]:
    """Module -> the tbprof modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolved against this module's package
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a name inside a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:
        nonlocal counter
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_cycle_finder_finds_a_known_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_type_checking_and_relative_imports() -> None:
    graph = import_graph()
    assert "tbprof.store.memo" in graph["tbprof.store.tables"]  # a plain module-level import
    assert "tbprof.store.tables" in graph["tbprof.store.derived"]  # under `if TYPE_CHECKING:` only
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300


def test_the_package_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []
