"""The recommendation ranks causes by their share of the step, and gives each framework its own
input advice (#33): a 0.1 % input wait does not lead ahead of 40 % collectives, and a PyTorch run
gets DataLoader advice, not tf.data's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tbprof.analyses.input import input_pipeline
from tbprof.analyses.overview import overview
from tbprof.analyses.steps import breakdown as sb
from tests import kineto_fixtures as kf


def test_causes_are_ranked_by_their_share() -> None:
    """One 100 ms step: collectives 40.4 ms, input 0.1 ms, 'all others' 5 ms (XProf's "possibly
    input-bound" at 3 % or more), device compute the remaining 54.5 ms."""
    step_ms = {k: np.zeros(1) for k in sb.CATEGORY_KEYS}
    step_ms["device_collectives_ms"][0] = 40.4
    step_ms["input_ms"][0] = 0.1
    step_ms["all_others_ms"][0] = 5.0
    step_ms["device_compute_ms"][0] = 100 - 40.4 - 0.1 - 5.0
    ana = sb.bottleneck_analysis(step_ms, np.array([100.0]))
    assert ana["input_bound"] == "potential"
    assert [(c["cause"], round(c["percent"], 6)) for c in ana["causes"]] == [
        ("device_collectives", 40.4), ("input", 5.0)]
    assert ana["causes"][0]["statement"].startswith("Device collectives")


def _dataloader_run(tmp_path: Path) -> list[kf.Event]:
    """Three 1000 µs steps, each waiting 490 µs in ``enumerate(DataLoader)#...__next__`` (the
    annotation PyTorch's DataLoader iterator records) before one GEMM."""
    events: list[kf.Event] = []
    for k in range(3):
        t = 1000 + k * 1000
        events += [kf.x("user_annotation", f"ProfilerStep#{k + 1}", t, 1000),
                   kf.x("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10, 490),
                   kf.x("cpu_op", "aten::mm", t + 510, 50), kf.launch("cudaLaunchKernel", t + 520, 10, 10 + k),
                   kf.kernel("ampere_sgemm_128x64_nn", t + 600, 350, 10 + k)]
    return events


def test_a_pytorch_run_gets_dataloader_advice(tmp_path: Path) -> None:
    store = kf.write(tmp_path, kf.trace(_dataloader_run(tmp_path)))
    result = overview.compute([store], {})
    rec = result["recommendation"]
    assert rec["input_bound"] == "high"
    lead = rec["causes"][0]
    assert lead["cause"] == "input" and abs(lead["percent"] - 100 * 490 / 1000) < 1e-9
    for knob in ("DataLoader", "num_workers", "pin_memory", "prefetch_factor", "non_blocking"):
        assert knob in lead["statement"]
    assert "tf.data" not in lead["statement"]
    assert [c["percent"] for c in rec["causes"]] == sorted((c["percent"] for c in rec["causes"]), reverse=True)
    verdict = input_pipeline.compute([store], {})["verdict"]
    assert "num_workers" in verdict["statement"] and "tf.data" not in verdict["statement"]
    assert "DataLoader" in verdict["summary_next_step"]


def test_causes_of_a_real_ddp_run_follow_the_step_shares(sample_profiles: Path) -> None:
    from tbprof.readers.chrome_trace import read_chrome_trace
    stores = [read_chrome_trace(p) for p in sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))]
    result = overview.compute(stores, {})
    pct = result["performance_summary"]["percent_of_step_time"]
    causes = result["recommendation"]["causes"]
    assert causes
    assert [c["percent"] for c in causes] == sorted((c["percent"] for c in causes), reverse=True)
    key = {"input": "input_percent", "device_collectives": "device_collectives_percent",
           "kernel_launch": "kernel_launch_percent", "all_others": "all_others_percent"}
    for c in causes:
        if not (c["cause"] == "input" and result["recommendation"]["input_bound"] == "potential"):
            assert c["percent"] == pct[key[c["cause"]]]
    assert all("tf.data" not in c["statement"] for c in causes)
