"""tfprof's four views of a ``TfprofProfile``: scope, graph, op and code, with tfprof's options.

The views follow tfprof's documented three phases (tensorflow/core/profiler/g3doc/options.md)
and its observable behaviour, which the tests check against TensorFlow's own profiler:

1. *Account*: nodes whose op types match ``account_type_regexes`` are accounted; every
   node's total is its own statistics plus its accounted descendants' totals (in the graph
   view an unaccounted node hands its accounted inputs up; in scope and code views an
   unaccounted node stays as long as it has accounted descendants and still adds its own
   numbers, as tfprof does).
2. *Show*: ``start_name_regexes`` picks the start nodes, then ``max_depth``, ``min_*``,
   ``show/hide/trim_name_regexes`` decide which nodes are displayed; a hidden node's
   displayed descendants move up to its displayed ancestor. ``account_displayed_op_only``
   recomputes totals from displayed nodes only (scope, graph, op views).
3. Children are ordered by ``order_by`` (stable, descending for numbers).

Per view: scope = tree of name scopes (``a/b/c`` under ``a/b``); graph = data flow, a node's
children are its inputs and each node appears once (first visit in depth-first order from
the nodes nothing consumes); op = a list of op types where a row's total is the sum over it
and all rows below it (tfprof's "accumulated" column) and ``max_depth`` is the list length;
code = tree of Python call stacks, gradient ops filed under their forward op's stack with a
" (gradient)" suffix.

A hostile file must not cost memory quadratic in its size: a 120 KB node name of 60 000 ``/``
holds 60 000 name scopes whose full names add up to 3.6 GB, and one file name of 100 KB in
every frame of a call stack would give each call site a 100 KB label. So a scope node keeps a
reference into its graph node's name and the length of its prefix (the full name is built only
when a regex or a sort of several siblings needs it, and dropped after); call-site labels and
the names a view shows are cut to ``MAX_SHOWN_NAME_CHARS``.

Nodes are few (graph nodes, not events): per-node Python loops are fine; traversals are
iterative so a long data-flow chain cannot exhaust the interpreter's recursion limit.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tbprof.domain.regex import RegexError, compile_user_regex
from tbprof.store.tfprof import TfprofProfile, Trace

ROOT_NAME = "_TFProfRoot"
SCOPE_PARENT_TYPE = "_kTFScopeParent"
GRAPH_PARENT_TYPE = "_TFGraphParent"
GRADIENT_SUFFIX = " (gradient)"

VIEWS = ("scope", "graph", "op", "code")

# Longest name a view row shows (longer ones keep their head and tail around an ellipsis), and
# longest file name in a call-site label: far beyond any real TensorFlow name, short enough that
# 10 000 displayed rows stay a few MB.
MAX_SHOWN_NAME_CHARS = 512
_SHOWN_HEAD_CHARS = 128
# Longest name regexes match in full (longer ones: their shown form), so that matching stays
# linear in the file: each node costs at most this much scanning.
MAX_MATCHED_NAME_CHARS = 4096
ELLIPSIS = "..."  # ASCII: a non-ASCII character would double the string's bytes

# Statistic slots of self/total vectors.
METRICS = ("run_count", "exec_micros", "accelerator_exec_micros", "cpu_exec_micros", "requested_bytes",
           "peak_bytes", "residual_bytes", "output_bytes", "parameters", "float_ops", "definition_count")
M = {name: i for i, name in enumerate(METRICS)}
N_METRICS = len(METRICS)

# order_by value -> total slot it sorts by (descending); "name" and "occurrence" sort by name,
# as tfprof does (it accepts "occurrence" but orders such views by name).
ORDER_BY = {"name": None, "bytes": "requested_bytes", "peak_bytes": "peak_bytes", "residual_bytes": "residual_bytes",
            "output_bytes": "output_bytes", "micros": "exec_micros", "accelerator_micros": "accelerator_exec_micros",
            "cpu_micros": "cpu_exec_micros", "params": "parameters", "float_ops": "float_ops", "occurrence": None}
SELECTABLE = ("bytes", "micros", "params", "float_ops", "tensor_value", "device", "op_types", "occurrence",
              "input_shapes", "accelerator_micros", "cpu_micros", "peak_bytes", "residual_bytes", "output_bytes")


@dataclass(frozen=True)
class ViewOptions:
    """tfprof's options (defaults: everything shown and accounted, ordered by name)."""

    max_depth: int = 10000
    min_bytes: int = 0
    min_peak_bytes: int = 0
    min_residual_bytes: int = 0
    min_output_bytes: int = 0
    min_micros: int = 0
    min_accelerator_micros: int = 0
    min_cpu_micros: int = 0
    min_params: int = 0
    min_float_ops: int = 0
    min_occurrence: int = 0
    step: int = -1
    order_by: str = "name"
    account_type_regexes: tuple[str, ...] = (".*",)
    start_name_regexes: tuple[str, ...] = (".*",)
    trim_name_regexes: tuple[str, ...] = ()
    show_name_regexes: tuple[str, ...] = (".*",)
    hide_name_regexes: tuple[str, ...] = ()
    account_displayed_op_only: bool = False
    select: tuple[str, ...] = ("micros",)


class ViewError(ValueError):
    """Options that tfprof would refuse (unknown step, order or attribute, bad regex)."""


@dataclass
class ViewRow:
    name: str
    depth: int  # display depth: 0 for the root
    accounted: bool
    self_stats: list[int]  # METRICS
    total_stats: list[int]  # METRICS
    op_types: tuple[str, ...]
    devices: tuple[str, ...]
    node_count: int  # graph nodes the row stands for (1 in scope/graph views, 0 for name-scope parents)
    graph_nodes: tuple[int, ...] = ()  # node indices (code/op views)
    trace: tuple[str, int, str, int] | None = None  # code view: (file, line, function, func start line)
    parent: int = -1  # row index of the displayed parent
    node: int = -1  # graph node index (scope/graph views), -1 for synthetic rows
    # Code view, displayed leaves: the accounted graph nodes of every call site below
    # (displayed or not), which tfprof's pprof output files under this leaf.
    leaf_graph_nodes: tuple[int, ...] = ()


@dataclass
class ViewResult:
    view: str
    options: ViewOptions
    rows: list[ViewRow]  # pre-order; rows[0] is the root
    children: list[list[int]] = field(default_factory=list)  # row -> child rows

    @property
    def root(self) -> ViewRow:
        return self.rows[0]


# --- regex helpers --------------------------------------------------------------------------


class _Matcher:
    """Full-match of a name against a list of regexes (RE2::FullMatch in tfprof)."""

    def __init__(self, regexes: Sequence[str], option: str) -> None:
        self.regexes = tuple(regexes)
        self.match_all = self.regexes == (".*",)
        try:
            self.compiled = [compile_user_regex(r, what=option) for r in self.regexes]
        except RegexError as e:
            raise ViewError(str(e)) from None

    def any(self, text: str) -> bool:
        return any(c.fullmatch(text) is not None for c in self.compiled)

    def any_name(self, nodes: _Nodes, k: int) -> bool:
        """``any`` of node ``k``'s name (``_Nodes.matched_name``), built only when there is a
        regex to match."""
        return bool(self.compiled) and self.any(nodes.matched_name(k))


def shown_name(name: str) -> str:
    """``name`` cut to ``MAX_SHOWN_NAME_CHARS``: its head and tail around an ellipsis."""
    if len(name) <= MAX_SHOWN_NAME_CHARS:
        return name
    tail = MAX_SHOWN_NAME_CHARS - _SHOWN_HEAD_CHARS - len(ELLIPSIS)
    return name[:_SHOWN_HEAD_CHARS] + ELLIPSIS + name[-tail:]


def check_options(opts: ViewOptions, profile: TfprofProfile) -> None:
    if opts.order_by not in ORDER_BY:
        raise ViewError(f"order_by={opts.order_by!r} is not one of {', '.join(ORDER_BY)}")
    bad = [s for s in opts.select if s not in SELECTABLE]
    if bad:
        raise ViewError(f"select: unknown attribute(s) {', '.join(bad)}; choose from {', '.join(SELECTABLE)}")
    if opts.step >= 0 and opts.step not in profile.steps:
        raise ViewError(f"step={opts.step} is not in the profile; steps: {profile.steps} (-1 averages them)")


# --- the per-view node graph ------------------------------------------------------------------


class _Nodes:
    """Nodes of one view: static structure plus the per-show state tfprof keeps on ShowNode."""

    def __init__(self) -> None:
        # A node's name is names[k][:ends[k]] (ends[k] < 0: all of it): a scope node refers to
        # a graph node's name instead of holding a copy of its prefix.
        self.names: list[str] = []
        self.ends: list[int] = []
        self.children: list[list[int]] = []
        self.self_stats: list[list[int]] = []
        self.op_types: list[tuple[str, ...]] = []
        self.devices: list[tuple[str, ...]] = []
        self.node_count: list[int] = []
        self.graph_nodes: list[tuple[int, ...]] = []
        self.graph_node: list[int] = []
        self.traces: list[tuple[str, int, str, int] | None] = []
        # Per-show state.
        self.total: list[list[int]] = []
        self.account: list[bool] = []
        self.show_children: list[list[int]] = []
        self.snapshot: list[tuple[int, ...]] = []  # multi views: the members that were accounted

    def add(self, name: str, op_types: tuple[str, ...] = (), devices: tuple[str, ...] = (),
            graph_node: int = -1, trace: tuple[str, int, str, int] | None = None, end: int = -1) -> int:
        self.names.append(name)
        self.ends.append(end)
        self.children.append([])
        self.self_stats.append([0] * N_METRICS)
        self.op_types.append(op_types)
        self.devices.append(devices)
        self.node_count.append(1 if graph_node >= 0 else 0)
        self.graph_nodes.append(())
        self.graph_node.append(graph_node)
        self.traces.append(trace)
        return len(self.names) - 1

    def name(self, k: int) -> str:
        """Node ``k``'s full name (a new string for a scope prefix: do not keep it)."""
        end = self.ends[k]
        return self.names[k] if end < 0 else self.names[k][:end]

    def name_length(self, k: int) -> int:
        return len(self.names[k]) if self.ends[k] < 0 else self.ends[k]

    def matched_name(self, k: int) -> str:
        """The name regexes see: the full name, or beyond ``MAX_MATCHED_NAME_CHARS`` the shown
        one (matching every prefix of a 120 KB name in full would scan gigabytes)."""
        return self.name(k) if self.name_length(k) <= MAX_MATCHED_NAME_CHARS else self.shown_name(k)

    def shown_name(self, k: int) -> str:
        """The name a row shows, at most ``MAX_SHOWN_NAME_CHARS``, built without the full name."""
        text, end = self.names[k], self.ends[k]
        end = len(text) if end < 0 else end
        if end <= MAX_SHOWN_NAME_CHARS:
            return text[:end]
        tail = MAX_SHOWN_NAME_CHARS - _SHOWN_HEAD_CHARS - len(ELLIPSIS)
        return text[:_SHOWN_HEAD_CHARS] + ELLIPSIS + text[end - tail:end]

    def reset_state(self) -> None:
        n = len(self.names)
        self.total = [[0] * N_METRICS for _ in range(n)]
        self.account = [False] * n
        self.show_children = [[] for _ in range(n)]
        self.snapshot = [() for _ in range(n)]

    def add_self(self, k: int, with_definition: bool = True) -> None:
        t, s = self.total[k], self.self_stats[k]
        for i in range(N_METRICS - 1):
            t[i] += s[i]
        if with_definition:
            t[N_METRICS - 1] += 1

    def aggregate(self, k: int, child: int) -> None:
        t, c = self.total[k], self.total[child]
        for i in range(N_METRICS):
            t[i] += c[i]

    def set_self_from_graph_node(self, k: int, stats: dict[str, list[int]], g: int) -> None:
        s = self.self_stats[k]
        for name in METRICS[:-1]:
            s[M[name]] = stats[name][g]


def _walk(roots: Sequence[int], depth0: int, expand: Callable[[int, int], Sequence[int] | None],
          finish: Callable[[int, int, list[int]], Sequence[int]]) -> list[int]:
    """Depth-first over lists of nodes without recursion.

    ``expand(node, depth)`` runs when a node is entered and returns the nodes to visit below
    it (None skips the node); ``finish(node, depth, below)`` gets what its children returned
    and returns what the node hands to its parent's list.
    """
    iters = [iter(roots)]
    depths = [depth0]
    results: list[list[int]] = [[]]
    open_nodes: list[int] = []
    while True:
        node = next(iters[-1], None)
        if node is None:
            iters.pop()
            depths.pop()
            done = results.pop()
            if not iters:
                return done
            parent = open_nodes.pop()
            results[-1].extend(finish(parent, depths[-1], done))
            continue
        depth = depths[-1]
        below = expand(node, depth)
        if below is None:
            continue
        open_nodes.append(node)
        iters.append(iter(below))
        depths.append(depth + 1)
        results.append([])


class _Show:
    """The option-driven part shared by all views."""

    def __init__(self, nodes: _Nodes, opts: ViewOptions, root: int) -> None:
        self.n = nodes
        self.o = opts
        self.root = root
        self.account_types = _Matcher(opts.account_type_regexes, "account_type_regexes")
        self.start = _Matcher(opts.start_name_regexes, "start_name_regexes")
        self.trim = _Matcher(opts.trim_name_regexes, "trim_name_regexes")
        self.show_names = _Matcher(opts.show_name_regexes, "show_name_regexes")
        self.hide_names = _Matcher(opts.hide_name_regexes, "hide_name_regexes")
        key = ORDER_BY[opts.order_by]
        self.order_slot = None if key is None else M[key]

    def accounts_types(self, op_types: Sequence[str]) -> bool:
        if self.account_types.match_all:
            return True
        return any(c.fullmatch(t) is not None for c in self.account_types.compiled for t in op_types)

    def name_shown(self, k: int) -> bool:
        if not (self.show_names.match_all or self.show_names.any_name(self.n, k)):
            return False
        return not self.hide_names.any_name(self.n, k)

    def stats_shown(self, k: int, depth: int, multi: bool) -> bool:
        o, t, s = self.o, self.n.total[k], self.n.self_stats[k]
        if (t[M["requested_bytes"]] < o.min_bytes or t[M["peak_bytes"]] < o.min_peak_bytes
                or t[M["residual_bytes"]] < o.min_residual_bytes or t[M["output_bytes"]] < o.min_output_bytes
                or t[M["exec_micros"]] < o.min_micros
                or t[M["accelerator_exec_micros"]] < o.min_accelerator_micros
                or t[M["cpu_exec_micros"]] < o.min_cpu_micros or depth > o.max_depth):
            return False
        if multi:
            # Code and op views compare the totals of parameters and float ops.
            return t[M["parameters"]] >= o.min_params and t[M["float_ops"]] >= o.min_float_ops
        # Scope and graph views compare the node's own parameters, float ops and run count.
        return (s[M["parameters"]] >= o.min_params and s[M["float_ops"]] >= o.min_float_ops
                and s[M["run_count"]] >= o.min_occurrence)

    def should_show(self, k: int, depth: int, multi: bool = False) -> bool:
        if k == self.root:
            return True
        return self.stats_shown(k, depth, multi) and self.name_shown(k)

    def sort(self, ks: list[int], multi: bool = False) -> list[int]:
        """tfprof's SortNodes: stable; numbers descending. In code/op views "occurrence" orders
        by the number of graph nodes (most first), elsewhere by name. (TensorFlow 2.21 keeps
        the name order of ties in every view; checked against its output.)"""
        if not self.o.order_by or len(ks) < 2:
            return ks
        slot = self.order_slot
        if slot is not None:
            return sorted(ks, key=lambda k: -self.n.total[k][slot])
        if multi and self.o.order_by == "occurrence":
            return sorted(ks, key=lambda k: -self.n.node_count[k])
        return sorted(ks, key=self.n.name)

    def search_root(self, roots: list[int], visited: set[int] | None) -> list[int]:
        """Nodes matching start_name_regexes, searching below the ones that do not match."""

        def expand(k: int, depth: int) -> Sequence[int] | None:
            if visited is not None:
                if k in visited:
                    return None
                visited.add(k)
            return [] if self.start.any_name(self.n, k) else self.n.show_children[k]

        def finish(k: int, depth: int, below: list[int]) -> Sequence[int]:
            return [k] if self.start.any_name(self.n, k) else below

        return _walk(roots, 0, expand, finish)


# --- building each view's nodes -----------------------------------------------------------------


def _graph_node_fields(p: TfprofProfile, g: int) -> dict[str, object]:
    dev = p.canonical_device[g]
    return {"op_types": p.op_types[g], "devices": (dev,) if dev else (), "graph_node": g}


def _scope_nodes(p: TfprofProfile) -> tuple[_Nodes, int]:
    """Every ``/``-prefix of every node name is a node, under its own longest prefix.

    A trie of name components (keyed by parent node and component), so each prefix costs its
    last component, not its whole length. Children are ordered by component, which among
    siblings (one parent prefix) is the order of their full names."""
    nodes = _Nodes()
    root = nodes.add(ROOT_NAME, op_types=(SCOPE_PARENT_TYPE,))
    child_of: dict[tuple[int, str], int] = {}
    component: list[str] = [""]
    for g, name in enumerate(p.names):
        k, end = root, -1
        for part in name.split("/"):
            end += len(part) + 1
            key = (k, part)
            c = child_of.get(key)
            if c is None:
                # The prefix of this name up to ``end``; a graph node of exactly that name
                # takes the node over below.
                c = child_of[key] = nodes.add(name, op_types=(SCOPE_PARENT_TYPE,), end=end)
                component.append(part)
                nodes.children[k].append(c)
            k = c
        nodes.names[k], nodes.ends[k] = name, -1
        dev = p.canonical_device[g]
        nodes.op_types[k], nodes.devices[k] = p.op_types[g], (dev,) if dev else ()
        nodes.graph_node[k] = g
        nodes.node_count[k] = 1
    for children in nodes.children:
        children.sort(key=component.__getitem__)
    return nodes, root


def _graph_nodes(p: TfprofProfile) -> tuple[_Nodes, int]:
    nodes = _Nodes()
    for g in range(p.n_nodes):
        nodes.add(p.names[g], **_graph_node_fields(p, g))  # type: ignore[arg-type]
        nodes.children[g] = list(p.inputs[g])
    consumed = {name for names in p.input_names for name in names}
    roots = [g for g in range(p.n_nodes) if p.names[g] not in consumed]
    root = nodes.add(ROOT_NAME, op_types=(GRAPH_PARENT_TYPE,))
    nodes.children[root] = roots
    return nodes, root


def _forward_name(name: str) -> str | None:
    """The forward op of a gradient op ``.../gradients/<forward>_grad/...`` (tfprof's rule)."""
    grad_prefix = name.find("gradients/")
    grad_suffix = name.find("_grad/")
    if grad_prefix < 0 or grad_suffix < 0:
        return None
    start = grad_prefix + len("gradients/")
    if grad_suffix == start:
        return None
    # tfprof takes an unsigned length: a suffix before the prefix means "to the end".
    return name[start:grad_suffix] if grad_suffix > start else name[start:]


def trace_label(file: str, lineno: int, function: str, base: str | None = None) -> str:
    """``file.py:12:function`` as tfprof names a call site (function cut to 17 chars + '...');
    a file name beyond ``MAX_SHOWN_NAME_CHARS`` is cut too (``base``: it, already cut)."""
    func = function if len(function) < 20 else function[:17] + "..."
    if base is None:
        base = shown_name(posixpath.basename(file))
    return f"{base}:{lineno}:{func}"


def _code_nodes(p: TfprofProfile) -> tuple[_Nodes, int, int]:
    """The call-stack tree; returns (nodes, root, gradient ops whose forward op is unknown)."""
    nodes = _Nodes()
    root = nodes.add(ROOT_NAME)
    child_by_name: list[dict[str, int]] = [{}]
    members: list[dict[str, int]] = [{}]  # code node -> graph nodes (by name, as tfprof's map)

    def child(parent: int, label: str, trace: tuple[str, int, str, int]) -> int:
        k = child_by_name[parent].get(label)
        if k is None:
            k = nodes.add(label, trace=trace)
            child_by_name.append({})
            members.append({})
            child_by_name[parent][label] = k
            nodes.children[parent].append(k)
        return k

    bases: dict[str, str] = {}  # file -> its shown base name: once per file, not once per frame

    def label(t: Trace) -> str:
        base = bases.get(t.file)
        if base is None:
            base = bases[t.file] = shown_name(posixpath.basename(t.file))
        return trace_label(t.file, t.lineno, t.function, base)

    grads: dict[str, list[int]] = {}
    forwards: dict[str, int] = {}
    for g, name in enumerate(p.names):
        stack = p.traces[g]
        if not stack:
            continue
        fwd = _forward_name(name)
        if fwd is not None:
            grads.setdefault(fwd, []).append(g)
            continue
        forwards[name] = g
        k = root
        for t in stack:
            k = child(k, label(t), (t.file, t.lineno, t.function, t.func_start_line))
        members[k][name] = g
    unaccounted = 0
    for fwd in sorted(grads):
        g_fwd = forwards.get(fwd)
        if g_fwd is None:
            unaccounted += 1
            continue
        k = root
        for t in p.traces[g_fwd]:
            label_ = label(t) + GRADIENT_SUFFIX
            k = child(k, label_, (t.file, t.lineno, t.function + GRADIENT_SUFFIX, t.func_start_line))
        for g in grads[fwd]:
            members[k].setdefault(p.names[g], g)
    for k in range(len(nodes.names)):
        nodes.graph_nodes[k] = tuple(members[k][name] for name in sorted(members[k]))
    return nodes, root, unaccounted


def _op_nodes(p: TfprofProfile) -> tuple[_Nodes, int]:
    nodes = _Nodes()
    by_op: dict[str, list[int]] = {}
    for g in range(p.n_nodes):
        by_op.setdefault(p.ops[g], []).append(g)  # p.names is sorted, so members are too
    for op in sorted(by_op):
        k = nodes.add(op)
        nodes.graph_nodes[k] = tuple(by_op[op])
    root = nodes.add(ROOT_NAME)
    return nodes, root


def _snapshot(nodes: _Nodes, k: int, p: TfprofProfile, stats: dict[str, list[int]], show: _Show) -> bool:
    """tfprof's multi-node snapshot: sums the statistics of the member nodes whose op types
    match account_type_regexes. A node matching several regexes is counted once per regex,
    as tfprof does; the member list (and its count) holds it once."""
    members = nodes.graph_nodes[k]
    regexes = show.account_types
    if not regexes.regexes:
        picked: list[int] = []
    elif regexes.match_all:
        picked = list(members)
    else:
        picked = [g for c in regexes.compiled for g in members if any(c.fullmatch(t) for t in p.op_types[g])]
    s = [0] * N_METRICS
    for g in picked:
        for name in METRICS[:-1]:
            s[M[name]] += stats[name][g]
    unique = sorted(set(picked), key=lambda g: p.names[g])
    # The run count of a multi node is the run count of its distinct members (tfprof's occurrence).
    s[M["run_count"]] = sum(stats["run_count"][g] for g in unique)
    s[M["definition_count"]] = 0
    nodes.self_stats[k] = s
    nodes.node_count[k] = len(unique)
    nodes.op_types[k] = tuple(sorted({t for g in unique for t in p.op_types[g]}))
    nodes.devices[k] = tuple(sorted({p.canonical_device[g] for g in unique}))
    nodes.graph_node[k] = -1
    nodes.snapshot[k] = tuple(unique)
    if not picked:
        return regexes.match_all
    return True


# --- views --------------------------------------------------------------------------------------


def _stats_lists(p: TfprofProfile, step: int) -> dict[str, list[int]]:
    return {k: v.tolist() for k, v in p.node_stats(step).items()}


def _tree_view(view: str, p: TfprofProfile, opts: ViewOptions) -> ViewResult:
    """scope and graph views (one display node per graph node)."""
    nodes, root = _scope_nodes(p) if view == "scope" else _graph_nodes(p)
    show = _Show(nodes, opts, root)
    stats = _stats_lists(p, opts.step)
    nodes.reset_state()
    graph = view == "graph"
    visits: set[int] = set()

    def account_expand(k: int, depth: int) -> Sequence[int] | None:
        if graph:
            if k in visits:
                return None
            visits.add(k)
        return nodes.children[k]

    def account_finish(k: int, depth: int, accounted_below: list[int]) -> Sequence[int]:
        g = nodes.graph_node[k]
        if g >= 0:
            nodes.set_self_from_graph_node(k, stats, g)
        nodes.account[k] = show.accounts_types(nodes.op_types[k])
        keep = nodes.account[k] if graph else (nodes.account[k] or bool(accounted_below))
        if not keep:
            return accounted_below if graph else []
        nodes.total[k] = [0] * N_METRICS
        nodes.add_self(k)
        for c in accounted_below:
            nodes.aggregate(k, c)
        nodes.show_children[k] = list(accounted_below)
        return [k]

    roots = _walk(nodes.children[root], 0, account_expand, account_finish)
    for r in roots:
        nodes.aggregate(root, r)
    if show.start.regexes != (".*",):
        roots = show.search_root(roots, set() if graph else None)
    nodes.show_children[root] = roots

    visits.clear()
    shown: dict[int, bool] = {}

    def print_expand(k: int, depth: int) -> Sequence[int] | None:
        if graph:
            if k in visits:
                return None
            visits.add(k)
        shown[k] = show.should_show(k, depth)
        if show.trim.any_name(nodes, k) or depth > opts.max_depth:
            return []
        return nodes.show_children[k]

    def print_finish(k: int, depth: int, shown_below: list[int]) -> Sequence[int]:
        if not shown[k]:
            return shown_below
        if opts.account_displayed_op_only:
            nodes.total[k] = [0] * N_METRICS
            nodes.add_self(k)
        ordered = show.sort(shown_below)
        nodes.show_children[k] = ordered
        if opts.account_displayed_op_only:
            for c in ordered:
                nodes.aggregate(k, c)
        return [k]

    _walk([root], 1, print_expand, print_finish)
    return _result(view, opts, nodes, root, multi=False)


def _code_view(p: TfprofProfile, opts: ViewOptions) -> ViewResult:
    nodes, root, _ = _code_nodes(p)
    show = _Show(nodes, opts, root)
    stats = _stats_lists(p, opts.step)
    nodes.reset_state()

    def account_finish(k: int, depth: int, accounted_below: list[int]) -> Sequence[int]:
        nodes.account[k] = _snapshot(nodes, k, p, stats, show)
        if not (nodes.account[k] or accounted_below):
            return []
        nodes.total[k] = [0] * N_METRICS
        nodes.add_self(k, with_definition=False)
        for c in accounted_below:
            nodes.aggregate(k, c)
        nodes.show_children[k] = list(accounted_below)
        return [k]

    roots = _walk(nodes.children[root], 0, lambda k, d: nodes.children[k], account_finish)
    for r in roots:
        nodes.aggregate(root, r)
    if show.start.regexes != (".*",):
        roots = show.search_root(roots, None)
    nodes.show_children[root] = roots
    shown: dict[int, bool] = {}

    def print_expand(k: int, depth: int) -> Sequence[int] | None:
        # Unlike scope/graph views, a trimmed or too deep call site is dropped with its callees.
        if show.trim.any_name(nodes, k) or depth > opts.max_depth:
            return None
        shown[k] = show.should_show(k, depth, multi=True)
        return nodes.show_children[k]

    def print_finish(k: int, depth: int, shown_below: list[int]) -> Sequence[int]:
        if not shown[k]:
            return shown_below
        nodes.show_children[k] = show.sort(shown_below, multi=True)
        return [k]

    _walk([root], 1, print_expand, print_finish)
    result = _result("code", opts, nodes, root, multi=True)
    for row, k in zip(result.rows, result_nodes(result, nodes, root), strict=False):
        if k != root and not nodes.show_children[k]:
            row.leaf_graph_nodes = _all_leaf_members(nodes, k)
    return result


def result_nodes(result: ViewResult, nodes: _Nodes, root: int) -> list[int]:
    """The view node of each result row (same pre-order walk as ``_result``)."""
    out: list[int] = []
    stack = [root]
    while stack:
        k = stack.pop()
        out.append(k)
        stack.extend(reversed(nodes.show_children[k]))
    return out


def _all_leaf_members(nodes: _Nodes, k: int) -> tuple[int, ...]:
    members: list[int] = []
    stack = [k]
    while stack:
        c = stack.pop()
        if not nodes.children[c]:
            members.extend(nodes.snapshot[c])
        stack.extend(reversed(nodes.children[c]))
    return tuple(members)


def _op_view(p: TfprofProfile, opts: ViewOptions) -> ViewResult:
    nodes, root = _op_nodes(p)
    show = _Show(nodes, opts, root)
    stats = _stats_lists(p, opts.step)
    nodes.reset_state()
    ops = [k for k in range(len(nodes.names)) if k != root]
    for k in ops:
        nodes.account[k] = _snapshot(nodes, k, p, stats, show)
        nodes.add_self(k, with_definition=False)
    ordered = show.sort(ops, multi=True)
    accounted = [k for k in ordered if nodes.account[k]]
    # Each row's total accumulates the rows below it.
    for i in range(len(accounted) - 2, -1, -1):
        nodes.aggregate(accounted[i], accounted[i + 1])
    if accounted:
        nodes.aggregate(root, accounted[0])
    start = 0
    if show.start.regexes and not show.start.match_all:
        start = next((i for i, k in enumerate(accounted) if show.start.any_name(nodes, k)), len(accounted))
    shown: list[int] = []
    for depth, k in enumerate(accounted[start:]):
        if show.trim.any_name(nodes, k) or depth > opts.max_depth:
            break
        if show.should_show(k, depth, multi=True) and opts.min_occurrence <= nodes.node_count[k]:
            shown.append(k)
    if opts.account_displayed_op_only:
        for i in range(len(shown) - 1, -1, -1):
            k = shown[i]
            nodes.total[k] = [0] * N_METRICS
            nodes.add_self(k, with_definition=False)
            if i + 1 < len(shown):
                nodes.aggregate(k, shown[i + 1])
        nodes.total[root] = [0] * N_METRICS
        if shown:
            nodes.aggregate(root, shown[0])
    nodes.show_children[root] = shown
    return _result("op", opts, nodes, root, multi=True)


def _result(view: str, opts: ViewOptions, nodes: _Nodes, root: int, multi: bool) -> ViewResult:
    rows: list[ViewRow] = []
    children: list[list[int]] = []
    stack: list[tuple[int, int, int]] = [(root, 0, -1)]
    while stack:
        k, depth, parent = stack.pop()
        row_index = len(rows)
        rows.append(ViewRow(
            name=nodes.shown_name(k), depth=depth, accounted=nodes.account[k], self_stats=list(nodes.self_stats[k]),
            total_stats=list(nodes.total[k]), op_types=nodes.op_types[k], devices=nodes.devices[k],
            node_count=nodes.node_count[k] if multi else (1 if nodes.graph_node[k] >= 0 else 0),
            graph_nodes=nodes.snapshot[k] if multi else (),
            trace=nodes.traces[k], parent=parent, node=nodes.graph_node[k]))
        children.append([])
        if parent >= 0:
            children[parent].append(row_index)
        # The op view is a flat list under the root.
        for c in reversed(nodes.show_children[k]):
            stack.append((c, depth + 1, row_index))
    return ViewResult(view, opts, rows, children)


def show_view(p: TfprofProfile, view: str, opts: ViewOptions) -> ViewResult:
    """One tfprof view of the profile under ``opts``."""
    if view not in VIEWS:
        raise ViewError(f"view={view!r} is not one of {', '.join(VIEWS)}")
    check_options(opts, p)
    if view == "code":
        return _code_view(p, opts)
    if view == "op":
        return _op_view(p, opts)
    return _tree_view(view, p, opts)
