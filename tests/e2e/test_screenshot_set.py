"""A screenshot of every page of every demo run (its tools, Compare and Query), at 1600 px light
and 1280 px dark, for a person to look at (#35): written into the git-ignored ``test-artifacts/screenshots/set/``.

The whole set with ``TBPROF_SCREENSHOT_SET=1`` (about two minutes of page loads that CI need not
spend); without it, only the runs of ``SMOKE_RUNS`` (every page of a PyTorch and a TPU run).
``TBPROF_SCREENSHOT_RUNS=torch_ddp,tpu`` shoots only the runs whose names start with one of those
prefixes. Each page must load without a browser
error, show no error message, say no paragraph twice and not scroll sideways, so the set doubles
as a smoke test of every page.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCREENSHOTS
from .helpers import PluginServer, after_frames, page_failing_on_errors, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ENABLED = os.environ.get("TBPROF_SCREENSHOT_SET") == "1"
OUT = SCREENSHOTS / "set"
SMOKE_RUNS = ("torch_cnn", "tpu_inference")
ONLY = tuple(p for p in os.environ.get("TBPROF_SCREENSHOT_RUNS", "").split(",") if p) or (() if ENABLED else SMOKE_RUNS)
# The page's paragraphs (a sentence shown twice on one page says nothing twice), and whether the
# page scrolls sideways (wide tables scroll inside their own box instead).
PARAGRAPHS_JS = ("() => [...document.querySelectorAll('main.tbp-page p')]"
                 ".map((p) => p.textContent.trim()).filter(Boolean)")
SIDEWAYS_JS = "() => document.documentElement.scrollWidth > document.documentElement.clientWidth + 1"
# Pages of every run that are not tools of its tool list (the sidebar's Compare and Query).
RUN_PAGES = ("compare", "query")
# (viewport width, colour scheme) of each shot.
LOOKS = [(1600, "light"), (1280, "dark")]
# Every chart of the page has drawn its first option (Chart.ready); after_frames then lets the
# frame after it paint: a screenshot shows the charts, not their empty boxes.
CHARTS_READY_JS = "() => Promise.all([...(window.__tbprofCharts ?? new Map()).values()].map((c) => c.ready))"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_shots")
    shutil.copytree(sample_profiles, root / "logs")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


@pytest.mark.parametrize(("width", "scheme"), LOOKS)
def test_every_page_of_every_demo_run(server: Any, browser: Any, width: int, scheme: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    runs = [r["run"] for r in server.json("runs")["runs"]]
    assert len(runs) >= 8  # every demo run is listed
    if ONLY:
        runs = [r for r in runs if r.startswith(ONLY)]
    pg = page_failing_on_errors(browser)
    pg.set_viewport_size({"width": width, "height": 900})
    pg.emulate_media(color_scheme=scheme)
    shot = 0
    try:
        for run in runs:
            for name in [t["name"] for t in server.json("tools", run=run)["tools"]] + list(RUN_PAGES):
                state = {"run": run, "tool": name}
                pg.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
                wait_ready(pg)
                pg.evaluate(CHARTS_READY_JS)
                after_frames(pg)
                assert pg.locator(".tbp-message-error").count() == 0, (run, name)
                assert pg.tbprof_errors == [], (run, name, pg.tbprof_errors)  # named by the page it came from
                paragraphs = pg.evaluate(PARAGRAPHS_JS)
                twice = sorted({p for p in paragraphs if paragraphs.count(p) > 1})
                assert twice == [], (run, name, twice)
                assert not pg.evaluate(SIDEWAYS_JS), (run, name)
                pg.screenshot(path=str(OUT / f"{_safe(run)}__{name}__{width}_{scheme}.png"), full_page=True)
                shot += 1
    finally:
        pg.context.close()
    assert shot >= (4 * len(runs) if ONLY else 8 * 4)
    assert pg.tbprof_errors == [], pg.tbprof_errors
