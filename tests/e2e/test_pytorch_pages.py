"""Browser test: a PyTorch run (Kineto traces, two ranks) on XProf's pages: overview with HTA's
GPU breakdown, kernel stats, memory profile and pod viewer; and a TF1 timeline run's overview
(one step per file) and framework op stats; drawn from a real WSGI server.

Expected texts are the backend's numbers formatted as the page formats them
(``formatPercent``: one decimal; card values), so the test checks that each page shows what
the backend computed, for a run kind that had no such pages before.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import PluginServer, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e
RUN = "torch/torch_ddp"
SINGLE = "torch/torch_cnn"
TF1 = "tf1/tf1_timeline"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_torch")
    for name in ("torch_ddp", "torch_cnn"):
        shutil.copytree(sample_profiles / name, root / "logs" / "torch" / name)
    shutil.copytree(sample_profiles / "tf1_timeline", root / "logs" / "tf1" / "tf1_timeline")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def _open(page: Any, server: Any, **state: str) -> None:
    import urllib.parse

    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0


def _pct(x: float) -> str:
    return f"{x:.1f}%"


def test_pytorch_run_lists_xprof_pages(server: Any) -> None:
    tools = {t["name"] for t in server.json("tools", run=RUN)["tools"]}
    assert {"overview_page", "kernel_stats", "memory_profile", "pod_viewer", "framework_op_stats",
            "gpu_breakdown", "trace_viewer"} <= tools


def test_overview_with_gpu_breakdown(page: Any, server: Any) -> None:
    _open(page, server, run=RUN, host="__all__", tool="overview_page")
    wait_charts_drawn(page)
    result = server.json("data", run=RUN, host="__all__", tool="overview_page", rows="0")
    avg = result["performance_summary"]["step_time_ms"]["avg"]
    assert page.locator('[data-card="step_time"] .tbp-card-value').inner_text().startswith(f"{avg:.3g} ms")
    assert result["run_environment"]["device_type"] == "GPU"
    # HTA's breakdown section: loaded after the page, with the backend's mean idle share.
    page.wait_for_selector('[data-gpu-breakdown="ready"]')
    gpu = server.json("data", run=RUN, host="__all__", tool="gpu_breakdown", rows="0")
    # HTA's shares are rows of the overview's definitions panel (#35), not cards of their own.
    panel = '[data-gpu-breakdown] tr[data-metric="{}"] [data-metric-value]'.format
    assert page.locator(panel("device_idle_of_kernel_timeline")).inner_text() == _pct(gpu["device_idle_percent"])
    assert page.locator(panel("communication_of_kernel_timeline")).inner_text() == _pct(gpu["communication_percent"])
    # #29 §4: the overview shows HTA's headline shares and a link, not HTA's whole report.
    assert page.locator("[data-gpu-breakdown] [data-gpu-table]").count() == 0
    page.click("[data-gpu-breakdown-link]")
    wait_ready(page)
    assert page.locator('a.tbp-tool.tbp-active[data-tool="gpu_breakdown"]').count() == 1
    # There, one row per rank in the temporal breakdown.
    assert page.locator('[data-table="temporal_breakdown"] tbody tr').count() == len(gpu["ranks"]) == 2


def test_kernel_stats_page(page: Any, server: Any) -> None:
    _open(page, server, run=SINGLE, tool="kernel_stats")
    result = server.json("data", run=SINGLE, tool="kernel_stats", rows="0")
    assert result["kernel_event_count"] > 0
    hint = page.locator('[data-card="kernels"] .tbp-card-hint').inner_text()
    assert hint.startswith(f"{result['kernel_event_count']} launches")
    page.wait_for_selector('[data-table="kernels"] tbody tr')
    shown = page.locator('[data-table="kernels"] tbody tr').count()
    assert 0 < shown <= result["row_count"]
    # The first row is the kernel with the most total time (the table's default order).
    first = server.json("table", run=SINGLE, tool="kernel_stats", table="kernels", rows="1")
    name = first["rows"][0][[c["name"] for c in first["columns"]].index("kernel_name")]
    assert name[:40] in page.locator('[data-table="kernels"] tbody tr').first.inner_text()


def test_memory_profile_page(page: Any, server: Any) -> None:
    _open(page, server, run=SINGLE, tool="memory_profile")
    wait_charts_drawn(page)
    result = server.json("data", run=SINGLE, tool="memory_profile", rows="0")
    options = page.eval_on_selector_all(".tbp-allocator-select option", "os => os.map(o => o.value)")
    assert options == result["memory_ids"] and result["memory_id"] == "GPU 0"
    assert page.locator('[data-card="allocations"] .tbp-card-value').inner_text() == \
        f"{result['allocators']['GPU 0']['num_allocations']}"


def test_pod_viewer_with_gpu_breakdown(page: Any, server: Any) -> None:
    _open(page, server, run=RUN, host="__all__", tool="pod_viewer")
    wait_charts_drawn(page)
    result = server.json("data", run=RUN, host="__all__", tool="pod_viewer", rows="0")
    assert result["step_count"] > 0
    page.wait_for_selector('[data-gpu-breakdown="ready"]')
    assert page.locator('[data-gpu-table="comm_comp_overlap"] tbody tr').count() == 2
    # #29 §4: ranks in order, named "rank N" (the trace's full id is in the details).
    labels = page.evaluate(
        "() => window.__tbprofCharts.get('pod_step').currentOption.xAxis.data")
    hosts = [c["host"] for c in result["cores"]]
    ranks = [h.split(".")[0] for h in hosts]
    assert ranks == sorted(ranks) and ranks[0] == "rank0"  # in rank order, whatever the process ids
    assert [lab.split("\n")[0] for lab in labels] == sorted((lab.split("\n")[0] for lab in labels),
                                                             key=lambda x: int(x.split()[1]))
    assert all(lab.startswith("rank ") for lab in labels)


def test_tf1_overview_and_op_stats(page: Any, server: Any) -> None:
    _open(page, server, run=TF1, host="__all__", tool="overview_page")
    wait_charts_drawn(page)
    result = server.json("data", run=TF1, host="__all__", tool="overview_page", rows="0")
    steps = server.json("data", run=TF1, host="__all__", tool="tf1_steps", rows="0")
    # The overview's steps are the timeline files, with tf1_steps' step times.
    assert result["steps"]["step_count"] == steps["step_count"] == 6
    avg = result["performance_summary"]["step_time_ms"]["avg"]
    assert avg == steps["average_step_time_ms"]
    assert page.locator('[data-card="step_time"] .tbp-card-value').inner_text().startswith(f"{avg:.3g} ms")
    assert page.locator("[data-gpu-breakdown]").count() == 0  # a CPU run: no GPU section
    _open(page, server, run=TF1, host="__all__", tool="framework_op_stats")
    page.wait_for_selector('[data-table="ops"] tbody tr')
    assert page.locator('[data-table="ops"] tbody tr').count() > 0


def test_tf1_memory_profile_page(page: Any, server: Any) -> None:
    _open(page, server, run=TF1, host="timeline-1", tool="memory_profile")
    wait_charts_drawn(page)
    result = server.json("data", run=TF1, host="timeline-1", tool="memory_profile", rows="0")
    options = page.eval_on_selector_all(".tbp-allocator-select option", "os => os.map(o => o.value)")
    assert options == result["memory_ids"] and len(options) >= 1
    a = result["allocators"][result["memory_id"]]
    assert page.locator('[data-card="allocations"] .tbp-card-value').inner_text() == f"{a['num_allocations']}"


def test_precision_from_operator_input_types(page: Any, server: Any) -> None:
    """#29 §3 / #23: a PyTorch trace has no HLO and no tensor shapes; its operators' input types
    (record_shapes) tell: torch_cnn ran under bf16 autocast, so the card shows most device compute
    in 16-bit, names where that comes from, and the overview gives no bf16 advice."""
    _open(page, server, run=SINGLE, tool="overview_page")
    perf = server.json("data", run=SINGLE, tool="overview_page", rows="0")["performance_summary"]
    assert perf["device_compute_precision_source"] == "operator_input_types"
    assert perf["device_compute_16bit_percent"] > 50.0
    card = page.locator('[data-card="precision"]')
    assert card.locator(".tbp-card-value").inner_text().endswith("16-bit")
    assert "input types" in card.locator(".tbp-card-hint").inner_text()
    assert "bf16" not in page.locator("[data-recommendation]").inner_text()


def test_memory_capacity_is_called_reserved(page: Any, server: Any) -> None:
    """#29 §3: PyTorch's "capacity" is the caching allocator's reserved memory, not the device's."""
    _open(page, server, run=SINGLE, tool="memory_profile")
    card = page.locator('[data-card="capacity"]')
    assert card.locator(".tbp-card-label").inner_text() == "Reserved by the allocator"
    assert "not the device's memory" in card.locator(".tbp-card-hint").inner_text()
