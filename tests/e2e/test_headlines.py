"""No false or unexplained headline (#29 §3): each headline card says what it measures, and
says "unknown" when the profile does not tell."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import golden

from .helpers import app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e


def _card(page: Any, card: str) -> tuple[str, str]:
    loc = page.locator(f'[data-card="{card}"]')
    return loc.locator(".tbp-card-value").inner_text(), loc.locator(".tbp-card-hint").inner_text()


def test_precision_from_hlo_or_unknown(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="overview_page"))
    wait_ready(page)
    perf = standalone.json("data", run=run, tool="overview_page", rows="0")["performance_summary"]
    value, hint = _card(page, "precision")
    assert value == f"{perf['device_compute_16bit_percent']:.1f}% 16-bit" and value != "0.0% 16-bit"
    assert "element types" in hint
    serve_page.screenshot("overview__jax_mlp")
    serve_page.check()


def test_possibly_input_bound_names_its_reason(standalone: Any, serve_page: Any) -> None:
    """jax_2hosts: "Waiting for input 0.0 %" beside "Possibly input-bound" named no reason."""
    page = serve_page.page
    run = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=run, host="__all__", tool="overview_page"))
    wait_ready(page)
    rec = standalone.json("data", run=run, host="__all__", tool="overview_page", rows="0")["recommendation"]
    assert rec["input_bound"] == "potential"
    _, hint = _card(page, "input")
    assert "Possibly input-bound" in hint and rec["input_bound_reason"] in hint and "'all others'" in hint
    page.goto(app_url(standalone, run=run, host="__all__", tool="input_pipeline_analyzer"))
    wait_ready(page)
    _, hint = _card(page, "input_percent")
    assert rec["input_bound_reason"] in hint
    serve_page.check()


def test_tf_data_not_listed_without_tf_data(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    page.goto(app_url(standalone, run=run_named(standalone, "jax_mlp/"), tool="overview_page"))
    wait_ready(page)
    listed = page.eval_on_selector_all("nav.tbp-tools > a.tbp-tool", "as => as.map(a => a.dataset.tool)")
    assert "overview_page" in listed and "tf_data_bottleneck_analysis" not in listed
    page.goto(app_url(standalone, run=run_named(standalone, "keras_cnn/"), tool="overview_page"))
    wait_ready(page)
    listed = page.eval_on_selector_all("nav.tbp-tools > a.tbp-tool", "as => as.map(a => a.dataset.tool)")
    assert "tf_data_bottleneck_analysis" in listed
    serve_page.check()


def test_op_profile_overall_flops_utilization(standalone: Any, serve_page: Any) -> None:
    """XProf's op profile headline "Overall GPU FLOPS utilization" (it was missing): the root's
    FLOPs over peak x time, equal to XProf 2.24.2's golden on jax_mlp; no negative wasted time."""
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="op_profile"))
    wait_ready(page)
    xprof_root = golden("jax_mlp", "op_profile")["group_by_category:byCategory"]
    value, hint = _card(page, "overall_flops")
    assert value == f"{100 * xprof_root['flops_utilization_fraction']:.1f}%"
    assert "peak" in hint
    page.click("[data-tree] button:has-text('Expand all'), button:has-text('Expand all')")
    cells = page.eval_on_selector_all("[data-tree] td", "tds => tds.map(td => td.innerText.trim())")
    assert cells and not any(c.startswith(("-", "−")) and c not in ("–",) for c in cells)
    serve_page.screenshot("op_profile__jax_mlp")
    serve_page.check()


def test_smart_suggestions_read_as_sentences(standalone: Any, serve_page: Any) -> None:
    """#29 §4: headings and page titles, not rule ids, metric keys and "Open hlo_stats"."""
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="smart_suggestion"))
    wait_ready(page)
    found = standalone.json("data", run=run, tool="smart_suggestion", rows="0")["suggestions"]
    titles = {t["name"]: t["title"] for t in standalone.json("settings")["tools"]}
    assert found
    for s in found:
        item = page.locator(f'[data-rule="{s["rule"]}"]')
        heading = item.locator("strong").inner_text()
        assert s["title"] in heading and s["rule"] not in heading
        assert item.locator("a").inner_text() == f"See {titles[s['page']]}"
        facts = item.locator("ul li").all_inner_texts()
        assert facts and not any("_" in f.split(":")[0] for f in facts), facts
    serve_page.screenshot("smart_suggestion__jax_mlp")
    serve_page.check()


def test_hlo_op_stats_framework_ops_without_trailing_colon(standalone: Any, serve_page: Any) -> None:
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="hlo_stats"))
    wait_ready(page)
    col = page.eval_on_selector_all('[data-table="hlo_ops"] thead tr:first-child th',
                                    "ths => ths.map(th => th.dataset.col)").index("tf_op_name")
    cells = page.eval_on_selector_all(
        '[data-table="hlo_ops"] tbody tr',
        f"trs => trs.map(tr => [tr.children[{col}].dataset.v, tr.children[{col}].innerText])")
    with_colon = [(v, t) for v, t in cells if v and v.strip('"').endswith(":")]
    assert with_colon  # XProf's names end with ":" (empty type); the page drops it
    assert all(t == v.strip('"')[:-1] for v, t in with_colon)
    serve_page.check()


def test_input_pipeline_times_read_at_a_sensible_precision(standalone: Any, serve_page: Any) -> None:
    """#29 §4: "0.0059 ms ± 0.000018" -> the mean in a unit that keeps it >= 1, the spread in it."""
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="input_pipeline_analyzer"))
    wait_ready(page)
    device = standalone.json("data", run=run, tool="input_pipeline_analyzer", rows="0")["device_side"]
    avg_ms, sd_ms = device["input_ms"]["avg"], device["input_ms"]["stddev"]
    assert avg_ms < 1  # jax_mlp waits microseconds for input
    value = page.locator('[data-card="input_time"] .tbp-card-value').inner_text()
    assert value == f"{avg_ms * 1000:.3g} µs ± {sd_ms * 1000:.2g}", value
    # No panel drawn without content (a half-width empty box).
    empty = page.eval_on_selector_all(
        "main .tbp-panel", "ps => ps.filter(p => p.children.length <= 1 && !p.querySelector('canvas')).length")
    assert empty == 0
    assert page.locator("[data-no-host-input]").is_visible()  # said in one line instead
    serve_page.screenshot("input_pipeline__jax_mlp")
    serve_page.check()


def test_compare_has_no_unrelated_default_baseline(standalone: Any, serve_page: Any) -> None:
    """#29 §4: a Keras CPU run as the default baseline of a JAX run gave a confident "-54.6 %
    faster". Without an earlier session of the same run the page asks for a baseline."""
    page = serve_page.page
    run = run_named(standalone, "jax_mlp/")
    compares: list[str] = []
    page.on("request", lambda r: compares.append(r.url) if "/compare" in r.url else None)
    page.goto(app_url(standalone, run=run, tool="compare"))
    page.wait_for_selector("[data-no-baseline]", timeout=60_000)
    assert page.input_value("select[data-pick=base-run]") == ""
    assert compares == []
    # Another host of the same session is no earlier session of the run (#35): the page asks too.
    two = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=two, host="worker1", tool="compare"))
    page.wait_for_selector("[data-no-baseline]", timeout=60_000)
    assert page.input_value("select[data-pick=base-run]") == ""
    assert compares == []
    serve_page.check()
