"""Browser test: a tool added in one module and one line of the tool list, with no page of its
own (tests/throwaway/busiest_lines.py), is drawn by the generic page: its cards and its table,
from the backend's answer. And a tool a run lacks shows its own descriptor's help (what it
needs, how to record it) on the "no data" page, from the ``settings`` route.
"""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tbprof.service import tools as registry
from tests.throwaway import busiest_lines

from .helpers import PAGE_TIMEOUT_MS, PluginServer, wait_ready

pytestmark = pytest.mark.e2e


def _clear_registry() -> None:
    for value in vars(registry).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, profiles_root: Path) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_generic")
    shutil.copytree(profiles_root / "jax_mlp", root / "logs" / "jax_mlp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry, "TOOL_MODULES", (*registry.TOOL_MODULES, busiest_lines.MODULE))
        _clear_registry()
        server = PluginServer(root / "logs", root / "cache")
        yield server
        server.close()
    _clear_registry()


def _goto(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))


def test_the_generic_page_draws_a_tool_with_no_page(page: Any, server: Any) -> None:
    (run,) = server.json("runs")["runs"]
    _goto(page, server, run=run["run"], host="vm", tool="busiest_lines")
    wait_ready(page)
    assert page.locator(".tbp-message-error").count() == 0
    result = server.json("data", run=run["run"], host="vm", tool="busiest_lines")
    assert "Busiest lines" in page.inner_text(".tbp-page-title h1")
    card = page.locator('[data-card="plane_count"] .tbp-card-value').inner_text()
    assert card == str(result["plane_count"])
    page.wait_for_selector('[data-table="busiest_lines"] tbody tr', timeout=PAGE_TIMEOUT_MS)
    rows = page.locator('[data-table="busiest_lines"] tbody tr')
    assert rows.count() == len(result["tables"]["busiest_lines"]["rows"])
    top = result["tables"]["busiest_lines"]["rows"][0]  # the default order: most events first
    assert top[1] in rows.first.inner_text()


def test_the_no_data_page_says_what_the_tool_needs_from_its_descriptor(page: Any, server: Any) -> None:
    (run,) = server.json("runs")["runs"]
    described = {t["name"]: t for t in server.json("settings")["tools"]}["module_view"]
    _goto(page, server, run=run["run"], host="vm", tool="module_view")
    page.wait_for_selector('[data-no-data="module_view"]', timeout=PAGE_TIMEOUT_MS)
    text = page.inner_text('[data-no-data="module_view"]')
    assert described["requires"] and described["requires"] in text
    assert all(step in text for step in described["how_to"])
