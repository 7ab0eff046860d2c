"""Browser test: an FSDP2 run (tests/kineto_llm.py: two ranks, FSDP2's collective names, written
from Kineto's documented fields) on the Collectives and Stragglers pages. Expected texts are the
backend's own answers; the numbers are derived in tests/analyses/test_llm_runs.py."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tests import kineto_llm as fx

from .helpers import PluginServer, wait_ready

pytestmark = pytest.mark.e2e
RUN = "fsdp2"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("e2e_fsdp2")
    fx.write_run(root / "logs" / RUN)
    server = PluginServer(root / "logs", root / "cache")
    yield server
    server.close()


def _goto(page: Any, server: Any, **state: str) -> None:
    page.goto(server.base + "#" + urllib.parse.urlencode(state, quote_via=urllib.parse.quote))


def test_collectives_page_lists_fsdp2_collectives(page: Any, server: Any) -> None:
    _goto(page, server, run=RUN, host="__all__", tool="collectives")
    wait_ready(page)
    table = server.json("table", run=RUN, host="__all__", tool="collectives", table="collectives")
    page.wait_for_selector('[data-table="collectives"] tbody tr')
    assert page.locator('[data-table="collectives"] tbody tr').count() == len(table["rows"]) == 4
    text = page.locator('[data-table="collectives"]').inner_text()
    assert "nccl:_all_gather_base" in text and "nccl:_reduce_scatter_base" in text


def test_stragglers_page_shows_the_waiting(page: Any, server: Any) -> None:
    _goto(page, server, run=RUN, host="__all__", tool="stragglers")
    wait_ready(page)
    result = server.json("data", run=RUN, host="__all__", tool="stragglers", rows="0")
    assert result["waited_for"] == 1
    page.wait_for_selector('[data-table="ranks"] tbody tr')
    # The stragglers page names the rank.
    assert page.locator('[data-card="waited_for"] .tbp-card-value').inner_text() == "rank 1"
    table = server.json("table", run=RUN, host="__all__", tool="stragglers", table="ranks")
    col = [c["name"] for c in table["columns"]].index("synchronizing_us")
    assert all(row[col] is not None for row in table["rows"])
