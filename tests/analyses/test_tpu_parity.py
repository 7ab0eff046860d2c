"""The Cloud TPU v6e inference profile (demo_logs/tpu_inference, XProf's public test data) against
XProf 2.24.2's goldens (tests/golden/tpu_inference, make_goldens.py): op_profile, overview, input
pipeline and pod viewer. framework_op_stats, hlo_stats, roofline and memory viewer are in the
shared parity tests (test_ops_parity.py, test_hlo_tools_parity.py) with tpu_inference among
their profiles.

XProf's TPU rules these check (docs/formulas.md "TPU ops"): the ops are a TPU plane's "XLA Ops"
line events (an async copy-start/copy-done pair is two ops), timed by ``device_duration_ps``;
an op's HBM bytes are the HBM part of its memory-access breakdown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.input import input_pipeline
from tbprof.analyses.ops import op_metrics, op_profile
from tbprof.analyses.overview import overview
from tbprof.analyses.pod import pod_viewer
from tbprof.service import tools as registry
from tests.helpers import golden, store_of

PROFILE = "tpu_inference"
TIME_REL = 0.01  # the other parity tests' tolerance for times
UTIL_REL = 1e-6  # XProf's goldens keep 10 significant digits
DIGITS_REL = 1e-9  # integers (FLOPs, bytes) as the goldens round them: 10 significant digits
XPROF_DUPLICATES = " and its duplicate(s)"  # XProf's node for ops that share a deduplicated name
_COPY_SUFFIX = re.compile(r"\.\d+$")


def _op_profile(root: Path) -> Mapping[str, Any]:
    tool = registry.get("op_profile")
    assert tool is not None
    return op_profile.compute([store_of(root, PROFILE)], tool.parse_options({}))


def _displayed(node: dict[str, Any], root_ps: float) -> tuple[float, float]:
    """What XProf's page shows (see test_op_profile_utilization.py): FLOP utilisation is the
    stored fraction over the node's share of the root's time; bandwidth is stored as shown."""
    share = node["time_ps"] / root_ps
    return node["flops_utilization_fraction"] / share, node["bandwidth_utilization_fractions"][0]


def test_op_profile_categories_match_xprof(profiles_root: Path) -> None:
    ours = _op_profile(profiles_root)["by_category"]
    xprof = golden(PROFILE, "op_profile")["group_by_category:byCategory"]
    root_ps = xprof["time_ps"]
    by_name = {c["name"]: c for c in ours["children"]}
    assert set(by_name) == {c["name"] for c in xprof["children"]}
    # The root: FLOPs, HBM bytes and both utilisations (XProf's root FLOP utilisation on TPU is
    # over the busy time: its stored fraction is already the displayed one).
    assert ours["flops"] == pytest.approx(xprof["flops"], rel=DIGITS_REL)
    assert ours["bytes_accessed"] == pytest.approx(xprof["bytes_accessed"][0], rel=DIGITS_REL)
    assert ours["flops_utilization"] == pytest.approx(xprof["flops_utilization_fraction"], rel=UTIL_REL)
    # The root's bandwidth is over its whole time, idle included: ours is 5.5 ms (0.0015 %) longer
    # than XProf's 363.7 s (docs/differences.md "TPU device time").
    assert ours["hbm_bw_utilization"] == pytest.approx(xprof["bandwidth_utilization_fractions"][0], rel=1e-4)
    for x in xprof["children"]:
        node = by_name[x["name"]]
        assert node["total_time_us"] * 1e6 == pytest.approx(x["time_ps"], rel=TIME_REL), x["name"]
        if x["name"] == "IDLE":
            continue
        assert node["occurrences"] == x["occurrences"], x["name"]
        assert node["flops"] == pytest.approx(x["flops"], rel=DIGITS_REL), x["name"]
        # HBM bytes (copy-done.1/.3/.5 write host memory: no HBM bytes).
        assert node["bytes_accessed"] == pytest.approx(x["bytes_accessed"][0], rel=DIGITS_REL), x["name"]
        flops, hbm = _displayed(x, root_ps)
        assert node["flops_utilization"] == pytest.approx(flops, rel=UTIL_REL, abs=1e-12), x["name"]
        assert node["hbm_bw_utilization"] == pytest.approx(hbm, rel=UTIL_REL, abs=1e-12), x["name"]


def test_op_profile_leaves_match_xprof(profiles_root: Path) -> None:
    """Every HLO op of XProf's op profile. XProf shows ops that share a deduplicated name
    (broadcast_add_fusion, .1 and .2) as one node "<first> and its duplicate(s)"; tbprof lists
    each (docs/differences.md), so that node is compared with the sum of ours."""
    ours = _op_profile(profiles_root)["by_category"]
    xprof = golden(PROFILE, "op_profile")["group_by_category:byCategory"]
    checked = 0
    for xcat in xprof["children"]:
        if xcat["name"] == "IDLE":
            continue
        leaves = next(c for c in ours["children"] if c["name"] == xcat["name"])["children"]
        for x in xcat["children"]:
            if x["name"].endswith(XPROF_DUPLICATES):
                base = _COPY_SUFFIX.sub("", x["name"].removesuffix(XPROF_DUPLICATES))
                same = [leaf for leaf in leaves if _COPY_SUFFIX.sub("", leaf["name"]) == base]
                assert len(same) == x["num_children"], x["name"]
            else:
                same = [leaf for leaf in leaves if leaf["name"] == x["name"]]
                assert len(same) == 1, x["name"]
            program = {leaf["program"] for leaf in same}
            assert program == {p for p in program if p.endswith(f"({x['program_id']})")}, x["name"]
            assert sum(leaf["occurrences"] for leaf in same) == x["occurrences"], x["name"]
            assert sum(leaf["total_time_us"] for leaf in same) * 1e6 == pytest.approx(x["time_ps"], rel=TIME_REL)
            assert sum(leaf["flops"] for leaf in same) == pytest.approx(x["flops"], rel=DIGITS_REL), x["name"]
            assert sum(leaf["bytes_accessed"] for leaf in same) == pytest.approx(x["bytes_accessed"][0],
                                                                                  rel=DIGITS_REL), x["name"]
            checked += 1
    assert checked == 15  # 6 copy-done, 6 copy-start, the fusions, all-reduce, broadcast.2


def test_op_profile_programs_match_xprof(profiles_root: Path) -> None:
    ours = {c["name"]: c for c in _op_profile(profiles_root)["by_program"]["children"]}
    for x in golden(PROFILE, "op_profile")["group_by_program:byProgram"]["children"]:
        node = ours[x["name"]]  # jit_f(12190760917235803885): XProf prints the id unsigned
        assert node["total_time_us"] * 1e6 == pytest.approx(x["time_ps"], rel=TIME_REL), x["name"]
        assert node["bytes_accessed"] == pytest.approx(x["bytes_accessed"][0], rel=DIGITS_REL), x["name"]


def test_overview_matches_xprof(profiles_root: Path) -> None:
    g = golden(PROFILE, "overview_page")
    r = overview.compute([store_of(profiles_root, PROFILE)], {})
    env = r["run_environment"]
    assert env["xprof_device_type"] == g["run_environment"]["device_type"] == "TPU v6 Lite"
    assert env["device_count"] == g["run_environment"]["device_core_count"]
    assert env["host_count"] == g["run_environment"]["host_count"]
    # No step, no verdict: XProf says "No step time measured".
    assert r["steps"]["step_count"] == g["step_count"] == 0
    assert r["recommendation"]["input_bound"] == "unknown" and g["recommendation"]["bottleneck"] == "unknown"
    # Op placement: XProf prints shares of op executions with one decimal.
    perf = r["performance_summary"]
    assert perf["device_op_count_percent"] == pytest.approx(g["analysis"]["device_tf_op_percent"], abs=0.05)
    assert perf["host_op_count_percent"] == pytest.approx(g["analysis"]["host_tf_op_percent"], abs=0.05)
    table = r["tables"]["top_ops"]
    names = [c.name for c in table.columns]
    top = [dict(zip(names, row, strict=True)) for row in table.rows()]
    assert [t["name"] for t in top] == [x["operation"] for x in g["top_device_ops"]]
    for ours, x in zip(top, g["top_device_ops"], strict=True):
        assert ours["type"] == x["category"]
        assert ours["self_time_percent"] / 100 == pytest.approx(x["self_time_fraction"], rel=TIME_REL)
        # XProf prints 0 where an op has no FLOPs; tbprof leaves it empty (docs/differences.md).
        assert (ours["flop_rate_gflops_per_sec"] or 0.0) == pytest.approx(x["flop_rate_gflops_per_sec"], rel=0.02)


def test_input_pipeline_and_pod_viewer_match_xprof(profiles_root: Path) -> None:
    store = store_of(profiles_root, PROFILE)
    ip = input_pipeline.compute([store], {})
    assert ip["steps"]["step_count"] == golden(PROFILE, "input_pipeline_analyzer")["step_count"] == 0
    assert ip["verdict"]["input_bound"] == "unknown"
    pv = pod_viewer.compute([store], {})
    g = golden(PROFILE, "pod_viewer")
    assert pv["device_type"] == g["device_type"] == "TPU v6 Lite"
    assert pv["step_count"] == g["step_count"] == 0
    assert pv["step_breakdown_events"] == g["step_breakdown_events"]


@pytest.mark.parametrize(("data", "expected"), [
    (b"", float("nan")),  # no breakdown: the caller counts all bytes (op row) or none (program)
    (b"\n\n\x08\x02\x10\x01\x18\x80\x80\x80\x80\x14", 5368709120.0),  # write, HBM, 5 GiB (copy-done.4's)
    (b"\n\x06\x08\x01\x10\x05\x18\x10", 0.0),  # memory space 5 (host): no HBM bytes
    (b"\n\n\x08\x02\x10\x01\x18\x80\x80\x80\x80", 0.0),  # cut short inside a varint
    (b"\n\xff\x01\x08\x01", 0.0),  # a length past the end
    (b"\x12\x00", 0.0),  # an unexpected field
])
def test_memory_breakdown_decoding_is_bounded(data: bytes, expected: float) -> None:
    """The HBM bytes of a serialized MemoryAccessBreakdown; a malformed one counts none and never raises."""
    got = op_metrics.hbm_bytes_of_breakdown(data)
    assert (got != got) if expected != expected else got == expected
