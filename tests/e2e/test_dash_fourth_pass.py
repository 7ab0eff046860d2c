"""#35 in a real browser, each page at 1600 px, 1280 px and 1280 px in dark mode: one device-idle
and one communication headline on the overview and one panel of every definition; the TPU
overview's items; nothing overflowing its card; chart labels that do not overlap and legends
that are whole; ranks in rank order; the GPU counters drawn as charts; the critical path's
pickers and explanation; roofline ops above peak flagged; what to record on an empty page; and
a compare page that asks for a baseline instead of picking an unrelated run.

One server for the module (a real WSGI server of the plugin's routes on copies of the demo
runs); expected numbers come from the backend's JSON, formatted as the pages format them.
"""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCREENSHOTS
from .helpers import PluginServer, page_failing_on_errors, wait_charts_drawn, wait_ready

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DDP = "torch_ddp"
CNN = "torch_cnn"
TPU_PREFIX = "tpu_inference/"
LOOKS = [(1600, "light"), (1280, "light"), (1280, "dark")]

# Elements of a card that lie outside it (the long kernel name over its neighbours).
CARD_OVERFLOW_JS = """
() => {
  const out = [];
  for (const card of document.querySelectorAll('.tbp-card')) {
    const c = card.getBoundingClientRect();
    if (card.scrollWidth > card.clientWidth + 1) out.push(card.dataset.card + ': scrolls');
    for (const el of card.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      if (r.left < c.left - 1 || r.right > c.right + 1 || r.bottom > c.bottom + 1)
        out.push(card.dataset.card + ': ' + el.className);
    }
  }
  return out;
}
"""

# The text drawn in a chart's canvas (ECharts' text spans), in chart pixels.
CHART_TEXT_JS = """
(id) => {
  const chart = window.__tbprofCharts.get(id).echarts;
  const zr = chart.getZr();
  const out = [];
  for (const el of zr.storage.getDisplayList(true)) {
    if (el.type !== 'tspan' || el.invisible || el.ignore || !el.style || !el.style.text) continue;
    const r = el.getBoundingRect().clone();
    const m = el.getComputedTransform();
    if (m) r.applyTransform(m);
    out.push({text: String(el.style.text), x: r.x, y: r.y, w: r.width, h: r.height});
  }
  return {width: zr.getWidth(), height: zr.getHeight(), texts: out};
}
"""

# The names a chart's legend shows (its formatter applied).
LEGEND_JS = """
(id) => {
  const chart = window.__tbprofCharts.get(id).echarts;
  const legend = chart.getModel().getComponent('legend');
  if (!legend) return null;
  const names = legend.getData().map((d) => d.get('name'));
  const fmt = legend.get('formatter');
  return {type: legend.get('type'), names, shown: names.map((n) => typeof fmt === 'function' ? fmt(n) : n)};
}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_dash4")
    for name in (DDP, CNN, "tpu_inference", "keras_cnn"):
        shutil.copytree(sample_profiles / name, root / "logs" / name)
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


@pytest.fixture(scope="module")
def tpu(server: Any) -> str:
    return next(r["run"] for r in server.json("runs")["runs"] if r["run"].startswith(TPU_PREFIX))


@pytest.fixture()
def looks(browser: Any) -> Iterator[Any]:
    """A page that a test drives through every look (width, colour scheme)."""
    pg = page_failing_on_errors(browser)
    yield pg
    pg.context.close()
    assert pg.tbprof_errors == [], pg.tbprof_errors


def _open(page: Any, server: Any, width: int, scheme: str, **state: str) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0


def _shot(page: Any, name: str, width: int, scheme: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"dash4__{name}__{width}_{scheme}.png"), full_page=True)


def _pct(v: float) -> str:
    return f"{v:.1f}%"  # formatPercent: one decimal


def _overlaps(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
            h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
            if w > 1 and h > 1:
                out.append((a["text"], b["text"]))
    return out


def _chart_text_ok(page: Any, chart_id: str) -> dict[str, Any]:
    """No two texts of the chart overlap and every text lies inside the chart."""
    drawn = page.evaluate(CHART_TEXT_JS, chart_id)
    assert drawn["texts"], chart_id
    assert _overlaps(drawn["texts"]) == [], (chart_id, _overlaps(drawn["texts"]))
    for t in drawn["texts"]:
        assert t["x"] >= -1 and t["x"] + t["w"] <= drawn["width"] + 1, (chart_id, t)
        assert t["y"] >= -1 and t["y"] + t["h"] <= drawn["height"] + 1, (chart_id, t)
    return dict(drawn)


def _legend_whole(page: Any, chart_id: str) -> None:
    legend = page.evaluate(LEGEND_JS, chart_id)
    assert legend is not None, chart_id
    assert legend["type"] == "plain", chart_id  # a paged legend hides names behind arrows
    assert legend["shown"] == legend["names"], (chart_id, legend)  # no name cut


def test_overview_one_headline_per_concept_and_one_panel(server: Any, looks: Any) -> None:
    result = server.json("data", run=DDP, host="__all__", tool="overview_page", rows="100")
    metrics = {m["key"]: m for m in result["metrics"]}
    hta = server.json("data", run=DDP, host="__all__", tool="gpu_breakdown", rows="0")
    hta_metrics = {m["key"]: m for m in hta["metrics"]}
    steps = result["step_time_graph"]["step"]
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="overview_page")
        looks.wait_for_selector('[data-section="idle_panel"][data-gpu-breakdown="ready"]')
        # One card per concept, XProf's step-time numbers.
        labels = looks.locator(".tbp-card .tbp-card-label").all_inner_texts()
        assert sum(1 for x in labels if x.startswith("Device idle")) == 1, labels
        assert sum(1 for x in labels if x.startswith(("Device collectives", "Communication"))) == 1, labels
        card = looks.inner_text('[data-card="device_idle"] .tbp-card-value')
        assert card == _pct(metrics["device_idle_of_step_time"]["value_percent"])
        # The panel: every definition once, with its window, the backend's values.
        rows = looks.locator('[data-section="idle_panel"] tbody tr')
        shown = {rows.nth(i).get_attribute("data-metric"): rows.nth(i) for i in range(rows.count())}
        for key in ("device_idle_of_step_time", "device_idle_of_device_time", "device_idle_of_kernel_timeline",
                    "device_collectives_of_step_time", "communication_of_kernel_timeline"):
            assert key in shown, key
            value = (metrics.get(key) or hta_metrics[key])["value_percent"]
            assert shown[key].locator("[data-metric-value]").inner_text() == _pct(value), key
            assert "each" in shown[key].locator("td").nth(3).inner_text()  # the window, in words
        # The Kineto run's collectives share of device op time counts its collective spans
        # (nccl:all_reduce, tests/analyses/test_llm_runs.py derives it): shown, and not 0.0 %.
        share = metrics["collectives_of_device_op_time"]["value_percent"]
        assert share is not None and share > 0
        assert shown["collectives_of_device_op_time"].locator("[data-metric-value]").inner_text() == _pct(share)
        # Nothing leaves its card.
        assert looks.evaluate(CARD_OVERFLOW_JS) == []
        # The step chart: one label per bar, none over another, every category in the legend.
        wait_charts_drawn(looks, min_charts=2)
        drawn = _chart_text_ok(looks, "step_time")
        for step in steps:
            assert any(t["text"] == step for t in drawn["texts"]), (step, width)
        _legend_whole(looks, "step_time")
        _legend_whole(looks, "breakdown")
        _chart_text_ok(looks, "breakdown")
        _shot(looks, "overview_torch_ddp", width, scheme)


def test_tpu_overview(server: Any, tpu: str, looks: Any) -> None:
    result = server.json("data", run=tpu, tool="overview_page", rows="0")
    diagnosis = result["steps"]["diagnosis"]
    assert result["steps"]["step_count"] == 0 and diagnosis
    idle = next(m for m in result["metrics"] if m["key"] == "device_idle_of_device_time")["value_percent"]
    root = server.json("data", run=tpu, tool="op_profile", rows="0")["by_category"]
    devices = result["run_environment"]["devices"]
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=tpu, tool="overview_page")
        looks.wait_for_selector('[data-section="tpu_cards"][data-op-profile="ready"]')
        text = looks.inner_text("main.tbp-page")
        # Why there are no steps: said once.
        assert text.count(diagnosis[:60]) == 1
        assert looks.inner_text('[data-card="step_time"] .tbp-card-value') == "not determined"
        assert "0 ms ± 0" not in text
        assert looks.locator('[data-chart="step_time"]').count() == 0  # no empty chart frame
        assert looks.locator("[data-gpu-breakdown]").count() == 0  # no HTA block: the run has no such tool
        # Cores: one per TPU plane, as XProf counts them (its golden: 4); never "0 cores".
        assert "0 cores" not in text
        row = looks.locator('[data-section="environment"] .tbp-kv-row', has_text="TPU cores")
        assert row.locator("span").nth(1).inner_text() == str(len(devices))
        # XProf's TPU cards.
        assert looks.inner_text('[data-card="tpu_duty_cycle"] .tbp-card-value') == _pct(100 - idle)
        value = '[data-card="{}"] .tbp-card-value'.format
        assert looks.inner_text(value("flops_utilization")) == _pct(100 * root["flops_utilization"])
        assert looks.inner_text(value("hbm_utilization")) == _pct(100 * root["hbm_bw_utilization"])
        assert looks.evaluate(CARD_OVERFLOW_JS) == []
        _shot(looks, "overview_tpu", width, scheme)


def test_tpu_input_pipeline_without_steps(server: Any, tpu: str, looks: Any) -> None:
    """No steps on the TPU run: the input pipeline page says why once, draws no empty step chart
    and no empty step-breakdown table, and its verdict does not repeat the Steps box."""
    result = server.json("data", run=tpu, tool="input_pipeline_analyzer", rows="0")
    diagnosis = result["steps"]["diagnosis"]
    assert result["steps"]["step_count"] == 0 and diagnosis and result["verdict"]["summary_next_step"] == diagnosis
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=tpu, tool="input_pipeline_analyzer")
        text = looks.inner_text("main.tbp-page")
        assert text.count(diagnosis[:60]) == 1
        assert looks.locator('[data-chart="input_wait"]').count() == 0  # no empty chart frame
        assert looks.locator("[data-no-steps]").count() == 1
        assert "Device-side step time breakdown" not in text
        _shot(looks, "input_pipeline_tpu", width, scheme)


def test_stragglers_cards_fit_and_say_what_they_measure(server: Any, looks: Any) -> None:
    result = server.json("data", run=DDP, host="__all__", tool="stragglers", rows="0")
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="stragglers")
        assert looks.evaluate(CARD_OVERFLOW_JS) == []
        hint = looks.inner_text('[data-card="mean_iteration"] .tbp-card-hint')
        assert "all ranks" in hint and "each rank's mean step time" in hint
        waited = result["waited_for"]
        expected = "–" if waited is None else f"rank {waited}"
        assert looks.inner_text('[data-card="waited_for"] .tbp-card-value') == expected
        _shot(looks, "stragglers", width, scheme)


def test_pie_legends_whole_beside_their_donut(server: Any, looks: Any) -> None:
    """GPU breakdown's kernel-type pie names every type whole ("COMPUTATION overlapping
    COMMUNICATION", 37 characters, fits beside the donut of a half-width panel at 1280 px);
    kernel stats' pie of long kernel names cuts them in the middle, each legend text inside its
    chart and none over another or the donut's labels."""
    kinds = server.json("table", run=DDP, host="__all__", tool="gpu_breakdown", table="kernel_type_breakdown")
    at = [c["name"] for c in kinds["columns"]].index("kernel_type")
    long_names = {"COMPUTATION overlapping COMMUNICATION", "COMMUNICATION overlapping MEMORY"}
    assert long_names <= {r[at] for r in kinds["rows"]}
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="gpu_breakdown")
        wait_charts_drawn(looks, min_charts=2)
        _legend_whole(looks, "gpu_kernel_types")
        _chart_text_ok(looks, "gpu_kernel_types")
        _shot(looks, "gpu_breakdown_torch_ddp", width, scheme)
        _open(looks, server, width, scheme, run=CNN, tool="kernel_stats")
        wait_charts_drawn(looks, min_charts=1)
        legend = looks.evaluate(LEGEND_JS, "pie_by_kernel")
        assert legend["type"] == "plain" and len(set(legend["shown"])) == len(legend["names"])
        _chart_text_ok(looks, "pie_by_kernel")
        _shot(looks, "kernel_stats_torch_cnn", width, scheme)


def test_query_chart_labels_inside_and_apart(server: Any, looks: Any) -> None:
    """The Query page's chart of its default answer (kernels per rank and name): upright bar labels
    that name the rank and the kernel, none over another, every text (axis names too) inside the
    chart, at each width and in dark mode."""
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="query")
        looks.wait_for_function("() => document.querySelector('[data-testid=sql-status]')?.dataset.rows !== undefined")
        wait_charts_drawn(looks, min_charts=1)
        drawn = _chart_text_ok(looks, "sql_chart")
        labels = [t["text"] for t in drawn["texts"] if " · " in t["text"]]
        assert labels and all(t.startswith("rank") for t in labels), labels
        assert any(t["text"] == "rank · name" for t in drawn["texts"])  # the x axis says what a bar is
        _shot(looks, "query_torch_ddp", width, scheme)
    # Short labels (a TPU run's HLO op names): the axis name follows them, inside the chart.
    tpu_run = next(r["run"] for r in server.json("runs")["runs"] if r["run"].startswith(TPU_PREFIX))
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=tpu_run, tool="query")
        looks.wait_for_function("() => document.querySelector('[data-testid=sql-status]')?.dataset.rows !== undefined")
        wait_charts_drawn(looks, min_charts=1)
        drawn = _chart_text_ok(looks, "sql_chart")
        assert any(t["text"] == "hlo_op" for t in drawn["texts"])


def test_cpu_run_overview_has_no_gpu_breakdown_block(server: Any, looks: Any) -> None:
    """keras_cnn ran on the CPU: HTA's kernel-timeline idle and communication are not determined
    (null), so the overview shows no rows of "–" for them and no link to a GPU breakdown of
    nothing, whatever the run list's candidate tools say before the run is converted."""
    runs = server.json("runs")["runs"]
    run = next(r["run"] for r in runs if r["run"].startswith("keras_cnn/"))
    # Not converted yet: the run list offers its kind's candidate tools, GPU breakdown among them.
    assert "gpu_breakdown" in next(r for r in runs if r["run"] == run)["tools"]
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=run, tool="overview_page")
        looks.wait_for_function("() => !document.querySelector('[data-gpu-breakdown=\"loading\"]')")
        assert looks.locator("[data-gpu-breakdown-link]").count() == 0
        cells = looks.locator('[data-section="idle_panel"] [data-metric-value]').all_inner_texts()
        assert "–" not in cells, cells
        _shot(looks, "overview_keras_cnn", width, scheme)
    hta = server.json("data", run=run, tool="gpu_breakdown", rows="0")["metrics"]
    assert hta and all(m["value_percent"] is None for m in hta)


def test_ranks_in_rank_order(server: Any, looks: Any) -> None:
    hosts = server.json("data", run=DDP, host="__all__", tool="profile_summary", rows="0")["hosts"]
    assert [h["host"].split(".")[0] for h in hosts] == ["rank0", "rank1"]
    for width, scheme in LOOKS[:1]:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="pod_viewer")
        text = looks.inner_text("main.tbp-page")
        assert text.index("rank0.") < text.index("rank1.")


def test_kernel_sequence_patterns_are_whole(server: Any, looks: Any) -> None:
    table = server.json("data", run=CNN, tool="kernel_sequences", rows="100")["tables"]["patterns"]
    at = [c["name"] for c in table["columns"]].index("pattern")
    patterns = [r[at] for r in table["rows"]]
    assert len(set(patterns)) == len(patterns) > 1
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=CNN, tool="kernel_sequences")
        cells = looks.locator('[data-table="patterns"] tbody td.tbp-wrap')
        assert cells.count() == len(patterns)
        shown = []
        for i in range(cells.count()):
            cell = cells.nth(i)
            # Wrapped, not cut: the cell shows its whole text; the full pattern is its tooltip.
            assert cell.evaluate("(td) => td.scrollWidth <= td.clientWidth + 1")
            # In view: inside the table's scroll box, not past its right edge.
            assert cell.evaluate("(td) => td.getBoundingClientRect().right"
                                 " <= td.closest('.tbp-table-widget').getBoundingClientRect().right + 1")
            assert cell.get_attribute("title") in patterns
            shown.append(cell.inner_text())
        assert len(set(shown)) == len(shown)  # distinct patterns read distinct
        # The table fits its section without a sideways scroll of the page.
        assert looks.evaluate("document.documentElement.scrollWidth") <= width
        _shot(looks, "kernel_sequences_torch_cnn", width, scheme)


def test_gpu_counters_drawn_as_charts(server: Any, looks: Any) -> None:
    result = server.json("data", run=DDP, host="__all__", tool="gpu_counters", rows="0")
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="gpu_counters")
        charts = {c["id"] for c in wait_charts_drawn(looks, min_charts=2)}
        assert {"queue_length_series", "memory_bw_series"} <= charts
        looks.wait_for_selector('[data-series="queue_length_series"] [data-series-points]')
        points = looks.get_attribute('[data-series="queue_length_series"] [data-series-points]', "data-series-points")
        assert int(points or 0) == result["tables"]["queue_length_series"]["total_rows"]
        assert looks.inner_text('[data-card="peak_memory_bw"] .tbp-card-label') == "Peak memory bandwidth"
        assert "gibps" not in looks.inner_text("main.tbp-page").lower()
        for chart_id in ("queue_length_series", "memory_bw_series"):
            _legend_whole(looks, chart_id)
            _chart_text_ok(looks, chart_id)
            option = looks.evaluate("(id) => JSON.parse(JSON.stringify(window.__tbprofCharts.get(id).currentOption))",
                                    chart_id)
            assert option["yAxis"]["min"] == 0  # no negative queue or bandwidth on the axis
        _shot(looks, "gpu_counters", width, scheme)


def test_critical_path_pickers_and_meaning(server: Any, looks: Any) -> None:
    result = server.json("data", run=DDP, host="__all__", tool="critical_path", rows="0")
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="critical_path")
        ranks = looks.locator('select[data-pick="cp-rank"] option').all_inner_texts()
        assert [r.split(" ")[1] for r in ranks] == [str(r) for r in result["ranks"]]
        assert looks.locator('.tbp-options input[name="rank"], .tbp-options input[data-option="rank"]').count() == 0
        assert "rank -1" not in looks.inner_text("main.tbp-page")
        # The page fits its window: no sideways scroll for the long kernel names of the path.
        assert looks.evaluate("document.documentElement.scrollWidth") <= width
        meaning = looks.inner_text('[data-section="cp_meaning"]')
        assert "longest chain" in meaning
        shares = result["breakdown_percent"]
        if shares.get("gpu_communication_bound", 0) + shares.get("gpu_kernel_kernel_overhead", 0) >= 50:
            assert "waiting on another rank" in meaning
        _shot(looks, "critical_path", width, scheme)
    # Another rank through the picker.
    other = str(result["ranks"][-1])
    looks.select_option('select[data-pick="cp-rank"]', other)
    looks.wait_for_function("(r) => location.hash.includes('o.rank=' + r)", arg=other)
    wait_ready(looks)
    assert looks.input_value('select[data-pick="cp-rank"]') == other


def test_roofline_flags_ops_above_peak(server: Any, tpu: str, looks: Any) -> None:
    table = server.json("data", run=tpu, tool="roofline_model", rows="100")["tables"]["roofline"]
    cols = [c["name"] for c in table["columns"]]
    fractions = [cols.index(c) for c in ("roofline_efficiency", "compute_efficiency", "max_mem_bw_utilization")]
    over = [r for r in table["rows"] if any(isinstance(r[i], float | int) and r[i] > 1 for i in fractions)]
    assert over  # async copies of a few nanoseconds: far above the HBM peak
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=tpu, tool="roofline_model")
        assert looks.get_attribute("[data-over-peak]", "data-over-peak") == str(len(over))
        flagged = looks.locator('[data-table="roofline"] td.tbp-over-peak')
        assert flagged.count() >= len(over)
        assert "caps these at 100 %" in (flagged.first.get_attribute("title") or "")
        _shot(looks, "roofline_tpu", width, scheme)


def test_empty_module_view_says_what_to_record(server: Any, looks: Any) -> None:
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="module_view")
        box = looks.inner_text('[data-no-data="module_view"]')
        assert "with_modules=True" in box
        _shot(looks, "module_view_empty", width, scheme)


def test_compare_asks_instead_of_an_unrelated_baseline(server: Any, looks: Any) -> None:
    for width, scheme in LOOKS:
        _open(looks, server, width, scheme, run=DDP, host="__all__", tool="compare")
        looks.wait_for_selector("[data-no-baseline]")
        assert looks.input_value("select[data-pick=base-run]") == ""
        assert "+117" not in looks.inner_text("main.tbp-page")
        _shot(looks, "compare_no_baseline", width, scheme)
