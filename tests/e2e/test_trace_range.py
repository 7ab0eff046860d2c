"""Browser test: a range drag-selected on the trace viewer of a multi-rank PyTorch run (#35: "% of
selection" summed over ranks read 344 %). The selection panel's per-name totals, each rank's
total and each share are derived here from the Kineto files themselves (json + Decimal: an
event's time is ``baseTimeNanoseconds + ts``, the timeline's zero the earliest rank's first
event; a rank alone starts at its own first event), never from the answer under test. Every
share is the union of the name's intervals over the selection, so none passes 100 %; the
same checks run on one rank alone. Screenshots at 1280 and 1600 px, light and dark, go to
test-artifacts/."""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCREENSHOTS
from .helpers import PAGE_TIMEOUT_MS, PluginServer, page_failing_on_errors

pytestmark = pytest.mark.e2e
RUN = "torch/torch_ddp"
LABEL_W = 230  # frontend/src/trace_viewer/render/layout.ts: the track labels' column
PANEL_ROWS_JS = """
() => {
  const head = [...document.querySelectorAll('.tbp-tv-range th[data-rank]')].map((th) => th.dataset.rank);
  const rows = [...document.querySelectorAll('.tbp-tv-range tr[data-name]')].map((tr) => ({
    name: tr.dataset.name,
    count: Number(tr.querySelector('td[data-count]').dataset.count),
    total: Number(tr.querySelector('td[data-total-ps]:not([data-rank])').dataset.totalPs),
    covered: Number(tr.querySelector('td[data-share]').dataset.coveredPs),
    shareText: tr.querySelector('td[data-share]').textContent,
    ranks: [...tr.querySelectorAll('td[data-rank]')].map((td) => ({
      rank: td.dataset.rank, total: Number(td.dataset.totalPs), covered: Number(td.dataset.coveredPs),
      text: td.textContent})),
  }));
  const header = document.querySelector('[data-testid="range-summary"]').textContent;
  return {head, rows, header};
}
"""


@dataclass
class Rank:
    label: str
    host: str
    origin_ps: int  # absolute time of its first event
    events: list[tuple[str, int, int]] = field(default_factory=list)  # (name, absolute start, absolute end)


def _ps(us: Any) -> int:
    return int(Decimal(str(us)) * 1_000_000)


def _read_ranks(folder: Path) -> list[Rank]:
    out = []
    for path in sorted(folder.glob("*.pt.trace.json")):
        doc = json.loads(path.read_text(), parse_float=Decimal)
        base_ps = int(doc["baseTimeNanoseconds"]) * 1000
        timed = [e for e in doc["traceEvents"] if "ts" in e]
        rank = Rank(f"rank {doc['distributedInfo']['rank']}", path.name[: -len(".pt.trace.json")],
                    base_ps + min(_ps(e["ts"]) for e in timed))
        for e in timed:
            # Complete events ("X") have a duration; instant events ("i", Kineto's [memory]) none.
            if e.get("ph") in ("X", "i"):
                start = base_ps + _ps(e["ts"])
                rank.events.append((e["name"], start, start + (_ps(e["dur"]) if e["ph"] == "X" else 0)))
        out.append(rank)
    return out


def _union(intervals: list[tuple[int, int]]) -> int:
    total, cur = 0, None
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            total += cur[1] - cur[0] if cur else 0
            cur = (s, e)
        else:
            cur = (cur[0], max(cur[1], e))
    return total + (cur[1] - cur[0] if cur else 0)


@dataclass
class Expected:
    count: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    total: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    intervals: dict[tuple[str, str], list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))


def _derive(ranks: list[Rank], zero_ps: int, start_ps: int, end_ps: int) -> Expected:
    """Per name and rank: events overlapping [start, end) (a zero-length one counts when it lies
    inside), their durations clipped to it, and the clipped intervals on the timeline's clock."""
    out = Expected()
    for rank in ranks:
        for name, s_abs, e_abs in rank.events:
            s, e = s_abs - zero_ps, e_abs - zero_ps
            if (e > start_ps and s < end_ps) or (e == s and start_ps <= s < end_ps):
                out.count[name] += 1
                clipped = (max(s, start_ps), min(e, end_ps))
                out.total[(name, rank.label)] += clipped[1] - clipped[0]
                out.intervals[(name, rank.label)].append(clipped)
    return out


@pytest.fixture(scope="module")
def ranks(sample_profiles: Path) -> list[Rank]:
    return _read_ranks(sample_profiles / "torch_ddp")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_range")
    shutil.copytree(sample_profiles / "torch_ddp", root / "logs" / "torch" / "torch_ddp")
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


@pytest.fixture(params=["light", "dark"])
def page(request: pytest.FixtureRequest, server: Any, browser: Any) -> Iterator[Any]:
    pg = page_failing_on_errors(browser)
    pg.emulate_media(color_scheme=request.param)
    pg.tbprof_scheme = request.param
    yield pg
    pg.context.close()
    assert pg.tbprof_errors == [], pg.tbprof_errors


def _open(page: Any, server: Any, host: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode({"run": RUN, "host": host, "tool": "trace_viewer"},
                                                         quote_via=urllib.parse.quote))
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"trace-status\"]').textContent.includes('events')",
        timeout=PAGE_TIMEOUT_MS)


def _drag_on_ruler(page: Any, from_px: float, width_px: float) -> tuple[int, int]:
    """Drags on the time ruler (every track); returns the range the page asks about."""
    page.keyboard.press("0")  # the whole trace
    page.wait_for_timeout(300)
    box = page.locator('[data-testid="trace-canvas"]').bounding_box()
    x, y = box["x"] + LABEL_W + from_px, box["y"] + 12
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + width_px, y, steps=6)
    page.mouse.up()
    page.wait_for_selector('[data-testid="range-summary"]', timeout=PAGE_TIMEOUT_MS)
    sel = page.evaluate("() => window.__tbprofTrace.viewer.rangeSelection()")
    return round(sel["startPs"]), round(sel["endPs"])


def _percent(text: str) -> float:
    m = re.fullmatch(r"\s*([\d.,]+)\s*%\s*", text)
    assert m, f"not a percentage: {text!r}"
    return float(m.group(1).replace(",", ""))


def _check_panel(page: Any, want: Expected, labels: list[str], start_ps: int, end_ps: int) -> dict[str, Any]:
    dur = end_ps - start_ps
    shown = page.evaluate(PANEL_ROWS_JS)
    names = {name for name, _ in want.total} | set(want.count)
    assert shown["head"] == (labels if len(labels) > 1 else [])
    assert f"{sum(want.count.values()):,} events, {len(names):,} names" in shown["header"]
    assert len(shown["rows"]) == min(len(names), 200)  # the page asks for the 200 longest names
    for row in shown["rows"]:
        name = row["name"]
        assert row["count"] == want.count[name]
        assert row["total"] == sum(want.total[(name, r)] for r in labels)
        everywhere = [iv for r in labels for iv in want.intervals[(name, r)]]
        assert row["covered"] == _union(everywhere) <= dur
        assert _percent(row["shareText"]) <= 100
        if len(labels) > 1:
            assert [c["rank"] for c in row["ranks"]] == labels
            assert sum(c["total"] for c in row["ranks"]) == row["total"]
            for cell, label in zip(row["ranks"], labels, strict=True):
                assert cell["total"] == want.total[(name, label)]
                assert cell["covered"] == _union(want.intervals[(name, label)]) <= dur
                if cell["total"] > 0:
                    assert _percent(cell["text"]) <= 100
        else:
            assert row["ranks"] == []
    # The derivation is not vacuous: names totalled over the selection, on both ranks for a pair.
    return shown


def test_selection_on_all_ranks_and_on_one(server: Any, page: Any, ranks: list[Rank]) -> None:
    labels = [r.label for r in ranks]
    assert labels == ["rank 0", "rank 1"]
    _open(page, server, "__all__")
    start_ps, end_ps = _drag_on_ruler(page, 300, 250)
    zero = min(r.origin_ps for r in ranks)
    want = _derive(ranks, zero, start_ps, end_ps)
    shown = _check_panel(page, want, labels, start_ps, end_ps)
    both = [row for row in shown["rows"] if all(c["total"] > 0 for c in row["ranks"])]
    assert len(both) >= 10, "the range should hold names that ran on both ranks"
    # The summed total passes the selection for some name (two ranks at once); its shares do not.
    assert any(row["total"] > end_ps - start_ps for row in shown["rows"])
    scheme = page.tbprof_scheme
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 1600):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)
        page.screenshot(path=str(SCREENSHOTS / f"trace_range_torch_ddp_all_ranks_{scheme}__{width}.png"),
                        full_page=True)
        panel = page.locator('[data-testid="trace-details"]').bounding_box()
        table = page.locator(".tbp-tv-range-wrap").bounding_box()
        assert table["x"] + table["width"] <= panel["x"] + panel["width"] + 1, "the table overflows its panel"

    # One rank alone: its own clock (its first event at 0), no rank columns.
    alone = ranks[1]
    page.set_viewport_size({"width": 1280, "height": 800})
    _open(page, server, alone.host)
    page.wait_for_function(
        "() => window.__tbprofTrace.viewer.groupNames().length > 0"
        " && !window.__tbprofTrace.viewer.groupNames()[0].startsWith('rank ')", timeout=PAGE_TIMEOUT_MS)
    start_ps, end_ps = _drag_on_ruler(page, 200, 300)
    want = _derive([alone], alone.origin_ps, start_ps, end_ps)
    shown = _check_panel(page, want, [alone.label], start_ps, end_ps)
    assert shown["rows"], "the range should hold events of the rank"
    page.screenshot(path=str(SCREENSHOTS / f"trace_range_torch_ddp_{alone.label.replace(' ', '')}_{scheme}.png"),
                    full_page=True)
