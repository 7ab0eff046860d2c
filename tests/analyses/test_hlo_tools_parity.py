"""hlo_stats, roofline_model, memory_viewer and graph_viewer against XProf 2.24.2 goldens (tests/golden,
written by make_goldens.py from XProf's own output).

Tolerances (issue #18): hlo_stats — the same rows in the same order, occurrences exact, times
within 1 %, FLOP rates and bandwidths within 2 %; roofline_model — peaks equal to XProf's six
printed digits, the program rows (with and without infeed/outfeed) within 1 %, every op point
within 2 %; memory_viewer — per HLO module, peak bytes and the heap curve exact, the list of
buffers live at the peak equal (id, size, op, shape, allocation type, order); graph_viewer —
the same ops around an op at widths 1 and 2, and the same edges between plain ops.
CPU profiles: XProf produces empty tables and no module, and so must we.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.hlo import graph_viewer, hlo_stats, memory_viewer, roofline_model
from tbprof.domain.hlo_map import hlo_programs
from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import ProfileStore
from tests.conftest import xplane_of
from tests.helpers import store_of

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
# XProf keys a kernel's HLO op by module name (jax_2hosts: the two jit__normal programs'
# loop_multiply_fusion are one row) and a copy's by program (jax_mlp: the two jit__multi_slice
# programs' wrapped_slice, MemcpyD2D events, are two rows).
# jax_large_slim (tests/data, make_slim.py): the real jax_large profile's device side, one busy
# and one idle GPU plane; XProf's per-core time divides by both.
SELECTIONS = ("jax_mlp", "jax_2hosts", "jax_2hosts_worker0", "jax_2hosts_worker1", "custom_loop", "keras_cnn",
              "tpu_inference", "jax_large_slim")
TEST_DATA = Path(__file__).resolve().parent.parent / "data"
SINGLE_HOSTS = ("jax_mlp", "jax_2hosts_worker0", "jax_2hosts_worker1", "custom_loop", "keras_cnn", "tpu_inference")
TIME_RTOL = 0.01
RATE_RTOL = 0.02


def _golden(sel: str, tool: str) -> dict[str, Any]:
    return json.loads((GOLDEN / sel / f"{tool}.json").read_text())


@lru_cache(maxsize=8)
def _read(path: Path) -> ProfileStore:
    return read_xspace(path)


def _stores(root: Path, sel: str) -> list[ProfileStore]:
    if sel == "jax_2hosts":
        return [_read(xplane_of(root, "jax_2hosts", h)) for h in ("worker0", "worker1")]
    if sel.startswith("jax_2hosts_"):
        return [_read(xplane_of(root, "jax_2hosts", sel.removeprefix("jax_2hosts_")))]
    if sel == "tpu_inference":
        return [store_of(root, sel)]
    if sel == "jax_large_slim":
        return [_read(xplane_of(TEST_DATA, sel))]
    return [_read(xplane_of(root, sel))]


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def _close(ours: float, theirs: float, rtol: float) -> bool:
    return ours == pytest.approx(theirs, rel=rtol, abs=1e-9)


@pytest.mark.parametrize("sel", SELECTIONS)
def test_hlo_stats_rows_match_xprof(profiles_root: Path, sel: str) -> None:
    golden = _golden(sel, "hlo_stats")
    out = hlo_stats.compute(_stores(profiles_root, sel), {})
    ours = _rows(out["tables"]["hlo_ops"])
    theirs = golden["rows"]
    assert [(r["program_id"], r["hlo_op_name"]) for r in ours] == \
        [(r["program_id"], r["hlo_op_name"]) for r in theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert a["rank"] == b["rank"]
        assert a["category"] == b["category"]
        assert a["tf_op_name"] == b["tf_op_name"]
        assert a["occurrences"] == b["occurrences"]
        assert a["bound_by"] == b["bound_by"]
        for col in ("total_time", "avg_time", "total_self_time", "avg_self_time", "total_self_time_percent",
                    "cumulative_total_self_time_percent"):
            assert _close(a[col], b[col], TIME_RTOL), (a["hlo_op_name"], col, a[col], b[col])
        for col in ("model_flop_rate", "measured_memory_bw", "hbm_bw", "operational_intensity"):
            assert _close(a[col], b[col], RATE_RTOL), (a["hlo_op_name"], col, a[col], b[col])
        # XProf's cell shows the innermost frame as "file:line".
        assert a["source_info"] == b["source_info"]
        # XProf prints the whole instruction; ours is its head (name = shape opcode(operands)), TPU
        # layouts with their tiling and memory space ("{3,2,1,0:T(8,128)S(5)}") included.
        assert b["hlo_op_expression"].startswith(a["hlo_op_expression"])
    if not theirs:
        assert out["message"] == hlo_stats.NO_DEVICE_MESSAGE


def _six_digits(x: float) -> float:
    return float(f"{x:.6g}")


@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("sel", SELECTIONS)
def test_roofline_model_matches_xprof(profiles_root: Path, sel: str, include: bool) -> None:
    """Each setting of XProf's "Include Infeed/Outfeed" filter: our rows for it are XProf's rows
    with that value of include_infeed_outfeed (and only those)."""
    golden = _golden(sel, "roofline_model")
    out: Mapping[str, Any] = roofline_model.compute(_stores(profiles_root, sel), {"include_infeed_outfeed": include})
    assert out["device_type"] == golden["device_type"]
    assert out["include_infeed_outfeed"] is include
    for key, value in golden["peaks"].items():
        assert _six_digits(out[key]) == value, key
    ours = _rows(out["tables"]["roofline"])
    theirs = [r for r in golden["total_rows"] if r["include_infeed_outfeed"] is include]
    assert {r["include_infeed_outfeed"] for r in ours} <= {include}
    assert [(r["rank"], r["operation"]) for r in ours] == [(r["rank"], r["operation"]) for r in theirs]
    for a, b in zip(ours, theirs, strict=True):
        rtol = TIME_RTOL if a["category"] == "Program" else RATE_RTOL
        assert a["bound_by"] == b["bound_by"]
        assert a["occurrences"] == b["occurrences"]
        for col in ("total_time", "total_time_per_core", "total_self_time", "total_self_time_percent",
                    "measured_flop_rate", "measured_memory_bw", "hbm_bw", "operational_intensity",
                    "hbm_operational_intensity", "bottleneck_operational_intensity", "optimal_flop_rate",
                    "roofline_efficiency", "compute_efficiency", "max_mem_bw_utilization"):
            assert _close(a[col], b[col], rtol), (a["operation"], col, a[col], b[col])


def _memory_cases(sel: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(module, memory space, XProf's answer): space 0 of every module, then every other space
    a module's buffer allocations use (XProf's memory_space option)."""
    golden = _golden(sel, "memory_viewer")
    # XProf lists a placeholder "NO_MODULE" (all zero) when the profile has no HLO module.
    cases = [(k, 0, v) for k, v in golden["modules"].items() if k != "NO_MODULE"]
    for key, v in golden["memory_spaces"].items():
        name, _, space = key.rpartition("|")
        cases.append((name, int(space), v))
    return cases


def test_roofline_model_default_is_xprofs_and_sends_one_setting(profiles_root: Path) -> None:
    """No option: XProf's default (its page opens with Include Infeed/Outfeed = true), one row per
    op, not one per op and setting (#29: 1,098 rows for 549 ops); a bad value is refused."""
    stores = _stores(profiles_root, "jax_mlp")
    tool = roofline_model.TOOLS[0]
    out = roofline_model.compute(stores, tool.parse_options({}))
    rows = _rows(out["tables"]["roofline"])
    assert {r["include_infeed_outfeed"] for r in rows} == {True}
    # One row per HLO op (two programs may hold ops of the same name: hlo_stats counts both).
    assert sum(r["category"] != "Program" for r in rows) == out["op_count"]
    assert sum(r["category"] == "Program" for r in rows) == 1
    with pytest.raises(ValueError, match="include_infeed_outfeed"):
        tool.parse_options({"include_infeed_outfeed": "maybe"})


@pytest.mark.parametrize("sel", SINGLE_HOSTS)
def test_memory_viewer_matches_xprof_per_module(profiles_root: Path, sel: str) -> None:
    cases = _memory_cases(sel)
    (store,) = _stores(profiles_root, sel)
    programs = {p.display_name: p for p in hlo_programs(store).values()}
    assert sorted(programs) == sorted(name for name, space, _ in cases if space == 0)
    for name, space, want in cases:
        got: Mapping[str, Any] = memory_viewer.module_memory(programs[name], space)
        name = f"{name} memory space {space}"
        for key in ("peak_heap_bytes", "peak_unpadded_heap_bytes", "entry_computation_parameters_bytes",
                    "non_reusable_bytes", "maybe_live_out_bytes", "heap_sizes_bytes", "unpadded_heap_sizes_bytes",
                    "total_buffer_allocation_bytes", "indefinite_bytes"):
            assert got[key] == want[key], (name, key)
        # The allocation timeline: XProf's blocks, in its order (containers, then their buffers).
        assert got["buffer_blocks"] == want["buffer_blocks"], name
        # "By size": XProf sorts with an unstable sort, so equal sizes may come in another order;
        # the sizes in by-size order are equal.
        by_size = [0] * len(want["max_heap_by_size_order"])
        for i, j in enumerate(want["max_heap_by_size_order"]):
            by_size[j] = i
        assert [got["max_heap"][i]["size_bytes"] for i in got["by_size_order"]] == \
            [want["max_heap"][i]["size_bytes"] for i in by_size], name
        if want["heap_sizes_bytes"]:
            assert got["peak_heap_position"] == want["peak_heap_position"], name
        keys = ("logical_buffer_id", "size_bytes", "instruction_name", "shape", "tf_op_name", "group", "opcode",
                "label")
        assert [tuple(b[k] for k in keys) for b in got["max_heap"]] == \
            [tuple(b[k] for k in keys) for b in want["max_heap"]], name
        spans = {k: v for k, v in got["logical_buffer_spans"].items()}
        assert spans == want["logical_buffer_spans"], name


def test_memory_viewer_tool_picks_module_and_rejects_unknown(profiles_root: Path) -> None:
    (store,) = _stores(profiles_root, "jax_mlp")
    golden = _golden("jax_mlp", "memory_viewer")["modules"]
    # Default: the module with the largest peak (XProf's list has no default; ours says which).
    largest = max(golden, key=lambda m: golden[m]["peak_heap_bytes"])
    out = memory_viewer.compute([store], {"module": None})
    assert out["module"] == largest
    assert out["peak_heap_bytes"] == golden[largest]["peak_heap_bytes"]
    by_id = memory_viewer.compute([store], {"module": "10611"})
    assert by_id["module"] == "jit__normal(10611)"
    with pytest.raises(LookupError):
        memory_viewer.compute([store], {"module": "no_such_module(1)"})


def test_memory_viewer_tool_lists_and_opens_memory_spaces(profiles_root: Path) -> None:
    """The page's memory-type selector: the spaces the module's buffer allocations use, each
    with XProf's peak for that space; memory_space=N answers XProf's memory_space=N."""
    (store,) = _stores(profiles_root, "tpu_inference")
    golden = _golden("tpu_inference", "memory_viewer")
    module = "jit_f(12190760917235803885)"
    out = memory_viewer.compute([store], {"module": module, "memory_space": 5})
    want_spaces = [0, *sorted(int(k.rpartition("|")[2]) for k in golden["memory_spaces"] if k.startswith(module + "|"))]
    assert [s["memory_space"] for s in out["memory_spaces"]] == want_spaces
    peaks = {s["memory_space"]: s["peak_heap_bytes"] for s in out["memory_spaces"]}
    assert peaks[0] == golden["modules"][module]["peak_heap_bytes"]
    assert peaks[5] == golden["memory_spaces"][f"{module}|5"]["peak_heap_bytes"]
    assert out["memory_space"] == 5
    assert out["peak_heap_bytes"] == peaks[5]
    # XProf draws no buffer for host memory's indefinite allocations (3 x 5 GiB parameters).
    assert out["max_heap"] == golden["memory_spaces"][f"{module}|5"]["max_heap"] == []


def _graph_cases() -> list[tuple[str, int]]:
    return [(sel, i) for sel in ("jax_mlp", "jax_2hosts_worker0", "tpu_inference")
            for i in range(len(_golden(sel, "graph_viewer")["cases"]))]


@pytest.mark.parametrize(("sel", "case"), _graph_cases())
def test_graph_viewer_neighbourhood_matches_xprof(profiles_root: Path, sel: str, case: int) -> None:
    """The ops XProf draws around an op, read from its DOT: XProf draws a fusion's (and an async
    op's) called computation inside a cluster, so its instructions and "Parameter N" nodes
    stand for that one op of ours; get-tuple-elements are edges in both."""
    want = _golden(sel, "graph_viewer")["cases"][case]
    (store,) = _stores(profiles_root, sel)
    out = graph_viewer.compute([store], {"node_name": want["node_name"], "module": want["module"],
                                         "graph_width": want["graph_width"]})
    program = next(p for p in hlo_programs(store).values() if p.display_name == want["module"])
    comps = {c.id: c for c in program.module.computations}
    inside = {ins.name.decode(): {j.name.decode() for cid in ins.called_computation_ids
                                  for j in comps[cid].instructions}
              for c in program.module.computations for ins in c.instructions if ins.called_computation_ids}
    # When the op itself sits in a called computation (an async all-reduce), that computation is
    # the frame XProf draws, not a cluster.
    inside = {op: names for op, names in inside.items() if want["node_name"] not in names}
    internal = set().union(*inside.values()) if inside else set()
    drawn = set(want["bold_labels"]) | {n for e in want["edges"] for n in e}
    theirs = {n for n in drawn if n not in internal and n not in {c.name.decode() for c in comps.values()}
              and not n.startswith("Parameter ")}
    # An op of ours with a called computation is drawn by XProf as a cluster of its insides.
    theirs |= {op for op, names in inside.items() if names & drawn}
    ours = {n["name"] for n in out["nodes"]}
    assert ours == theirs, ours ^ theirs
    # Edges between ops XProf draws as plain nodes are the same edges.
    plain = theirs - set(inside)
    their_edges = {tuple(e) for e in want["edges"] if e[0] in plain and e[1] in plain}
    our_edges = {(e["from"], e["to"]) for e in out["edges"] if e["from"] in plain and e["to"] in plain}
    assert our_edges == their_edges
