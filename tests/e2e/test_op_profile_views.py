"""Op profile, closer to what users use it for (issue 19): a "top 90 %" toggle (the backend's
top_percent option, kept in the URL), utilisation and wasted-time columns against the
device's peaks when the backend names them (a note says why not), and the details of an op
with a way to its events."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import pytest

from .helpers import PAGE_TIMEOUT_MS, app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e

ROWS_JS = "() => document.querySelectorAll('[data-tree] tbody tr').length"


def _nodes(node: dict[str, Any]) -> int:
    """Nodes below `node` (what the tree shows with every node open)."""
    return sum(1 + _nodes(c) for c in node.get("children") or [])


def test_top_90_percent_and_utilisation(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="op_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="op_profile", rows="0")
    children = result["by_category"]["children"]
    assert page.evaluate(ROWS_JS) == len(children)
    # The toggle is the backend's top_percent option (it cuts below the root's children): with
    # every node open, the rows are the backend's cut tree.
    cut_root = standalone.json("data", run=run, tool="op_profile", rows="0", top_percent="90")["by_category"]
    assert 0 < _nodes(cut_root) < _nodes(result["by_category"])
    page.click('button:has-text("Expand all")')
    assert page.evaluate(ROWS_JS) == _nodes(result["by_category"])
    page.check('[data-testid="top90"]')
    page.wait_for_function("() => location.hash.includes('o.top_percent=90')", timeout=PAGE_TIMEOUT_MS)
    wait_ready(page)
    page.click('button:has-text("Expand all")')
    page.wait_for_function(f"() => ({ROWS_JS})() === {_nodes(cut_root)}", timeout=PAGE_TIMEOUT_MS)
    page.reload()
    wait_ready(page)
    assert page.is_checked('[data-testid="top90"]')
    cut = cut_root["children"]
    # Utilisation needs the device's peaks: columns when the backend names them, a note when not.
    headers = page.locator("[data-tree] thead th").all_inner_texts()
    peaks = result.get("peaks") or {}
    if peaks.get("flop_rate_gflops_per_sec") and peaks.get("hbm_bw_gbytes_per_sec"):
        assert "Wasted time" in headers and "HBM BW (% of peak)" in headers
        # The first category's HBM share is the backend's utilisation, as a percentage.
        at = next(i for i, c in enumerate(cut) if c.get("hbm_bw_utilization") is not None)
        row = page.locator(f'[data-tree] tbody tr[data-path="/{at}"] td').all_inner_texts()
        assert f"{100 * cut[at]['hbm_bw_utilization']:.1f}%" in row
    else:
        assert "Wasted time" not in headers and page.locator("[data-no-peaks]").count() == 1
    serve_page.screenshot("op_profile__top90")
    serve_page.check()


def test_op_details_and_link_to_its_events(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="op_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="op_profile", rows="0")
    cats = result["by_category"]["children"]
    at = next(i for i, c in enumerate(cats) if c.get("children"))
    op = cats[at]["children"][0]
    # Open the category, click its first op: the details name it with its FLOPs and bytes.
    page.click(f'[data-tree] tr[data-path="/{at}"] .tbp-toggle')
    page.click(f'[data-tree] tr[data-path="/{at}/0"] td:nth-child(3)')
    details = page.locator("[data-op-details]")
    page.wait_for_function("(n) => document.querySelector('[data-op-details] h2')?.textContent === n", arg=op["name"])
    text = details.inner_text()
    assert f"{op['flops']:,.0f}" in text and op["category"] in text
    assert page.locator(f'[data-tree] tr[data-path="/{at}/0"]').get_attribute("class") == "tbp-selected"
    serve_page.screenshot("op_profile__details")
    # A device op of a program also opens in the graph viewer, centred on it.
    program_id = op["program"].rsplit("(", 1)[1].rstrip(")")
    graph = page.locator("[data-op-details] [data-graph-link]")
    assert graph.get_attribute("data-graph-link") == op["name"]
    params = parse_qs((graph.get_attribute("href") or "").split("#", 1)[-1])
    assert params["tool"] == ["graph_viewer"]
    assert [op["name"]] in params.values() and [program_id] in params.values()
    # Its events: the trace viewer opens with the op's name searched and its first match on a
    # device selected (#29 §5: not the earlier host-side event of the same name).
    first = standalone.json("trace_search", run=run, q=op["name"], limit="1")["first_device_offset"]
    page.click("[data-op-details] [data-trace-link]")
    page.wait_for_selector('main.tbp-page[data-page="trace_viewer"]', timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "(k) => (document.querySelector('[data-testid=\"search-count\"]')?.textContent ?? '').startsWith(k)",
        arg=f"{(first or 0) + 1} of ", timeout=PAGE_TIMEOUT_MS)
    assert page.input_value('[data-testid="trace-search"]') == op["name"]
    # The op's event on a GPU stream (not its host-side TraceMe) opens it in the graph viewer.
    groups = standalone.json("data", run=run, tool="trace_viewer")["groups"]
    device_planes = {g["plane"] for g in groups if g["kind"] == "device"}
    matches = standalone.json("trace_search", run=run, q=op["name"])["matches"]
    on_device = next(m for m in matches if m["plane"] in device_planes)
    selection = {"c.sel": f"{on_device['plane']}:{on_device['row']}"}
    page.goto(app_url(standalone, run=run, tool="trace_viewer", **selection))
    wait_ready(page)
    link = page.locator('[data-testid="graph-link"] a')
    link.wait_for(timeout=PAGE_TIMEOUT_MS)
    params = parse_qs((link.get_attribute("href") or "").split("#", 1)[-1])
    assert params["tool"] == ["graph_viewer"] and [op["name"]] in params.values()
    serve_page.check()
