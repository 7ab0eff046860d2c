"""The Capture Profile dialog in a real browser against a real TensorFlow profiler server.

chromium (/usr/bin/chromium) driven by Playwright; `tbprof serve` on an empty logdir. The
dialog validates before sending, captures, and then the new run is selected and its
summary page loads; a dead address gets its own explanation in the dialog.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.capture.profiler_servers import ProfilerServer
from tests.servers import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
SESSION_RE = re.compile(r"^\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d(_\d+)?$")


@pytest.fixture()
def page(tmp_path: Path) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            pg = browser.new_page()
            pg.set_default_timeout(30_000)
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            yield pg
            assert errors == []
        finally:
            browser.close()


def test_capture_dialog(tf_server: ProfilerServer, page: Any, tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    with servers.tbprof_serve(logdir, tmp_path / "cache", tmp_path / "serve.log") as srv:
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        page.goto(srv.base_url + "/")
        page.click("button[data-action=capture]")
        dialog = page.locator("dialog[data-dialog=capture]")
        dialog.wait_for(state="visible")
        # The dialog's defaults.
        values = {k: dialog.locator(f"[name={k}]").input_value() for k in (
            "durationMs", "hostTracerLevel", "deviceTracerLevel", "pythonTracerLevel", "retries", "delayMs")}
        assert values == {"durationMs": "1000", "hostTracerLevel": "2", "deviceTracerLevel": "1",
                          "pythonTracerLevel": "0", "retries": "3", "delayMs": "0"}

        # Validation happens before anything is sent.
        dialog.locator("[name=addresses]").fill("localhost")
        dialog.locator("[name=durationMs]").fill("0")
        dialog.get_by_role("button", name="Capture").click()
        assert "expected host:port" in dialog.locator("[data-error-for=addresses]").inner_text()
        assert dialog.locator("[data-error-for=durationMs]").inner_text() == "from 1 to 600000"
        assert posts == []

        # A real capture: the new run is selected and its page loads.
        dialog.locator("[name=addresses]").fill(f"grpc://{tf_server.address}")
        dialog.locator("[name=durationMs]").fill("500")
        dialog.get_by_role("button", name="Capture").click()
        dialog.wait_for(state="detached", timeout=90_000)
        assert [u.rsplit("/", 1)[-1] for u in posts] == ["capture"]
        run = page.locator("select.tbp-run-select").input_value()
        assert SESSION_RE.match(run), run
        assert (logdir / "plugins" / "profile" / run / f"localhost_{tf_server.port}.xplane.pb").is_file()
        # The new run opens on its first tool; its profile summary names the host plane.
        page.click("a.tbp-tool[data-tool=profile_summary]")
        page.locator("main.tbp-page[data-page=profile_summary]").wait_for()
        page.get_by_text("/host:CPU").first.wait_for()

        # A dead address: the dialog stays open and explains that address.
        dead = f"127.0.0.1:{free_port()}"
        page.click("button[data-action=capture]")
        dialog = page.locator("dialog[data-dialog=capture]")
        assert dialog.locator("[name=addresses]").input_value() == f"grpc://{tf_server.address}"  # remembered
        dialog.locator("[name=addresses]").fill(dead)
        dialog.locator("[name=retries]").fill("0")
        dialog.get_by_role("button", name="Capture").click()
        failed = dialog.locator(f"li[data-address='{dead}'][data-kind=could_not_connect]")
        failed.wait_for(timeout=60_000)
        # The reason is said once: beside the address, or in the headline when that already says it.
        assert dialog.inner_text().lower().count("could not capture") == 1
        assert dialog.get_by_role("button", name="Capture").is_enabled()
