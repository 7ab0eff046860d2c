"""Profile text never runs as script (issue #25): every page of profiles whose names are
markup payloads, every chart point hovered, in Debian's chromium against a real ``tbprof serve``.

The profiles are real demo profiles with their names rewritten (tests/hostile/profiles.py):
jax_mlp (device planes and HLO op names: profile summary's "Active range per plane", the
roofline), custom_loop (tf.data iterator names: the iterator graph), and torch_cnn (a Kineto
trace: process, thread and op names). A payload that ran would count up ``window.__xss``, open
a dialog, request ``/x`` or leave an element with an ``on*`` attribute; the server's CSP would
also refuse an inline script and say so on the console. Each of these fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import servers
from tests.conftest import SAMPLE_PROFILES
from tests.e2e.conftest import Server, Watch, _watch
from tests.hostile.profiles import payload_xspace, rename_chrome_trace

from .helpers import PAGE_READY_JS, app_url

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MARK = "window.__xss=(window.__xss||0)+1"
IMG = f'<img src=x onerror="{MARK}">'
SCRIPT = f"</script><script>{MARK}</script>"
SVG = f'"><svg onload="{MARK}">'
RUNS = {"jax_mlp": "2026_11_26_00_32_23", "custom_loop": "2026_11_26_00_33_59"}
PAYLOAD_RUN = f"{SVG}run"

# Every chart point shown as ECharts shows it on hover (showTip renders the tooltip through
# its formatter at once), and after each one: did the page gain an element it does not make? The
# whole document is searched before the first hover and after the last; in between, what each
# hover added or changed (a MutationObserver's records, taken at once after it: a node added and
# removed again still counts), so that a page of long tables is not searched whole 400 times.
HOVER_ALL_JS = """
(limit) => {
  const bad = (el) => [...el.attributes].some((a) => a.name.startsWith('on')) || (el.tagName === 'IMG')
      || (el.tagName === 'SCRIPT' && !el.src);
  const described = (els) => els.filter(bad).map((el) => el.outerHTML.slice(0, 200));
  const within = (node) => node.nodeType === Node.ELEMENT_NODE ? described([node, ...node.querySelectorAll('*')]) : [];
  const observer = new MutationObserver(() => {});
  observer.observe(document, {subtree: true, childList: true, attributes: true});
  const changed = () => observer.takeRecords().flatMap((r) =>
      r.type === 'attributes' ? described([r.target]) : [...r.addedNodes].flatMap(within));
  const found = [];
  const before = within(document.documentElement);
  if (before.length) found.push(['document', -1, -1, before]);
  let hovered = 0;
  for (const [id, chart] of (window.__tbprofCharts ?? new Map())) {
    const inst = chart.echarts;
    if (!inst) continue;
    const series = inst.getOption().series ?? [];
    series.forEach((s, seriesIndex) => {
      const n = Array.isArray(s.data) ? s.data.length : 0;
      const step = Math.max(1, Math.floor(n / limit));
      for (let dataIndex = 0; dataIndex < n; dataIndex += step) {
        inst.dispatchAction({type: 'showTip', seriesIndex, dataIndex});
        hovered++;
        const added = changed();
        if (added.length) found.push([id, seriesIndex, dataIndex, added]);
      }
    });
    inst.dispatchAction({type: 'hideTip'});
  }
  const added = changed();
  observer.disconnect();
  const after = within(document.documentElement);
  if (added.length || after.length) found.push(['document', -1, -1, [...added, ...after]]);
  return {hovered, found, tooltips: document.querySelectorAll('.tbp-chart div').length};
}
"""

# Every chart of the page drawn (each chart's ``ready``: its chunk loaded and its first option
# drawn), then two animation frames, instead of a fixed sleep.
CHARTS_DRAWN_JS = """
() => Promise.all([...(window.__tbprofCharts ?? new Map()).values()].map((c) => c.ready))
    .then(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))))
"""


@pytest.fixture(scope="module")
def payload_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("payloads")
    logdir = root / "logs"
    for run, session in RUNS.items():
        src = SAMPLE_PROFILES / run / "plugins" / "profile" / session / "vm.xplane.pb"
        payload_xspace(src, logdir / run / "plugins" / "profile" / session / "vm.xplane.pb", IMG.encode(),
                       SCRIPT.encode())
    trace = next((SAMPLE_PROFILES / "torch_cnn").glob("*.pt.trace.json"))
    payloads = (IMG, SCRIPT, SVG)
    rename_chrome_trace(trace, logdir / "torch_cnn" / trace.name,
                        lambda name, what: payloads[len(name) % 3] + name)
    # A run and a host named by payloads (a folder and a file name may hold any of them but the
    # "/" of SCRIPT): the compare page names its sides by run and host in its chart's series.
    rename_chrome_trace(trace, logdir / PAYLOAD_RUN / f"{IMG}vm.pt.trace.json", lambda name, what: name)
    with servers.tbprof_serve(logdir, root / "cache", root / "serve.log") as s:
        yield Server("tbprof serve", s.base_url)


@pytest.fixture()
def payload_page(browser: Any, payload_server: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, payload_server)
    yield w
    ctx.close()


def _pages(server: Server) -> list[tuple[str, str]]:
    return [(r["run"], tool) for r in server.json("runs")["runs"] for tool in r["tools"]]


def test_payload_names_never_run(payload_server: Server, payload_page: Watch) -> None:
    page = payload_page.page
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    pages = _pages(payload_server)
    assert {r for r, _ in pages} >= {"torch_cnn"} and len(pages) > 30, pages
    hovered_total = 0
    shown_payload = set()
    for run, tool in pages:
        page.goto(app_url(payload_server, run=run, tool=tool))
        page.wait_for_function(PAGE_READY_JS, timeout=120_000)
        page.evaluate(CHARTS_DRAWN_JS)
        result = page.evaluate(HOVER_ALL_JS, 400)
        hovered_total += result["hovered"]
        assert result["found"] == [], (run, tool, result["found"][:3])
        text = page.inner_text("body")
        for payload in (IMG, SCRIPT, SVG):
            if payload in text:
                shown_payload.add((tool, payload))
        page.wait_for_timeout(200)  # an injected <img src=x> fails to load asynchronously
        assert page.evaluate("() => window.__xss ?? 0") == 0, (run, tool)
        assert dialogs == [], (run, tool, dialogs)
    # The payloads reached the pages (as text) and the charts were hovered: the test saw them.
    assert hovered_total > 1000, hovered_total
    assert {t for t, _ in shown_payload} >= {"profile_summary", "framework_op_stats", "roofline_model",
                                            "tf_data_bottleneck_analysis"}, shown_payload
    payload_page.check()
    assert not any(url.endswith("/x") for url, _ in payload_page.requests)


def test_known_tooltips_show_payloads_as_text(payload_server: Server, payload_page: Watch) -> None:
    """The three tooltips that built HTML from profile text: hovered, each shows its payload
    literally (escaped), and nothing ran."""
    page = payload_page.page
    runs = {r["run"].split("/")[0]: r["run"] for r in payload_server.json("runs")["runs"]}
    for run, tool, chart in ((runs["jax_mlp"], "profile_summary", "plane_ranges"),
                             (runs["jax_mlp"], "roofline_model", "roofline"),
                             (runs["custom_loop"], "tf_data_bottleneck_analysis", "tf_data_graph_0")):
        page.goto(app_url(payload_server, run=run, tool=tool))
        page.wait_for_function(PAGE_READY_JS, timeout=120_000)
        page.wait_for_function("(id) => window.__tbprofCharts?.get(id)?.echarts", arg=chart, timeout=60_000)
        texts = page.evaluate("""(id) => {
          const inst = window.__tbprofCharts.get(id).echarts;
          const out = [];
          (inst.getOption().series ?? []).forEach((s, seriesIndex) => {
            const n = Array.isArray(s.data) ? s.data.length : 0;
            for (let dataIndex = 0; dataIndex < n; dataIndex++) {
              inst.dispatchAction({type: 'showTip', seriesIndex, dataIndex});
              const tip = [...inst.getDom().querySelectorAll('div')].filter((d) => d.style.position === 'absolute'
                  && d.style.zIndex !== '').map((d) => d.textContent).join(' ');
              out.push(tip);
            }
          });
          return out;
        }""", chart)
        joined = " ".join(texts)
        assert IMG in joined or SCRIPT in joined, (tool, joined[:500])
        page.wait_for_timeout(200)
        assert page.evaluate("() => window.__xss ?? 0") == 0, tool
    payload_page.check()


def test_compare_page_shows_payload_run_and_host_names_as_text(payload_server: Server, payload_page: Watch) -> None:
    """The compare page against a baseline whose run and host names are payloads: its charts'
    series are named after them ("baseline: <run> / <host>") and shown by ECharts' own tooltip;
    every point hovered, the names shown as text, nothing ran."""
    page = payload_page.page
    runs = {r["run"]: r for r in payload_server.json("runs")["runs"]}
    cand = runs["torch_cnn"]
    base = runs[PAYLOAD_RUN]
    assert base["hosts"] == [f"{IMG}vm"]
    page.goto(app_url(payload_server, run="torch_cnn", host=cand["hosts"][0], tool="compare",
                      **{"c.base_run": PAYLOAD_RUN, "c.base_host": base["hosts"][0]}))
    page.wait_for_function("() => document.querySelector('[data-verdict]') !== null", timeout=120_000)
    page.wait_for_function(PAGE_READY_JS, timeout=120_000)
    page.wait_for_function("() => window.__tbprofCharts?.get('compare_step_time')?.echarts", timeout=60_000)
    result = page.evaluate(HOVER_ALL_JS, 400)
    assert result["hovered"] > 0 and result["found"] == [], result
    series = page.evaluate("() => window.__tbprofCharts.get('compare_step_time').echarts.getOption()"
                           ".series.map((s) => s.name).join(' ')")
    assert IMG in series and SVG in series, series  # the names reached the chart as they are
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.__xss ?? 0") == 0
    assert IMG in page.inner_text("body")
    payload_page.check()
