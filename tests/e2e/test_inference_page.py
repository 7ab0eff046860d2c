"""inference_profile's page in a real browser on a serving profile (no sample profile has
inference requests: tests/helpers.py writes one with three requests of known latency)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.serving import make_server

from tbprof.http.app import create_app
from tests.helpers import SERVING_LATENCY_MS, write_serving_xspace

from .helpers import page_error_text, wait_ready

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("e2e_serving")
    write_serving_xspace(root / "logs" / "serving" / "plugins" / "profile" / "2026_11_26_00_00_00" / "vm.xplane.pb")
    app = create_app(root / "logs", cache_dir=root / "cache", capture_enabled=False)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    thread.join(timeout=10)


def test_inference_profile_page_lists_the_requests(server: str, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(page_error_text(page, e)))
    page.goto(f"{server}/#run=serving%2F2026_11_26_00_00_00&tool=inference_profile")
    wait_ready(page)
    rows = page.locator('[data-table="requests"] tbody tr')
    assert rows.count() == len(SERVING_LATENCY_MS)
    # The table's default order is by latency, longest first: requests 9, 7, 8.
    ids = page.locator('[data-table="requests"] tbody tr td:nth-child(2)').all_inner_texts()
    slowest_first = sorted(SERVING_LATENCY_MS, key=lambda r: -SERVING_LATENCY_MS[r])
    assert [t.strip() for t in ids] == [str(r) for r in slowest_first]
    assert errors == []
    context.close()
