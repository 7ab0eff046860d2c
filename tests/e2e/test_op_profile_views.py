"""Op profile, closer to what users use it for (issue 19): a "top 90 %" toggle listing only
the children that make up 90 % of their parent's time (kept in the URL), and utilisation
columns against the device's peaks when the backend names them (a note says why not)."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import PAGE_TIMEOUT_MS, app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e

ROWS_JS = "() => document.querySelectorAll('[data-tree] tbody tr').length"


def _top90(children: list[dict[str, Any]]) -> int:
    """How many of the largest children it takes to reach 90 % of their summed time."""
    times = sorted((c["total_time_us"] for c in children), reverse=True)
    total, n, acc = sum(times), 0, 0.0
    for t in times:
        if n > 0 and acc >= 0.9 * total:
            break
        n, acc = n + 1, acc + t
    return n


def test_top_90_percent_and_utilisation(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="op_profile"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="op_profile", rows="0")
    children = result["by_category"]["children"]
    assert page.evaluate(ROWS_JS) == len(children)
    want = _top90(children)
    assert 0 < want < len(children)  # jax_mlp: IDLE is 84 % of the time, so a few categories suffice
    page.check('[data-testid="top90"]')
    page.wait_for_function(f"() => ({ROWS_JS})() === {want}", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function("() => location.hash.includes('c.top90=1')", timeout=PAGE_TIMEOUT_MS)
    page.reload()
    wait_ready(page)
    assert page.is_checked('[data-testid="top90"]') and page.evaluate(ROWS_JS) == want
    # Utilisation needs the device's peaks: columns when the backend names them, a note when not.
    headers = page.locator("[data-tree] thead th").all_inner_texts()
    if "device_peaks" in result:
        assert "Wasted time" in headers
    else:
        assert "Wasted time" not in headers and page.locator("[data-no-peaks]").count() == 1
        assert page.is_disabled('[data-testid="order-wasted"]')
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
    # Its events: the trace viewer opens with the op's name searched and the first match selected.
    page.click("[data-op-details] [data-trace-link]")
    page.wait_for_selector('main.tbp-page[data-page="trace_viewer"]', timeout=PAGE_TIMEOUT_MS)
    page.wait_for_function(
        "() => /^1 of /.test(document.querySelector('[data-testid=\"search-count\"]')?.textContent ?? '')",
        timeout=PAGE_TIMEOUT_MS)
    assert page.input_value('[data-testid="trace-search"]') == op["name"]
    serve_page.check()
