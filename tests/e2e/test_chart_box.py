"""A chart whose box has no width for a moment (laid out at zero width during a re-layout) is
not drawn then, and is drawn again at the box's width: ECharts' graph series throws in a box
of zero width ("Cannot read properties of null (reading '0')", the tf.data page's iterator
graph in the screenshot sets)."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, after_frames, app_url, run_named, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

GRAPH = "[data-chart=tf_data_graph_0]"


def test_a_graph_whose_box_loses_its_width_is_drawn_again(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    page.goto(app_url(standalone, run=run_named(standalone, "keras_cnn/"), tool="tf_data_bottleneck_analysis"))
    wait_ready(page)
    page.wait_for_function("() => window.__tbprofCharts?.get('tf_data_graph_0')?.echarts", timeout=PAGE_TIMEOUT_MS)
    box_width = page.eval_on_selector(GRAPH, "(el) => el.clientWidth")
    assert box_width > 0
    page.eval_on_selector(GRAPH, "(el) => { el.parentElement.style.width = '0px'; }")
    after_frames(page)
    assert page.eval_on_selector(GRAPH, "(el) => el.clientWidth") == 0
    page.eval_on_selector(GRAPH, "(el) => { el.parentElement.style.width = ''; }")
    after_frames(page)
    drawn = {c["id"]: c for c in wait_charts_drawn(page)}
    assert drawn["tf_data_graph_0"]["painted"] > 0
    width = page.evaluate("() => window.__tbprofCharts.get('tf_data_graph_0').echarts.getWidth()")
    assert width == box_width
    serve_page.check()
