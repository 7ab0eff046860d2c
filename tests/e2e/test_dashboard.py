"""The dashboard in a real browser against `tbprof serve` and TensorBoard on real profiles."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    app_url,
    as_csv_cell,
    backend_rows,
    column_names,
    csv_rows,
    run_named,
    shown_rows,
    wait_charts_drawn,
    wait_ready,
)

pytestmark = pytest.mark.e2e


def _assert_charts_painted(charts: list[dict[str, Any]]) -> None:
    for c in charts:
        # A drawn chart paints axes, labels and series: well over 1 % of its pixels in
        # several colours; a blank canvas paints none.
        assert c["painted"] > 0.01 * c["sampled"], c
        assert c["colours"] >= 3, c


def test_every_tool_page_loads(standalone: Any, serve_page: Any) -> None:
    """Each tool with data opens on a run that has it: no console error, charts drawn,
    tables filled; a screenshot of each for review."""
    runs = [r["run"] for r in standalone.json("runs")["runs"] if not r["run"].startswith("broken/")]
    # The profile that shows each page best (host memory and tf.data on custom_loop's TF CPU
    # run, GPU pages on jax_mlp, the pod on two hosts); other tools open on the first run with data.
    preferred = {"memory_profile": "custom_loop/", "tf_data_bottleneck_analysis": "custom_loop/",
                 "input_pipeline_analyzer": "custom_loop/", "overview_page": "jax_mlp/", "kernel_stats": "jax_mlp/",
                 "op_profile": "jax_mlp/", "framework_op_stats": "jax_mlp/", "pod_viewer": "jax_2hosts/"}
    tools_of = {r: {t["name"] for t in standalone.json("tools", run=r)["tools"]} for r in runs}
    pages: dict[str, str] = {}
    for r in sorted(runs, key=lambda r: [not r.startswith(p) for p in preferred.values()]):
        for tool in tools_of[r]:
            pages.setdefault(tool, r)
    for tool, prefix in preferred.items():
        good = [r for r in runs if r.startswith(prefix) and tool in tools_of[r]]
        if good:
            pages[tool] = good[0]
    assert "profile_summary" in pages
    page = serve_page.page
    for tool, run in sorted(pages.items()):
        page.goto(app_url(standalone, run=run, tool=tool))
        wait_ready(page)
        assert page.locator(".tbp-message-error").count() == 0, page.locator(".tbp-message-error").inner_text()
        assert page.locator(f'a.tbp-tool.tbp-active[data-tool="{tool}"]').count() == 1
        if page.locator("[data-chart]").count():
            _assert_charts_painted(wait_charts_drawn(page))
        serve_page.screenshot(f"{tool}__{run.split('/')[0]}")
    serve_page.check()


def test_profile_summary_numbers_and_charts(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="profile_summary"))
    wait_ready(page)
    result = standalone.json("data", run=run, host="__all__", tool="profile_summary", rows="0")
    # The cards show the backend's totals (21,324 = sum of both hosts' events).
    assert page.locator('[data-card="events"] .tbp-card-value').inner_text() == f"{result['event_count']:,}"
    assert page.locator('[data-card="hosts"] .tbp-card-value').inner_text() == str(len(result["hosts"]))
    charts = wait_charts_drawn(page, min_charts=2)
    assert {c["id"] for c in charts} == {"events_per_plane", "plane_ranges"}
    _assert_charts_painted(charts)
    serve_page.screenshot("profile_summary__all_hosts")
    serve_page.check()


def test_table_rows_equal_backend_rows(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="profile_summary"))
    wait_ready(page)
    backend = standalone.json("data", run=run, tool="profile_summary")["tables"]["lines"]
    assert column_names(page, "lines") == [c["name"] for c in backend["columns"]]
    assert shown_rows(page, "lines") == backend["rows"][:100]
    serve_page.check()


def test_sort_and_filter(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="__all__", tool="profile_summary"))
    wait_ready(page)
    cols = column_names(page, "lines")
    count_i = cols.index("event_count")
    plane_i = cols.index("plane")

    # Sorting by events: largest first, then smallest first on a second click.
    page.click('[data-table="lines"] th[data-col="event_count"]')
    wait_ready(page)
    rows = shown_rows(page, "lines")
    counts = [r[count_i] for r in rows]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    assert rows == backend_rows(standalone, run, "profile_summary", "lines", host="__all__",
                                sort="event_count", desc="1", limit="100")["rows"]
    page.click('[data-table="lines"] th[data-col="event_count"]')
    wait_ready(page)
    counts = [r[count_i] for r in shown_rows(page, "lines")]
    assert counts == sorted(counts)
    assert page.get_attribute('[data-table="lines"] th[data-col="event_count"]', "aria-sort") == "ascending"

    # A regex filter on the plane keeps exactly the GPU planes' lines.
    all_rows = backend_rows(standalone, run, "profile_summary", "lines", host="__all__")["rows"]
    expected = [r for r in all_rows if re.search(r"GPU:\d$", r[plane_i])]
    assert 0 < len(expected) < len(all_rows)
    page.fill('[data-table="lines"] input[data-filter="plane"]', r"GPU:\d$")
    page.press('[data-table="lines"] input[data-filter="plane"]', "Enter")
    wait_ready(page)
    rows = shown_rows(page, "lines")
    assert sorted(map(tuple, rows)) == sorted(map(tuple, expected))
    assert page.locator('[data-table="lines"] .tbp-table-count').inner_text() == f"{len(expected)} rows"

    # A regex that does not compile: the server's 400 is shown at the filter that caused it
    # (#29 §6: it was under a stale table), the old rows stay, greyed as stale.
    page.fill('[data-table="lines"] input[data-filter="plane"]', "(")
    page.press('[data-table="lines"] input[data-filter="plane"]', "Enter")
    error = page.locator('[data-table="lines"] [data-filter-error="plane"]')
    error.wait_for(timeout=30_000)
    assert "does not compile" in error.inner_text()
    assert page.get_attribute('[data-table="lines"] input[data-filter="plane"]', "aria-invalid") == "true"
    assert page.locator('[data-table="lines"] tbody.tbp-stale').count() == 1
    assert len(shown_rows(page, "lines")) == len(expected)
    serve_page.screenshot("table_filter_bad_regex")
    # A filter that compiles again clears the mark.
    page.fill('[data-table="lines"] input[data-filter="plane"]', r"GPU:\d$")
    page.press('[data-table="lines"] input[data-filter="plane"]', "Enter")
    error.wait_for(state="detached", timeout=30_000)
    assert page.locator('[data-table="lines"] tbody.tbp-stale').count() == 0
    serve_page.expect_http_error(400)
    serve_page.check()


def test_csv_export_equals_rows_shown(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "custom_loop/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="profile_summary",
                      **{"t.lines.sort": "event_count", "t.lines.desc": "1", "t.lines.f.plane": "host"}))
    wait_ready(page)
    shown = shown_rows(page, "lines")
    assert shown
    with page.expect_download() as dl:
        page.click('[data-table="lines"] button:has-text("Export CSV")')
    text = Path(dl.value.path()).read_text(encoding="utf-8")
    parsed = csv_rows(text)
    assert parsed[0] == column_names(page, "lines")
    assert parsed[1:] == [[as_csv_cell(v) for v in row] for row in shown]
    # All rows fit on one page here, so the backend's CSV of the same query is the same bytes.
    href = page.get_attribute('[data-table="lines"] a:has-text("Full table")', "href")
    assert href is not None and "/data/plugin/tbprof/csv?" in href
    assert standalone.get(href[len(standalone.api):]).decode() == text
    serve_page.check()


def test_deep_link_restores_view(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "jax_2hosts/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, host="worker1", tool="profile_summary",
                      **{"t.lines.sort": "event_count", "t.lines.desc": "0"}))
    wait_ready(page)
    assert page.input_value("select.tbp-run-select") == run
    assert page.input_value("select.tbp-host-select") == "worker1"
    assert page.get_attribute('[data-table="lines"] th[data-col="event_count"]', "aria-sort") == "ascending"
    cols = column_names(page, "lines")
    rows = shown_rows(page, "lines")
    assert {r[cols.index("host")] for r in rows} == {"worker1"}
    counts = [r[cols.index("event_count")] for r in rows]
    assert counts == sorted(counts)

    # State set by clicking survives a reload.
    page.click('[data-table="lines"] th[data-col="line"]')
    wait_ready(page)
    assert "t.lines.sort=line" in page.url
    page.reload()
    wait_ready(page)
    assert page.get_attribute('[data-table="lines"] th[data-col="line"]', "aria-sort") == "ascending"
    assert page.input_value("select.tbp-host-select") == "worker1"
    serve_page.check()


def test_run_selector_newest_first_and_searchable(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    page.goto(standalone.base + "/")
    wait_ready(page)
    runs = standalone.json("runs")["runs"]
    options = page.eval_on_selector_all("select.tbp-run-select option", "os => os.map(o => o.value)")
    by_time = sorted(runs, key=lambda r: (-r["mtime"], r["run"]))
    assert options == [r["run"] for r in by_time]
    assert page.input_value("select.tbp-run-select") == by_time[0]["run"]  # newest opens first
    page.fill("input.tbp-run-filter", "keras")
    # The backend searches (GET runs q=) once typing pauses: wait for its answer.
    newest = by_time[0]["run"]
    page.wait_for_function("(newest) => [...document.querySelectorAll('select.tbp-run-select option')]"
                           ".every((o) => o.value.includes('keras') || o.value === newest)", arg=newest,
                           timeout=30_000)
    options = page.eval_on_selector_all("select.tbp-run-select option", "os => os.map(o => o.value)")
    # The selected run stays listed; the others must match the search.
    assert all("keras" in o or o == by_time[0]["run"] for o in options)
    assert any("keras" in o for o in options)
    keras = next(o for o in options if "keras" in o)
    page.select_option("select.tbp-run-select", keras)
    wait_ready(page)
    assert "keras_cnn" in page.locator(".tbp-page-title").inner_text()
    serve_page.check()


def test_no_data_page(standalone: Any, serve_page: Any) -> None:
    run = run_named(standalone, "keras_cnn/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="kernel_stats"))
    wait_ready(page)
    box = page.locator("[data-no-data='kernel_stats']")
    box.wait_for()
    text = box.inner_text()
    titles = {t["name"]: t["title"] for t in standalone.json("settings")["tools"]}
    assert f"No {titles.get('kernel_stats', 'Kernel stats')} data for this run" in text
    assert "Why" in text and run in text
    serve_page.screenshot("no_data__kernel_stats")
    # It links to the tools that do have data.
    page.click("[data-no-data] a:has-text('Profile summary')")
    wait_ready(page)
    assert page.locator('a.tbp-tool.tbp-active[data-tool="profile_summary"]').count() == 1
    serve_page.check()


def test_unreadable_profile_is_explained(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    page.goto(app_url(standalone, run="broken/2020_01_01_00_00_00", tool="profile_summary"))
    wait_ready(page)
    err = page.locator(".tbp-message-error")
    err.wait_for()
    text = err.inner_text()
    assert "could not be read" in text and "vm.xplane.pb" in text
    serve_page.screenshot("error__unreadable_profile")
    serve_page.expect_http_error(422)
    serve_page.check()


def test_unknown_run_in_link_falls_back(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    page.goto(app_url(standalone, run="no/such/run", tool="profile_summary"))
    wait_ready(page)
    assert "is not in this log directory" in page.locator(".tbp-notice").inner_text()
    assert page.locator(".tbp-page-title").count() == 1
    serve_page.expect_http_error(404)  # the run's lookup by name (GET runs?run=) found none
    serve_page.check()


def test_dark_theme(standalone: Any, dark_page: Any) -> None:
    page = dark_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="profile_summary"))
    wait_ready(page)
    assert page.evaluate("document.documentElement.classList.contains('tbp-dark')")
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    channels = [int(x) for x in re.findall(r"\d+", bg)[:3]]
    assert max(channels) < 80, bg
    _assert_charts_painted(wait_charts_drawn(page, min_charts=2))
    dark_page.screenshot("profile_summary__dark")
    dark_page.check()


def _plugin_frame(page: Any) -> Any:
    page.wait_for_selector("iframe", timeout=60_000)
    for _ in range(600):
        for f in page.frames:
            if "plugin_entry.html?name=tbprof" in f.url:
                return f
        page.wait_for_timeout(100)
    raise AssertionError(f"no tbprof frame: {[f.url for f in page.frames]}")


def test_inside_tensorboard(tensorboard: Any, tb_page: Any) -> None:
    run = run_named(tensorboard, "jax_2hosts/")
    page = tb_page.page
    page.goto(tensorboard.base + f"/#tbprof&p.tbprof.run={run.replace('/', '%2F')}"
              "&p.tbprof.host=worker0&p.tbprof.tool=profile_summary"
              "&p.tbprof.t.lines.sort=event_count&p.tbprof.t.lines.desc=1")
    frame = _plugin_frame(page)
    wait_ready(frame)
    # The TensorBoard link restored run, host, tool and sort inside the frame.
    assert frame.input_value("select.tbp-run-select") == run
    assert frame.input_value("select.tbp-host-select") == "worker0"
    rows = shown_rows(frame, "lines")
    assert rows == backend_rows(tensorboard, run, "profile_summary", "lines", host="worker0",
                                sort="event_count", desc="1", limit="100")["rows"]
    _assert_charts_painted(wait_charts_drawn(frame, min_charts=2))
    # A change inside the frame is written back into TensorBoard's URL.
    frame.click('[data-table="lines"] th[data-col="plane"]')
    wait_ready(frame)
    page.wait_for_function("() => location.hash.includes('p.tbprof.t.lines.sort=plane')", timeout=10_000)
    tb_page.screenshot("profile_summary__in_tensorboard")
    tb_page.check(inside_tensorboard=True)


def test_follows_tensorboard_dark_mode(tensorboard: Any, tb_page: Any) -> None:
    """TensorBoard's own dark mode (here its ?darkMode=true flag, with a light browser) turns
    the plugin frame dark: the frame follows TensorBoard's body class, not only the browser."""
    page = tb_page.page
    page.goto(tensorboard.base + "/?darkMode=true#tbprof")
    frame = _plugin_frame(page)
    wait_ready(frame)
    page.wait_for_function("() => document.body.classList.contains('dark-mode')", timeout=30_000)
    frame.wait_for_function("() => document.documentElement.classList.contains('tbp-dark')", timeout=10_000)
    _assert_charts_painted(wait_charts_drawn(frame))
    tb_page.screenshot("in_tensorboard_dark")
    tb_page.check(inside_tensorboard=True)
