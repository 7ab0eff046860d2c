"""The trace viewer's keyboard inside a real TensorBoard (the plugin runs in an iframe) and
standalone: clicking the timeline gives it the keys, "?" opens the key help, the status line
speaks plainly, the details panel resizes and folds.

Issue 19: inside TensorBoard the canvas's mousedown handler called preventDefault(), so the
click never focused the plugin frame and W/S/A/D went to TensorBoard's document.
"""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, app_url, run_named

pytestmark = pytest.mark.e2e

WINDOW_JS = "() => window.__tbprofTrace.viewer.visibleWindow()"
READY_JS = ("() => window.__tbprofTrace && window.__tbprofTrace.fetches > 0 && "
            "document.querySelector('[data-testid=\"trace-status\"]').textContent.includes('events')")


def _plugin_frame(page: Any) -> Any:
    page.wait_for_selector("iframe", timeout=PAGE_TIMEOUT_MS)
    for _ in range(600):
        for f in page.frames:
            if "plugin_entry.html?name=tbprof" in f.url:
                return f
        page.wait_for_timeout(100)
    raise AssertionError(f"no tbprof frame: {[f.url for f in page.frames]}")


def _span(target: Any) -> float:
    w = target.evaluate(WINDOW_JS)
    return float(w["endPs"]) - float(w["startPs"])


def _click_timeline(page: Any, target: Any) -> None:
    """Clicks the timeline right of the labels, below the first group header (page coordinates:
    Playwright's bounding boxes are relative to the main frame, iframe offsets included)."""
    box = target.locator('[data-testid="trace-canvas"]').bounding_box()
    page.mouse.click(box["x"] + 230 + 300, box["y"] + 26 + 22 + 30)


def test_keys_work_after_clicking_the_timeline_inside_tensorboard(tensorboard: Any, tb_page: Any) -> None:
    run = run_named(tensorboard, "jax_mlp")
    page = tb_page.page
    page.goto(tensorboard.base + f"/#tbprof&p.tbprof.run={run.replace('/', '%2F')}&p.tbprof.tool=trace_viewer")
    frame = _plugin_frame(page)
    frame.wait_for_function(READY_JS, timeout=PAGE_TIMEOUT_MS)
    before = _span(frame)
    _click_timeline(page, frame)
    frame.wait_for_function("() => document.hasFocus()", timeout=5_000)
    page.keyboard.press("w")
    page.keyboard.press("w")
    frame.wait_for_function(f"(b) => ({WINDOW_JS})().endPs - ({WINDOW_JS})().startPs < 0.9 * b", arg=before,
                            timeout=5_000)
    zoomed = _span(frame)
    page.keyboard.press("s")
    frame.wait_for_function(f"(z) => ({WINDOW_JS})().endPs - ({WINDOW_JS})().startPs > z", arg=zoomed,
                            timeout=5_000)
    # "?" opens the key help as a visible panel (not only a tooltip); Esc closes it.
    page.keyboard.press("?")
    frame.wait_for_selector('[data-testid="trace-key-help"]', state="visible", timeout=5_000)
    assert "zoom in" in frame.inner_text('[data-testid="trace-key-help"]').lower()
    tb_page.screenshot("trace_keys_in_tensorboard")
    page.keyboard.press("Escape")
    frame.wait_for_selector('[data-testid="trace-key-help"]', state="hidden", timeout=5_000)
    tb_page.check(inside_tensorboard=True)


def test_key_help_button_status_and_details_panel(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="trace_viewer"))
    page.wait_for_function(READY_JS, timeout=PAGE_TIMEOUT_MS)
    # The status line says what is drawn in words, without "µs/box".
    whole = standalone.json("trace", run=run, format="json", width_px="1000")
    status = page.inner_text('[data-testid="trace-status"]')
    assert "/box" not in status and "events drawn" in status, status
    # The "?" button toggles the key help panel.
    page.click('[data-testid="key-help-button"]')
    page.wait_for_selector('[data-testid="trace-key-help"]', state="visible", timeout=5_000)
    page.click('[data-testid="key-help-button"]')
    page.wait_for_selector('[data-testid="trace-key-help"]', state="hidden", timeout=5_000)

    # The details panel is folded while nothing is selected (#29 §5); "Show details" opens it
    # (the user's choice, kept in the URL); dragging its handle up makes it taller.
    scroller = page.locator(".tbp-tv-scroller")
    panel = page.locator('[data-testid="trace-details"]')
    assert not panel.is_visible()
    assert "c.fold" not in page.url
    page.click('[data-testid="details-toggle"]')
    page.wait_for_selector('[data-testid="trace-details"]', state="visible", timeout=5_000)
    page.wait_for_function("() => location.hash.includes('c.fold=0')", timeout=5_000)
    h_scroller = scroller.bounding_box()["height"]
    h_panel = panel.bounding_box()["height"]
    handle = page.locator('[data-testid="details-resize"]').bounding_box()
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 100, steps=5)
    page.mouse.up()
    assert panel.bounding_box()["height"] == pytest.approx(h_panel + 100, abs=4)
    assert scroller.bounding_box()["height"] == pytest.approx(h_scroller - 100, abs=4)
    # The size is kept in the URL; folding the panel gives the timeline its room.
    page.wait_for_function("() => location.hash.includes('c.panel=')", timeout=5_000)
    page.click('[data-testid="details-toggle"]')
    page.wait_for_function("() => !document.querySelector('[data-testid=\"trace-details\"]').checkVisibility()",
                           timeout=5_000)
    assert scroller.bounding_box()["height"] > h_scroller + 100
    # Folded, the timeline reaches the bottom of the 800 px window (the bar stays, 10 px, plus
    # a 12 px gap): every pixel goes to tracks.
    box = scroller.bounding_box()
    assert box["y"] + box["height"] >= 800 - 10 - 12 - 4, box
    tracks_folded = page.evaluate("() => window.__tbprofTrace.viewer.visibleTrackCount()")
    assert tracks_folded >= 12 and len(whole["tracks"]) > tracks_folded, tracks_folded
    serve_page.screenshot("trace_details_folded")
    serve_page.check()


INK_JS = """
() => {
  const c = document.querySelector('[data-testid="trace-canvas"]');
  const dpr = window.devicePixelRatio || 1;
  const x0 = Math.round(230 * dpr), y0 = Math.round(26 * dpr);
  const d = c.getContext('2d').getImageData(x0, y0, c.width - x0, c.height - y0).data;
  let ink = 0;
  for (let i = 0; i < d.length; i += 4 * 3) ink += 765 - d[i] - d[i + 1] - d[i + 2];
  return ink;
}
"""


def test_search_highlight_sticky_headers_flows_and_stale_tooltip(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="trace_viewer"))
    page.wait_for_function(READY_JS, timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)
    viewer = "window.__tbprofTrace.viewer"
    ink_before = page.evaluate(INK_JS)

    # Search: the first match is selected and revealed; hovering it shows a tooltip.
    found = standalone.json("trace_search", run=run, q="gemm_fusion_dot_17", limit="1")
    first = found["matches"][0]
    page.fill('[data-testid="trace-search"]', "gemm_fusion_dot_17")
    page.press('[data-testid="trace-search"]', "Enter")
    page.wait_for_function(f"() => {viewer}.selection() && {viewer}.selection().row === {first['row']}",
                           timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)
    pos = page.evaluate(f"(e) => {viewer}.eventPosition(e.track, e.start_ps, e.dur_ps, e.depth)", first)
    box = page.locator('[data-testid="trace-canvas"]').bounding_box()
    page.mouse.move(box["x"] + pos["x"], box["y"] + pos["y"])
    page.wait_for_selector('[data-testid="trace-tooltip"]', state="visible", timeout=5_000)
    # A jump under a still pointer (a key, the next match) clears the stale tooltip.
    page.evaluate("() => document.activeElement.blur()")  # the keys go to the search box while it has focus
    page.keyboard.press("s")
    page.wait_for_selector('[data-testid="trace-tooltip"]', state="hidden", timeout=5_000)

    # The rest of the timeline fades while the search is active: far less ink on the whole view.
    assert page.evaluate(f"() => {viewer}.highlighting()")
    page.click('[data-testid="fit"]')
    page.wait_for_timeout(400)
    ink_searching = page.evaluate(INK_JS)
    assert ink_searching < 0.6 * ink_before, (ink_searching, ink_before)
    serve_page.screenshot("trace_search_highlight")
    page.fill('[data-testid="trace-search"]', "")
    page.wait_for_function(f"() => !{viewer}.highlighting()", timeout=5_000)

    # Flow arrows of the selected kernel (its launch on the host) can be hidden; the URL keeps it.
    page.wait_for_function(f"() => {viewer}.drawnArrowCount() > 0", timeout=PAGE_TIMEOUT_MS)
    page.uncheck('[data-testid="flows-toggle"]')
    assert page.evaluate(f"() => {viewer}.drawnArrowCount()") == 0
    page.wait_for_function("() => location.hash.includes('c.flows=0')", timeout=5_000)
    page.check('[data-testid="flows-toggle"]')
    assert page.evaluate(f"() => {viewer}.drawnArrowCount()") > 0

    # Scrolled into the first group's tracks, its header stays under the ruler; clicking it folds the group.
    whole = standalone.json("trace", run=run, format="json", width_px="1000")
    first_track = whole["groups"][0]["tracks"][0]
    page.eval_on_selector(".tbp-tv-scroller", "(s) => { s.scrollTop = 120; }")
    page.wait_for_timeout(200)
    page.mouse.click(box["x"] + 60, box["y"] + 26 + 11)
    visible_js = f"(t) => {viewer}.eventPosition(t, 0, 1e15, 0) !== null"
    page.wait_for_function("() => window.__tbprofTrace.viewer.layout.groups[0].collapsed", timeout=5_000)
    assert page.eval_on_selector(".tbp-tv-scroller", "(s) => s.scrollTop") == 0
    assert not page.evaluate(visible_js, first_track)
    serve_page.check()
