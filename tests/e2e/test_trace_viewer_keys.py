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

    # The details panel: dragging its handle up makes it taller and the timeline shorter.
    scroller = page.locator(".tbp-tv-scroller")
    panel = page.locator('[data-testid="trace-details"]')
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
