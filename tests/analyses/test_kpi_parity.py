"""``kpi_metrics`` against XProf 2.24.2's agent CLI ``get_kpi_metrics``.

Goldens: ``tests/golden/xprof_agent/<profile>/<host>/get_kpi_metrics.json``
(make_xprof_agent_goldens.py). XProf prints rounded strings: the step time to 0.1 ms
(``"4.7"``), the roofline utilization to 0.01 % (``"2.14%"``), the peak memory to 0.01 GiB; tbprof's
numbers rounded the same way must equal them. Where XProf prints a step time for a profile with
no steps (``"0.00"``, tpu_inference), tbprof answers null (docs/differences.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.overview import kpi
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.readers.xplane import read_xspace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "xprof_agent"
CASES = sorted((p.parent.parent.name, p.parent.name) for p in GOLDEN.glob("*/*/get_kpi_metrics.json"))
GIB = 2**30


def test_goldens_cover_gpu_and_tpu() -> None:
    assert {name for name, _ in CASES} == {"jax_mlp", "jax_2hosts", "tpu_inference"}


@pytest.mark.parametrize(("profile", "host"), CASES)
def test_kpis_equal_xprof(profile: str, host: str, sample_profiles: Path) -> None:
    want = json.loads((GOLDEN / profile / host / "get_kpi_metrics.json").read_text())
    got = kpi.compute([read_xspace(next((sample_profiles / profile).rglob(f"{host}.xplane.pb")))], {})
    if float(want["step_time_ms"]) == 0.0:
        assert got["step_time_ms"] is None
        assert next(s for s in got["sources"] if s["metric"] == "step_time_ms")["why_missing"]
    else:
        assert got["step_time_ms"] is not None
        assert f"{got['step_time_ms']:.1f}" == want["step_time_ms"]
    assert got["roofline_utilization_percent"] is not None
    assert f"{got['roofline_utilization_percent']:.2f}%" == want["roofline_utilization"]
    assert got["peak_memory_bytes"] is not None
    assert round(got["peak_memory_bytes"] / GIB, 2) == want["peak_hbm_gib"]
    # MFU is the compute part of the roofline utilization: never more than it.
    assert got["mfu_percent"] is not None and 0 <= got["mfu_percent"] <= got["roofline_utilization_percent"]


def test_pytorch_kpis_say_what_is_not_known(sample_profiles: Path) -> None:
    """A PyTorch trace has no XLA cost model: no roofline or MFU, said with the reason; its step
    time and peak memory are the overview's and the memory profile's."""
    path = next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))
    got = kpi.compute([read_chrome_trace(path)], {})
    assert got["roofline_utilization_percent"] is None and got["mfu_percent"] is None
    missing = {s["metric"]: s["why_missing"] for s in got["sources"]}
    assert missing["roofline_utilization_percent"] and missing["mfu_percent"]
    assert got["step_time_ms"] is not None and got["step_time_ms"] > 0
    assert got["peak_memory_bytes"] is not None and got["peak_memory_bytes"] > 0
