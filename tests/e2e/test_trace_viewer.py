"""The trace viewer in a real browser (Debian chromium) against `tbprof serve` on real profiles:
open, zoom, pan, click an event, read its details, search, follow a flow, select a range.

Positions on the canvas come from the viewer itself (``window.__tbprofTrace``), so a click
lands on the event the backend says is there; what the page then shows is checked against
the backend's own answers. Screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, app_url, run_named

pytestmark = pytest.mark.e2e

WINDOW_JS = "() => window.__tbprofTrace.viewer.visibleWindow()"
FETCHES_JS = "() => window.__tbprofTrace.fetches"

# Sampled pixels of the timeline area right of the labels: painted (non-background) and colours.
CANVAS_PIXELS_JS = """
() => {
  const c = document.querySelector('[data-testid="trace-canvas"]');
  const ctx = c.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const x0 = Math.round(230 * dpr), y0 = Math.round(26 * dpr);
  const d = ctx.getImageData(x0, y0, c.width - x0, c.height - y0).data;
  const bg = [d[0], d[1], d[2]];
  let painted = 0, sampled = 0; const colours = new Set();
  for (let i = 0; i < d.length; i += 4 * 7) {
    sampled++;
    if (Math.abs(d[i] - 255) + Math.abs(d[i+1] - 255) + Math.abs(d[i+2] - 255) > 30) {
      painted++; colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
  }
  return {painted, sampled, colours: colours.size};
}
"""


def _open(page: Any, server: Any, run: str) -> None:
    page.goto(app_url(server, run=run, tool="trace_viewer"))
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"trace-status\"]').textContent.includes('events')",
        timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)


def _window(page: Any) -> tuple[float, float]:
    w = page.evaluate(WINDOW_JS)
    return float(w["startPs"]), float(w["endPs"])


def _canvas_point(page: Any, x: float, y: float) -> tuple[float, float]:
    box = page.locator('[data-testid="trace-canvas"]').bounding_box()
    return box["x"] + x, box["y"] + y


def _wait_details(page: Any, name: str) -> None:
    page.wait_for_function(
        "(n) => { const e = document.querySelector('[data-testid=\"event-name\"]'); return e && e.textContent === n; }",
        arg=name, timeout=PAGE_TIMEOUT_MS)


def test_jax_mlp_zoom_pan_click_search_flow(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "jax_mlp")
    _open(page, standalone, run)
    whole = standalone.json("trace", run=run, format="json", width_px="1000")
    span = whole["span_ps"]
    start, end = _window(page)
    # #29 §5: it opens where the devices ran (the header's active range, 2 % margins), not on
    # the profiler's start and stop around it.
    active_start, active_end = whole["active_ps"]
    assert 0 < active_start < active_end < span
    margin = 0.02 * (active_end - active_start)
    assert start == pytest.approx(active_start - margin, rel=1e-6)
    assert end == pytest.approx(active_end + margin, rel=1e-6)
    # Nothing selected: the details panel is folded, the timeline has the room.
    assert not page.locator('[data-testid="trace-details"]').is_visible()
    status = page.inner_text('[data-testid="trace-status"]')
    assert "none dropped" in status and "density boxes" in status
    pixels = page.evaluate(CANVAS_PIXELS_JS)
    assert pixels["painted"] > 0.005 * pixels["sampled"] and pixels["colours"] >= 5, pixels
    serve_page.screenshot("trace_jax_mlp_whole")

    # Folding the first group (a click on its header) hides its tracks; a second click shows them.
    first_track = whole["groups"][0]["tracks"][0]
    visible_js = "(t) => window.__tbprofTrace.viewer.eventPosition(t, 0, 1e15, 0) !== null"
    assert page.evaluate(visible_js, first_track)
    page.mouse.click(*_canvas_point(page, 60, 26 + 11))
    page.wait_for_function(f"() => !({visible_js})({first_track})", timeout=PAGE_TIMEOUT_MS)
    page.mouse.click(*_canvas_point(page, 60, 26 + 11))
    page.wait_for_function(f"() => ({visible_js})({first_track})", timeout=PAGE_TIMEOUT_MS)

    # The plain wheel scrolls the tracks and leaves the window; Ctrl + wheel zooms at the
    # cursor (#29 §5: Perfetto's and XProf's convention).
    fetches = page.evaluate(FETCHES_JS)
    x, y = _canvas_point(page, 230 + 400, 120)
    page.mouse.move(x, y)
    page.mouse.wheel(0, 200)
    page.wait_for_function("() => document.querySelector('.tbp-tv-scroller').scrollTop > 0", timeout=PAGE_TIMEOUT_MS)
    assert _window(page) == (start, end)
    page.evaluate("() => { document.querySelector('.tbp-tv-scroller').scrollTop = 0; }")
    page.keyboard.down("Control")
    for _ in range(4):
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(50)
    page.keyboard.up("Control")
    z0, z1 = _window(page)
    assert (z1 - z0) < 0.5 * (end - start)
    page.wait_for_function(f"() => window.__tbprofTrace.fetches > {fetches}", timeout=PAGE_TIMEOUT_MS)
    # Keyboard: W zooms in, D pans right.
    page.keyboard.press("w")
    w0, w1 = _window(page)
    assert (w1 - w0) < (z1 - z0)
    page.keyboard.press("d")
    d0, _ = _window(page)
    assert d0 > w0
    # Drag pans: dragging right shows earlier times.
    page.mouse.move(x, y + 30)
    page.mouse.down()
    page.mouse.move(x + 150, y + 30, steps=5)
    page.mouse.up()
    p0, _ = _window(page)
    assert p0 < d0
    # The window is in the URL.
    page.wait_for_function("() => location.hash.includes('c.start=')", timeout=PAGE_TIMEOUT_MS)

    # Search the whole trace: a kernel name; the first match is selected and revealed.
    found = standalone.json("trace_search", run=run, q="gemm_fusion_dot_17", limit="5")
    assert found["total"] >= 2
    page.fill('[data-testid="trace-search"]', "gemm_fusion_dot_17")
    page.press('[data-testid="trace-search"]', "Enter")
    page.wait_for_function("(t) => document.querySelector('[data-testid=\"search-count\"]').textContent === t",
                           arg=f"1 of {found['total']}", timeout=PAGE_TIMEOUT_MS)
    _wait_details(page, "gemm_fusion_dot_17")
    first = found["matches"][0]
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") == {"plane": first["plane"],
                                                                             "row": first["row"]}
    # Kernel launch parameters decoded from kernel_details.
    details = page.inner_text('[data-testid="trace-details"]')
    ev = standalone.json("trace_event", run=run, plane=str(first["plane"]), row=str(first["row"]))
    kernel = ev["decoded"]["kernel"]
    # Identifiers keep their digits bare (#29 §5: "correlation_id 3,042" read as a quantity).
    stat_cells = dict(page.eval_on_selector_all(
        '[data-testid="event-stats"] tr', "trs => trs.map(tr => [tr.querySelector('th').innerText, "
        "tr.querySelector('td').innerText])"))
    ids = {s["name"]: s["value"] for s in ev["stats"] if s["name"].endswith("_id") and isinstance(s["value"], int)}
    assert any(v >= 1000 for v in ids.values())
    for name, value in ids.items():
        assert stat_cells[name] == str(value), (name, stat_cells[name])
    assert " × ".join(str(v) for v in kernel["grid"]) in details
    assert str(kernel["registers_per_thread"]) in details
    page.click('[data-testid="search-next"]')
    page.wait_for_function("(t) => document.querySelector('[data-testid=\"search-count\"]').textContent === t",
                           arg=f"2 of {found['total']}", timeout=PAGE_TIMEOUT_MS)
    page.click('[data-testid="search-prev"]')
    page.wait_for_function("(t) => document.querySelector('[data-testid=\"search-count\"]').textContent === t",
                           arg=f"1 of {found['total']}", timeout=PAGE_TIMEOUT_MS)
    _wait_details(page, "gemm_fusion_dot_17")
    page.wait_for_timeout(400)
    serve_page.screenshot("trace_jax_mlp_kernel_selected")

    # Click the selected kernel on the canvas: the same event is picked.
    page.keyboard.press("Escape")
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") is None
    # Nothing selected any more: the panel folds again; the tracks stay where they were.
    page.wait_for_selector('[data-testid="trace-details"]', state="hidden", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(100)
    pos = page.evaluate("(e) => window.__tbprofTrace.viewer.eventPosition(e.track, e.start_ps, e.dur_ps, e.depth)",
                        first)
    assert pos is not None
    page.mouse.move(*_canvas_point(page, pos["x"], pos["y"]))
    tip = page.locator('[data-testid="trace-tooltip"]')
    assert tip.is_visible() and tip.inner_text().startswith("gemm_fusion_dot_17 — ")
    page.mouse.click(*_canvas_point(page, pos["x"], pos["y"]))
    _wait_details(page, "gemm_fusion_dot_17")
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") == {"plane": first["plane"],
                                                                             "row": first["row"]}

    # The derived "XLA Ops" line above the stream: the op holding this kernel lists it among its kernels.
    vs, ve = _window(page)
    frame = standalone.json("trace", run=run, format="json", start_ps=str(int(vs)), end_ps=str(int(ve)),
                            width_px="1000")
    ops = next(t for t in frame["tracks"] if t["name"] == "XLA Ops - from #24")
    cols = frame["columns"]
    lo, n = ops["events"]
    hit = next(i for i in range(lo, lo + n)
               if cols["event_start_ps"][i] <= first["start_ps"] < cols["event_start_ps"][i] + cols["event_dur_ps"][i])
    op_name = frame["strings"][cols["event_name"][hit]]
    op_pos = page.evaluate("(a) => window.__tbprofTrace.viewer.eventPosition(...a)",
                           [ops["id"], cols["event_start_ps"][hit], cols["event_dur_ps"][hit],
                            cols["event_depth"][hit]])
    page.mouse.click(*_canvas_point(page, op_pos["x"], op_pos["y"]))
    _wait_details(page, op_name)
    assert page.locator(f'[data-relation="kernels"] [data-row="{first["row"]}"]').count() == 1
    page.mouse.click(*_canvas_point(page, pos["x"], pos["y"]))
    _wait_details(page, "gemm_fusion_dot_17")

    # Follow the flow: the kernel was launched by a CPU event (same correlation_id).
    launcher = ev["links"]["launched_by"][0]
    link = page.locator(f'[data-relation="launched_by"] [data-row="{launcher["row"]}"]')
    link.click()
    _wait_details(page, launcher["name"])
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") == {"plane": launcher["plane"],
                                                                             "row": launcher["row"]}
    back = page.locator('[data-relation="launches"] button')
    assert back.count() >= 1
    page.wait_for_timeout(400)
    serve_page.screenshot("trace_jax_mlp_launch_flow")

    # A kernel's name is on its CPU launch too, earlier in time: the search starts at the
    # kernel on the device (#29 §5), the match the backend names first_device_offset.
    gemm = standalone.json("trace_search", run=run, q="sm90_xmma_gemm", limit="1000")
    assert gemm["first_device_offset"] > 0
    on_device = gemm["matches"][gemm["first_device_offset"]]
    page.fill('[data-testid="trace-search"]', "sm90_xmma_gemm")
    page.press('[data-testid="trace-search"]', "Enter")
    page.wait_for_function("(t) => document.querySelector('[data-testid=\"search-count\"]').textContent === t",
                           arg=f"{gemm['first_device_offset'] + 1} of {gemm['total']}", timeout=PAGE_TIMEOUT_MS)
    _wait_details(page, on_device["name"])
    assert page.evaluate("() => window.__tbprofTrace.viewer.selection()") == {"plane": on_device["plane"],
                                                                             "row": on_device["row"]}
    # The matched bar is a few pixels wide: its name is drawn on a tag beside it.
    page.wait_for_function("() => window.__tbprofTrace.viewer.selectionTag() !== null", timeout=PAGE_TIMEOUT_MS)
    tag = page.evaluate("() => window.__tbprofTrace.viewer.selectionTag()")
    pos = page.evaluate("(e) => window.__tbprofTrace.viewer.eventPosition(e.track, e.start_ps, e.dur_ps, e.depth)",
                        on_device)
    assert on_device["name"].startswith(tag["text"].rstrip("…"))
    assert abs(tag["x"] - pos["x"]) < 200

    # Range select on the ruler: duration and per-name totals.
    page.keyboard.press("0")
    rx, ry = _canvas_point(page, 230 + 300, 12)
    page.mouse.move(rx, ry)
    page.mouse.down()
    page.mouse.move(rx + 250, ry, steps=5)
    page.mouse.up()
    page.wait_for_selector('[data-testid="range-summary"]', timeout=PAGE_TIMEOUT_MS)
    summary = page.inner_text('[data-testid="trace-details"]')
    assert re.search(r"Selection: [\d.,]+ (ms|µs)", summary)
    assert "% of selection" in summary
    # A drag on the ruler selects every track: the page shows the backend's count for the range.
    sel = page.evaluate("() => window.__tbprofTrace.viewer.rangeSelection()")
    totals = standalone.json("trace_range", run=run, start_ps=str(round(sel["startPs"])),
                             end_ps=str(round(sel["endPs"])))
    assert f"{totals['event_count']:,} events" in summary
    serve_page.screenshot("trace_jax_mlp_range")
    serve_page.check()


def test_custom_loop_steps_flows_and_deep_link(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "custom_loop")
    _open(page, standalone, run)
    serve_page.screenshot("trace_custom_loop_whole")
    # The memory counter: clicking it shows the value in force there (a sample of the backend's series).
    tool = standalone.json("data", run=run, tool="trace_viewer")
    counter = next(t for t in tool["tracks"] if t["kind"] == "counter")
    start, end = _window(page)
    pos = page.evaluate("([t, s]) => window.__tbprofTrace.viewer.eventPosition(t, s, 0, 0)",
                        [counter["id"], (start + end) / 2])
    page.mouse.click(*_canvas_point(page, pos["x"], pos["y"] + 8))
    panel = page.inner_text('[data-testid="trace-details"]')
    assert counter["name"] in panel and "in_use_bytes: " in panel
    # Search a step marker; its details list the events of the step.
    page.fill('[data-testid="trace-search"]', "train")
    page.press('[data-testid="trace-search"]', "Enter")
    _wait_details(page, "train")
    assert "Events in this step" in page.inner_text('[data-testid="trace-details"]')
    # The marker's step number beside its name, as the Steps track and the overview name the step.
    marker = standalone.json("trace_search", run=run, q="train", limit="1")["matches"][0]
    stats = standalone.json("trace_event", run=run, plane=str(marker["plane"]), row=str(marker["row"]))["stats"]
    step_num = next(s["value"] for s in stats if s["name"] == "step_num")
    assert page.inner_text('[data-testid="event-step"]') == f"step {step_num}"

    # A TraceMe producer (FunctionRun carries _p/_pt): follow its flow to a consumer.
    hit = standalone.json("trace_search", run=run, q="FunctionRun", limit="1")["matches"][0]
    ev = standalone.json("trace_event", run=run, plane=str(hit["plane"]), row=str(hit["row"]))
    consumer = ev["links"]["flow_to"][0]
    page.fill('[data-testid="trace-search"]', "FunctionRun")
    page.press('[data-testid="trace-search"]', "Enter")
    _wait_details(page, "FunctionRun")
    page.locator(f'[data-relation="flow_to"] [data-row="{consumer["row"]}"]').click()
    _wait_details(page, consumer["name"])
    assert page.locator('[data-relation="flow_from"] button').count() >= 1
    page.wait_for_timeout(400)
    serve_page.screenshot("trace_custom_loop_flow")

    # The URL restores the window and the selection.
    page.wait_for_function("() => location.hash.includes('c.sel=')", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(600)
    url = page.url
    before = _window(page)
    page.goto("about:blank")
    page.goto(url)
    page.wait_for_function("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0", timeout=PAGE_TIMEOUT_MS)
    _wait_details(page, consumer["name"])
    after = _window(page)
    assert after == pytest.approx(before, rel=1e-6, abs=2)
    serve_page.check()
