"""graph_viewer and smart_suggestion on the real JAX profiles, and the new tools through the
registry (the path `tbprof show` and the HTTP routes take).

Expectations come from the HLO proto itself (operands of the op, read with the protobuf API)
and from other tools' outputs, never from the output under test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.hlo import graph_viewer, hlo_stats
from tbprof.analyses.ops import headline
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.overview import smart_suggestion
from tbprof.domain.hlo_map import hlo_programs
from tbprof.errors import BadParameter, NotFound
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools as registry
from tests.conftest import xplane_of
from tests.helpers import golden


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


NEW_TOOLS = ("hlo_stats", "roofline_model", "memory_viewer", "graph_viewer", "smart_suggestion")


def test_graph_viewer_centre_operands_and_users(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    # The op with the most self time, as hlo_stats ranks it.
    top = hlo_stats.compute([store], {})["top_ops_by_self_time"][0]
    out = graph_viewer.compute([store], {"graph_width": 1, "format": "dot", "node_name": top["hlo_op_name"],
                                         "module": top["program_id"]})
    assert out["node_name"] == top["hlo_op_name"]
    assert out["program_id"] == top["program_id"]
    program = hlo_programs(store)[int(top["program_id"])]
    ins = program.instruction(top["hlo_op_name"])
    comp = next(c for c in program.module.computations if any(i.id == ins.id for i in c.instructions))
    by_id = {i.id: i.name.decode() for i in comp.instructions}
    operands = {by_id[o] for o in ins.operand_ids}
    users = {i.name.decode() for i in comp.instructions if ins.id in i.operand_ids}
    assert {n["name"] for n in out["nodes"]} == {top["hlo_op_name"]} | operands | users
    centre = next(n for n in out["nodes"] if n["center"])
    assert centre["self_time_us"] == pytest.approx(top["total_self_time_us"])
    assert {(e["from"], e["to"]) for e in out["edges"]} >= {(o, top["hlo_op_name"]) for o in operands}
    assert out["dot"].startswith("digraph ") and f'"{top["hlo_op_name"]}"' in out["dot"]


@pytest.mark.parametrize("sel", ("jax_mlp", "jax_2hosts"))
def test_graph_viewer_default_is_the_busiest_modules_costliest_fusion(profiles_root: Path, sel: str) -> None:
    """Not the op with the most self time overall (jax_mlp: all-reduce.2.1, whose graph is the
    two nodes of its async wrapper), but the module with the most device time (the sum of its
    ops' self time in hlo_stats) and that module's fusion with the most self time."""
    store = read_xspace(xplane_of(profiles_root, sel, "worker0" if sel == "jax_2hosts" else "vm"))
    rows = _rows(hlo_stats.compute([store], {})["tables"]["hlo_ops"])
    per_program: dict[str, float] = {}
    for r in rows:
        per_program[r["program_id"]] = per_program.get(r["program_id"], 0.0) + r["total_self_time"]
    busiest = max(per_program, key=lambda k: per_program[k])
    program = hlo_programs(store)[int(busiest)]
    fusions = sorted((r for r in rows if r["program_id"] == busiest
                      and program.instruction(r["hlo_op_name"]).opcode == b"fusion"),
                     key=lambda r: -r["total_self_time"])
    out = graph_viewer.compute([store], {"graph_width": 3})
    assert out["program_id"] == busiest
    assert out["node_name"] == fusions[0]["hlo_op_name"]
    assert len(out["nodes"]) > 2
    # The pickers: modules by device time, the module's ops that ran first (by self time).
    assert out["modules"][0]["program_id"] == busiest
    ran = [o["name"] for o in out["ops"] if o["self_time_us"] > 0]
    assert ran == [r["hlo_op_name"] for r in sorted((r for r in rows if r["program_id"] == busiest),
                                                     key=lambda r: (-r["total_self_time"], r["hlo_op_name"]))]
    # The metadata panel: the centre op's HLO text and its fusion body.
    centre = next(n for n in out["nodes"] if n["center"])
    assert centre["hlo_text"].startswith(f"%{centre['name']} = {centre['shape']} fusion(")
    assert centre["called_text"].startswith("fused") and "ROOT %" in centre["called_text"]
    text = graph_viewer.compute([store], {"format": "hlo"})["hlo_text"]
    assert f"%{centre['name']} = " in text and "ENTRY " in text


def test_graph_viewer_bad_input(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    with pytest.raises(NotFound):
        graph_viewer.compute([store], {"node_name": "no-such-op", "graph_width": 2})
    with pytest.raises(BadParameter):
        graph_viewer.compute([store], {"graph_width": graph_viewer.MAX_WIDTH + 1})
    cpu = read_xspace(xplane_of(profiles_root, "custom_loop"))
    assert not graph_viewer.TOOLS[0].available(cpu)


@pytest.mark.parametrize("sel", ("jax_mlp", "jax_2hosts"))
def test_smart_suggestions_cite_other_tools(profiles_root: Path, sel: str) -> None:
    """XProf 2.24.2 serves no suggestion on these profiles (its open-source rules generate no
    text; tests/golden/*/smart_suggestion.json, docs/differences.md): tbprof's rules are its own,
    and their evidence must be the numbers the pages they link to show."""
    assert golden(sel, "smart_suggestion")["suggestions"] == []
    stores = ([read_xspace(xplane_of(profiles_root, "jax_2hosts", h)) for h in ("worker0", "worker1")]
              if sel == "jax_2hosts" else [read_xspace(xplane_of(profiles_root, sel))])
    out = smart_suggestion.compute(stores, {})
    by_rule = {s["rule"]: s for s in out["suggestions"]}
    db = hosts_op_metrics(stores, "device")
    # Idle share from the op metrics' own totals (op span minus op time).
    idle_pct = 100.0 * (db.total_time_ps - db.self_time_ps.sum()) / db.total_time_ps
    assert idle_pct >= smart_suggestion.IDLE_PERCENT
    assert by_rule["idle_device"]["evidence"]["device_idle_of_device_time"] == pytest.approx(idle_pct)
    # Collectives share from hlo_stats' category pie.
    cats = {c["category"]: c["total_self_time_us"] for c in hlo_stats.compute(stores, {})["self_time_by_category"]}
    coll = sum(v for k, v in cats.items() if k in headline.COLLECTIVE_CATEGORIES)
    share = 100.0 * coll / sum(cats.values())
    assert by_rule["collectives_share"]["evidence"]["collectives_of_device_op_time"] == pytest.approx(share)
    for s in out["suggestions"]:
        assert registry.get(s["page"]) is not None, s["page"]


@pytest.mark.parametrize("tool", NEW_TOOLS)
def test_new_tools_listed_in_xprof_order_and_encode(profiles_root: Path, tool: str) -> None:
    names = [t.name for t in registry.all_tools()]
    # XProf 2.24.2's menu: ... trace_viewer, hlo_stats, roofline_model, memory_viewer, graph_viewer ...
    assert names.index("trace_viewer") < names.index("hlo_stats") < names.index("roofline_model") \
        < names.index("memory_viewer") < names.index("graph_viewer")
    spec = registry.get(tool)
    assert spec is not None
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    assert spec.available(store)
    out = spec.compute([store], spec.parse_options({}))
    assert out["schema_version"] >= 1 and out["tool"] == tool
    assert to_json_bytes(out).startswith(b"{")
    for table in out.get("tables", {}).values():
        lines = table_csv(table).decode().splitlines()
        assert lines[0].split(",")[0] == table.columns[0].name
        assert len(lines) >= table.n_rows + 1  # header + rows (quoted cells may hold newlines)
