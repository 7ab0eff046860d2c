"""``critical_path``'s ``hta_compat`` option from the CLI (``--option``) and the Python API, on
tests/data/kineto_cuda_graph (a ``cudaGraphLaunch`` running four kernels; its make_trace.py):
HTA's graph (golden ``kineto_cuda_graph.critical_path.json``) holds one of them, tbprof's own all
four, two nodes each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import tbprof
from tbprof.cli import main as cli

DATA = Path(__file__).resolve().parent.parent / "data" / "kineto_cuda_graph"
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "hta" / "kineto_cuda_graph.critical_path.json"


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    shutil.copy(DATA / "graph.pt.trace.json", tmp_path / "graph.pt.trace.json")
    return tmp_path


def test_cli_and_api(logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hta_nodes = json.loads(GOLDEN.read_text())["critical_path"]["0"][0]["nodes"]
    graph_kernels_left_out = 3
    cache = str(tmp_path / "cache")
    for extra, nodes in ((["--option", "hta_compat=true"], hta_nodes), ([], hta_nodes + 2 * graph_kernels_left_out)):
        code = cli.main(["show", "critical_path", str(logdir), "--cache-dir", cache, *extra])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["nodes"] == nodes
    profile = tbprof.open(str(logdir), cache_dir=cache)
    assert profile.tool("critical_path", hta_compat=True)["nodes"] == hta_nodes
    assert profile.tool("critical_path")["nodes"] == hta_nodes + 2 * graph_kernels_left_out
