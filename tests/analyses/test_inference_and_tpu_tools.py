"""inference_profile (present only with request markers) and XProf's TPU-only tools (listed,
with the reason they have no data without a TPU).

The demo profiles have no inference requests, so the positive case uses a small XSpace written
with the protobuf API (tests/helpers.py): three requests whose latencies it states by construction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.inference import inference_profile
from tbprof.errors import NoData
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools as registry
from tests.conftest import SAMPLE_PROFILES, xplane_of
from tests.helpers import SERVING_LATENCY_MS, golden, write_serving_xspace

TPU_ONLY = ("megascale_stats", "perf_counters", "utilization_viewer", "kernel_utilization")


@pytest.mark.parametrize(("profile", "host"), [("jax_mlp", "vm"), ("custom_loop", "vm"), ("keras_cnn", "vm"),
                                             ("jax_2hosts", "worker0"), ("jax_2hosts", "worker1")])
def test_inference_profile_absent_without_request_markers(profiles_root: Path, profile: str, host: str) -> None:
    """XProf 2.24.2 lists no request on these training profiles (only its all-zero "Average" row,
    request id N/A; tests/golden/*/inference_profile.json): tbprof leaves the tool out, saying why."""
    sel = profile if profile != "jax_2hosts" else f"jax_2hosts_{host}"
    assert golden(sel, "inference_profile")["request_count"] == 0
    store = read_xspace(xplane_of(profiles_root, profile, host))
    tool = registry.get("inference_profile")
    assert tool is not None and not tool.available(store)
    with pytest.raises(NoData, match="request_id"):
        tool.compute([store], {})


def test_inference_profile_request_latencies(tmp_path: Path) -> None:
    path = write_serving_xspace(tmp_path / "serve.xplane.pb")
    store = read_xspace(path)
    assert inference_profile.has_requests(store)
    out = inference_profile.compute([store], {})
    assert out["request_count"] == 3
    table = out["tables"]["requests"]
    by_id = dict(zip(table.data["request_id"].tolist(), table.data["latency_ms"].tolist(), strict=True))
    assert by_id == pytest.approx(SERVING_LATENCY_MS)
    assert out["latency_ms"]["max"] == pytest.approx(0.009)
    assert out["latency_ms"]["p50"] == pytest.approx(0.005)


@pytest.mark.parametrize("name", TPU_ONLY)
def test_tpu_only_tools_say_what_this_profile_lacks(profiles_root: Path, name: str) -> None:
    """Never listed (tbprof has no decoder for TPU counters; XProf lists none of them for these
    profiles either); asked for by name, each names what is missing in the profile at hand."""
    tool = registry.get(name)
    assert tool is not None
    gpu = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    tpu = read_xspace(xplane_of(SAMPLE_PROFILES, "tpu_inference", "tpu_inference_2"))
    for store in (gpu, tpu):
        assert not tool.available(store)
    with pytest.raises(NoData, match="has no data in this profile"):
        tool.compute([gpu], {})
    with pytest.raises(NoData, match="has no data in this profile") as got:
        tool.compute([tpu], {})
    # On the TPU profile the reason is not "needs a TPU profile" but what its TPU planes lack.
    assert "needs a TPU profile" not in str(got.value)
    assert ("Megascale Trace" if name == "megascale_stats" else "XLA Ops") in str(got.value)


def test_tpu_inference_tool_list_is_xprofs(sample_profiles: Path, tmp_path: Path) -> None:
    """The XProf tools listed for tpu_inference are XProf 2.24.2's list for it (xspace_to_tool_names:
    trace_viewer@, overview_page, input_pipeline_analyzer, framework_op_stats, memory_profile,
    op_profile, hlo_stats, roofline_model, memory_viewer, graph_viewer); the rest are tbprof's own.
    pod_viewer is left out of the comparison: XProf 2.24.2's list never names it (not on the GPU
    demo profiles either) although its converter answers; tbprof lists it wherever there are steps
    or devices (docs/differences.md)."""
    from tbprof.service.profiles import Profiles

    xprof_list = {"trace_viewer", "overview_page", "input_pipeline_analyzer", "framework_op_stats", "memory_profile",
                  "op_profile", "hlo_stats", "roofline_model", "memory_viewer", "graph_viewer"}
    xprof_tools = {"overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "memory_profile",
                   "op_profile", "trace_viewer", "hlo_stats", "roofline_model", "memory_viewer",
                   "graph_viewer", "inference_profile", *TPU_ONLY}
    profiles = Profiles(sample_profiles / "tpu_inference", cache_dir=tmp_path / "cache")
    run = next(iter(profiles.index.runs().values()))
    listed = set(profiles.tools(run))
    assert listed & xprof_tools == xprof_list
