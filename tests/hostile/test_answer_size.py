"""One long name does not multiply into an answer of gigabytes (issue #34, high).

jax_mlp's XSpace with all 1,350 GPU events named by one 1 MiB name (a 3 MB file): a page of 1,000
search matches repeated the name 1,000 times (a 1 GB answer), and each kernel sequence repeated it
once per kernel. Per-event answers show names cut to ``MAX_ANSWER_NAME_CHARS``, and an answer that
would still exceed what one answer may take is refused (400, ``answer_too_large``) before it is built.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.domain.answer_size import ELLIPSIS, MAX_ANSWER_BYTES, MAX_ANSWER_NAME_CHARS, answer_limit_bytes
from tbprof.http.app import create_app
from tests.hostile.profiles import one_name_gpu_xspace

API = "/data/plugin/tbprof/"
NAME = b"k" * (1 << 20)
# The host operator whose subtree launches jax_mlp's training kernels (one per step and device).
OPERATOR = "Execute (jit_train_step)"
# What an answer may take beside its names: numbers and keys of a row or match (generous).
ROW_BYTES = 400


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, str]]:
    root = tmp_path_factory.mktemp("long_name")
    one_name_gpu_xspace(root / "logs" / "long" / "plugins" / "profile" / "s" / "vm.xplane.pb", NAME)
    c = Client(create_app(root / "logs", cache_dir=root / "cache"))
    run = c.get(API + "runs").get_json()["runs"][0]["run"]
    assert c.get(API + "data", query_string={"run": run, "tool": "profile_summary"}).status_code == 200
    yield c, run


def _measured(c: Client, route: str, query: dict[str, Any]) -> tuple[Any, int]:
    """(response, peak bytes Python allocated while answering)."""
    tracemalloc.start()
    try:
        r = c.get(API + route, query_string=query)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return r, peak


def _shown(name: str) -> None:
    assert len(name) == MAX_ANSWER_NAME_CHARS and ELLIPSIS in name and set(name) == {"k", ELLIPSIS}


def test_search_page_shows_each_name_cut(client: tuple[Client, str]) -> None:
    c, run = client
    r, peak = _measured(c, "trace_search", {"run": run, "q": "kkkk", "limit": "1000"})
    assert r.status_code == 200
    body = r.get_json()
    assert body["count"] == 1000  # 1,350 GPU events match; a page holds 1,000
    for m in body["matches"]:
        _shown(m["name"])
    assert len(r.data) <= 1000 * (MAX_ANSWER_NAME_CHARS + ROW_BYTES)
    assert peak < MAX_ANSWER_BYTES


def test_kernel_sequences_show_each_name_cut(client: tuple[Client, str]) -> None:
    c, run = client
    r, peak = _measured(c, "data", {"run": run, "tool": "kernel_sequences", "operator_name": OPERATOR,
                                    "min_pattern_len": "1"})
    assert r.status_code == 200
    table = r.get_json()["tables"]["patterns"]
    col = [col["name"] for col in table["columns"]].index("pattern")
    kern = [col["name"] for col in table["columns"]].index("kernels")
    assert table["rows"]
    kernels = 0
    for row in table["rows"]:
        parts = row[col].split("|")
        assert len(parts) == row[kern] + 1
        for part in parts[1:]:
            _shown(part)
        kernels += row[kern]
    assert len(r.data) <= kernels * (MAX_ANSWER_NAME_CHARS + 1) + ROW_BYTES * len(table["rows"]) + 4096
    assert peak < MAX_ANSWER_BYTES


def test_answer_past_the_limit_is_refused_before_it_is_built(client: tuple[Client, str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    c, run = client
    # A memory budget of 8 MB: an answer may take 2 MB, less than 1,000 names of 4 KiB.
    monkeypatch.setenv("TBPROF_MEMORY_BYTES", str(8 << 20))
    assert answer_limit_bytes() == 2 << 20
    r, peak = _measured(c, "trace_search", {"run": run, "q": "kkkk", "limit": "1000"})
    assert r.status_code == 400 and r.get_json()["kind"] == "answer_too_large", r.data[:300]
    assert "limit" in r.get_json()["error"]
    assert peak < 2 << 20  # refused before 1,000 names were written
    r = c.get(API + "trace_search", query_string={"run": run, "q": "kkkk", "limit": "100"})
    assert r.status_code == 200 and r.get_json()["count"] == 100
    # 1 MB: an answer may take 256 KiB, less than the ~120 kernels of 4 KiB of the patterns.
    monkeypatch.setenv("TBPROF_MEMORY_BYTES", str(1 << 20))
    r = c.get(API + "data", query_string={"run": run, "tool": "kernel_sequences", "operator_name": OPERATOR,
                                          "min_pattern_len": "2"})
    assert r.status_code == 400 and r.get_json()["kind"] == "answer_too_large", r.data[:300]
