"""The compare page in a real browser: choose two runs, read the deltas, sort by Δ, export CSV,
follow a row into the trace viewer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    app_url,
    as_csv_cell,
    column_names,
    csv_rows,
    run_named,
    shown_rows,
    wait_charts_drawn,
    wait_ready,
)

pytestmark = pytest.mark.e2e


def _wait_compared(page: Any, baseline: str) -> None:
    page.wait_for_function(
        "(b) => { const v = document.querySelector('[data-verdict]');"
        " const s = document.querySelector('select[data-pick=base-run]');"
        " return v !== null && s !== null && s.value === b; }", arg=baseline, timeout=120_000)
    wait_ready(page)


def test_compare_two_runs(standalone: Any, serve_page: Any) -> None:
    keras, custom = run_named(standalone, "keras_cnn/"), run_named(standalone, "custom_loop/")
    page = serve_page.page
    # Candidate in the shell's run selector, the compare tool in the nav, baseline on the page.
    page.goto(app_url(standalone, run=custom, tool="overview_page"))
    wait_ready(page)
    page.click('a.tbp-tool[data-tool="compare"]')
    page.wait_for_selector("select[data-pick=base-run]")
    page.select_option("select[data-pick=base-run]", keras)
    _wait_compared(page, keras)
    assert page.input_value("select.tbp-run-select") == custom

    # The deltas on screen are the backend's.
    body = standalone.json("compare", base_run=keras, run=custom)
    change = body["step_time"]["change"]
    assert page.get_attribute("[data-verdict]", "data-verdict") == body["verdict"]["kind"] == "faster"
    assert body["verdict"]["summary"] in page.inner_text("[data-verdict]")
    card = page.inner_text('[data-card="change"] .tbp-card-value')
    assert card == f"{change['change_percent']:+.1f} %"
    hint = page.inner_text('[data-card="change"] .tbp-card-hint')
    assert f"{change['ci_low_percent']:+.1f}".replace("+", "") in hint.replace("+", "")
    charts = wait_charts_drawn(page, min_charts=2)
    assert {c["id"] for c in charts} >= {"compare_step_time", "compare_breakdown"}

    # Sort the op types by Δ per step: one click sorts descending, as the backend does.
    table = '[data-table="op_types"]'
    page.click(f'{table} th[data-col="delta_per_step_us"]')
    page.wait_for_function(
        "(t) => { const th = document.querySelector(t + ' th[data-col=delta_per_step_us]');"
        " const w = document.querySelector(t); return th.getAttribute('aria-sort') === 'descending'"
        " && !w.classList.contains('tbp-loading'); }", arg=table)
    cols = column_names(page, "op_types")
    shown = shown_rows(page, "op_types")
    deltas = [r[cols.index("delta_per_step_us")] for r in shown]
    numeric = [d for d in deltas if d is not None]
    assert numeric == sorted(numeric, reverse=True) and len(numeric) > 5
    backend = standalone.json("compare_table", base_run=keras, run=custom, table="op_types",
                              sort="delta_per_step_us", desc="1", limit=str(len(shown)))
    assert [r[cols.index("type")] for r in shown] == [r[cols.index("type")] for r in backend["rows"]]
    assert "t.op_types.sort=delta_per_step_us" in page.url

    # A filter on the status column, then "Export CSV" of exactly the shown rows.
    page.fill(f'{table} input[data-filter="status"]', "^removed$")
    page.press(f'{table} input[data-filter="status"]', "Enter")
    page.wait_for_function(
        "(t) => [...document.querySelectorAll(t + ' tbody tr')].every((tr) => tr.innerText.includes('removed'))",
        arg=table)
    wait_ready(page)
    shown = shown_rows(page, "op_types")
    assert shown and {r[cols.index("status")] for r in shown} == {"removed"}
    with page.expect_download() as dl:
        page.click(f'{table} button:has-text("Export CSV")')
    text = Path(dl.value.path()).read_text(encoding="utf-8")
    parsed = csv_rows(text)
    assert parsed[0] == cols
    # Float columns are written as Python writes floats ("0.0"), whatever JSON made of them.
    kinds = [c["kind"] for c in backend["columns"]]
    assert parsed[1:] == [[str(float(v)) if k == "float" and v is not None else as_csv_cell(v)
                           for v, k in zip(row, kinds, strict=True)] for row in shown]
    # The whole filtered, sorted table from the server: the same rows (they fit on one page).
    href = page.get_attribute(f'{table} a:has-text("Full table")', "href")
    assert href is not None and "/data/plugin/tbprof/compare_csv?" in href
    assert standalone.get(href[len(standalone.api):]).decode() == text

    # Each op row links into both runs' trace viewers at that op.
    ops_cols = column_names(page, "ops")
    first = shown_rows(page, "ops")[0]
    link = page.locator('[data-table="ops"] tbody tr').first.locator("a[data-link]").first
    which = link.get_attribute("data-link")
    assert which == ("trace-cand" if first[ops_cols.index("status")] == "added" else "trace-base")
    link.click()
    page.wait_for_selector('main.tbp-page[data-page="trace_viewer"]')
    assert page.input_value("select.tbp-run-select") == (custom if which == "trace-cand" else keras)
    page.wait_for_function("(q) => document.querySelector('[data-testid=trace-search]')?.value === q",
                           arg=first[ops_cols.index("operation")], timeout=60_000)
    serve_page.screenshot("compare_trace_link")
    serve_page.check()


def test_compare_hosts_swap_and_self(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="worker0", tool="compare",
                      **{"c.base_run": run, "c.base_host": "worker1"}))
    _wait_compared(page, run)
    assert page.input_value("select[data-pick=base-host]") == "worker1"
    assert page.get_attribute("[data-verdict]", "data-verdict") == "no change"
    assert "device collective communication rose" in page.inner_text("[data-verdict]")
    serve_page.screenshot("compare_hosts")
    # Swap: worker0 becomes the baseline.
    page.click("[data-action=swap]")
    page.wait_for_function("() => document.querySelector('select.tbp-host-select').value === 'worker1'"
                           " && document.querySelector('select[data-pick=base-host]')?.value === 'worker0'")
    _wait_compared(page, run)
    assert "device collective communication fell" in page.inner_text("[data-verdict]")
    # The same host on both sides: identical profiles.
    page.select_option("select[data-pick=base-host]", "worker1")
    page.wait_for_function("() => document.querySelector('[data-verdict]')?.innerText.includes('identical')",
                           timeout=60_000)
    assert page.get_attribute("[data-verdict]", "data-verdict") == "no change"
    serve_page.check()
