"""Logdirs on GCS (fake-gcs-server over HTTP, gcsfs): the same runs and numbers as the local
copy of the same files, through the Python service, the CLI and `tbprof serve`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import servers
from tests.remote.conftest import GCS
from tests.remote.test_s3 import _cli, _without_paths, tensorboard_answers_like_local

pytestmark = pytest.mark.slow


def test_runs_and_numbers_match_local(gcs_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    from tbprof.service.profiles import Profiles
    from tbprof.service.summary import summary

    remote = Profiles(gcs_logdir, cache_dir=tmp_path / "cache_remote")
    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    remote_runs, local_runs = remote.index.runs(), local.index.runs()
    assert {n: (r.kind, sorted(r.hosts)) for n, r in remote_runs.items()} == \
           {n: (r.kind, sorted(r.hosts)) for n, r in local_runs.items()}
    for name in remote_runs:
        assert _without_paths(summary(remote, remote_runs[name])) == _without_paths(summary(local, local_runs[name]))


def test_cli_and_missing_bucket(gcs: GCS, gcs_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    done = _cli(["summary", f"{gcs_logdir}/jax_2hosts", "--json", "--workers", "2"], gcs.env, tmp_path)
    assert done.returncode == 0, done.stderr
    local = _cli(["summary", str(profiles_root / "jax_2hosts"), "--json", "--workers", "1"], {}, tmp_path)
    assert _without_paths(json.loads(done.stdout)) == _without_paths(json.loads(local.stdout))
    done = _cli(["summary", "gs://no-such-bucket/logs"], gcs.env, tmp_path)
    assert done.returncode == 2 and "bucket 'no-such-bucket' does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_on_gcs(gcs: GCS, gcs_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    from tbprof.service.profiles import Profiles

    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    pod = next(n for n in local.index.runs() if n.startswith("jax_2hosts/"))
    expected = _without_paths(local.compute(local.index.runs()[pod], list(local.index.runs()[pod].hosts),
                                            local.tool("input_pipeline_analyzer"), {}))
    with servers.tbprof_serve(gcs_logdir, tmp_path / "cache", tmp_path / "serve.log", extra_env=gcs.env) as srv:
        status, data = srv.get_json(f"data?run={pod}&host=__all__&tool=input_pipeline_analyzer")
        assert status == 200, data
        assert _without_paths(data) == expected
        status, err = srv.get_json("data?run=nope&tool=overview_page")
        assert status == 404 and err["kind"] == "not_found"
        assert "Traceback" not in srv.log()


def test_tensorboard_process_on_gcs(gcs: GCS, gcs_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    """A real ``tensorboard --logdir gs://...`` process on a machine without TensorFlow:
    TensorBoard reads the bucket through fsspec (gcsfs, the emulator from ``gcs.env``), and so
    does tbprof. (With TensorFlow installed, TensorBoard reads gs:// through TensorFlow's own
    GCS client, which does not talk to an emulator.)"""
    tensorboard_answers_like_local(gcs_logdir, gcs.env, "framework_op_stats", profiles_root, tmp_path)
