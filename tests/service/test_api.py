"""The Python API (``tbprof.open``): DataFrames equal the tools' tables, same cache as the server."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import tbprof
from tbprof.errors import BadParameter, NoData, NotFound
from tests.conftest import REPO


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory, sample_profiles: Path) -> Path:
    root = tmp_path_factory.mktemp("api")
    for name in ("torch_ddp", "tf1_timeline", "jax_mlp"):
        shutil.copytree(sample_profiles / name, root / name)
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("api_cache")


def test_import_stays_cheap() -> None:
    """``import tbprof`` loads neither the service layer nor pandas (the CLI and TensorBoard import it)."""
    code = "import sys, tbprof; print(sorted(m for m in sys.modules if m.startswith(('tbprof.service', 'pandas'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "plugin")})
    assert out.stdout.strip() == "[]"


def test_pytorch_run(logdir: Path, cache: Path) -> None:
    p = tbprof.open(logdir / "torch_ddp", cache_dir=cache)
    assert p.run.kind == "pytorch" and len(p.hosts) == 2
    summary = p.summary()
    assert summary["step_source"] == "markers" and summary["device_type"] == "GPU"
    assert 0 < summary["device_idle_percent"] < 100 and "communication_percent" in summary
    steps = p.steps()
    overview = p.tool("overview_page")
    assert isinstance(steps, pd.DataFrame)
    # One row per step, the columns of the overview's step table.
    assert list(steps.columns) == [c.name for c in overview["tables"]["steps"].columns]
    assert len(steps) == summary["step_count"]
    assert steps["step_time_ms"].mean() == pytest.approx(summary["avg_step_time_ms"])
    kernels = p.kernels()
    assert kernels["occurrences"].sum() == p.tool("kernel_stats")["kernel_event_count"]
    ops = p.ops()
    assert set(ops["host_or_device"]) == {"Host", "Device"}
    memory = p.memory()
    assert memory["in_use_bytes"].max() == p.tool("memory_profile")["allocators"]["GPU 0"]["peak_bytes_in_use"]


def test_events_window(logdir: Path, cache: Path) -> None:
    p = tbprof.open(logdir / "torch_ddp", host=None, cache_dir=cache)
    host = p.hosts[0]
    every = p.events(host=host)
    assert len(every) == sum(pl.n_events for pl in p.profiles.store(p.run, host).planes)
    mid = int(every["start_ps"].median())
    part = p.events(host=host, start_ps=0, end_ps=mid)
    assert len(part) == int((every["start_ps"] < mid).sum())
    assert {"/host:CPU", "/device:GPU:0"} <= set(every["plane"])


def test_tf1_and_xspace_runs(logdir: Path, cache: Path) -> None:
    tf1 = tbprof.open(logdir / "tf1_timeline", run="tf1_timeline", cache_dir=cache)
    files = sorted((logdir / "tf1_timeline").glob("timeline-*.json"))
    assert len(tf1.steps()) == len(files)  # one step per timeline file
    jax = tbprof.open(logdir / "jax_mlp", cache_dir=cache)
    assert len(jax.steps()) == jax.summary()["step_count"]
    with pytest.raises(NoData):
        tf1.kernels()  # no GPU kernels in a CPU TF1 timeline


def test_choosing_and_errors(logdir: Path, cache: Path) -> None:
    with pytest.raises(BadParameter, match="run="):
        tbprof.open(logdir, cache_dir=cache)  # several runs: say which
    with pytest.raises(NotFound):
        tbprof.open(logdir, run="nope", cache_dir=cache)
    with pytest.raises(FileNotFoundError):
        tbprof.open(logdir / "missing")
    p = tbprof.open(logdir, run="torch_ddp", cache_dir=cache)
    assert p.tool("gpu_breakdown", consecutive_kernel_delay_us=10)["tool"] == "gpu_breakdown"


def test_one_file(logdir: Path, cache: Path) -> None:
    path = next((logdir / "torch_ddp").glob("rank0.*.pt.trace.json"))
    p = tbprof.open(path, cache_dir=cache)
    assert p.hosts == [path.name[: -len(".pt.trace.json")]]
    assert json.loads(json.dumps(p.summary(), default=str))["host_count"] == 1
