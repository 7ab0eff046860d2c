"""One concept, one number, one definition (#29 §1): every page that shows a headline metric
(analyses/metrics.py) names it with its denominator, explains it in a tooltip and shows the same
value as every other page that shows it; metrics with the same word ("Device idle") but another
denominator say so."""

from __future__ import annotations

from typing import Any

import pytest

from tbprof.analyses.metrics import BY_KEY

from .helpers import app_url, run_named, wait_ready

pytestmark = pytest.mark.e2e

SHOWN_JS = """
() => [...document.querySelectorAll('[data-metric]')].map((el) => ({
  key: el.dataset.metric,
  value: el.querySelector('[data-metric-value]').innerText.trim(),
  text: el.innerText,
  title: el.title,
}))
"""


def _shown(page: Any, server: Any, run: str, tool: str, wait_for: str | None = None) -> list[dict[str, str]]:
    page.goto(app_url(server, run=run, tool=tool))
    wait_ready(page)
    if wait_for:
        page.wait_for_selector(wait_for, timeout=60_000)
    return list(page.evaluate(SHOWN_JS))


def _pct(v: float) -> str:
    return f"{v:.1f}%"  # formatPercent's one decimal


def test_pages_agree_on_each_metric(standalone: Any, serve_page: Any) -> None:
    # One host, so every page reads the same host (an all-hosts page is another scope).
    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    pages = {
        "overview_page": _shown(page, standalone, run, "overview_page", '[data-gpu-breakdown="ready"]'),
        "framework_op_stats": _shown(page, standalone, run, "framework_op_stats"),
        "op_profile": _shown(page, standalone, run, "op_profile"),
        "smart_suggestion": _shown(page, standalone, run, "smart_suggestion"),
        "gpu_breakdown": _shown(page, standalone, run, "gpu_breakdown"),
    }
    serve_page.screenshot("gpu_breakdown__jax_mlp")
    by_key: dict[str, dict[str, str]] = {}
    for tool, shown in pages.items():
        for m in shown:
            d = BY_KEY[m["key"]]
            # The name says the denominator; the tooltip is the one definition.
            assert d.label in m["text"] and d.of in m["text"], (tool, m)
            assert m["title"] == d.definition, (tool, m)
            by_key.setdefault(m["key"], {})[tool] = m["value"]
    for key, values in by_key.items():
        assert len(set(values.values())) == 1, (key, values)

    # Device idle of the profiled device time: framework op stats, op profile and smart
    # suggestions; its value is the IDLE share of framework op stats' own device totals.
    idle_pages = by_key["device_idle_of_device_time"]
    assert {"framework_op_stats", "op_profile", "smart_suggestion"} <= set(idle_pages)
    device = standalone.json("data", run=run, tool="framework_op_stats", rows="0")["sides"]["device"]
    assert idle_pages["framework_op_stats"] == _pct(100 * device["idle_time_us"] / device["total_time_us"])
    # The step-time idle (XProf's overview formula) and HTA's idle are other metrics, and read so.
    overview = standalone.json("data", run=run, tool="overview_page", rows="0")
    assert by_key["device_idle_of_step_time"]["overview_page"] == _pct(
        overview["performance_summary"]["percent_of_step_time"]["idle_percent"])
    hta = standalone.json("data", run=run, tool="gpu_breakdown", rows="0")
    assert by_key["device_idle_of_kernel_timeline"] == {"overview_page": _pct(hta["device_idle_percent"]),
                                                        "gpu_breakdown": _pct(hta["device_idle_percent"])}
    # Same word, other denominator: never the same name.
    names = {(BY_KEY[k].label, BY_KEY[k].of) for k in by_key}
    assert len(names) == len(by_key)
    serve_page.check()


def test_host_idle_says_what_it_sums(standalone: Any, serve_page: Any) -> None:
    """Keras on CPU: "Host idle 80.8 % of 2.891 s" on a 392 ms profile read as a contradiction;
    the card now says the denominator is summed over threads."""
    run = run_named(standalone, "keras_cnn/")
    page = serve_page.page
    shown = {m["key"]: m for m in _shown(page, standalone, run, "framework_op_stats")}
    host = shown["host_idle_of_thread_time"]
    assert "summed over threads" in host["text"]
    assert "device_idle_of_device_time" not in shown  # a CPU run has no device to be idle
    serve_page.check()


def test_gpu_breakdown_page(standalone: Any, serve_page: Any) -> None:
    """#29 §4: charts (per-GPU stacked time, kernel types), shares as percentages, µs, and no
    "rank 0" column on a JAX run (one process)."""
    from .helpers import column_names, wait_charts_drawn

    run = run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.goto(app_url(standalone, run=run, tool="gpu_breakdown"))
    wait_ready(page)
    charts = {c["id"]: c for c in wait_charts_drawn(page, min_charts=2)}
    assert {"gpu_temporal", "gpu_kernel_types"} <= set(charts)
    temporal = page.evaluate(
        "() => JSON.parse(JSON.stringify(window.__tbprofCharts.get('gpu_temporal').currentOption))")
    backend = standalone.json("data", run=run, tool="gpu_breakdown", rows="0")
    assert len(temporal["xAxis"]["data"]) == backend["tables"]["temporal_breakdown"]["total_rows"] == 2
    assert not any("rank" in x for x in temporal["xAxis"]["data"])
    assert "rank" not in column_names(page, "temporal_breakdown")
    header = page.inner_text('[data-table="idle_time_breakdown"] thead')
    assert "Share of the stream's idle time (%)" in header and "(µs)" in header
    serve_page.screenshot("gpu_breakdown__jax_mlp_charts")
    serve_page.check()
