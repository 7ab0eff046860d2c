"""The Query page in a real browser, in `tbprof serve` and inside TensorBoard: run an example,
read the answer against the `sql` route's, sort, export CSV, follow an event link to the trace
viewer; on an XSpace run and on a two-rank PyTorch run (its own examples, every rank at once)."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from tests import servers
from tests.conftest import SAMPLE_PROFILES

from .conftest import Server, Watch, _watch
from .helpers import app_url, as_csv_cell, column_names, csv_rows, run_named, shown_rows, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

LONGEST = "Longest events, each linked to the trace viewer"
NCCL = "NCCL kernels longer than 1 ms"
PER_RANK = "Kernel time per rank and kernel"
TIMEOUT_MS = 120_000


def _answer(server: Any, run: str, query: str) -> dict[str, Any]:
    req = urllib.request.Request(server.api + "sql", data=json.dumps({"run": run, "query": query}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as r:
        return dict(json.loads(r.read()))


def _run_example(target: Any, label: str) -> None:
    target.wait_for_selector('[data-testid="sql-examples"]', timeout=TIMEOUT_MS)
    target.wait_for_function("() => document.querySelector('[data-testid=sql-status]')?.dataset.rows !== undefined",
                             timeout=TIMEOUT_MS)
    target.evaluate("() => { delete document.querySelector('[data-testid=sql-status]').dataset.rows; }")
    target.select_option('[data-testid="sql-examples"]', label=label)
    target.wait_for_function("() => document.querySelector('[data-testid=sql-status]')?.dataset.rows !== undefined",
                             timeout=TIMEOUT_MS)
    wait_ready(target)


def _follow_first_event(target: Any, name: str) -> None:
    target.locator('[data-table="sql"] tbody tr').first.locator("a[data-event-link]").click()
    target.wait_for_selector('main.tbp-page[data-page="trace_viewer"]', timeout=TIMEOUT_MS)
    target.wait_for_function(
        "(n) => { const e = document.querySelector('[data-testid=\"event-name\"]'); return e && e.textContent === n; }",
        arg=name, timeout=TIMEOUT_MS)


def test_query_page_in_serve(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="query"))
    _run_example(page, LONGEST)
    query = page.input_value('[data-testid="sql-editor"]')
    backend = _answer(standalone, run, query)
    cols = column_names(page, "sql")
    assert cols == [c["name"] for c in backend["columns"]]
    shown = shown_rows(page, "sql")
    assert shown == backend["rows"][:len(shown)] and len(shown) == 100  # the first page, as answered
    assert page.get_attribute('[data-testid="sql-status"]', "data-rows") == str(backend["row_count"])
    assert "c.sql=" in page.url
    charts = wait_charts_drawn(page)
    assert "sql_chart" in {c["id"] for c in charts}

    # Sort by duration ascending (a second click on a numeric header after the first's descending).
    th = '[data-table="sql"] th[data-col="dur_ps"]'
    page.click(th)
    page.wait_for_function("(t) => document.querySelector(t).getAttribute('aria-sort') === 'descending'", arg=th)
    page.click(th)
    page.wait_for_function("(t) => document.querySelector(t).getAttribute('aria-sort') === 'ascending'", arg=th)
    ascending = shown_rows(page, "sql")
    durations = [r[cols.index("dur_ps")] for r in ascending]
    assert durations == sorted(durations) and durations[0] == min(r[cols.index("dur_ps")] for r in backend["rows"])

    # Export CSV of the rows shown: the rows on screen, in order.
    with page.expect_download() as dl:
        page.click('[data-table="sql"] button:has-text("Export CSV")')
    parsed = csv_rows(Path(dl.value.path()).read_text(encoding="utf-8"))
    assert parsed[0] == cols
    kinds = ["float" if c["type"] == "DOUBLE" else "" for c in backend["columns"]]
    assert parsed[1:] == [[str(float(v)) if k == "float" and v is not None else as_csv_cell(v)
                           for v, k in zip(row, kinds, strict=True)] for row in ascending]

    # An event's id links to it in the trace viewer, selected there.
    first = ascending[0]
    serve_page.screenshot("query_page")
    _follow_first_event(page, first[cols.index("name")])
    assert f"c.sel={first[cols.index('plane_index')]}%3A{first[cols.index('event_id')]}" in page.url.replace(":", "%3A")
    serve_page.check()


@pytest.fixture(scope="module")
def torch_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`tbprof serve` of a logdir holding torch_ddp (the session's servers hold XSpace runs only)."""
    root = tmp_path_factory.mktemp("query_torch")
    shutil.copytree(SAMPLE_PROFILES / "torch_ddp", root / "logs" / "torch_ddp")
    with servers.tbprof_serve(root / "logs", root / "cache", root / "serve.log") as s:
        yield Server("tbprof serve", s.base_url)


@pytest.fixture()
def torch_page(browser: Any, torch_server: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, torch_server)
    yield w
    ctx.close()


def test_query_page_of_a_pytorch_run(torch_server: Server, torch_page: Watch) -> None:
    """torch_ddp (two ranks): a PyTorch example answers over both ranks as the route does, sorts,
    exports, and an NCCL kernel's row opens that rank's event in the trace viewer."""
    standalone, serve_page = torch_server, torch_page
    run = run_named(standalone, "torch_ddp")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="query"))
    _run_example(page, PER_RANK)
    backend = _answer(standalone, run, page.input_value('[data-testid="sql-editor"]'))
    cols = column_names(page, "sql")
    assert cols == [c["name"] for c in backend["columns"]] == ["rank", "name", "n", "total_us"]
    shown = shown_rows(page, "sql")
    assert shown == backend["rows"][:len(shown)] and shown
    ranks = {r[0] for r in _answer(standalone, run, "SELECT DISTINCT host FROM events")["rows"]}
    assert len(ranks) == 2 and {r[0] for r in backend["rows"]} == ranks  # every rank in one answer

    _run_example(page, NCCL)
    backend = _answer(standalone, run, page.input_value('[data-testid="sql-editor"]'))
    cols = column_names(page, "sql")
    assert backend["rows"] and cols == [c["name"] for c in backend["columns"]]
    shown = shown_rows(page, "sql")
    assert shown == backend["rows"][:len(shown)]
    assert {r[cols.index("host")] for r in backend["rows"]} <= ranks

    # Sort by duration ascending, export what is shown, then open the shortest NCCL kernel.
    th = '[data-table="sql"] th[data-col="dur_ms"]'
    page.click(th)
    page.wait_for_function("(t) => document.querySelector(t).getAttribute('aria-sort') === 'descending'", arg=th)
    page.click(th)
    page.wait_for_function("(t) => document.querySelector(t).getAttribute('aria-sort') === 'ascending'", arg=th)
    ascending = shown_rows(page, "sql")
    durations = [r[cols.index("dur_ms")] for r in ascending]
    assert durations == sorted(durations)
    with page.expect_download() as dl:
        page.click('[data-table="sql"] button:has-text("Export CSV")')
    parsed = csv_rows(Path(dl.value.path()).read_text(encoding="utf-8"))
    kinds = ["float" if c["type"] == "DOUBLE" else "" for c in backend["columns"]]
    assert parsed[0] == cols
    assert parsed[1:] == [[str(float(v)) if k == "float" and v is not None else as_csv_cell(v)
                           for v, k in zip(row, kinds, strict=True)] for row in ascending]
    first = ascending[0]
    _follow_first_event(page, first[cols.index("name")])
    url = unquote(page.url)
    assert f"c.sel={first[cols.index('plane_index')]}:{first[cols.index('event_id')]}" in url
    assert f"host={first[cols.index('host')]}" in url
    serve_page.check()


def test_query_page_error_is_shown(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="query", **{"c.sql": "SELECT nope FROM events"}))
    page.wait_for_selector(".tbp-message-error", timeout=TIMEOUT_MS)
    assert "nope" in page.inner_text(".tbp-message-error")
    serve_page.expect_http_error(400)
    serve_page.check()


def test_query_page_inside_tensorboard(tensorboard: Any, tb_page: Any) -> None:
    run = run_named(tensorboard, "jax_mlp/")
    page = tb_page.page
    page.goto(tensorboard.base + f"/#tbprof&p.tbprof.run={quote(run, safe='')}&p.tbprof.tool=query")
    page.wait_for_selector("iframe", timeout=60_000)
    frame = None
    for _ in range(600):
        frame = next((f for f in page.frames if "plugin_entry.html?name=tbprof" in f.url), None)
        if frame is not None:
            break
        page.wait_for_timeout(100)
    assert frame is not None
    _run_example(frame, LONGEST)
    cols = column_names(frame, "sql")
    first = shown_rows(frame, "sql")[0]
    backend = _answer(tensorboard, run, frame.input_value('[data-testid="sql-editor"]'))
    assert first == backend["rows"][0]
    _follow_first_event(frame, first[cols.index("name")])
    tb_page.check(inside_tensorboard=True)
