"""A multi-rank PyTorch run's trace viewer (#29 §5): every rank in one timeline, a process group
per rank (rank 0's GPU and host threads, then rank 1's), on the traces' common time base; the
host picker keeps a single rank's choice. Expectations come from the backend's answers (the
combined store's groups are checked against the trace files in tests/timeline/
test_combined_ranks.py). Screenshots at 1280 and 1600 px go to test-artifacts/."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCREENSHOTS
from .helpers import PAGE_TIMEOUT_MS, PluginServer, page_failing_on_errors

pytestmark = pytest.mark.e2e
RUN = "torch/torch_ddp"
GROUPS_JS = "() => window.__tbprofTrace.viewer.groupNames()"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_ranks")
    shutil.copytree(sample_profiles / "torch_ddp", root / "logs" / "torch" / "torch_ddp")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


@pytest.fixture()
def page(server: Any, browser: Any) -> Iterator[Any]:
    pg = page_failing_on_errors(browser)
    yield pg
    pg.context.close()
    assert pg.tbprof_errors == [], pg.tbprof_errors


def _open(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"trace-status\"]').textContent.includes('events')",
        timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)


def test_all_ranks_in_one_timeline_and_a_rank_alone(server: Any, page: Any) -> None:
    hosts = next(r for r in server.json("runs")["runs"] if r["run"] == RUN)["hosts"]
    assert len(hosts) == 2
    _open(page, server, run=RUN, tool="trace_viewer")
    # Opened on every rank: the host picker says so, and the groups are rank by rank.
    assert page.locator(".tbp-host-select, select[aria-label='Host']").first.input_value() == "__all__"
    together = server.json("data", run=RUN, host="__all__", tool="trace_viewer")
    want = [g["name"] for g in together["groups"]]
    shown = page.evaluate(GROUPS_JS)
    assert shown == want
    assert shown[0].startswith("rank 0 · /device:GPU:0") and shown[1] == "rank 0 · Host CPU"
    assert any(n.startswith("rank 1 · /device:GPU:1") for n in shown)
    first_rank1 = next(i for i, n in enumerate(shown) if n.startswith("rank 1 · "))
    assert all(n.startswith("rank 0 · ") for n in shown[:first_rank1])
    # The viewer's window holds both ranks' events (drawn one by one or merged into boxes).
    view = page.evaluate("() => window.__tbprofTrace.viewer.visibleWindow()")
    window = server.json("trace", run=RUN, host="__all__", width_px="2000", format="json",
                         start_ps=str(int(view["startPs"])), end_ps=str(int(view["endPs"])))
    rank_of = {g["id"]: g["name"].split(" · ")[0] for g in together["groups"]}
    busy = {rank_of[t["group"]] for t in window["tracks"]
            if t.get("events", [0, 0])[1] + t.get("boxes", [0, 0])[1] > 0}
    assert busy == {"rank 0", "rank 1"}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 1600):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)
        page.screenshot(path=str(SCREENSHOTS / f"trace_viewer_torch_ddp_all_ranks__{width}.png"), full_page=True)
    # The host picker keeps a per-rank choice: rank 1 alone.
    page.select_option("select[aria-label='Host']", hosts[1])
    page.wait_for_function(f"() => decodeURIComponent(location.hash).includes('host={hosts[1]}')")
    page.wait_for_function(
        "() => window.__tbprofTrace && window.__tbprofTrace.viewer.groupNames().length > 0"
        " && !window.__tbprofTrace.viewer.groupNames()[0].startsWith('rank ')", timeout=PAGE_TIMEOUT_MS)
    alone = server.json("data", run=RUN, host=hosts[1], tool="trace_viewer")
    assert page.evaluate(GROUPS_JS) == [g["name"] for g in alone["groups"]]
    assert any("GPU:1" in g["name"] for g in alone["groups"])
