"""Browser test: HTA's analyses of a PyTorch run (Kineto traces, two ranks) in a real browser,
drawn from a real WSGI server: the ``gpu_counters`` page (HTA's queue length and memory
bandwidth; the generic page: cards and tables) and its counter tracks in the trace viewer.

Expected texts are the backend's own answers as the page formats them, so the test checks that
each page shows what the backend computed (the numbers themselves are checked against HTA in
tests/analyses/test_gpu_counters_parity.py).
"""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, PluginServer, wait_ready

pytestmark = pytest.mark.e2e
RUN = "torch/torch_ddp"
SINGLE = "torch/torch_cnn"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_hta")
    for name in ("torch_ddp", "torch_cnn"):
        shutil.copytree(sample_profiles / name, root / "logs" / "torch" / name)
    # A with_modules trace (tests/data: written from Kineto's documented fields) for the module view.
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "kineto_with_modules",
                    root / "logs" / "torch" / "modules")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def _goto(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))


def test_gpu_counters_page(page: Any, server: Any) -> None:
    _goto(page, server, run=RUN, host="__all__", tool="gpu_counters")
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0
    result = server.json("data", run=RUN, host="__all__", tool="gpu_counters", rows="0")
    card = page.locator('[data-card="max_queue_length"] .tbp-card-value').inner_text()
    assert card == str(result["max_queue_length"])
    summary = server.json("table", run=RUN, host="__all__", tool="gpu_counters", table="queue_length_summary")
    page.wait_for_selector('[data-table="queue_length_summary"] tbody tr')
    # One row per (rank, stream): torch_ddp's two ranks each launch on one stream.
    assert page.locator('[data-table="queue_length_summary"] tbody tr').count() == len(summary["rows"]) == 2
    page.wait_for_selector('[data-table="memory_bw_summary"] tbody tr')
    text = page.locator('[data-table="memory_bw_summary"]').inner_text()
    assert "Memcpy DtoD" in text and "Memset" in text


def test_queue_length_counter_in_trace_viewer(page: Any, server: Any) -> None:
    hosts = next(r for r in server.json("runs")["runs"] if r["run"] == RUN)["hosts"]
    _goto(page, server, run=RUN, host=hosts[0], tool="trace_viewer")
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"trace-status\"]').textContent.includes('events')",
        timeout=PAGE_TIMEOUT_MS)
    tool = server.json("data", run=RUN, host=hosts[0], tool="trace_viewer")
    track = next(t for t in tool["tracks"] if t["name"] == "CUDA queue length")
    assert track["kind"] == "counter" and track["series"] == ["stream 7"]
    w = page.evaluate("() => window.__tbprofTrace.viewer.visibleWindow()")
    mid = (float(w["startPs"]) + float(w["endPs"])) / 2
    pos = page.evaluate("([t, s]) => window.__tbprofTrace.viewer.eventPosition(t, s, 0, 0)", [track["id"], mid])
    box = page.locator('[data-testid="trace-canvas"]').bounding_box()
    page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"] + 8)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"trace-details\"]').innerText.includes('stream 7: ')",
        timeout=PAGE_TIMEOUT_MS)
    assert "CUDA queue length" in page.inner_text('[data-testid="trace-details"]')


def test_kernel_sequences_page(page: Any, server: Any) -> None:
    """The generic page with the options bar: a different operator name re-asks the backend."""
    op = "autograd::engine::evaluate_function"
    _goto(page, server, run=RUN, host="__all__", tool="kernel_sequences", **{"o.operator_name": op})
    wait_ready(page)
    result = server.json("data", run=RUN, host="__all__", tool="kernel_sequences", operator_name=op, rows="0")
    assert result["pattern_count"] > 0
    page.wait_for_selector('[data-table="patterns"] tbody tr')
    card = page.locator('[data-card="pattern_count"] .tbp-card-value').inner_text()
    assert card == str(result["pattern_count"])
    assert "evaluate_function" in page.locator('[data-table="patterns"] tbody tr').first.inner_text()


def test_compare_page_trace_diff(page: Any, server: Any) -> None:
    """Two PyTorch runs on the compare page: HTA's trace diff table, rows as the backend orders them."""
    hosts = next(r for r in server.json("runs")["runs"] if r["run"] == RUN)["hosts"]
    _goto(page, server, run=SINGLE, tool="compare", **{"c.base_run": RUN, "c.base_host": hosts[0]})
    page.wait_for_selector('[data-table="trace_diff"] tbody tr', timeout=PAGE_TIMEOUT_MS)
    body = server.json("compare", base_run=RUN, base_host=hosts[0], run=SINGLE)
    assert body["trace_diff"]["changes"]["added"] > 0
    table = server.json("compare_table", base_run=RUN, base_host=hosts[0], run=SINGLE, table="trace_diff", rows="1")
    first = table["rows"][0][[c["name"] for c in table["columns"]].index("name")]
    assert first[:30] in page.locator('[data-table="trace_diff"] tbody tr').first.inner_text()


def test_gpu_utilization_page(page: Any, server: Any) -> None:
    """torch-tb-profiler's GPU metrics on the generic page: the summary cards and one row per rank."""
    _goto(page, server, run=RUN, host="__all__", tool="gpu_utilization")
    wait_ready(page)
    result = server.json("data", run=RUN, host="__all__", tool="gpu_utilization", rows="0")
    page.wait_for_selector('[data-table="devices"] tbody tr')
    assert page.locator('[data-table="devices"] tbody tr').count() == len(result["ranks"]) == 2
    card = page.locator('[data-card="gpu_utilization_percent"] .tbp-card-value').inner_text()
    assert card.startswith(f"{result['gpu_utilization_percent']:.1f}")


def test_collectives_page(page: Any, server: Any) -> None:
    """torch-tb-profiler's collectives table: one row per rank and collective, the slowest rank marked."""
    _goto(page, server, run=RUN, host="__all__", tool="collectives")
    wait_ready(page)
    table = server.json("table", run=RUN, host="__all__", tool="collectives", table="collectives")
    page.wait_for_selector('[data-table="collectives"] tbody tr')
    assert page.locator('[data-table="collectives"] tbody tr').count() == len(table["rows"]) == 4
    assert "nccl:all_reduce" in page.locator('[data-table="collectives"]').inner_text()


def test_stragglers_page(page: Any, server: Any) -> None:
    """The ranks table marks the rank the others wait for (rank 1 of torch_ddp)."""
    _goto(page, server, run=RUN, host="__all__", tool="stragglers")
    wait_ready(page)
    result = server.json("data", run=RUN, host="__all__", tool="stragglers", rows="0")
    assert result["waited_for"] == 1
    page.wait_for_selector('[data-table="ranks"] tbody tr')
    assert page.locator('[data-table="ranks"] tbody tr').count() == 2
    assert page.locator('[data-card="waited_for"] .tbp-card-value').inner_text() == "rank 1"


def test_operators_by_shape_page(page: Any, server: Any) -> None:
    _goto(page, server, run=SINGLE, tool="operators_by_shape")
    wait_ready(page)
    first = server.json("table", run=SINGLE, tool="operators_by_shape", table="operators", rows="1")
    cols = [c["name"] for c in first["columns"]]
    page.wait_for_selector('[data-table="operators"] tbody tr')
    row = page.locator('[data-table="operators"] tbody tr').first.inner_text()
    assert first["rows"][0][cols.index("name")] in row and first["rows"][0][cols.index("input_shape")] in row
    # The device and TensorCore columns torch-tb-profiler's view has.
    header = page.locator('[data-table="operators"] thead').inner_text()
    for label in ("Device total duration", "Device self duration", "TensorCore eligible"):
        assert label in header


def test_module_view_page(page: Any, server: Any) -> None:
    _goto(page, server, run="torch/modules", tool="module_view")
    wait_ready(page)
    table = server.json("table", run="torch/modules", tool="module_view", table="modules")
    page.wait_for_selector('[data-table="modules"] tbody tr')
    assert page.locator('[data-table="modules"] tbody tr').count() == len(table["rows"]) == 4
    assert "Linear_0" in page.locator('[data-table="modules"]').inner_text()
