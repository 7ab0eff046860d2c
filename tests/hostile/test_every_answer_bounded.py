"""Every answer is counted against what one answer may take, whatever tool or route built it.

The hostile profile: jax_mlp's XSpace with each GPU kernel's name (52 distinct names on its two
GPU planes) made 64 KiB longer by appending to it (times and stats as
the profiler wrote them), so the kernel tables carry a row of 64 KiB per kernel and a trace window
over the GPU tracks carries 52 such names. With a memory budget of 4 MiB an answer may take
1 MiB (``answer_limit_bytes``: a quarter of the budget): a whole table (tens of kernels, several
MB), its CSV, the SQL answer selecting the names and the whole window are refused with
``answer_too_large`` and a message saying how to ask for less; a page, a filter, a narrower
window answer. Refused answers are refused before they are written: the peak of what Python
allocates while refusing a table stays under the limit, and while refusing a window under the
limit plus the window query's own arrays, where the answer's names alone would take 3.4 MB.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.domain.answer_size import answer_limit_bytes
from tbprof.http.app import create_app
from tests.conftest import SAMPLE_PROFILES
from tests.hostile.profiles import JAX_MLP_SESSION

API = "/data/plugin/tbprof/"
PAD_BYTES = 64 << 10
BUDGET_BYTES = 4 << 20
GPU_NAMES = 52  # distinct names of jax_mlp's GPU event metadata (52 + 48 on its two GPUs)


def _long_gpu_names(src: Path, dst: Path) -> None:
    """``src`` with its GPU planes' event names 64 KiB longer (host planes' names, which share
    some of them, kept)."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(src.read_bytes())
    names = set()
    for plane in space.planes:
        if plane.name.startswith(b"/device:GPU:"):
            for meta in plane.event_metadata.values():
                if meta.name:
                    names.add(meta.name)
                    meta.name = meta.name + b"~" + b"k" * PAD_BYTES
    assert len(names) == GPU_NAMES
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(space.SerializeToString())


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, str]]:
    root = tmp_path_factory.mktemp("long_rows")
    _long_gpu_names(SAMPLE_PROFILES / JAX_MLP_SESSION / "vm.xplane.pb",
                    root / "logs" / "long_rows" / "plugins" / "profile" / "s" / "vm.xplane.pb")
    c = Client(create_app(root / "logs", cache_dir=root / "cache"))
    run = c.get(API + "runs").get_json()["runs"][0]["run"]
    yield c, run


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("TBPROF_MEMORY_BYTES", str(BUDGET_BYTES))
    limit = answer_limit_bytes()
    assert limit == BUDGET_BYTES // 4
    return limit


def _measured(call: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        r = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return r, peak


def _refused(r: Any, *advice: str) -> None:
    assert r.status_code == 400, r.data[:300]
    body = json.loads(r.data)
    assert body["kind"] == "answer_too_large", body
    for word in advice:
        assert word in body["error"], body["error"]


def _kernel_names_bytes(c: Client, run: str) -> int:
    """What kernel_stats' names take (its rows times the padding); asking for one row computes
    the tool before the measured requests."""
    r = c.get(API + "table", query_string={"run": run, "tool": "kernel_stats", "limit": "1"})
    assert r.status_code == 200, r.data[:300]
    return int(r.get_json()["total_rows"]) * PAD_BYTES


def test_a_whole_table_of_long_names_is_refused_a_page_answers(client: tuple[Client, str], small_budget: int) -> None:
    c, run = client
    names_bytes = _kernel_names_bytes(c, run)
    assert names_bytes > 2 * small_budget  # the whole table would be more than twice the limit
    for route in ("data", "table", "csv"):
        r, peak = _measured(lambda route=route: c.get(API + route, query_string={"run": run, "tool": "kernel_stats"}))
        _refused(r, "filter")
        assert peak < small_budget, (route, peak)
    # A page of 5 rows: five names of 64 KiB.
    page = c.get(API + "table", query_string={"run": run, "tool": "kernel_stats", "limit": "5"})
    assert page.status_code == 200 and len(page.get_json()["rows"]) == 5
    assert c.get(API + "data", query_string={"run": run, "tool": "kernel_stats", "rows": "5"}).status_code == 200
    csv = c.get(API + "csv", query_string={"run": run, "tool": "kernel_stats", "limit": "5"})
    assert csv.status_code == 200 and csv.data.count(b"\n") == 6


def test_the_sql_answer_of_long_names_is_refused_a_limit_answers(client: tuple[Client, str],
                                                                 small_budget: int) -> None:
    c, run = client
    query = "SELECT DISTINCT name FROM events WHERE name LIKE '%~kkkk%'"
    r = c.post(API + "sql", json={"run": run, "query": query})
    _refused(r, "LIMIT")
    r = c.post(API + "sql", json={"run": run, "query": query + " LIMIT 3"})
    assert r.status_code == 200, r.data[:300]
    assert len(r.get_json()["rows"]) == 3


def test_a_window_of_long_names_is_refused_a_narrower_one_answers(client: tuple[Client, str],
                                                                  small_budget: int) -> None:
    c, run = client
    # A window of one picosecond: the store's tracks are built before the measured requests.
    tracks = c.get(API + "trace", query_string={"run": run, "format": "json", "width_px": "100",
                                                "start_ps": "0", "end_ps": "1"})
    assert tracks.status_code == 200, tracks.data[:300]
    for fmt in ("binary", "json"):
        r, peak = _measured(lambda fmt=fmt: c.get(API + "trace", query_string={"run": run, "format": fmt,
                                                                               "width_px": "65536"}))
        _refused(r, "narrower window")
        # The window's query works on the arrays of its events (about 1 MB for jax_mlp's 18,652):
        # the bound is the limit plus that, where the answer's names alone would take 3.4 MB.
        assert peak < 2 * small_budget < GPU_NAMES * PAD_BYTES, (fmt, peak)
    # The host tracks alone: no GPU kernel's name.
    host = [t for g in tracks.get_json()["groups"] if g["kind"] == "host" for t in g["tracks"]]
    assert host
    r = c.get(API + "trace", query_string={"run": run, "format": "json", "width_px": "2000",
                                           "tracks": ",".join(map(str, host))})
    assert r.status_code == 200, r.data[:300]
    assert len(r.data) <= small_budget


def test_a_window_of_many_events_is_refused_past_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jax_mlp as written (17,302 host events, 1,350 GPU ones): at full width a window returns
    thousands of events. With a budget of 256 KiB an answer may take 64 KiB, less than its events;
    a window of a millisecond answers."""
    import shutil

    shutil.copytree(SAMPLE_PROFILES / "jax_mlp", tmp_path / "logs" / "jax_mlp")
    c = Client(create_app(tmp_path / "logs", cache_dir=tmp_path / "cache"))
    run = c.get(API + "runs").get_json()["runs"][0]["run"]
    whole = c.get(API + "trace", query_string={"run": run, "format": "json", "width_px": "65536"})
    assert whole.status_code == 200
    counts = whole.get_json()["counts"]
    assert counts["returned"] * 26 > 64 << 10  # the binary frame's 26 bytes per event alone
    monkeypatch.setenv("TBPROF_MEMORY_BYTES", str(256 << 10))
    for fmt in ("binary", "json"):
        r = c.get(API + "trace", query_string={"run": run, "format": fmt, "width_px": "65536", "start_ps": "0"})
        _refused(r, "narrower window")
    start = whole.get_json()["active_ps"][0]
    r = c.get(API + "trace", query_string={"run": run, "format": "binary", "width_px": "100",
                                           "start_ps": str(start), "end_ps": str(start + 10**6)})
    assert r.status_code == 200 and len(r.data) <= 64 << 10
