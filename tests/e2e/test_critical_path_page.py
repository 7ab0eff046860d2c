"""Browser test: the ``critical_path`` page of a PyTorch run (torch_ddp, two ranks) and its
overlay in the trace viewer, drawn from a real WSGI server.

Expected texts and counts are the backend's own answers (the numbers themselves are checked
against HTA in tests/analyses/test_critical_path_parity.py): the page shows the breakdown the
backend computed, its link opens the trace viewer of the same rank with the path drawn over it
(the viewer's test hooks count the outlined events and arrows it drew), and a path row's link
selects that row's event.
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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_critical_path")
    shutil.copytree(sample_profiles / "torch_ddp", root / "logs" / "torch" / "torch_ddp")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def _goto(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))


def _wait_overlay(page: Any) -> dict[str, Any]:
    page.wait_for_function(
        "() => window.__tbprofTrace && window.__tbprofTrace.viewer.overlayInfo().status === 'ready'"
        " && window.__tbprofTrace.viewer.overlayInfo().drawnEvents > 0", timeout=PAGE_TIMEOUT_MS)
    info: dict[str, Any] = page.evaluate("() => window.__tbprofTrace.viewer.overlayInfo()")
    return info


def test_page_shows_the_breakdown_and_opens_the_overlay(page: Any, server: Any) -> None:
    _goto(page, server, run=RUN, host="__all__", tool="critical_path", **{"o.rank": "1", "o.step": "5"})
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0
    result = server.json("data", run=RUN, host="__all__", tool="critical_path", rank="1", step="5", rows="0")
    assert result["rank"] == 1 and result["step_name"] == "ProfilerStep#5"
    breakdown = server.json("table", run=RUN, host="__all__", tool="critical_path", table="breakdown", rank="1",
                            step="5")
    bounds = [r[0] for r in breakdown["rows"]]
    assert bounds and set(bounds) <= {"cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
                                      "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead"}
    section = page.locator('[data-section="critical_path_breakdown"]')
    text = section.inner_text()
    for bound in bounds:
        assert bound in text
        assert page.locator(f'[data-cp-bar] [data-bound="{bound}"]').count() == 1
    path_rows = page.locator("[data-cp-path] tbody tr")
    assert path_rows.count() == result["path_edges"]

    page.locator("[data-cp-trace-link]").click()
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    info = _wait_overlay(page)
    # The rank's host: every path event sits on one of its tracks, and each arrow joins two.
    assert info["events"] == len(result["overlay"]["events"])
    assert info["arrows"] == len(result["overlay"]["flows"]) > 0
    assert info["drawnArrows"] > 0
    url = urllib.parse.unquote(page.url)
    assert f"host={result['host']}" in url and "c.overlay=critical_path" in url
    # The viewer opened on the step's window.
    w = page.evaluate("() => window.__tbprofTrace.viewer.visibleWindow()")
    assert float(w["startPs"]) <= result["window_start_ps"] and float(w["endPs"]) >= result["window_end_ps"]


def test_a_path_row_selects_its_event(page: Any, server: Any) -> None:
    _goto(page, server, run=RUN, host="__all__", tool="critical_path", **{"o.rank": "0"})
    wait_ready(page)
    path = server.json("table", run=RUN, host="__all__", tool="critical_path", table="path", rank="0")
    names = [c["name"] for c in path["columns"]]
    first = dict(zip(names, path["rows"][0], strict=True))
    # The module's page comes from the trace viewer of the previous test: wait for this page's
    # table before clicking (a click on the previous page's element would go nowhere).
    page.wait_for_function("() => !window.__tbprofTrace && document.querySelector('[data-cp-event-link=\"0\"]')",
                           timeout=PAGE_TIMEOUT_MS)
    page.locator('[data-cp-event-link="0"]').click()
    page.wait_for_function("() => location.hash.includes('tool=trace_viewer')", timeout=PAGE_TIMEOUT_MS)
    _wait_overlay(page)
    page.wait_for_function("() => window.__tbprofTrace.viewer.selection() !== null", timeout=PAGE_TIMEOUT_MS)
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") == {"plane": first["plane"],
                                                                            "row": first["row"]}


@pytest.fixture(scope="module")
def graph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """tests/data/kineto_cuda_graph: a cudaGraphLaunch running four kernels (its make_trace.py)."""
    root = tmp_path_factory.mktemp("e2e_critical_path_graph")
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "kineto_cuda_graph",
                    root / "logs" / "torch" / "graph")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def test_hta_compat_reaches_the_overlay(page: Any, graph_server: Any) -> None:
    """With hta_compat the page's trace-viewer link draws HTA's path (one kernel of the graph
    launch), not tbprof's own (all four)."""
    run = "torch/graph"
    _goto(page, graph_server, run=run, tool="critical_path", **{"o.hta_compat": "true"})
    wait_ready(page)
    compat = graph_server.json("data", run=run, tool="critical_path", hta_compat="true", rows="0")
    own = graph_server.json("data", run=run, tool="critical_path", rows="0")
    assert len(compat["overlay"]["events"]) < len(own["overlay"]["events"])
    page.locator("[data-cp-trace-link]").click()
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    info = _wait_overlay(page)
    assert "c.cp_hta_compat=true" in urllib.parse.unquote(page.url)
    assert info["events"] == len(compat["overlay"]["events"])
    page.goto("about:blank")  # leave graph_server before it closes (it goes before the shared page)
