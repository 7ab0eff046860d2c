"""Layout everywhere (#29 §6): the tool list stays in view on long pages; at 1024 px it folds
behind a button, the header keeps one row and cards never break a number."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import after_frames, app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e

# Card values whose words (numbers with their units) are split over two lines.
BROKEN_WORDS_JS = """
() => {
  const out = [];
  for (const el of document.querySelectorAll('.tbp-card-value')) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.textContent.matchAll(/\\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
        if (tops.size > 1) out.push(m[0]);
      }
    }
  }
  return out;
}
"""


def test_tool_list_stays_in_view_on_long_pages(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="gpu_breakdown"))
    wait_ready(page)
    assert page.evaluate("document.documentElement.scrollHeight") > 2 * 800  # a long page
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    after_frames(page)
    nav = page.locator("nav.tbp-tools").bounding_box()
    bar = page.locator("header.tbp-bar").bounding_box()
    assert nav is not None and bar is not None
    assert nav["y"] == pytest.approx(bar["y"] + bar["height"], abs=2)  # right under the header
    assert page.locator('a.tbp-tool[data-tool="overview_page"]').is_visible()
    serve_page.screenshot("gpu_breakdown__scrolled_1280")
    page.set_viewport_size({"width": 1600, "height": 900})
    page.goto(app_url(standalone, run=run, tool="overview_page"))
    wait_ready(page)
    serve_page.screenshot("overview__1600")
    serve_page.check()


@pytest.mark.parametrize("tool", ["overview_page", "input_pipeline_analyzer", "framework_op_stats"])
def test_narrow_window(standalone: Any, serve_page: Any, tool: str) -> None:
    page = serve_page.page
    page.set_viewport_size({"width": 1024, "height": 768})
    run = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=run, host="worker0", tool=tool))
    wait_ready(page)
    bar = page.locator("header.tbp-bar")
    # One row: the header is as tall as its tallest control plus padding, not two rows.
    select_h = page.locator("select.tbp-run-select").bounding_box()["height"]
    assert bar.bounding_box()["height"] < 2 * select_h + 8
    assert not page.locator("nav.tbp-tools").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024
    assert page.evaluate(BROKEN_WORDS_JS) == []
    serve_page.screenshot(f"{tool}__1024")
    page.click("button.tbp-nav-toggle")
    assert page.locator("nav.tbp-tools").is_visible()
    page.click('nav.tbp-tools a.tbp-tool[data-tool="profile_summary"]')
    wait_ready(page)
    assert not page.locator("nav.tbp-tools").is_visible()
    assert "tool=profile_summary" in page.url
    serve_page.check()


LUMA_JS = """
(sel) => [...document.querySelectorAll(sel)].map((el) => {
  const c = getComputedStyle(el);
  const v = (el instanceof SVGElement && el.tagName !== 'svg') ? c.fill : c.backgroundColor;
  const [r, g, b] = v.match(/[\\d.]+/g).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
})
"""


def test_graph_viewer_follows_dark_mode(standalone: Any, dark_page: Any) -> None:
    """#29 §6: the graph's nodes were white with dark text and its buttons unstyled in dark mode."""
    page = dark_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="graph_viewer"))
    wait_ready(page)
    page.wait_for_selector("g.tbp-graph-node", timeout=60_000)
    nodes = standalone.json("data", run=run, tool="graph_viewer")["nodes"]
    idle = [n["name"] for n in nodes if not n.get("self_time_us")]
    assert idle  # nodes that never ran: the "cold" end of the scale
    cold = page.evaluate(LUMA_JS, f'g.tbp-graph-node[data-node="{idle[0]}"] rect')
    text = page.evaluate(LUMA_JS, f'g.tbp-graph-node[data-node="{idle[0]}"] text')
    assert cold[0] < 80 and min(text) > 180, (cold, text)  # dark node, light text
    buttons = page.evaluate(LUMA_JS, "main .tbp-toolbar button")
    assert buttons and max(buttons) < 80, buttons
    dark_page.screenshot("graph_viewer__dark")
    dark_page.check()


def test_kernel_legend_keeps_what_tells_names_apart(standalone: Any, serve_page: Any) -> None:
    """#29 §4: four identical "ncclDevKern…orage<4096ul>)" legend entries; "Other" and "Other (3)"."""
    page = serve_page.page
    run = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=run, host="worker0", tool="kernel_stats"))
    wait_ready(page)
    page.wait_for_function("() => window.__tbprofCharts && window.__tbprofCharts.get('pie_by_kernel')")
    legend = page.evaluate("""() => {
      const o = window.__tbprofCharts.get('pie_by_kernel').currentOption;
      return o.series[0].data.map((d) => [d.name, o.legend.formatter(d.name)]);
    }""")
    names = [n for n, _ in legend]
    labels = [label for _, label in legend]
    assert sum(n.startswith("Other") for n in names) <= 1
    assert len(set(labels)) == len(labels), labels
    assert any(n.startswith("nccl") for n in names)
    serve_page.screenshot("kernel_stats__legend")
    serve_page.check()


def test_memory_profile_colours_and_data_types(standalone: Any, serve_page: Any) -> None:
    """#29 §4: every memory series its own colour; no "INVALID" data type as table filler."""
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="memory_profile"))
    wait_ready(page)
    page.wait_for_function("() => window.__tbprofCharts && window.__tbprofCharts.get('memory_timeline')")
    colours = page.evaluate("""() => window.__tbprofCharts.get('memory_timeline').currentOption.series
      .map((s) => (s.areaStyle && s.areaStyle.color) || (s.lineStyle && s.lineStyle.color))""")
    assert all(colours) and len(set(colours)) == len(colours), colours
    texts = page.eval_on_selector_all('[data-table="breakdown"] tbody td, [data-table="timeline"] tbody td',
                                      "tds => tds.map(td => td.innerText)")
    values = page.eval_on_selector_all('[data-table="breakdown"] tbody td, [data-table="timeline"] tbody td',
                                       "tds => tds.map(td => td.dataset.v)")
    assert '"INVALID"' in values  # XProf's filler is in the data (and the CSV) ...
    assert "INVALID" not in texts  # ... not on the page
    serve_page.check()
