"""graph_viewer: the HLO graph around one op, as XProf's "Graph Viewer".

From the HloProto of the op's program: the instructions of the computation that holds the op,
within ``graph_width`` edges of it (operands and users, XProf's option name), with the edges
between them; as in XLA's graph dumper (which XProf runs), a get-tuple-element is drawn as an
edge, not a node. Fusions and async ops are single nodes (XProf draws their called
computation inside them). Each node carries its opcode, shape, framework op and the op's self time from
the op metrics (0 for ops that never ran on the device: parameters, tuples, ops inside a
fusion), so the page can colour the graph by self time. ``format=dot`` adds the graph as
Graphviz DOT text for scripts. The browser lays the graph out itself (dagre).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.hlo.hlo_stats import programs_of
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_nonneg_int
from tbprof.domain.hlo_map import HloProgram, hlo_category, hlo_programs, program_id_text
from tbprof.domain.hlo_text import shape_text
from tbprof.errors import BadParameter, NotFound
from tbprof.store.tables import ProfileStore

MAX_WIDTH = 16  # beyond this a graph of a real module has thousands of nodes: unreadable
MAX_NODES = 2000


def parse_text(text: str) -> str:
    if not text or len(text) > 1000:
        raise ValueError("expected a non-empty name of at most 1000 characters")
    return text


def parse_format(text: str) -> str:
    if text not in ("json", "dot"):
        raise ValueError("expected json or dot")
    return text


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _find_program(programs: dict[int, HloProgram], node: str, module: str | None,
                  busiest: dict[int, float]) -> HloProgram:
    if module:
        for p in programs.values():
            if module in (p.display_name, str(p.program_id), p.module_name):
                if p.instruction(node) is None:
                    raise NotFound(f"HLO module {p.display_name} has no op {node!r}")
                return p
        raise NotFound(f"no HLO module {module!r}")
    having = [p for p in programs.values() if p.instruction(node) is not None]
    if not having:
        raise NotFound(f"no HLO module has an op {node!r}")
    # The same op name exists in many programs: take the one where it ran longest.
    return max(having, key=lambda p: (busiest.get(p.program_id, 0.0), -p.program_id))


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _dot_quote(text: str) -> str:
    return '"' + _dot_escape(text) + '"'


def to_dot(graph: dict[str, Any]) -> str:
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


def build(stores: Sequence[ProfileStore], node: str, module: str | None, width: int) -> dict[str, Any]:
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

    nodes = []
    for iid, d in sorted(dist.items(), key=lambda kv: (kv[1], kv[0])):
        if iid not in shown:
            continue
        ins = by_id[iid]
        name = _decode(ins.name)
        opcode = _decode(ins.opcode)
        nodes.append({
            "id": int(iid), "name": name, "opcode": opcode, "category": hlo_category(opcode, _decode(ins.fusion_kind)),
            "shape": shape_text(ins.shape), "framework_op": _decode(ins.metadata.op_name), "distance": d,
            "center": iid == center.id, "self_time_us": self_us.get((program.program_id, name), 0.0),
        })
    edges = []
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


def _default_node(stores: Sequence[ProfileStore]) -> tuple[str | None, str | None]:
    """The op with the most self time (XProf's graph viewer opens on a chosen op)."""
    db = hosts_op_metrics(stores, "device")
    programs = programs_of(stores)
    ok = np.array([int(p) in programs for p in db.program_id.tolist()], dtype=bool) if db.n_ops else np.zeros(0, bool)
    if not ok.any():
        return None, None
    i = int(np.flatnonzero(ok)[np.argmax(db.self_time_ps[ok])])
    return str(db.name[i]), programs[int(db.program_id[i])].display_name


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    width = int(options.get("graph_width", 3))
    if width > MAX_WIDTH:
        raise BadParameter(f"graph_width must be at most {MAX_WIDTH}")
    node, module = options.get("node_name"), options.get("module")
    if node is None:
        node, default_module = _default_node(stores)
        module = module or default_module
        if node is None:
            raise NotFound("no HLO op ran on a device in this profile; give node_name and module")
    graph = build(stores, node, module, width)
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "tool": "graph_viewer",
                           "host": stores[0].host if len(stores) == 1 else None,
                           "hosts": [s.host for s in stores], **graph, "tables": graph_tables(graph)}
    if options.get("format", "json") == "dot":
        out["dot"] = to_dot(graph)
    return out


def has_hlo(store: ProfileStore) -> bool:
    return bool(hlo_programs(store))


TOOLS = (
    Tool(
        name="graph_viewer", title="Graph viewer", compute=compute, multi_host=True, available=has_hlo,
        few_planes=True,
        options=(
            Option("node_name", parse_text, None, "the HLO op at the centre (default: the op with most self time)"),
            Option("module", parse_text, None, "HLO module, e.g. jit_train_step(13929) (default: where the op ran)"),
            Option("graph_width", parse_nonneg_int, 3, f"edges from the op to include (at most {MAX_WIDTH})",
                   min_value=0, max_value=MAX_WIDTH),
            Option("format", parse_format, "json", "json, or dot to add the graph as Graphviz DOT text",
                   choices=("json", "dot")),
        ),
        description="The HLO graph around an op, coloured by self time; DOT for scripts.",
    ),
)
