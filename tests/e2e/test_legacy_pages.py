"""Browser test: the tfprof views page of a tfprof run, with a regex option, max_depth and CSV.

Drives Debian's chromium through Python Playwright (never `playwright install`) against a
real `tbprof serve`-style WSGI server on a free port.
"""

from __future__ import annotations

import csv
import io
import shutil
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from tbprof.http.app import PLUGIN_PREFIX, create_app
from tests.tfprof_data import golden

pytestmark = pytest.mark.e2e
RUN = "old_tf/tf1_timeline (tfprof)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[str]:
    root = tmp_path_factory.mktemp("e2e_legacy")
    shutil.copytree(sample_profiles / "tf1_timeline", root / "logs" / "old_tf" / "tf1_timeline")
    app = create_app(root / "logs", cache_dir=root / "cache", prefix=PLUGIN_PREFIX, capture_enabled=False)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}/"
    srv.shutdown()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def page(server: str, browser: Any) -> Iterator[Any]:
    """A page in the module's browser (Playwright's sync API allows one instance at a time)."""
    context = browser.new_context(accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()


def _names(pg: object) -> list[str]:
    cells = pg.locator('[data-table="nodes"] tbody tr td:first-child')  # type: ignore[attr-defined]
    return [t.strip() for t in cells.all_inner_texts()]


def _set_option(pg: object, name: str, value: str) -> None:
    box = pg.locator(f'[data-option="{name}"]')  # type: ignore[attr-defined]
    box.fill(value)
    box.press("Enter")
    box.dispatch_event("change")


def test_tfprof_views_page_with_regex_max_depth_and_csv(page: object, server: str, tmp_path: Path) -> None:
    pg = page
    pg.goto(f"{server}#run={RUN}&tool=tfprof_views")  # type: ignore[attr-defined]
    pg.wait_for_selector('[data-table="nodes"] tbody tr')  # type: ignore[attr-defined]
    assert _names(pg)[0] == "_TFProfRoot"

    # max_depth=2: the root and the top-level scopes, exactly as TensorFlow's tfprof shows them.
    _set_option(pg, "max_depth", "2")
    want = [row[0] for row in next(c for c in golden("tfprof_views.json")["cases"]
                                   if c["id"] == "scope_max_depth_2")["rows"]]
    pg.wait_for_function(  # type: ignore[attr-defined]
        "n => document.querySelectorAll('[data-table=\"nodes\"] tbody tr').length === n", arg=len(want))
    assert _names(pg) == want

    # A regex option (tfprof's show_name_regexes) with a deeper max_depth.
    _set_option(pg, "max_depth", "10")
    _set_option(pg, "show_name_regexes", "mlp/.*,.*Sum")
    want = [row[0] for row in next(c for c in golden("tfprof_views.json")["cases"]
                                   if c["id"] == "scope_show_name")["rows"]]
    pg.wait_for_function(  # type: ignore[attr-defined]
        "n => document.querySelectorAll('[data-table=\"nodes\"] tbody tr').length === n", arg=len(want))
    assert _names(pg) == want
    assert "show_name_regexes=" in pg.url  # type: ignore[attr-defined]

    # The CSV of the view holds the same rows.
    with pg.expect_download() as info:  # type: ignore[attr-defined]
        pg.get_by_text("Export CSV").first.click()  # type: ignore[attr-defined]
    path = tmp_path / "view.csv"
    info.value.save_as(path)
    rows = list(csv.reader(io.StringIO(path.read_text())))
    assert rows[0][0] == "name"
    assert [r[0] for r in rows[1:]] == want


def test_query_page_of_a_tfprof_run_says_there_is_nothing_to_query(server: str, browser: Any) -> None:
    """A tfprof run holds op statistics, no events: the Query page (listed for every run) says so
    instead of sending a query that can only fail; no request errors, no browser errors."""
    context = browser.new_context()
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    sql_requests: list[str] = []
    pg.on("request", lambda r: sql_requests.append(r.url) if "/sql" in r.url else None)
    try:
        pg.goto(server + "#" + urllib.parse.urlencode({"run": RUN, "tool": "query"}, quote_via=urllib.parse.quote))
        pg.wait_for_selector("main.tbp-page[data-no-events]", timeout=60_000)
        text = pg.inner_text("main.tbp-page")
        assert "No events to query" in text and f"{RUN} is a tfprof run" in text
        assert pg.locator(".tbp-message-error").count() == 0
        assert pg.locator('[data-testid="sql-editor"]').count() == 0
        assert sql_requests == [] and errors == []
    finally:
        context.close()
