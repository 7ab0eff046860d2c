"""The roofline page (#29 §4) in a real browser on jax_mlp: XProf's "Include Infeed/Outfeed"
filter is a page option (checked by default, as XProf's page opens) and the page asks the
backend for that setting's rows only (one row per op, not two); the deciding columns come
first; the log axes span whole decades around the data with short labels; the device card
names the device as the overview and the trace viewer do; a note says what the Program point
sums. Screenshots at 1280 and 1600 px."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from .helpers import app_url, column_names, run_named, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

# The rendered ticks of a chart's axis and their labels, from the ECharts instance.
TICKS_JS = """
([id, axis]) => {
  const c = window.__tbprofCharts.get(id);
  const model = c.echarts.getModel().getComponent(axis, 0);
  const fmt = c.currentOption[axis].axisLabel.formatter;
  const ticks = model.axis.scale.getTicks().map((t) => t.value);
  return {min: c.currentOption[axis].min, max: c.currentOption[axis].max, ticks, labels: ticks.map((v) => fmt(v))};
}
"""
SHORT_LABEL = re.compile(r"^(\d{1,3}(,\d{3})*|0\.0*1|1e-?\d+)$")


def _is_decade(x: float) -> bool:
    return abs(math.log10(x) - round(math.log10(x))) < 1e-9


@pytest.mark.parametrize("width", [1280, 1600])
def test_roofline_option_rows_columns_and_axes(standalone: Any, serve_page: Any, width: int) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(app_url(standalone, run=run, tool="roofline_model"))
    wait_ready(page)
    wait_charts_drawn(page)
    result = standalone.json("data", run=run, tool="roofline_model", rows="0")
    # The option, on by default like XProf's filter.
    box = page.locator('input[data-option="include_infeed_outfeed"]')
    assert box.count() == 1 and box.is_checked()
    assert result["include_infeed_outfeed"] is True
    # One row per HLO op and one program row: no op twice.
    assert result["tables"]["roofline"]["total_rows"] == result["op_count"] + 1
    # The program point says what it sums; every op's bytes are known here, so no warning.
    note = page.locator("[data-program-note]").inner_text()
    assert note.startswith(f"Program: all {result['device_count']} devices' ops") and "idle included" in note
    assert result["undetermined_bytes"]["op_count"] == 0
    assert page.locator("[data-undetermined-bytes]").count() == 0
    # What a reader compares first, right after the op's name.
    assert column_names(page, "roofline")[:6] == ["operation", "bound_by", "operational_intensity",
                                                  "hbm_operational_intensity", "measured_flop_rate",
                                                  "roofline_efficiency"]
    # Axes: whole decades around the points (and the ridge / the peak), short labels.
    full = standalone.json("data", run=run, tool="roofline_model", rows="1000")
    t = full["tables"]["roofline"]
    at = {c["name"]: i for i, c in enumerate(t["columns"])}
    xs = [r[at["hbm_operational_intensity"]] for r in t["rows"] if r[at["hbm_operational_intensity"]] > 0
          and r[at["measured_flop_rate"]] > 0]
    ys = [r[at["measured_flop_rate"]] for r in t["rows"] if r[at["hbm_operational_intensity"]] > 0
          and r[at["measured_flop_rate"]] > 0]
    ridge = result["hbm_ridge_point"]
    for axis, values in (("xAxis", [*xs, ridge]), ("yAxis", [*ys, result["peak_flop_rate"]])):
        got = page.evaluate(TICKS_JS, ["roofline", axis])
        assert _is_decade(got["min"]) and _is_decade(got["max"]), (axis, got)
        assert got["min"] <= min(values) < got["min"] * 10, (axis, got)
        assert got["max"] / 10 < max(values) <= got["max"], (axis, got)
        assert all(SHORT_LABEL.match(label) for label in got["labels"]), (axis, got["labels"])
    # The device as the overview names it; XProf's architecture name only as the hint.
    card = page.locator('[data-card="device"]').inner_text()
    overview = standalone.json("data", run=run, tool="overview_page", rows="0")
    assert overview["run_environment"]["device_model"] == result["device_name"]
    assert result["device_name"] in card and result["device_type"] in card
    # The trace viewer's device groups (what its canvas labels) carry the same name.
    trace = standalone.json("trace", run=run, format="json", width_px="100")
    devices = [g["name"] for g in trace["groups"] if g["kind"] == "device"]
    assert devices and all(name.endswith(f"({result['device_name']})") for name in devices)
    serve_page.screenshot(f"roofline_model__jax_mlp_{width}")
    # Unticking asks the backend for the other setting's rows.
    box.uncheck()
    page.wait_for_function("() => location.hash.includes('o.include_infeed_outfeed=false')")
    wait_ready(page)
    page.wait_for_function("() => document.body.innerText.includes('without infeed/outfeed')")
    assert any("include_infeed_outfeed=false" in url for url, _ in serve_page.requests)
    serve_page.check()


def test_every_bandwidth_is_in_gib_per_second(standalone: Any, serve_page: Any) -> None:
    """One unit for bandwidth on every page (#29 §4): XProf's GiB/s (its roofline, HLO op stats
    and framework op stats divide by 2^30), never GB/s beside it; HTA's memory bandwidth (GB/s)
    is converted too."""
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    for tool in ("roofline_model", "hlo_stats", "framework_op_stats", "op_profile", "gpu_counters"):
        page.goto(app_url(standalone, run=run, tool=tool))
        wait_ready(page)
        if tool == "op_profile":
            # The details of a node say its bandwidth.
            page.locator('[data-tree] tbody tr td:nth-child(3)').first.click()
            page.wait_for_function("() => document.querySelector('[data-op-details]').innerText.includes('bandwidth')")
        text = page.inner_text("main")
        assert "GiB/s" in text, tool
        assert "GB/s" not in text, tool
    serve_page.check()
