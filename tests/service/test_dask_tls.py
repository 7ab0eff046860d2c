"""``--dask-security``: tbprof's Dask client on a cluster that takes only TLS clients with its
certificate (a real ``LocalCluster`` started with ``Security.temporary()``, which needs the
``cryptography`` package of the test extra).

The pod: copies of jax_2hosts' real host files (bench/make_pod.py). The answers on the TLS
cluster must equal the in-process ones; a client without the certificate, or with another
cluster's, must be refused before any work is sent.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.encode import to_json_bytes
from tbprof.service.dask_security import parse_security
from tbprof.service.executor import DaskExecutor, InProcess, make_executor
from tbprof.service.profiles import Profiles
from tbprof.service.summary import summary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod

pytestmark = pytest.mark.slow

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
HOSTS = 4


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pod")
    make_pod(root, HOSTS)
    return root


def _write_pems(security: Any, where: Path) -> dict[str, Path]:
    """A temporary Security's in-memory PEM texts as the files a user's cluster would give."""
    where.mkdir(parents=True, exist_ok=True)
    files = {"ca": where / "ca.pem", "cert": where / "client.pem", "key": where / "client.key"}
    files["ca"].write_text(security.tls_ca_file)
    files["cert"].write_text(security.tls_client_cert)
    files["key"].write_text(security.tls_client_key)
    return files


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Path]]]:
    from distributed import LocalCluster
    from distributed.security import Security

    os.environ["PYTHONPATH"] = str(PLUGIN) + os.pathsep + os.environ.get("PYTHONPATH", "")
    security = Security.temporary()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      protocol="tls://", host="127.0.0.1", security=security) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        yield cluster.scheduler_address, _write_pems(security, tmp_path_factory.mktemp("certs"))


def _answers(profiles: Profiles) -> dict[str, Any]:
    run = next(iter(profiles.index.runs().values()))
    tool = profiles.tool("overview_page")
    return json.loads(to_json_bytes({"summary": summary(profiles, run),
                                     "overview": profiles.compute(run, list(run.hosts), tool, {})}))


def test_a_pod_converts_on_a_tls_cluster_with_the_certificate(pod: Path, tmp_path: Path,
                                                              tls_cluster: tuple[str, dict[str, Path]]) -> None:
    address, pems = tls_cluster
    executor = make_executor(dask_scheduler=address,
                             dask_security=f"ca-file={pems['ca']},cert={pems['cert']},key={pems['key']}")
    assert isinstance(executor, DaskExecutor)
    try:
        on_dask = Profiles(pod, cache_dir=tmp_path / "tls", executor=executor)
        reference = Profiles(pod, cache_dir=tmp_path / "ref", executor=InProcess())
        assert _answers(on_dask) == _answers(reference)
        # The cluster's worker converted every host: its partials are in the cache tbprof named.
        assert len(list((tmp_path / "tls" / "partials").glob("*.bin"))) == HOSTS
    finally:
        executor.close()


def test_the_cli_converts_through_a_dask_yaml_file(pod: Path, tmp_path: Path,
                                                   tls_cluster: tuple[str, dict[str, Path]]) -> None:
    """``tbprof summary --dask-scheduler tls://... --dask-security dask.yaml``: the YAML form, as
    Dask's own configuration file writes it, through the command line."""
    address, pems = tls_cluster
    config = tmp_path / "dask.yaml"
    config.write_text("distributed:\n  comm:\n    tls:\n"
                      f"      ca-file: {pems['ca']}\n      client:\n        cert: {pems['cert']}\n"
                      f"        key: {pems['key']}\n")
    env = {**os.environ, "PYTHONPATH": str(PLUGIN)}

    def cli(*extra: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "tbprof.cli", "summary", str(pod), "--json",
                               "--cache-dir", str(tmp_path / f"c{len(extra)}"), "--workers", "1", *extra],
                              capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert cli("--dask-scheduler", address, "--dask-security", str(config)) == cli()
    assert len(list((tmp_path / "c4" / "partials").glob("*.bin"))) == HOSTS


def test_a_client_without_the_certificate_is_refused(tls_cluster: tuple[str, dict[str, Path]],
                                                     tmp_path: Path) -> None:
    from distributed.security import Security

    address, _ = tls_cluster
    # No certificate at all: Dask's client cannot even open a TLS connection.
    with pytest.raises(ValueError, match="cannot connect to the Dask scheduler"):
        DaskExecutor(address)
    # Another cluster's certificate: the scheduler does not trust it, nor it the scheduler.
    other = _write_pems(Security.temporary(), tmp_path / "other")
    with pytest.raises(ValueError, match="cannot connect to the Dask scheduler"):
        DaskExecutor(address, f"ca-file={other['ca']},cert={other['cert']},key={other['key']}")


def test_the_certificate_is_refused_on_a_plain_address_and_bad_values_are_usage_errors(tmp_path: Path) -> None:
    pem = tmp_path / "x.pem"
    pem.write_text("not used")
    with pytest.raises(ValueError, match="tls://"):
        DaskExecutor("tcp://127.0.0.1:1", f"ca-file={pem},cert={pem}")
    with pytest.raises(ValueError, match="needs --dask-scheduler"):
        make_executor(workers=1, dask_security=f"ca-file={pem},cert={pem}")
    with pytest.raises(ValueError, match="no such file"):
        parse_security(f"ca-file={tmp_path / 'missing.pem'},cert={pem}")
    with pytest.raises(ValueError, match="not one of"):
        parse_security(f"ca={pem},cert={pem}")
    with pytest.raises(ValueError, match="needs the CA file"):
        parse_security(f"cert={pem}")
    config = tmp_path / "dask.yaml"
    config.write_text("distributed: {comm: {}}\n")
    with pytest.raises(ValueError, match=r"no distributed\.comm\.tls"):
        parse_security(str(config))
    config.write_text(f"distributed:\n  comm:\n    tls:\n      ca-file: {pem}\n      min-version: 1.3\n"
                      f"      client:\n        cert: {pem}\n")
    fields = parse_security(str(config))
    assert fields["tls_ca_file"] == str(pem) and fields["tls_client_cert"] == str(pem)
    assert "tls_client_key" not in fields
    assert fields["tls_min_version"] == ssl.TLSVersion.TLSv1_3


def test_tensorboard_flags_convert_through_the_tls_cluster(pod: Path, tmp_path: Path,
                                                          tls_cluster: tuple[str, dict[str, Path]]) -> None:
    """``--tbprof_dask_scheduler`` with ``--tbprof_dask_security``: the plugin TensorBoard loads
    converts the pod on the TLS cluster."""
    import argparse

    from tensorboard.plugins import base_plugin

    from tbprof.tb_plugin import TbprofLoader, TbprofPlugin

    address, pems = tls_cluster
    parser = argparse.ArgumentParser()
    TbprofLoader().define_flags(parser)
    flags = parser.parse_args(["--tbprof_cache_dir", str(tmp_path / "tb"), "--tbprof_dask_scheduler", address,
                               "--tbprof_dask_security", f"ca-file={pems['ca']},cert={pems['cert']},key={pems['key']}"])
    plugin = TbprofPlugin(base_plugin.TBContext(logdir=str(pod), flags=flags))
    profiles = plugin._app.ctx.profiles
    try:
        assert isinstance(profiles.executor, DaskExecutor)
        reference = Profiles(pod, cache_dir=tmp_path / "ref", executor=InProcess())
        assert _answers(profiles) == _answers(reference)
        assert len(list((tmp_path / "tb" / "partials").glob("*.bin"))) == HOSTS
    finally:
        profiles.executor.close()
