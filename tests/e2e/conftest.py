"""Browser tests: a real TensorBoard and a real `tbprof serve` on real profiles, driven by
Playwright in Debian's chromium (never a downloaded browser).

Servers start once per session (tests/servers.py: free loopback port, bounded readiness
wait, process group killed at teardown) and share one converted-profile cache. Each test
gets a fresh browser context whose console errors, page errors and requests are recorded;
`Watch.check()` asserts none of them is wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import servers
from tests.e2e.helpers import page_error_text, page_failing_on_errors

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TBPROF_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SCREENSHOTS = REPO / "test-artifacts" / "screenshots"
PLUGIN_ROUTES = "/data/plugin/tbprof/"

playwright_sync = pytest.importorskip("playwright.sync_api", reason="pip install playwright==1.65.2 (test extra)")


@dataclass
class Server:
    """A running server as the browser tests use it."""

    name: str
    base: str  # http://127.0.0.1:PORT

    @property
    def api(self) -> str:
        return self.base + PLUGIN_ROUTES

    def get(self, route: str, **params: str) -> bytes:
        url = self.api + route + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=120) as r:
            return bytes(r.read())

    def json(self, route: str, **params: str) -> Any:
        return json.loads(self.get(route, **params))


@pytest.fixture(scope="session")
def e2e_logdir(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small real profiles plus one damaged run (an xplane of random bytes, oldest mtime
    so it is never the default run) to show how errors look."""
    root = tmp_path_factory.mktemp("e2e_logs")
    for child in profiles_root.iterdir():
        shutil.copytree(child, root / child.name)
    broken = root / "broken" / "plugins" / "profile" / "2020_01_01_00_00_00"
    broken.mkdir(parents=True)
    bad = broken / "vm.xplane.pb"
    bad.write_bytes(bytes(range(256)) * 4)
    os.utime(bad, (1_577_836_800, 1_577_836_800))
    return root


@pytest.fixture(scope="session")
def e2e_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e_cache")


def _warm(server: Server) -> None:
    """Convert every good run once, so page loads in the tests do not wait for conversions."""
    for run in server.json("runs")["runs"]:
        if not run["run"].startswith("broken/"):
            server.get("tools", run=run["run"])


@pytest.fixture(scope="session")
def standalone(e2e_logdir: Path, e2e_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("serve_log") / "serve.log"
    with servers.tbprof_serve(e2e_logdir, e2e_cache, log, ("--host", "127.0.0.1")) as s:
        server = Server("tbprof serve", s.base_url)
        _warm(server)
        yield server


@pytest.fixture(scope="session")
def tensorboard(e2e_logdir: Path, e2e_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("tb_log") / "tensorboard.log"
    with servers.tensorboard(e2e_logdir, e2e_cache, log) as s:
        listing = json.loads(urllib.request.urlopen(s.base_url + "/data/plugins_listing", timeout=30).read())
        assert "tbprof" in listing, f"TensorBoard did not load the tbprof plugin: {sorted(listing)}"
        server = Server("tensorboard", s.base_url)
        _warm(server)
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium per test module: Playwright's sync API allows one instance at a time, and
    other modules (capture, legacy pages) start their own."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(server: Any, browser: Any) -> Iterator[Any]:
    """A page of the module's ``server`` that fails the module on any browser error (modules that
    define ``server`` and read their pages through ``page``; others define their own)."""
    pg = page_failing_on_errors(browser)
    yield pg
    pg.context.close()
    assert pg.tbprof_errors == [], pg.tbprof_errors


@dataclass
class Watch:
    """A browser page and what it did: console errors, uncaught errors, requests."""

    page: Any
    server: Server
    console_errors: list[str] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (url, frame url)

    def expect_http_error(self, status: int) -> None:
        """A test that asks for a deliberate 4xx: Chromium logs every failed fetch as a console
        error ("Failed to load resource: ... status of 400"); drop exactly those."""
        needle = f"status of {status} "
        self.console_errors[:] = [e for e in self.console_errors
                                  if not (e.startswith("Failed to load resource") and needle in e)]

    def check(self, inside_tensorboard: bool = False) -> None:
        assert self.console_errors == [], f"console errors: {self.console_errors}"
        origin = self.server.base
        for url, frame_url in self.requests:
            if url.startswith(("data:", "blob:")):
                continue
            assert url.startswith(origin + "/"), f"request outside the server: {url}"
            path = url[len(origin):]
            ours = not inside_tensorboard or "plugin_entry.html" in frame_url or PLUGIN_ROUTES in frame_url
            if ours and not path.startswith("/data/plugin_entry.html"):
                assert path.startswith(PLUGIN_ROUTES) or path in ("/", "/index.html") or path.startswith("/#"), \
                    f"request outside the plugin's routes: {url}"

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{self.server.name.replace(' ', '_')}__{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


def _watch(browser: Any, server: Server, color_scheme: str = "light") -> tuple[Any, Watch]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True,
                              color_scheme=color_scheme)
    page = ctx.new_page()
    w = Watch(page, server)
    page.on("console", lambda m: w.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: w.console_errors.append(page_error_text(page, e)))
    page.on("request", lambda r: w.requests.append((r.url, r.frame.url if r.frame else "")))
    return ctx, w


@pytest.fixture()
def serve_page(browser: Any, standalone: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, standalone)
    yield w
    ctx.close()


@pytest.fixture()
def tb_page(browser: Any, tensorboard: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, tensorboard)
    yield w
    ctx.close()


@pytest.fixture()
def dark_page(browser: Any, standalone: Server) -> Iterator[Watch]:
    ctx, w = _watch(browser, standalone, color_scheme="dark")
    yield w
    ctx.close()
