"""Labels and numbers that agree (issue 19), at 1280x800: the overview's "Waiting for input"
card takes its colour and words from the backend's verdict, the all-hosts step chart names
each bar's host, the pod viewer draws no duplicate "all devices" bar."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import app_url, run_named, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

OPTION_JS = "(id) => JSON.parse(JSON.stringify(window.__tbprofCharts.get(id).currentOption))"
TONES = {"high": "bad", "moderate": "warn", "potential": "warn", "no": "good", "unknown": "neutral"}


def test_overview_input_card_follows_the_verdict_and_bars_name_hosts(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="overview_page"))
    wait_ready(page)
    wait_charts_drawn(page)
    result = standalone.json("data", run=run, host="__all__", tool="overview_page", rows="100")
    bound = result["recommendation"]["input_bound"]
    card = page.locator('[data-card="input"]')
    # jax_2hosts waits ~0 % for input but is "potential" (68 % 'all others'): the card says so
    # in the verdict's colour instead of a green 0.0 %.
    assert f"tbp-tone-{TONES[bound]}" in (card.get_attribute("class") or "")
    if bound == "potential":
        assert "Possibly input-bound" in card.inner_text()
    # Every bar of the all-hosts step chart names its host (from the steps table: the host of each step).
    option = page.evaluate(OPTION_JS, "step_time")
    labels = option["xAxis"]["data"]
    table = result["tables"]["steps"]
    at_step = [c["name"] for c in table["columns"]].index("step")
    at_host = [c["name"] for c in table["columns"]].index("host")
    host_of = {r[at_step]: r[at_host] for r in table["rows"]}
    assert labels == [f"{s}\n{host_of[s]}" for s in result["step_time_graph"]["step"]]
    # Op placement says what it is measured by (time here; by count once the backend sends counts).
    placement = page.inner_text('[data-card="op_placement_time"]')
    perf = result["performance_summary"]
    assert "by time" in placement and f"{perf['device_op_time_percent']:.1f}% device" in placement
    assert page.locator('[data-card="op_placement_count"]').count() == (1 if "device_op_count_percent" in perf else 0)
    serve_page.screenshot("overview__all_hosts_labels")
    serve_page.check()


def test_pod_viewer_has_no_duplicate_all_devices_bar(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="pod_viewer"))
    wait_ready(page)
    wait_charts_drawn(page)
    result = standalone.json("data", run=run, host="__all__", tool="pod_viewer", rows="0")
    devices = [c for c in result["cores"] if c["device"] != "all devices"]
    # One GPU per host: the backend's "all devices" column repeats the device's numbers.
    assert len(result["cores"]) == 2 * len(devices) == 4
    labels = page.evaluate(OPTION_JS, "pod_step")["xAxis"]["data"]
    assert labels == [f"{c['host']}\n{c['device'].removeprefix('/device:')}" for c in devices]
    assert page.locator('[data-card="columns"]').inner_text().endswith(str(len(devices)))
    serve_page.screenshot("pod_viewer__one_bar_per_device")
    serve_page.check()


def test_compare_kpis_in_one_row_and_no_internal_keys(standalone: Any, serve_page: Any) -> None:
    keras, custom = run_named(standalone, "keras_cnn/"), run_named(standalone, "custom_loop/")
    page = serve_page.page
    page.goto(app_url(standalone, run=custom, tool="compare", **{"c.base_run": keras}))
    page.wait_for_function("() => document.querySelector('[data-verdict]') !== null", timeout=120_000)
    wait_ready(page)
    # At 1280 px every KPI card sits in the same row.
    tops = page.evaluate("() => [...document.querySelectorAll('.tbp-cards .tbp-card')]"
                         ".map((c) => Math.round(c.getBoundingClientRect().top))")
    assert len(tops) >= 4 and len(set(tops)) == 1, tops
    # The step breakdown names categories in words; the backend's keys (device_compute_ms) stay out.
    backend = standalone.json("compare", base_run=keras, run=custom)["tables"]["breakdown"]
    assert "category" in [c["name"] for c in backend["columns"]]
    table = page.locator('[data-table="breakdown"]')
    assert table.locator('th[data-col="category"]').count() == 0
    assert "device_compute_ms" not in table.locator("tbody").inner_text()
    assert "Device compute" in table.locator("tbody").inner_text()
    serve_page.screenshot("compare__kpis_one_row")
    serve_page.check()


def test_capture_error_is_shown_once(standalone: Any, serve_page: Any) -> None:
    if not standalone.json("settings").get("capture_enabled", False):
        pytest.fail("capture is off on this loopback server")
    page = serve_page.page
    page.goto(app_url(standalone, run=run_named(standalone, "jax_mlp/"), tool="overview_page"))
    wait_ready(page)
    page.click('button[data-action="capture"]')
    page.fill('dialog input[name="addresses"]', "localhost:1")  # nothing listens on port 1
    page.fill('dialog input[name="durationMs"]', "200")
    page.fill('dialog input[name="retries"]', "0")
    page.click('dialog button:has-text("Capture")')
    page.wait_for_selector("dialog .tbp-capture-failure", timeout=60_000)
    text = page.inner_text("dialog .tbp-capture-status")
    assert "localhost:1" in text
    assert text.count("could not capture") == 1, text
    serve_page.expect_http_error(502)
    serve_page.check()
