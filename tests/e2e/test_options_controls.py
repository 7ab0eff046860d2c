"""Tool options as real controls under the page title (issue 19): a select for a fixed set of
values, a number input that refuses values out of range, a checkbox for a flag; a change is
kept in the URL and refetches."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e


def test_memory_profile_options_are_controls_under_the_title(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "custom_loop/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="memory_profile"))
    wait_ready(page)
    # Under the title, not above it.
    assert page.locator("main.tbp-page > .tbp-page-title + .tbp-options").count() == 1
    scope = page.locator('select[data-option="breakdown_scope"]')
    assert scope.evaluate("(s) => [...s.options].map((o) => o.value)") == ["step", "window"]
    assert scope.input_value() == "step"
    points = page.locator('input[data-option="max_points"]')
    assert points.get_attribute("type") == "number" and points.input_value() == "1000"
    # A value the backend would refuse is stopped at the control, with the reason beside it.
    points.fill("2.5")
    points.dispatch_event("change")
    assert "whole number" in page.inner_text(".tbp-options")
    assert "o.max_points" not in page.url
    points.fill("500")
    points.dispatch_event("change")
    page.wait_for_function("() => location.hash.includes('o.max_points=500')", timeout=PAGE_TIMEOUT_MS)
    wait_ready(page)
    scope = page.locator('select[data-option="breakdown_scope"]')
    scope.select_option("window")
    page.wait_for_function("() => location.hash.includes('o.breakdown_scope=window')", timeout=PAGE_TIMEOUT_MS)
    wait_ready(page)
    assert page.locator('select[data-option="breakdown_scope"]').input_value() == "window"
    assert page.locator('input[data-option="max_points"]').input_value() == "500"
    serve_page.screenshot("memory_profile__options")
    serve_page.check()
