"""A pod's all-hosts page in a real browser: while the server converts the hosts, the loading
message says "converting hosts: k / N" (the page polls GET progress), then the page shows."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers

from .conftest import Server, _watch
from .helpers import app_url, wait_ready

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod

pytestmark = pytest.mark.e2e

# Converted one after another in the server (--workers 1) at ~15 ms a host (decode and
# partial of a jax_2hosts host), 128 hosts take ~2 s: several polls (every 300 ms) see it.
HOSTS = 128

# Records every text the progress line shows, from the page's first script on (no race with
# the test's own polling).
RECORD_PROGRESS_JS = """
window.__progress = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll('.tbp-progress')) {
    const t = el.hidden ? '' : el.textContent;
    if (t && window.__progress[window.__progress.length - 1] !== t) window.__progress.push(t);
  }
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


@pytest.fixture(scope="module")
def pod_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("pod_e2e")
    make_pod(root / "pod", HOSTS)
    log = tmp_path_factory.mktemp("pod_serve_log") / "serve.log"
    with servers.tbprof_serve(root, tmp_path_factory.mktemp("pod_cache"), log,
                              ("--host", "127.0.0.1", "--workers", "1")) as s:
        yield Server("tbprof serve pod", s.base_url)


def test_all_hosts_page_shows_hosts_converting(browser: Any, pod_server: Server) -> None:
    run = pod_server.json("runs")["runs"][0]["run"]
    assert pod_server.json("progress", run=run)["hosts_converted"] == 0  # cold: nothing converted yet
    ctx, w = _watch(browser, pod_server)
    try:
        page = w.page
        page.add_init_script(RECORD_PROGRESS_JS)
        page.goto(app_url(pod_server, run=run, host="__all__", tool="overview_page"))
        wait_ready(page)
        seen: list[str] = page.evaluate("window.__progress")
        counts = []
        for text in seen:
            m = re.fullmatch(r"converting hosts: (\d+) / (\d+)", text)
            assert m, text
            assert int(m.group(2)) == HOSTS
            counts.append(int(m.group(1)))
        # Shown while converting (k < N), counting up.
        assert counts, "the page never showed the hosts converting"
        assert all(0 <= k < HOSTS for k in counts) and counts == sorted(counts)
        # Then the answer replaced the loading message: the all-hosts overview of every host.
        assert page.locator(".tbp-progress").count() == 0
        assert page.locator(".tbp-message-error").count() == 0
        assert pod_server.json("progress", run=run)["hosts_converted"] == HOSTS
        chosen = page.eval_on_selector_all("select option:checked", "els => els.map((e) => e.textContent)")
        assert f"All hosts ({HOSTS})" in chosen
        assert page.locator('a.tbp-tool.tbp-active[data-tool="overview_page"]').count() == 1
        w.check()
    finally:
        ctx.close()
