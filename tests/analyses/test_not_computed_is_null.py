"""Numbers that were not computed are null, not 0 (#33): the pages show "–" / "not determined".

* A PyTorch trace counts no FLOPs or bytes per operator (no cost model): its operators' FLOP
  rate, memory bandwidth and operational intensity are unknown.
* tpu_inference (XProf's public TPU profile) has no step markers: XProf reports "No step time
  measured", so the average step time and its spread are unknown, not "0 ms ± 0".
"""

from __future__ import annotations

import math
from pathlib import Path

from tbprof.analyses.input import input_pipeline
from tbprof.analyses.ops import framework_op_stats
from tbprof.analyses.overview import overview
from tbprof.readers.chrome_trace import read_chrome_trace
from tests import kineto_fixtures as kf
from tests.analyses.test_tensorcore_hopper import HOPPER, _events
from tests.helpers import store_of

NOT_COMPUTED = ("measured_flop_rate_gflops_per_sec", "measured_memory_bw_gibibytes_per_sec",
                "operational_intensity_flops_per_byte")


def test_pytorch_operators_have_no_flop_rate(sample_profiles: Path) -> None:
    store = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    ops = framework_op_stats.compute([store], {})["tables"]["ops"]
    assert ops.n_rows > 0
    for column in NOT_COMPUTED:
        assert all(math.isnan(v) for v in ops.data[column].tolist()), column


def test_xspace_operators_keep_their_flop_rate(profiles_root: Path) -> None:
    """jax_mlp carries FLOPs (HLO cost analysis): its rates are numbers, 0 where an op has none, as XProf."""
    ops = framework_op_stats.compute([store_of(profiles_root, "jax_mlp")], {})["tables"]["ops"]
    rates = ops.data["measured_flop_rate_gflops_per_sec"].tolist()
    assert not any(math.isnan(v) for v in rates) and max(rates) > 0


def test_a_stepless_run_has_no_step_time(profiles_root: Path) -> None:
    store = store_of(profiles_root, "tpu_inference")
    result = overview.compute([store], {})
    assert result["steps"]["step_count"] == 0
    unknown = {"avg": None, "stddev": None, "min": None, "max": None}
    assert result["performance_summary"]["step_time_ms"] == unknown
    assert all(v == unknown for v in result["performance_summary"]["breakdown_ms"].values())
    assert result["performance_summary"]["input_percent"] is None
    assert set(result["performance_summary"]["percent_of_step_time"].values()) == {None}
    # XProf's TPU planes carry no core count: unknown, not "0 cores".
    assert {d["core_count"] for d in result["run_environment"]["devices"]} == {None}
    assert input_pipeline.compute([store], {})["verdict"]["input_percent"] is None
    assert input_pipeline.compute([store], {})["device_side"]["step_time_ms"] == unknown


def test_undetermined_tensorcore_use_is_null_per_operator(tmp_path: Path) -> None:
    """An ``aten::mm`` run by a Triton GEMM: its TensorCore use is unknown, not 0."""
    ops = [("aten::mm", "triton_tem_fused_mm_0", 300), HOPPER[3]]
    store = kf.write(tmp_path, kf.trace(_events(ops)))
    table = framework_op_stats.compute([store], {})["tables"]["ops"].data
    device = table["host_or_device"] == "Device"
    assert device.any()
    assert all(math.isnan(v) for v in table["gpu_tensorcore_utilization_fraction"][device].tolist())


def test_kernels_without_launch_stats_have_no_mean_blocks(tmp_path: Path) -> None:
    """torch-tb-profiler's kernel view: Kineto's ``blocks per SM`` and ``est. achieved occupancy %``
    arguments are absent from these kernels (tests/kineto_fixtures.py writes none), so their means
    are unknown, not 0."""
    from tbprof.analyses.gpu import utilization
    store = kf.write(tmp_path, kf.trace(_events(HOPPER[:2])))
    kernels = utilization.compute([store], {})["tables"]["kernels"].data
    assert kernels["name"].shape[0] == 2
    for column in ("mean_blocks_per_sm", "mean_est_achieved_occupancy_percent"):
        assert all(math.isnan(v) for v in kernels[column].tolist()), column
