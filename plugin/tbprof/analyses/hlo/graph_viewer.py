"""graph_viewer: the HLO graph around one op, as XProf's "Graph Viewer".

From the HloProto of the op's program: the instructions of the computation that holds the op,
within ``graph_width`` edges of it (operands and users, XProf's option name), with the edges
between them; as in XLA's graph dumper (which XProf runs), a get-tuple-element is drawn as an
edge, not a node. Fusions and async ops are single nodes (XProf draws their called
computation inside them). Each node carries its opcode, shape, framework op and the op's self time from
the op metrics (0 for ops that never ran on the device: parameters, tuples, ops inside a
fusion), so the page can colour the graph by self time, and what the page's metadata panel
shows: its HLO text (``%name = shape opcode(operands)``), its source line and, for a fusion or
another op that calls computations, the text of those computations (XProf's graph viewer draws
a fusion's body inside it). ``format=dot`` adds the graph as Graphviz DOT text for scripts;
``format=hlo`` adds the whole module's HLO text. The browser lays the graph out itself (dagre).

The answer also lists the modules (programs) by device time and the chosen module's ops (those
that ran first, by self time) for the page's pickers. With no op given, the graph opens on the
module with the most device time and its most expensive fusion (the op with the most self time
overall is often an async collective, whose graph is a two-node wrapper).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from tbprof.analyses.hlo.hlo_stats import programs_of
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.results.hlo import (
    Graph,
    GraphEdge,
    GraphModuleEntry,
    GraphNode,
    GraphOpEntry,
    GraphViewerResult,
)
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_nonneg_int
from tbprof.domain.hlo_map import HloProgram, hlo_category, hlo_programs, program_id_text
from tbprof.domain.hlo_text import instruction_text, shape_text, source_frames
from tbprof.errors import BadParameter, NotFound
from tbprof.store.tables import ProfileStore

MAX_WIDTH = 16  # beyond this a graph of a real module has thousands of nodes: unreadable
MAX_NODES = 2000
MAX_PICKER_OPS = 5000  # the op picker's list; a module of jax_large has ~10k instructions
MAX_CALLED_LINES = 200  # lines of a node's called computations (a fusion's body) in its metadata
MAX_MODULE_TEXT_CHARS = 8 << 20  # format=hlo: a module's text beyond this is cut (and says so)


def parse_text(text: str) -> str:
    if not text or len(text) > 1000:
        raise ValueError("expected a non-empty name of at most 1000 characters")
    return text


def parse_format(text: str) -> str:
    if text not in ("json", "dot", "hlo"):
        raise ValueError("expected json, dot or hlo")
    return text


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _find_program(programs: dict[int, HloProgram], node: str, module: str | None,
                  busiest: dict[int, float]) -> HloProgram:
    if module:
        for p in programs.values():
            if module in (p.display_name, str(p.program_id), program_id_text(p.program_id), p.module_name):
                if p.instruction(node) is None:
                    raise NotFound(f"HLO module {p.display_name} has no op {node!r}")
                return p
        raise NotFound(f"no HLO module {module!r}")
    having = [p for p in programs.values() if p.instruction(node) is not None]
    if not having:
        raise NotFound(f"no HLO module has an op {node!r}")
    # The same op name exists in many programs: take the one where it ran longest.
    return max(having, key=lambda p: (busiest.get(p.program_id, 0.0), -p.program_id))


def _computation_lines(comp: Any, by_id: dict[int, Any]) -> list[str]:
    root = comp.root_id
    return [f"{_decode(comp.name)} {{",
            *(("  ROOT " if i.id == root else "  ") + instruction_text(i, by_id) for i in comp.instructions), "}"]


def _called_text(ins: Any, comps: dict[int, Any], by_id: dict[int, Any]) -> str:
    """The computations an op calls (a fusion's body, an async op's wrapped computation), as
    HLO text, at most MAX_CALLED_LINES lines."""
    lines: list[str] = []
    for cid in ins.called_computation_ids:
        comp = comps.get(cid)
        if comp is not None:
            lines.extend(_computation_lines(comp, by_id))
    if len(lines) > MAX_CALLED_LINES:
        lines = [*lines[:MAX_CALLED_LINES], f"... {len(lines) - MAX_CALLED_LINES} more lines"]
    return "\n".join(lines)


def module_text(program: HloProgram) -> str:
    """The module as HLO text (each instruction's head, ``ROOT`` marked), entry computation last
    as XLA prints it; cut at MAX_MODULE_TEXT_CHARS."""
    mod = program.module
    if mod is None:
        return ""
    by_id = {i.id: i for c in mod.computations for i in c.instructions}
    entry = mod.entry_computation_id
    comps = sorted(mod.computations, key=lambda c: c.id == entry)
    parts = [f"HloModule {program.module_name}, program id {program_id_text(program.program_id)}", ""]
    size = 0
    for comp in comps:
        lines = _computation_lines(comp, by_id)
        if comp.id == entry:
            lines[0] = "ENTRY " + lines[0]
        block = "\n".join(lines) + "\n"
        size += len(block)
        if size > MAX_MODULE_TEXT_CHARS:
            parts.append(f"... cut at {MAX_MODULE_TEXT_CHARS} characters")
            break
        parts.append(block)
    return "\n".join(parts)


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot_quote(text: str) -> str:
    return '"' + _dot_escape(text) + '"'


def to_dot(graph: Graph) -> str:
    lines = [f"digraph {_dot_quote(graph['module'])} {{", "  rankdir=TB;", "  node [shape=box, style=filled];"]
    top = max((n["self_time_us"] for n in graph["nodes"]), default=0.0) or 1.0
    for n in graph["nodes"]:
        # Red in proportion to self time (white: never ran).
        heat = int(255 - 200 * n["self_time_us"] / top)
        color = f"#ff{heat:02x}{heat:02x}"
        # DOT's own line break (a backslash and "n") between escaped parts.
        label = "\\n".join(_dot_escape(x) for x in (n["name"], f"{n['opcode']} {n['shape']}",
                                                      f"{n['self_time_us']:.3f} us"))
        pen = ", penwidth=3" if n["center"] else ""
        lines.append(f"  {_dot_quote(n['name'])} [label=\"{label}\", fillcolor={_dot_quote(color)}{pen}];")
    for e in graph["edges"]:
        lines.append(f"  {_dot_quote(e['from'])} -> {_dot_quote(e['to'])};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def build(stores: Sequence[ProfileStore], node: str, module: str | None, width: int) -> Graph:
    programs = programs_of(stores)
    if not programs:
        raise NotFound("this profile carries no HLO programs (graph_viewer needs an XLA profile)")
    db = hosts_op_metrics(stores, "device")
    self_us: dict[tuple[int, str], float] = {}
    busiest: dict[int, float] = {}
    for pid, name, t in zip(db.program_id.tolist(), db.name.tolist(), (db.self_time_ps / 1e6).tolist(), strict=True):
        self_us[(pid, name)] = self_us.get((pid, name), 0.0) + t
    for pid, name in self_us:
        if name == node:
            busiest[pid] = busiest.get(pid, 0.0) + self_us[(pid, name)]
    program = _find_program(programs, node, module, busiest)
    mod = program.module
    if mod is None:
        raise NotFound(f"HLO module {program.display_name} was not kept")
    comp = next(c for c in mod.computations if any(_decode(i.name) == node for i in c.instructions))
    by_id = {i.id: i for i in comp.instructions}
    users: dict[int, list[int]] = {i.id: [] for i in comp.instructions}
    for ins in comp.instructions:
        for oid in ins.operand_ids:
            if oid in users:
                users[oid].append(ins.id)
    center = next(i for i in comp.instructions if _decode(i.name) == node)
    # XLA's graph dumper (which XProf runs) merges a get-tuple-element into its users: it costs
    # one step of width like any op but is drawn as the edge it is, not as a node.
    gte = {i.id for i in comp.instructions if i.opcode == b"get-tuple-element" and i.id != center.id}
    dist = {center.id: 0}
    queue = deque([center.id])
    while queue and len(dist) < MAX_NODES:
        cur = queue.popleft()
        if dist[cur] >= width:
            continue
        for nxt in list(by_id[cur].operand_ids) + users[cur]:
            if nxt in by_id and nxt not in dist:
                dist[nxt] = dist[cur] + 1
                queue.append(nxt)
    shown = {iid for iid in dist if iid not in gte}

    def source(oid: int) -> int:
        """The instruction an operand comes from, through get-tuple-elements."""
        seen = 0
        while oid in gte and by_id[oid].operand_ids and seen < 64:
            oid = by_id[oid].operand_ids[0]
            seen += 1
        return oid

    module_by_id = {i.id: i for c in mod.computations for i in c.instructions}
    comps = {c.id: c for c in mod.computations}
    nodes: list[GraphNode] = []
    for iid, d in sorted(dist.items(), key=lambda kv: (kv[1], kv[0])):
        if iid not in shown:
            continue
        ins = by_id[iid]
        name = _decode(ins.name)
        opcode = _decode(ins.opcode)
        frames = source_frames(mod, ins.metadata, max_frames=1)
        nodes.append({
            "id": int(iid), "name": name, "opcode": opcode, "category": hlo_category(opcode, _decode(ins.fusion_kind)),
            "shape": shape_text(ins.shape), "framework_op": _decode(ins.metadata.op_name), "distance": d,
            "center": iid == center.id, "self_time_us": self_us.get((program.program_id, name), 0.0),
            "hlo_text": instruction_text(ins, module_by_id), "source": frames[0] if frames else "",
            "called_text": _called_text(ins, comps, module_by_id),
        })
    edges: list[GraphEdge] = []
    for iid in sorted(shown):
        for oid in by_id[iid].operand_ids:
            src = source(oid)
            if src in shown:
                edges.append({"from": _decode(by_id[src].name), "to": _decode(by_id[iid].name)})
    return {"module": program.display_name, "program_id": program_id_text(program.program_id),
            "computation": _decode(comp.name), "node_name": node, "graph_width": width,
            "truncated": len(dist) >= MAX_NODES, "nodes": nodes, "edges": edges}


NODE_COLUMNS = [
    Column("name", "HLO op", "str"), Column("opcode", "Opcode", "str"), Column("category", "Category", "str"),
    Column("shape", "Shape", "str"), Column("framework_op", "Framework op", "str"),
    Column("distance", "Distance", "int", "", "edges from the centre op"),
    Column("center", "Centre", "bool"), Column("self_time_us", "Self time", "float", "us"),
]
EDGE_COLUMNS = [Column("from", "From", "str", "", "the operand"), Column("to", "To", "str", "", "the op using it")]


def graph_tables(graph: Mapping[str, Any]) -> dict[str, Table]:
    """The graph's nodes and edges as tables (CSV export, ``tbprof show graph_viewer --format csv``)."""
    return {
        "nodes": Table.from_columns(NODE_COLUMNS, {c.name: [n[c.name] for n in graph["nodes"]] for c in NODE_COLUMNS}),
        "edges": Table.from_columns(EDGE_COLUMNS, {c.name: [e[c.name] for e in graph["edges"]] for c in EDGE_COLUMNS}),
    }


def _op_times(stores: Sequence[ProfileStore], programs: dict[int, HloProgram]) -> dict[int, dict[str, float]]:
    """Self time (us) of each device op, per program that the profile carries."""
    db = hosts_op_metrics(stores, "device")
    out: dict[int, dict[str, float]] = {}
    for pid, name, t in zip(db.program_id.tolist(), db.name.tolist(), (db.self_time_ps / 1e6).tolist(), strict=True):
        if int(pid) in programs:
            ops = out.setdefault(int(pid), {})
            ops[str(name)] = ops.get(str(name), 0.0) + t
    return out


def _find_module(programs: dict[int, HloProgram], module: str) -> HloProgram:
    for p in programs.values():
        if module in (p.display_name, str(p.program_id), program_id_text(p.program_id), p.module_name):
            return p
    raise NotFound(f"no HLO module {module!r}")


def _best_op(program: HloProgram, times: Mapping[str, float]) -> str | None:
    """The module's most expensive fusion; else its most expensive op that is not an async
    wrapper's start/done half; else its most expensive op; else its entry computation's root."""
    ran = sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))
    ops = [(name, program.op(name)) for name, _ in ran]
    for want in (lambda o: o.opcode == "fusion",
                 lambda o: not o.opcode.endswith(("-start", "-done", "-update")) and o.opcode != "async-start"):
        for name, op in ops:
            if op is not None and want(op):
                return name
    if ops and ops[0][1] is not None:
        return ops[0][0]
    mod = program.module
    if mod is None:
        return None
    entry = next((c for c in mod.computations if c.id == mod.entry_computation_id), None)
    root = next((i for i in entry.instructions if i.id == entry.root_id), None) if entry is not None else None
    return _decode(root.name) if root is not None else None


def _picker_ops(program: HloProgram, times: Mapping[str, float]) -> tuple[list[GraphOpEntry], bool]:
    """The module's ops for the op picker: those that ran (by self time), then the rest of its
    instructions by name; at most MAX_PICKER_OPS."""
    ran = sorted(times.items(), key=lambda kv: (-kv[1], kv[0]))
    out: list[GraphOpEntry] = [
        {"name": n, "opcode": op.opcode if (op := program.op(n)) is not None else "", "self_time_us": t}
        for n, t in ran if program.instruction(n) is not None]
    seen = {o["name"] for o in out}
    mod = program.module
    rest: list[tuple[str, str]] = []
    if mod is not None:
        for comp in mod.computations:
            for ins in comp.instructions:
                name = _decode(ins.name)
                if name not in seen and ins.opcode != b"get-tuple-element":
                    rest.append((name, _decode(ins.opcode)))
    rest.sort()
    out.extend({"name": n, "opcode": o, "self_time_us": 0.0} for n, o in rest)
    return out[:MAX_PICKER_OPS], len(out) > MAX_PICKER_OPS


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> GraphViewerResult:
    width = int(options.get("graph_width", 3))
    if width > MAX_WIDTH:
        raise BadParameter(f"graph_width must be at most {MAX_WIDTH}")
    node, module = options.get("node_name"), options.get("module")
    programs = programs_of(stores)
    if not programs:
        raise NotFound("this profile carries no HLO programs (graph_viewer needs an XLA profile)")
    times = _op_times(stores, programs)
    device_us = {pid: sum(ops.values()) for pid, ops in times.items()}
    if node is None:
        if module:
            program = _find_module(programs, module)
        else:
            # The module with the most device time (ties: the lower program id).
            program = max(programs.values(), key=lambda p: (device_us.get(p.program_id, 0.0), -p.program_id))
        node = _best_op(program, times.get(program.program_id, {}))
        module = program.display_name
        if node is None:
            raise NotFound(f"HLO module {program.display_name} has no op to show; give node_name")
    graph = build(stores, node, module, width)
    chosen = next(p for p in programs.values() if program_id_text(p.program_id) == graph["program_id"])
    ops, ops_truncated = _picker_ops(chosen, times.get(chosen.program_id, {}))
    modules: list[GraphModuleEntry] = [{"module": p.display_name, "program_id": program_id_text(p.program_id),
                "device_time_us": device_us.get(p.program_id, 0.0)}
               for p in sorted(programs.values(), key=lambda p: (-device_us.get(p.program_id, 0.0), p.display_name))]
    out: GraphViewerResult = {"schema_version": SCHEMA_VERSION, "tool": "graph_viewer",
                           "host": stores[0].host if len(stores) == 1 else None,
                           "hosts": [s.host for s in stores], **graph, "modules": modules, "ops": ops,
                           "ops_truncated": ops_truncated, "tables": graph_tables(graph)}
    fmt = options.get("format", "json")
    if fmt == "dot":
        out["dot"] = to_dot(graph)
    elif fmt == "hlo":
        out["hlo_text"] = module_text(chosen)
    return out


def has_hlo(store: ProfileStore) -> bool:
    return bool(hlo_programs(store))


TOOLS = (
    Tool(
        name="graph_viewer", title="Graph viewer", compute=compute, multi_host=True, available=has_hlo,
        few_planes=True,
        options=(
            Option("node_name", parse_text, None,
                   "the HLO op at the centre (default: the module's most expensive fusion)"),
            Option("module", parse_text, None,
                   "HLO module, e.g. jit_train_step(13929) (default: where the op ran longest; without an op, "
                   "the module with the most device time)"),
            Option("graph_width", parse_nonneg_int, 3, f"edges from the op to include (at most {MAX_WIDTH})",
                   min_value=0, max_value=MAX_WIDTH),
            Option("format", parse_format, "json",
                   "json; dot adds the graph as Graphviz DOT text, hlo the module's HLO text",
                   choices=("json", "dot", "hlo")),
        ),
        description="The HLO graph around an op, coloured by self time; DOT for scripts.",
        result=GraphViewerResult, needs=frozenset({"hlo"}),
        requires="the HLO protos of XLA programs (the /host:metadata plane).",
        how_to=(
            "Profile JAX, or TensorFlow with XLA. Open it from an HLO op in HLO op stats to centre it on that op.",
        ),
    ),
)
