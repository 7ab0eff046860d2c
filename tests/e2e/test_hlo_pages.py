"""The pages of XProf's newer tools in a real browser on real JAX profiles: HLO op stats
(charts, table, link to the graph), the roofline chart, the graph viewer (dagre layout,
recentring by click, DOT download), the memory viewer (module switch) and smart suggestions
(links to the pages with the numbers), and the no-data page of the tools a profile cannot
have (TPU-only tools, inference_profile without requests). Expectations come from the backend's JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .helpers import app_url, run_named, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e


def test_hlo_stats_page_links_an_op_to_the_graph(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="hlo_stats"))
    wait_ready(page)
    wait_charts_drawn(page)
    result = standalone.json("data", run=run, tool="hlo_stats", rows="0")
    top = result["top_ops_by_self_time"][0]
    assert page.locator('[data-chart="hlo_category_pie"]').count() == 1
    assert page.locator('[data-chart="hlo_top_ops"]').count() == 1
    link = page.locator(f'[data-graph-link="{top["hlo_op_name"]}"]').first
    link.click()
    page.wait_for_selector(f'g.tbp-graph-node[data-node="{top["hlo_op_name"]}"]', timeout=60_000)
    graph = standalone.json("data", run=run, tool="graph_viewer", node_name=top["hlo_op_name"],
                            module=top["program_id"])
    assert page.locator("g.tbp-graph-node").count() == len(graph["nodes"])
    assert page.locator("path[data-edge]").count() == len(graph["edges"])
    serve_page.check()


def test_graph_viewer_recentres_on_click_and_downloads_dot(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="graph_viewer"))
    wait_ready(page)
    first = standalone.json("data", run=run, tool="graph_viewer")
    page.wait_for_selector("g.tbp-graph-node", timeout=60_000)
    other = next(n["name"] for n in first["nodes"] if not n["center"])
    # A click shows the op's details; a double click recentres the graph on it.
    page.dblclick(f'g.tbp-graph-node[data-node="{other}"]')
    page.wait_for_function(f"() => location.hash.includes('o.node_name={other}')")
    page.wait_for_selector(f'g.tbp-graph-node[data-node="{other}"] rect[stroke-width="3"]', timeout=60_000)
    with page.expect_download() as dl:
        page.click('[data-download="dot"]')
    text = Path(dl.value.path()).read_text(encoding="utf-8")
    assert text.startswith("digraph ") and f'"{other}"' in text
    serve_page.check()


def test_roofline_and_memory_viewer_pages(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="roofline_model"))
    wait_ready(page)
    wait_charts_drawn(page)
    roof = standalone.json("data", run=run, tool="roofline_model", rows="0")
    assert page.locator('[data-chart="roofline"]').count() == 1
    assert f"{roof['device_type']}" in page.locator('[data-card="device"]').inner_text()
    page.goto(app_url(standalone, run=run, tool="memory_viewer"))
    wait_ready(page)
    modules = standalone.json("data", run=run, tool="memory_viewer", rows="0")["modules"]
    assert page.locator(".tbp-module-select option").count() == len(modules)
    # Switching the module refetches with the module option and shows its peak.
    target = modules[1]
    page.select_option(".tbp-module-select", target["module"])
    page.wait_for_function("() => location.hash.includes('o.module=')")
    wait_ready(page)
    chosen = standalone.json("data", run=run, tool="memory_viewer", module=target["module"], rows="0")
    assert chosen["peak_heap_bytes"] == target["peak_heap_bytes"]
    assert page.locator(".tbp-module-select").input_value() == target["module"]
    serve_page.check()


def test_smart_suggestions_link_to_their_pages(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="smart_suggestion"))
    wait_ready(page)
    found = standalone.json("data", run=run, tool="smart_suggestion")["suggestions"]
    assert found, "jax_mlp has an idle device (see test_graph_and_suggestions)"
    rules = page.eval_on_selector_all("[data-rule]", "els => els.map(e => e.dataset.rule)")
    assert rules == [s["rule"] for s in found]
    page.click(f'[data-rule="{found[0]["rule"]}"] a')
    wait_ready(page)
    assert f"tool={found[0]['page']}" in page.url
    serve_page.check()


@pytest.mark.parametrize(("tool", "why"), [("perf_counters", "needs a TPU profile"),
                                         ("inference_profile", "request_id")])
def test_absent_tool_says_why(standalone: Any, serve_page: Any, tool: str, why: str) -> None:
    """A TPU-only tool on a GPU profile, and inference_profile on a training profile: the
    no-data page names what the tool needs (the backend's 404 message)."""
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool=tool))
    page.wait_for_selector(f'[data-no-data="{tool}"]', timeout=60_000)
    assert why in page.locator(f'[data-no-data="{tool}"]').inner_text()
    serve_page.check()
