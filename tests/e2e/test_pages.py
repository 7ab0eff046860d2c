"""Interactions of the dedicated pages, on real profiles: what each page promises beyond
"it loads" (test_dashboard.py covers loading, tables, CSV, links and errors)."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import app_url, backend_rows, column_names, run_named, shown_rows, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e


def _tools(server: Any, run: str) -> set[str]:
    return {t["name"] for t in server.json("tools", run=run)["tools"]}


def test_overview_recommendation_links(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    assert "overview_page" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="overview_page"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="overview_page", rows="0")
    avg = result["performance_summary"]["step_time_ms"]["avg"]
    # The card shows the backend's average step time with 3 significant digits (4.724 -> "4.72 ms").
    assert page.locator('[data-card="step_time"] .tbp-card-value').inner_text().startswith(f"{avg:.3g} ms")
    # Every next step the backend names is a link to that tool; following one opens it.
    named = [n["tool"] for n in result["recommendation"]["next_steps"]]
    links = page.eval_on_selector_all("[data-next-tool]", "as => as.map(a => a.dataset.nextTool)")
    assert links == named
    target = next(t for t in named if t in _tools(standalone, run))
    page.click(f'[data-next-tool="{target}"]')
    wait_ready(page)
    assert page.locator(f'a.tbp-tool.tbp-active[data-tool="{target}"]').count() == 1
    assert f"tool={target}" in page.url
    serve_page.check()


def test_pod_viewer_step_slider_and_details(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    assert "pod_viewer" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="pod_viewer"))
    wait_ready(page)
    wait_charts_drawn(page)
    result = standalone.json("data", run=run, host="__all__", tool="pod_viewer", rows="0")
    steps = result["steps"]["step"]  # columnar: one entry per step
    assert len(steps) > 1
    label = page.locator(".tbp-step-label")
    assert steps[0] in label.inner_text()
    # Moving the slider shows another step and keeps it in the URL.
    page.eval_on_selector(".tbp-step-slider", "(s) => { s.value = '1'; s.dispatchEvent(new Event('input')); }")
    assert steps[1] in label.inner_text()
    page.wait_for_function("() => location.hash.includes('c.step=1')")
    # The details card describes the first column of that step, with its step time.
    # (A one-device host has no separate "all devices" bar: the first bar is its device.)
    first = next(c for c in result["cores"] if c["device"] != "all devices")
    details = page.locator("[data-details]").inner_text()
    assert f"{first['host']} · {first['device']}" in details
    assert first["bottleneck"][1] in details
    page.reload()
    wait_ready(page)
    assert steps[1] in page.locator(".tbp-step-label").inner_text()
    serve_page.check()


def test_op_profile_tree_expands(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    assert "op_profile" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="op_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="op_profile", rows="0")
    top = result["by_category"]["children"]
    rows = page.locator("[data-tree] tbody tr")
    assert rows.count() == len(top)  # the root's children, collapsed
    # Expanding the first category with children adds exactly its children.
    i = next(k for k, c in enumerate(top) if c["children"])
    page.click(f'[data-tree] tr[data-path="/{i}"] button.tbp-toggle')
    assert rows.count() == len(top) + len(top[i]["children"])
    # Grouping by name scope shows that tree's top level.
    page.select_option(".tbp-group-select", "by_name_scope")
    assert rows.count() == len(result["by_name_scope"]["children"])
    serve_page.check()


def test_framework_op_stats_four_pies_and_idle_option(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    assert "framework_op_stats" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="framework_op_stats"))
    wait_ready(page)
    charts = wait_charts_drawn(page, min_charts=2)
    # jax_mlp's host side has one op type and one op: a sentence each instead of a 100 % donut.
    assert {c["id"] for c in charts} == {"device_pie_by_type", "device_pie_by_operation"}
    assert page.locator("[data-pie-sentence]").count() == 2
    at_type = column_names(page, "ops").index("type")  # key columns come first on screen
    types = [r[at_type] for r in shown_rows(page, "ops")]
    assert types and "IDLE" not in types  # XProf's default: idle left out
    # Checking "include idle" refetches with the IDLE rows (option in the URL).
    page.check('input[data-option="include_idle"]')
    wait_ready(page)
    page.wait_for_function("() => location.hash.includes('o.include_idle=true')")
    wait_ready(page)
    types = [r[at_type] for r in shown_rows(page, "ops")]
    assert "IDLE" in types
    serve_page.check()


def test_memory_profile_timeline(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "custom_loop/")
    assert "memory_profile" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="memory_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="memory_profile", rows="0")
    assert page.input_value(".tbp-allocator-select") == result["memory_id"]
    charts = wait_charts_drawn(page)
    assert "memory_timeline" in {c["id"] for c in charts}
    # Hovering the timeline shows the allocation event of the point under the mouse.
    box = page.locator('[data-chart="memory_timeline"]').bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    tip = page.locator('[data-chart="memory_timeline"] div').filter(has_text="fragmentation")
    tip.first.wait_for(timeout=10_000)
    assert "heap" in tip.first.inner_text()
    serve_page.check()


def test_kernel_stats_all_hosts(standalone: Any, serve_page: Any) -> None:
    """The host menu offers "all hosts" for kernel stats; the table then lists both hosts' rows."""
    run = run_named(standalone, "jax_2hosts/")
    assert "kernel_stats" in _tools(standalone, run)
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="kernel_stats"))
    wait_ready(page)
    wait_charts_drawn(page)
    backend = backend_rows(standalone, run, "kernel_stats", "kernels", host="__all__")
    at = [c["name"] for c in backend["columns"]].index("host")
    hosts = {r[at] for r in backend["rows"]}
    assert hosts == {"worker0", "worker1"}
    cols = column_names(page, "kernels")
    shown = shown_rows(page, "kernels")
    assert cols[0] == "host" and shown
    assert {r[0] for r in shown} == hosts
    serve_page.check()


def test_op_pages_all_hosts(standalone: Any, serve_page: Any) -> None:
    """Op stats and op profile on all hosts show the summed results of the backend."""
    run = run_named(standalone, "jax_2hosts/")
    tools = _tools(standalone, run)
    assert {"framework_op_stats", "op_profile"} <= tools
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="framework_op_stats"))
    wait_ready(page)
    wait_charts_drawn(page, min_charts=2)  # the host side's one-slice pies are sentences
    backend = backend_rows(standalone, run, "framework_op_stats", "ops", host="__all__")
    at = [c["name"] for c in backend["columns"]].index("operation")
    shown_at = column_names(page, "ops").index("operation")
    assert sorted(r[shown_at] for r in shown_rows(page, "ops")) == sorted(r[at] for r in backend["rows"])
    page.goto(app_url(standalone, run=run, host="__all__", tool="op_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, host="__all__", tool="op_profile", rows="0")
    assert page.locator("[data-tree] tbody tr").count() == len(result["by_category"]["children"])
    serve_page.check()
