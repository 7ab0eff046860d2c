"""#29 items on the kernel stats, compare and pod viewer pages in a real browser, at 1280 and
1600 px (screenshots in test-artifacts/): the TensorCore cards show XProf's shares where its
rules recognise something and "not determined" (with the reason) where a 0 % would be false;
expectations come from the backend's JSON and XProf's goldens."""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import golden

from .conftest import SCREENSHOTS
from .helpers import PluginServer, after_frames, app_url, page_failing_on_errors, run_named, wait_ready

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("width", [1280, 1600])
def test_tensorcore_cards(standalone: Any, serve_page: Any, width: int) -> None:
    page = serve_page.page
    page.set_viewport_size({"width": width, "height": 900})
    # jax_mlp: XProf marks its four cuBLAS xmma_gemm kernels eligible and using TensorCores.
    run = run_named(standalone, "jax_mlp/")
    page.goto(app_url(standalone, run=run, tool="kernel_stats"))
    wait_ready(page)
    result = standalone.json("data", run=run, tool="kernel_stats", rows="0")
    g = golden("jax_mlp", "kernel_stats")
    assert g["tensorcore_eligible_rows"] == 4
    share = f"{100 * result['tensorcore_eligible_fraction']:.1f}%"
    assert share != "0.0%"
    assert page.inner_text('[data-card="eligible"] .tbp-card-value') == share
    serve_page.screenshot(f"kernel_stats__jax_mlp_{width}")
    # jax_2hosts: XProf's rules recognise no op and no kernel (its false 0.0 %); its cuBLASLt
    # nvjet_sm90 GEMMs are Hopper TensorCore kernels, and the cards show their share.
    run = run_named(standalone, "jax_2hosts/")
    page.goto(app_url(standalone, run=run, tool="kernel_stats", host="worker0"))
    wait_ready(page)
    assert golden("jax_2hosts", "kernel_stats")["tensorcore_eligible_rows"] == 0
    result = standalone.json("data", run=run, tool="kernel_stats", host="worker0", rows="0")
    share = f"{100 * result['tensorcore_fraction']:.1f}%"
    assert share != "0.0%"
    assert page.inner_text('[data-card="tensorcore"] .tbp-card-value') == share
    serve_page.screenshot(f"kernel_stats__jax_2hosts_{width}")
    serve_page.check()


@pytest.mark.parametrize("width", [1280, 1600])
def test_compare_warns_when_few_ops_overlap(standalone: Any, serve_page: Any, width: int) -> None:
    """A Keras CPU run against the JAX GPU run: the page says how many ops of how many the two
    sides share, before the tables."""
    keras, jax = run_named(standalone, "keras_cnn/"), run_named(standalone, "jax_mlp/")
    page = serve_page.page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(app_url(standalone, run=jax, tool="compare", **{"c.base_run": keras}))
    page.wait_for_selector("[data-verdict]", timeout=120_000)
    wait_ready(page)
    body = standalone.json("compare", base_run=keras, run=jax)
    o = body["overlap"]["ops"]
    assert o["both"] < min(o["baseline"], o["candidate"]) / 2
    warning = page.inner_text("[data-compare-warning]")
    assert body["warnings"] and body["warnings"][0] in warning
    assert f"the baseline has {o['baseline']}, the candidate {o['candidate']}" in warning
    assert page.inner_text('[data-card="ops"] .tbp-card-value') == str(o["both"])
    serve_page.screenshot(f"compare__keras_vs_jax_{width}")
    serve_page.check()


def test_compare_memory_says_what_the_memory_page_says(browser: Any, sample_profiles: Path,
                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two PyTorch runs: the memory page shows the caching allocator's reservation as "Reserved
    by the allocator"; compare compares that memory (it used to call it unavailable) and names
    its capacity in the same words (the backend's memory_profile.CAPACITY_MEANING)."""
    root = tmp_path_factory.mktemp("e2e_cmp_torch")
    for name in ("torch_ddp", "torch_cnn"):
        shutil.copytree(sample_profiles / name, root / "logs" / name)
    server = PluginServer(root / "logs", root / "cache")
    page = page_failing_on_errors(browser)
    try:
        page.set_viewport_size({"width": 1280, "height": 900})
        ddp = next(r["run"] for r in server.json("runs")["runs"] if r["run"].startswith("torch_ddp"))
        cnn = next(r["run"] for r in server.json("runs")["runs"] if r["run"].startswith("torch_cnn"))
        state = {"run": ddp, "tool": "memory_profile"}
        page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
        wait_ready(page)
        label = page.inner_text('[data-card="capacity"] .tbp-card-label')
        assert label == "Reserved by the allocator"
        state = {"run": ddp, "tool": "compare", "c.base_run": cnn}
        page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
        page.wait_for_selector("[data-verdict]", timeout=120_000)
        wait_ready(page)
        body = server.json("compare", base_run=cnn, run=ddp, host="__all__")
        assert "memory" not in body["unavailable"]
        assert "no memory analysis" not in page.inner_text("main")
        page.wait_for_selector('[data-table="memory_allocators"]')
        cells = page.eval_on_selector_all('[data-table="memory_allocators"] tbody td',
                                          "tds => tds.map((td) => td.innerText)")
        assert any(c.startswith(f"{label}: ") for c in cells)
        for width in (1280, 1600):
            page.set_viewport_size({"width": width, "height": 900})
            after_frames(page)  # charts follow the new width
            page.screenshot(path=str(SCREENSHOTS / f"plugin__compare_torch_memory_{width}.png"), full_page=True)
        assert page.tbprof_errors == [], page.tbprof_errors
    finally:
        page.context.close()
        server.close()


TOOLTIP_JS = """
(i) => {
  const c = window.__tbprofCharts.get('pod_step');
  const o = c.currentOption;
  const ps = o.series.map((s) => ({dataIndex: i, seriesName: s.name, value: s.data[i]}));
  return {label: o.xAxis.data[i], tooltip: o.tooltip.formatter(ps)};
}
"""


@pytest.mark.parametrize("width", [1280, 1600])
def test_pod_viewer_one_column_is_a_table(standalone: Any, serve_page: Any, width: int) -> None:
    """One host with one GPU (jax_2hosts' worker0 alone) and a CPU-only run (custom_loop): one
    column each, shown as its breakdown table, not as a chart of one bar."""
    page = serve_page.page
    page.set_viewport_size({"width": width, "height": 900})
    for prefix, host in (("jax_2hosts/", "worker0"), ("custom_loop/", None)):
        run = run_named(standalone, prefix)
        state = {"run": run, "tool": "pod_viewer", **({"host": host} if host else {})}
        page.goto(app_url(standalone, **state))
        wait_ready(page)
        result = standalone.json("data", run=run, tool="pod_viewer", rows="0", **({"host": host} if host else {}))
        shown = [c for c in result["cores"] if not (c["device"] == "all devices" and len(result["cores"]) > 1)]
        assert len(shown) == 1, prefix
        assert page.locator('[data-chart="pod_step"]').count() == 0
        details = page.locator("[data-details][data-single-column]")
        assert details.count() == 1
        core = shown[0]
        # Every category of the step's breakdown is a row of the table, with the backend's bottleneck.
        assert core["bottleneck"][0] in details.inner_text()
        assert details.locator("tbody tr").count() == len(result["step_breakdown_events"])
        serve_page.screenshot(f"pod_viewer__one_column_{prefix.strip('/')}_{width}")
    serve_page.check()


def test_pod_viewer_ranks_and_categories(browser: Any, sample_profiles: Path,
                                         tmp_path_factory: pytest.TempPathFactory) -> None:
    """torch_ddp: bars 'rank 0', 'rank 1' in rank order with the full trace id in the tooltip;
    each rank's GPU row of the table names the same bottleneck as its 'all devices' row."""
    root = tmp_path_factory.mktemp("e2e_pod_torch")
    shutil.copytree(sample_profiles / "torch_ddp", root / "logs" / "torch_ddp")
    server = PluginServer(root / "logs", root / "cache")
    page = page_failing_on_errors(browser)
    try:
        for width in (1280, 1600):
            page.set_viewport_size({"width": width, "height": 900})
            state = {"run": "torch_ddp", "tool": "pod_viewer", "host": "__all__"}
            page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
            wait_ready(page)
            page.wait_for_function("() => window.__tbprofCharts && window.__tbprofCharts.get('pod_step')")
            result = server.json("data", run="torch_ddp", tool="pod_viewer", host="__all__", rows="0")
            hosts = sorted({c["host"] for c in result["cores"]})
            for i, host in enumerate(hosts):  # rank0.…, rank1.…: rank order is name order here
                got = page.evaluate(TOOLTIP_JS, i)
                assert got["label"].startswith(f"rank {i}\n")
                assert host in got["tooltip"]
            rows = result["cores"]
            for host in hosts:
                alls = next(c for c in rows if c["host"] == host and c["device"] == "all devices")
                gpu = next(c for c in rows if c["host"] == host and c["device"] != "all devices")
                assert gpu["bottleneck"] == alls["bottleneck"], host
            page.screenshot(path=str(SCREENSHOTS / f"plugin__pod_viewer_torch_ddp_{width}.png"), full_page=True)
        assert page.tbprof_errors == [], page.tbprof_errors
    finally:
        page.context.close()
        server.close()
