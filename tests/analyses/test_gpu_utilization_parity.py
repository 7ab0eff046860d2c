"""``gpu_utilization`` against torch-tb-profiler 0.4.3 (PyTorch's TensorBoard plugin).

Goldens: ``tests/golden/tb_profiler/<profile>.json``, written by
``tests/golden/make_tb_profiler_goldens.py`` from torch-tb-profiler's own parsers (a separate
Python: the plugin is not a tbprof dependency). Tolerances: 1e-5 relative — torch-tb-profiler
works on the JSON's float microseconds (4.8e12 us: 1 ns of float64 resolution), tbprof on
integer picoseconds; kernel counts exact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tbprof.analyses.gpu import utilization
from tbprof.readers.chrome_trace import read_chrome_trace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tb_profiler"
DATA = Path(__file__).resolve().parent.parent / "data"
# kineto_op_rules: written from Kineto's documented fields (its make_traces.py): PyTorch 1.8 runtime
# calls whose kernels extend the steps, a trace without ProfilerStep.
# torch_compile, torch_gpu_lag: real traces of PyTorch 2.11 on an H100 (tests/data/<name>/README.md).
PROFILES = ("torch_cnn", "torch_ddp", "kineto_op_rules", "torch_compile", "torch_gpu_lag")
REL = 1e-5


@pytest.mark.parametrize("profile", PROFILES)
def test_devices_and_kernels(sample_profiles: Path, profile: str) -> None:
    golden = json.loads((GOLDEN / f"{profile}.json").read_text())
    for name, want in golden["files"].items():
        folder = DATA / profile if (DATA / profile).is_dir() else sample_profiles / profile
        store = read_chrome_trace(folder / name)
        got = {d["device"]: d for d in utilization.device_metrics(store)}
        assert sorted(got) == [d["device"] for d in want["devices"]]
        for w in want["devices"]:
            g = got[w["device"]]
            assert g["gpu_utilization_percent"] == pytest.approx(100 * w["gpu_utilization"], rel=REL)
            assert g["est_sm_efficiency_percent"] == pytest.approx(100 * w["sm_efficiency"], rel=REL)
            assert g["est_achieved_occupancy_percent"] == pytest.approx(w["occupancy"], rel=REL)
        kernels = {k["name"]: k for k in utilization.kernel_metrics(store)}
        assert sorted(kernels) == sorted(k["name"] for k in want["kernels"])
        for w in want["kernels"]:
            g = kernels[w["name"]]
            assert g["calls"] == w["count"]
            assert g["total_us"] == pytest.approx(w["sum"], rel=REL)
            for ours, theirs in (("mean_blocks_per_sm", "blocks_per_sm"),
                                 ("mean_est_achieved_occupancy_percent", "occupancy")):
                if math.isnan(g[ours]):
                    # No launch of this kernel carries the arg: torch-tb-profiler shows 0, tbprof
                    # "not determined" (docs/differences.md).
                    assert w[theirs] == 0
                else:
                    assert g[ours] == pytest.approx(w[theirs], rel=REL, abs=1e-9)


def test_window_without_steps() -> None:
    """nosteps.pt.trace.json: no ProfilerStep, so the window is the operators' span: aten::mm at
    1000, 1400, 1800 us of 100 us each -> [1000, 1900); kernels of 120, 120 and 320 us start 50 us
    after each operator, the last clipped at 1900 (50 us): busy 290 of 900 us."""
    store = read_chrome_trace(DATA / "kineto_op_rules" / "nosteps.pt.trace.json")
    (device,) = utilization.device_metrics(store)
    assert device["steps_time_us"] == 900.0
    assert device["gpu_utilization_percent"] == pytest.approx(100 * 290 / 900)


def test_window_of_pytorch_18_runtime_steps() -> None:
    """pt18.pt.trace.json: steps [1000, 2000), [2000, 3000), [3000, 3500) us with 3, 3 and 1 device
    launches. A kernel launched before the first step ends at 1050 before that step's first kernel
    (1110): the first step starts at 1050. The second step's last kernel ends at 3550, its end.
    The third launched 1 < 0.8 x 3: left out. All steps time: 3550 - 1050 = 2500 us."""
    store = read_chrome_trace(DATA / "kineto_op_rules" / "pt18.pt.trace.json")
    origin_us = 900.0  # the trace's first event
    lo, hi = utilization.steps_window_ps(store) or (0, 0)
    assert (lo / 1e6 + origin_us, hi / 1e6 + origin_us) == (1050.0, 3550.0)


def test_tool_over_ranks(sample_profiles: Path) -> None:
    stores = [read_chrome_trace(p) for p in sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))]
    result = utilization.compute(stores, {})
    t = result["tables"]["devices"]
    names = [c.name for c in t.columns]
    rows = [dict(zip(names, r, strict=True)) for r in t.rows()]
    assert [r["rank"] for r in rows] == [0, 1]
    # The summary is the mean over the devices (one per rank here).
    assert result["gpu_utilization_percent"] == pytest.approx(sum(r["gpu_utilization_percent"] for r in rows) / 2)


def test_sm_efficiency_overlap_is_capped() -> None:
    """Derived by hand: two kernels of 0.75 blocks/SM overlapping for 2 of their 4 ps each:
    [0,2) 0.75, [2,4) min(1.5, 1) = 1, [4,6) 0.75 -> 1.5 + 2 + 1.5 = 5 over a 10 ps window."""
    import numpy as np

    got = utilization.sm_efficiency_ps(np.array([0, 2]), np.array([4, 6]), np.array([0.75, 0.75]), 0, 10)
    assert got == pytest.approx(5.0)


def test_not_listed_for_other_formats(profiles_root: Path) -> None:
    from tbprof.readers.xplane import read_xspace
    from tests.conftest import xplane_of

    assert not utilization.has_kernel_args(read_xspace(xplane_of(profiles_root, "jax_mlp")))
    # Kineto's launch configurations: offered for PyTorch runs only.
    from tbprof.readers.kinds import KINDS

    assert [k for k, kind in KINDS.items() if utilization.TOOLS[0].offered_for(kind.traits)] == ["pytorch"]


