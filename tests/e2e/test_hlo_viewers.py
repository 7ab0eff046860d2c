"""The memory viewer and the graph viewer as XProf shows them (#29 §4), in a real browser on real
JAX/TPU profiles: the memory-type selector, the buffers live at the peak by program order / size /
padding and the allocation timeline; the graph viewer's module and op pickers, node text that
fits its box, the metadata panel and the HLO text. Expectations come from the backend's JSON
(itself checked against XProf in tests/analyses/test_hlo_tools_parity.py). Screenshots at 1280
and 1600 px go to test-artifacts/."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCREENSHOTS
from .helpers import PluginServer, after_frames, page_failing_on_errors, wait_charts_drawn, wait_ready

pytestmark = pytest.mark.e2e

OPTION_JS = "(id) => JSON.parse(JSON.stringify(window.__tbprofCharts.get(id).currentOption))"
TPU_MODULE = "jit_f(12190760917235803885)"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_hlo")
    for name in ("tpu_inference", "jax_mlp"):
        shutil.copytree(sample_profiles / name, root / "logs" / name)
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


@pytest.fixture()
def page(server: Any, browser: Any) -> Iterator[Any]:
    pg = page_failing_on_errors(browser)
    yield pg
    pg.context.close()
    assert pg.tbprof_errors == [], pg.tbprof_errors


def _open(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0


def _run(server: Any, prefix: str) -> str:
    return next(str(r["run"]) for r in server.json("runs")["runs"] if r["run"].startswith(prefix))


def _shots(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1280, 1600):
        page.set_viewport_size({"width": width, "height": 900})
        after_frames(page)  # charts follow their box's size on the next frame
        page.screenshot(path=str(SCREENSHOTS / f"{name}__{width}.png"), full_page=True)


def _bar_names(page: Any) -> list[str]:
    """The max-heap chart's bars, top to bottom (ECharts lists a category axis bottom up)."""
    return list(reversed(page.evaluate(OPTION_JS, "max_heap")["yAxis"]["data"]))


def test_memory_viewer_memory_types_and_buffer_orders(server: Any, page: Any) -> None:
    standalone = server
    run = _run(server, "tpu_inference")
    _open(page, server, run=run, tool="memory_viewer", **{"o.module": TPU_MODULE})
    result = standalone.json("data", run=run, tool="memory_viewer", module=TPU_MODULE, rows="0")
    # The memory-type selector lists the module's memory spaces (HBM, on-chip, host, ...).
    options = page.locator(".tbp-memory-space-select option")
    assert [options.nth(i).get_attribute("value") for i in range(options.count())] == \
        [str(s["memory_space"]) for s in result["memory_spaces"]]
    assert len(result["memory_spaces"]) > 1
    assert page.locator(".tbp-memory-space-select").input_value() == "0"
    wait_charts_drawn(page, 2)
    live = result["max_heap"]

    def label(b: dict[str, Any]) -> str:
        return str(b["instruction_name"] or b["label"])

    assert _bar_names(page) == [label(b) for b in live]
    # By size and by padding: the backend's orders, drawn top to bottom.
    page.click('[data-order="size"]')
    page.wait_for_function("() => location.hash.includes('c.order=size')")
    assert _bar_names(page) == [label(live[i]) for i in result["by_size_order"]]
    page.click('[data-order="padding"]')
    assert _bar_names(page) == [label(live[i]) for i in result["by_padding_order"]]
    assert page.locator('[data-order="padding"]').get_attribute("aria-pressed") == "true"
    # The allocation timeline draws one box per block of XProf's timeline.
    assert page.locator(".tbp-alloc-timeline rect").count() == len(result["buffer_blocks"]) > 1
    _shots(page, "memory_viewer_tpu_hbm")
    # Host memory: its peak, no buffer bars (XProf draws none for a space's indefinite buffers).
    page.select_option(".tbp-memory-space-select", "5")
    page.wait_for_function("() => location.hash.includes('o.memory_space=5')")
    wait_ready(page)
    host = standalone.json("data", run=run, tool="memory_viewer", module=TPU_MODULE, memory_space="5", rows="0")
    assert page.locator(".tbp-memory-space-select").input_value() == "5"
    peak_card = page.locator('[data-card="peak"]').inner_text()
    assert "15" in peak_card and "GiB" in peak_card, peak_card  # 3 x 5 GiB parameters
    assert host["peak_heap_bytes"] == 3 * 5 * 2**30
    assert page.locator("[data-chart=max_heap]").count() == 0
    assert "No buffer is live at the peak" in page.locator("main").inner_text()
    _shots(page, "memory_viewer_tpu_host")
    # A GPU profile: HBM only, its largest module by default.
    gpu_run = _run(server, "jax_mlp")
    _open(page, server, run=gpu_run, tool="memory_viewer")
    gpu = server.json("data", run=gpu_run, tool="memory_viewer", rows="0")
    assert page.locator(".tbp-memory-space-select option").count() == len(gpu["memory_spaces"]) == 1
    wait_charts_drawn(page, 2)
    assert page.locator(".tbp-alloc-timeline rect").count() == len(gpu["buffer_blocks"])
    _shots(page, "memory_viewer_jax_mlp")


# Every node's text lines against its box: the widest line's rendered width and the box width.
TEXT_FIT_JS = """
() => [...document.querySelectorAll('g.tbp-graph-node')].map((g) => ({
  node: g.dataset.node,
  box: Number(g.querySelector('rect').getAttribute('width')),
  text: Math.max(0, ...[...g.querySelectorAll('text')]
    .map((t) => Number(t.getAttribute('x')) + t.getComputedTextLength())),
}))
"""


def test_graph_viewer_pickers_metadata_and_hlo_text(server: Any, page: Any) -> None:
    run = _run(server, "jax_mlp")
    _open(page, server, run=run, tool="graph_viewer")
    page.wait_for_selector("g.tbp-graph-node", timeout=60_000)
    graph = server.json("data", run=run, tool="graph_viewer", rows="0")
    # The default: the busiest module's costliest fusion, not a two-node async wrapper.
    assert graph["module"] == graph["modules"][0]["module"]
    assert page.locator(".tbp-graph-module").input_value() == graph["program_id"]
    assert page.locator(".tbp-graph-op").input_value() == graph["node_name"]
    assert page.locator("g.tbp-graph-node").count() == len(graph["nodes"]) > 2
    # The op picker offers the module's ops (searchable suggestions).
    assert page.locator("#tbp-graph-ops option").count() == len(graph["ops"])
    # No node text runs past its box (long fusion names are cut in the middle to fit).
    fits = page.evaluate(TEXT_FIT_JS)
    assert fits and all(f["text"] <= f["box"] + 0.5 for f in fits), [f for f in fits if f["text"] > f["box"]]
    # The metadata panel shows the centre op first, with its HLO text and fusion body.
    centre = next(n for n in graph["nodes"] if n["center"])
    assert page.locator("[data-meta-node]").inner_text() == centre["name"]
    assert page.locator(".tbp-hlo-op").inner_text() == centre["hlo_text"]
    assert page.locator(".tbp-hlo-called").inner_text() == centre["called_text"]
    _shots(page, "graph_viewer_jax_mlp")
    # A click selects another op: its details, and a button to centre the graph on it.
    other = next(n for n in graph["nodes"] if not n["center"] and n["opcode"] != "parameter")
    page.click(f'g.tbp-graph-node[data-node="{other["name"]}"]')
    assert page.locator("[data-meta-node]").inner_text() == other["name"]
    assert page.locator(".tbp-hlo-op").inner_text() == other["hlo_text"]
    assert page.locator("main").locator("text=Centre graph here").count() == 1
    # The module's HLO text, on demand.
    page.click('[data-action="module-hlo"]')
    page.wait_for_selector(".tbp-hlo-module", timeout=60_000)
    assert f"%{centre['name']} = " in page.locator(".tbp-hlo-module").inner_text()
    # Searching an op by name and pressing Enter recentres on it.
    target = next(o["name"] for o in graph["ops"] if o["name"] not in {n["name"] for n in graph["nodes"]})
    page.fill(".tbp-graph-op", target)
    page.press(".tbp-graph-op", "Enter")
    page.wait_for_function(f"() => decodeURIComponent(location.hash).includes('o.node_name={target}')")
    page.wait_for_selector(f'g.tbp-graph-node[data-node="{target}"] rect[stroke-width="3"]', timeout=60_000)
    # Another module opens on its own default op.
    second = graph["modules"][1]
    page.select_option(".tbp-graph-module", second["program_id"])
    page.wait_for_function(f"() => location.hash.includes('o.module={second['program_id']}')")
    wait_ready(page)
    page.wait_for_selector("g.tbp-graph-node", timeout=60_000)
    other_graph = server.json("data", run=run, tool="graph_viewer", module=second["program_id"], rows="0")
    assert page.locator(".tbp-graph-op").input_value() == other_graph["node_name"]
    assert other_graph["program_id"] == second["program_id"]
