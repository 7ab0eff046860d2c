"""Charts that read at 1280x800 (issue 19): pie legends list the top slices plus "Other"
without paging, long names are cut in the middle with the whole name on hover, and a pie of
one slice is a sentence instead of a 100 % donut."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import app_url, run_named, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

OPTION_JS = "(id) => JSON.parse(JSON.stringify(window.__tbprofCharts.get(id).currentOption))"


def test_op_stats_pies_have_whole_legends_and_no_one_slice_donut(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="framework_op_stats"))
    wait_ready(page)
    wait_charts_drawn(page, min_charts=2)
    sides = standalone.json("data", run=run, tool="framework_op_stats", rows="1")["sides"]
    # The host side of jax_mlp has one op type and one op.
    only = sides["host"]["pie_by_type"]
    assert len(only) == 1
    sentence = page.inner_text('[data-pie-sentence="host_pie_by_type"]')
    assert only[0]["name"] in sentence and "All of the host self-time" in sentence
    assert page.locator('[data-chart="host_pie_by_type"]').count() == 0
    # The device pie by operation: 11 ops -> the top 8 and "Other (3)", in a legend that does not page.
    ops = sides["device"]["pie_by_operation"]
    option = page.evaluate(OPTION_JS, "device_pie_by_operation")
    names = [d["name"] for d in option["series"][0]["data"]]
    top = sorted(ops, key=lambda o: -o["self_time_us"])
    assert len(ops) == 11 and names == [o["name"] for o in top[:8]] + ["Other (3)"]
    assert option["legend"]["type"] == "plain" and option["legend"]["tooltip"]["show"] is True
    # The legend is drawn whole inside the panel: the chart's canvas is as wide as its panel.
    box = page.locator('[data-chart="device_pie_by_operation"]').bounding_box()
    assert box is not None and box["width"] >= 400
    serve_page.screenshot("framework_op_stats__pies")
    serve_page.check()


def test_memory_timeline_stacked_areas_binary_ticks_and_unnamed_rows(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="memory_profile"))
    wait_ready(page)
    wait_charts_drawn(page)
    option = page.evaluate(OPTION_JS, "memory_timeline")
    heap, stack = option["series"][0], option["series"][1]
    assert heap["stack"] == stack["stack"] and heap["areaStyle"]["color"] != stack["areaStyle"]["color"]
    # Byte ticks step by a power of two (128 MiB, not 95.37 MiB), and the top is a whole number of steps.
    axis = option["yAxis"][0]
    step = axis["interval"]
    assert step & (step - 1) == 0 and axis["max"] % step == 0
    peak = max(h + s for (_, h), (_, s) in zip(heap["data"], stack["data"], strict=True))
    assert axis["max"] >= peak > axis["max"] - step
    # Breakdown rows whose allocation has no op name say so, with their size class.
    table = standalone.json("data", run=run, tool="memory_profile", rows="100")["tables"]["breakdown"]
    at = [c["name"] for c in table["columns"]].index("operation")
    blank = sum(1 for r in table["rows"] if r[at] == "")
    assert blank > 0
    # The first column names every row: the backend's label column, or the page's fallback.
    cells = page.locator('[data-table="breakdown"] tbody td:first-child').all_inner_texts()
    assert sum(1 for c in cells if c.startswith("(unnamed, ")) == blank
    assert "" not in cells
    serve_page.screenshot("memory_profile__jax_mlp")
    serve_page.check()
