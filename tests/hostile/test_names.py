"""Run and host names from the logdir (issue #25).

* A file or folder whose name is not UTF-8 (POSIX names are bytes) used to empty the run list
  (``GET runs`` 500, ``UnicodeEncodeError`` in the cache key) in ``tbprof serve`` and
  TensorBoard, and ``tbprof tools`` failed: now listed and opened, each undecodable byte shown
  as ``\\xNN``.
* A folder ``a/s1/vm.xplane.pb`` took the name of XProf's session ``a/plugins/profile/s1/``
  (both "a/s1"), hiding it: both are listed under distinct names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_PROFILES
from tests.hostile.profiles import CUSTOM_LOOP_SESSION
from tests.servers import PLUGIN_SRC, Server, tbprof_serve, tensorboard

TORCH_TRACE = next((SAMPLE_PROFILES / "torch_cnn").glob("*.pt.trace.json"))
# b"\xff" and b"\xfe" never occur in UTF-8.
BAD_DIR = b"bad\xffdir"
BAD_FILE = b"x\xfe.pt.trace.json"
BAD_RUN = "bad\\xffdir"  # as listed: the byte written as \xNN
BAD_HOST = "x\\xfe"
JAX_SESSION = "jax_mlp/plugins/profile/2026_11_26_00_32_23"


def _logdir(root: Path) -> Path:
    logdir = root / "logs"
    shutil.copytree(SAMPLE_PROFILES / "torch_cnn", logdir / "torch_cnn")
    bad = os.path.join(os.fsencode(logdir), BAD_DIR)
    os.mkdir(bad)
    shutil.copyfile(TORCH_TRACE, os.path.join(bad, BAD_FILE))
    # The same name twice: a session of XProf's layout and a plain folder a/s1.
    session = logdir / "a" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    shutil.copyfile(SAMPLE_PROFILES / CUSTOM_LOOP_SESSION / "vm.xplane.pb", session / "vm.xplane.pb")
    (logdir / "a" / "s1").mkdir()
    shutil.copyfile(SAMPLE_PROFILES / JAX_SESSION / "vm.xplane.pb", logdir / "a" / "s1" / "vm.xplane.pb")
    return logdir


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _logdir(tmp_path_factory.mktemp("names"))


@pytest.fixture(scope="module")
def served(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("names_serve")
    with tbprof_serve(logdir, root / "cache", root / "server.log") as s:
        yield s
        assert "Traceback" not in s.log(), s.log()[-3000:]


def _json(body: bytes) -> Any:
    """Strict: UTF-8 without lone surrogates (a browser's URL encoder throws on those)."""
    value = json.loads(body.decode("utf-8"))
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return value


def _runs(server: Server) -> dict[str, Any]:
    status, _, body = server.get("runs")
    assert status == 200, body[:500]
    return {r["run"]: r for r in _json(body)["runs"]}


def _source_path(server: Server, run: str) -> str:
    status, _, body = server.get("data?" + urllib.parse.urlencode({"run": run, "tool": "profile_summary"}))
    assert status == 200, body[:500]
    return str(_json(body)["hosts"][0]["source_path"])


def test_non_utf8_names_are_listed_and_open(served: Server) -> None:
    runs = _runs(served)
    assert "torch_cnn" in runs
    assert runs[BAD_RUN]["hosts"] == [BAD_HOST]
    assert _source_path(served, BAD_RUN).endswith("bad\\xffdir/x\\xfe.pt.trace.json")
    status, _, body = served.get("data?" + urllib.parse.urlencode({"run": BAD_RUN, "host": BAD_HOST,
                                                                   "tool": "framework_op_stats"}))
    assert status == 200, body[:300]


def test_same_name_from_two_folders_is_two_runs(served: Server) -> None:
    runs = _runs(served)
    named = sorted(name for name in runs if name == "a/s1" or name.startswith("a/s1 "))
    assert named == ["a/s1", "a/s1 (folder a/s1)"], sorted(runs)
    # Each name opens its own folder's file.
    assert _source_path(served, "a/s1").endswith("a/plugins/profile/s1/vm.xplane.pb")
    assert _source_path(served, "a/s1 (folder a/s1)").endswith("a/s1/vm.xplane.pb")


def test_tbprof_tools_lists_non_utf8_names(logdir: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC), TBPROF_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "tools", str(logdir)], capture_output=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = proc.stdout.decode("utf-8")
    assert f"{BAD_RUN}\t{BAD_HOST}\t" in out and "a/s1 (folder a/s1)\t" in out, out


def test_tensorboard_lists_non_utf8_names(logdir: Path, tmp_path: Path) -> None:
    with tensorboard(logdir, tmp_path / "cache", tmp_path / "tb.log") as tb:
        runs = _runs(tb)
        assert BAD_RUN in runs and "torch_cnn" in runs and "a/s1 (folder a/s1)" in runs
        assert _source_path(tb, BAD_RUN).endswith("x\\xfe.pt.trace.json")
