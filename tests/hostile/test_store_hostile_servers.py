"""The storage/memory items of #25 through a real ``tbprof serve`` and a real TensorBoard.

A logdir with a good run beside crafted files: a tfprof node name of 20 000 name scopes, a tfprof
call stack of 2 000 frames in a 100 KB file name, and an XSpace of 200 000 events each with its
own name. Under ``TBPROF_CONVERT_MEMORY_BYTES`` = 150 MB the tfprof views answer with names cut to
512 characters and the server's peak memory grows by less than the old scope view alone took
(~400 MB for this file: 20 000 prefixes of 20 KB on average); the XSpace, which needs ~190 MB
though its size (9 MB) says 47 MB, is refused with a 422 naming its metadata entries; the good
run keeps answering.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_PROFILES
from tests.hostile.test_many_names import many_names_xspace
from tests.servers import Server, tbprof_serve, tensorboard
from tests.tfprof_data import deep_scope_pb, long_file_pb

LIMIT_BYTES = 150_000_000
# The old scope view of the deep file held ~400 MB; what the new one may add, with room.
MAX_GROWTH_BYTES = 250_000_000
MAX_SHOWN = 512

pytestmark = pytest.mark.slow


def _hwm_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store_hostile") / "logs"
    shutil.copytree(SAMPLE_PROFILES / "custom_loop", root / "custom_loop")
    (root / "deep_tfprof").mkdir()
    (root / "deep_tfprof" / "profile.pb").write_bytes(deep_scope_pb(40_000))
    (root / "long_file_tfprof").mkdir()
    (root / "long_file_tfprof" / "profile.pb").write_bytes(long_file_pb(100_000, 2_000))
    session = root / "names" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    many_names_xspace(session / "vm.xplane.pb", 200_000)
    return root


@pytest.fixture(scope="module", params=["tbprof_serve", "tensorboard"])
def server(request: pytest.FixtureRequest, logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(request.param)
    start = tbprof_serve if request.param == "tbprof_serve" else tensorboard
    with start(logdir, tmp / "cache", tmp / "server.log",
               extra_env={"TBPROF_CONVERT_MEMORY_BYTES": str(LIMIT_BYTES)}) as s:
        yield s


def _data(server: Server, **query: str) -> tuple[int, dict]:
    status, _, body = server.get("data?" + urllib.parse.urlencode(query), timeout_s=300)
    return status, json.loads(body)


def test_crafted_files_cost_bounded_memory(server: Server) -> None:
    status, listing = server.get_json("runs")
    assert status == 200
    names = {r["run"].split("/")[0]: r["run"] for r in listing["runs"]}
    good = names["custom_loop"]
    assert _data(server, run=good, tool="profile_summary")[0] == 200
    before = _hwm_bytes(server.process.pid)
    for run, view in (("deep_tfprof", "scope"), ("deep_tfprof", "graph"), ("long_file_tfprof", "code")):
        status, body = _data(server, run=names[run], tool="tfprof_views", view=view, max_depth="100000")
        assert status == 200, body
        rows = body["tables"]["nodes"]
        columns = [c["name"] for c in rows["columns"]]
        assert rows["rows"] and "name" in columns
        for col in ("name", "file") if view == "code" else ("name",):
            i = columns.index(col)
            assert max(len(r[i]) for r in rows["rows"]) <= MAX_SHOWN + len(":2000:fn")
    growth = _hwm_bytes(server.process.pid) - before
    assert growth < MAX_GROWTH_BYTES, growth
    status, body = _data(server, run=names["names"], tool="profile_summary")
    assert status == 422 and "metadata entries" in body["error"], body
    assert _data(server, run=good, tool="overview_page")[0] == 200
    assert server.process.poll() is None and os.path.exists(f"/proc/{server.process.pid}")
