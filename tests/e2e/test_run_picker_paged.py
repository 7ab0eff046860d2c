"""The run picker on a logdir of thousands of runs (issue #25): the page never asks for the
whole run list (20,000 runs were 5.3 MB on every load). It asks for a page, loads more on
demand, searches every run's name on the backend, and opens a run named in its URL that is
beyond the first page, in `tbprof serve` and inside TensorBoard (the same routes and bundle).

The logdir: RUNS folders, each one TF1 timeline run holding a hard link of one real demo file
(tf1_timeline/timeline-0.json), so thousands of runs cost one file's bytes. The links share
their mtime, so the list is ordered by name: the first page is exp_0000 .. exp_0199.
"""

from __future__ import annotations

import os
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests import servers
from tests.conftest import SAMPLE_PROFILES

from .conftest import Server, Watch, _watch
from .helpers import PAGE_TIMEOUT_MS, app_url, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUNS = 3000
PAGE = 200  # RUN_PAGE in frontend/src/data/api.ts
BEYOND_FIRST_PAGE = "exp_2999"  # the last run by name: on the 15th page
SEARCHED = "exp_2718"
RUN_SELECT = "select.tbp-run-select"
OPTION_VALUES_JS = f"() => [...document.querySelectorAll('{RUN_SELECT} option')].map((o) => o.value)"


def _run(i: int) -> str:
    return f"exp_{i:04d}"


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many_runs")
    source = root / "source.json"  # a copy on this file system: links need one
    shutil.copyfile(SAMPLE_PROFILES / "tf1_timeline" / "timeline-0.json", source)
    logdir = root / "logs"
    for i in range(RUNS):
        folder = logdir / _run(i)
        folder.mkdir(parents=True)
        os.link(source, folder / "timeline-0.json")
    return logdir


@pytest.fixture(scope="module")
def served(many_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("many_runs_log") / "serve.log"
    with servers.tbprof_serve(many_runs, tmp_path_factory.mktemp("many_runs_cache"), log) as s:
        yield Server("tbprof serve many runs", s.base_url)


@pytest.fixture(scope="module")
def board(many_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("many_runs_tb_log") / "tensorboard.log"
    with servers.tensorboard(many_runs, tmp_path_factory.mktemp("many_runs_tb_cache"), log) as s:
        yield Server("tensorboard many runs", s.base_url)


@pytest.fixture()
def watch(browser: Any, served: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, served)
    yield w
    ctx.close()


def _runs_requests(w: Watch) -> list[dict[str, str]]:
    """The query of every request the page made to the runs route, in order."""
    out = []
    for url, _ in w.requests:
        parts = urllib.parse.urlsplit(url)
        if parts.path.endswith("/data/plugin/tbprof/runs"):
            out.append(dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True)))
    return out


def _assert_paged(requests: list[dict[str, str]]) -> None:
    assert requests, "the page never asked for runs"
    first = requests[0]
    assert first.get("offset") == "0" and first.get("limit") == str(PAGE), first
    for query in requests:  # never the whole list: a page, or one run by name
        assert "run" in query or 1 <= int(query.get("limit", "0")) <= PAGE, query


def _selected(target: Any) -> str:
    return str(target.eval_on_selector(RUN_SELECT, "s => s.value"))


def _wait_selected(target: Any, run: str) -> None:
    target.wait_for_function(f"() => document.querySelector('{RUN_SELECT}')?.value === {run!r}",
                             timeout=PAGE_TIMEOUT_MS)
    wait_ready(target)


def test_first_request_is_a_page_and_more_loads_on_demand(served: Server, watch: Watch) -> None:
    page = watch.page
    page.goto(app_url(served))
    _wait_selected(page, _run(0))  # the newest run (equal mtimes: the first name)
    values = page.evaluate(OPTION_VALUES_JS)
    # One page of runs, then the "more" entry.
    assert values[:-1] == [_run(i) for i in range(PAGE)]
    more = page.locator(f"{RUN_SELECT} option[data-more]")
    assert more.count() == 1 and f"{RUNS - PAGE} more" in more.inner_text()
    _assert_paged(_runs_requests(watch))

    page.select_option(RUN_SELECT, index=len(values) - 1)  # "more": the next page
    page.wait_for_function(f"() => ({OPTION_VALUES_JS})().length === {2 * PAGE + 1}", timeout=PAGE_TIMEOUT_MS)
    assert page.evaluate(OPTION_VALUES_JS)[:-1] == [_run(i) for i in range(2 * PAGE)]
    assert _selected(page) == _run(0)  # choosing "more" does not change the open run
    assert "run=" + _run(0) in page.url
    requests = _runs_requests(watch)
    _assert_paged(requests)
    assert requests[-1].get("offset") == str(PAGE)
    watch.check()


def test_a_run_beyond_the_first_page_opens_from_its_url(served: Server, watch: Watch) -> None:
    page = watch.page
    page.goto(app_url(served, run=BEYOND_FIRST_PAGE))
    _wait_selected(page, BEYOND_FIRST_PAGE)
    assert page.locator(".tbp-notice:not([hidden])").count() == 0  # no "not in this log directory"
    assert page.locator(".tbp-message-error").count() == 0
    assert page.locator("a.tbp-tool.tbp-active").count() == 1
    requests = _runs_requests(watch)
    _assert_paged(requests)
    assert {"run": BEYOND_FIRST_PAGE} in requests  # looked up by name, not by listing every run
    # The picker shows it (first) with the first page.
    values = page.evaluate(OPTION_VALUES_JS)
    assert values[0] == BEYOND_FIRST_PAGE and values[1:PAGE + 1] == [_run(i) for i in range(PAGE)]
    watch.check()


def test_an_unknown_run_in_the_url_falls_back_to_the_newest(served: Server, watch: Watch) -> None:
    page = watch.page
    page.goto(app_url(served, run="exp_9999"))
    _wait_selected(page, _run(0))
    page.wait_for_selector(".tbp-notice:not([hidden])", timeout=PAGE_TIMEOUT_MS)
    assert "exp_9999" in page.inner_text(".tbp-notice")
    watch.expect_http_error(404)  # the lookup's answer: no such run
    watch.check()


def test_the_picker_finds_a_run_by_name(served: Server, watch: Watch) -> None:
    page = watch.page
    page.goto(app_url(served))
    _wait_selected(page, _run(0))
    page.fill("input.tbp-run-filter", SEARCHED.upper())  # ignoring case
    page.wait_for_function(f"() => ({OPTION_VALUES_JS})().includes({SEARCHED!r})", timeout=PAGE_TIMEOUT_MS)
    # The open run stays first; the search's one match follows, with no "more" entry.
    assert page.evaluate(OPTION_VALUES_JS) == [_run(0), SEARCHED]
    searches = [q for q in _runs_requests(watch) if "q" in q]
    assert searches and searches[-1]["q"] == SEARCHED.upper()
    page.select_option(RUN_SELECT, SEARCHED)
    _wait_selected(page, SEARCHED)
    assert f"run={SEARCHED}" in page.url
    _assert_paged(_runs_requests(watch))
    watch.check()


def _plugin_frame(page: Any) -> Any:
    page.wait_for_selector("iframe", timeout=PAGE_TIMEOUT_MS)
    for _ in range(600):
        for f in page.frames:
            if "plugin_entry.html?name=tbprof" in f.url:
                return f
        page.wait_for_timeout(100)
    raise AssertionError(f"no tbprof frame: {[f.url for f in page.frames]}")


def test_inside_tensorboard_the_list_is_paged_and_deep_links_open(browser: Any, board: Server) -> None:
    ctx, w = _watch(browser, board)
    try:
        page = w.page
        page.goto(board.base + f"/#tbprof&p.tbprof.run={quote(BEYOND_FIRST_PAGE, safe='')}")
        frame = _plugin_frame(page)
        _wait_selected(frame, BEYOND_FIRST_PAGE)
        assert frame.locator("a.tbp-tool.tbp-active").count() == 1
        requests = _runs_requests(w)
        _assert_paged(requests)
        assert {"run": BEYOND_FIRST_PAGE} in requests
        frame.fill("input.tbp-run-filter", SEARCHED)
        frame.wait_for_function(f"() => ({OPTION_VALUES_JS})().includes({SEARCHED!r})", timeout=PAGE_TIMEOUT_MS)
        assert frame.evaluate(OPTION_VALUES_JS) == [BEYOND_FIRST_PAGE, SEARCHED]
        w.check(inside_tensorboard=True)
    finally:
        ctx.close()
