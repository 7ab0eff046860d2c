"""Capture Profile against a REAL TensorFlow profiler server (tf.profiler.experimental.server.start).

The server process trains a tiny model (tf_training_server.py: a matmul + softmax
cross-entropy step under ``Trace("train", step_num=...)``) and writes the XSpace itself;
we check that the run appears without restart and that the analyses see its host events
and TF ops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from werkzeug.test import Client

from tbprof.capture import session
from tbprof.http.app import create_app
from tbprof.protos import profiler_options_pb2
from tests.capture.profiler_servers import ProfilerServer, capture_until, mount_namespace_cmd, profiler_server
from tests.servers import PLUGIN_SRC, free_port

pytestmark = pytest.mark.slow

# Ops of train_step in tf_training_server.py, as TensorFlow names their events ("name:type").
TRAIN_OPS = {"MatMul:MatMul", "softmax_cross_entropy_with_logits:SoftmaxCrossEntropyWithLogits",
             "gradient_tape/MatMul/MatMul:MatMul", "Mean:Mean"}
CLI_TIMEOUT_S = 120


def _post(client: Client, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    r = client.post("/capture", json=body)
    return r.status_code, json.loads(r.get_data())


def _has_training(app: Any, run_name: str, host: str) -> bool:
    """Did the captured window see the training loop (its ops and a traced step)?"""
    profiles = app.ctx.profiles
    store = profiles.store(profiles.index.runs(refresh=True)[run_name], host)
    plane = store.plane("/host:CPU")
    if plane is None:
        return False
    names = {store.strings[int(i)] for i in np.unique(plane.name_id)}
    return names >= TRAIN_OPS | {"train"}


def _check_run(app: Any, run_name: str, host: str) -> None:
    """The new run opens with the analyses: host events, the training ops, the steps."""
    client = Client(app)
    r = client.get(f"/data?run={run_name}&tool=profile_summary")
    assert r.status_code == 200, r.get_data()
    summary = r.get_json()
    cpu = next(p for p in summary["hosts"][0]["planes"] if p["name"] == "/host:CPU")
    assert cpu["event_count"] > 0
    profiles = app.ctx.profiles
    run = profiles.run(run_name)
    store = profiles.store(run, host)
    plane = store.plane("/host:CPU")
    names = {store.strings[int(i)] for i in np.unique(plane.name_id)}
    assert names >= TRAIN_OPS
    # Every traced step is a "train" event carrying its step_num (Trace(..., step_num=i)).
    train = np.flatnonzero(plane.name_id == store.strings.id("train"))
    steps = plane.event_stat(store.stat_id("step_num")).dense_int(plane.n_events)[train]
    assert len(train) > 0 and (steps >= 0).all() and len(np.unique(steps)) == len(train)


def test_capture_through_http_route(tf_server: ProfilerServer, logdir: Path, tmp_path: Path) -> None:
    app = create_app(logdir, cache_dir=tmp_path / "cache")
    client = Client(app)
    assert client.get("/runs").get_json()["runs"] == []
    host = f"localhost_{tf_server.port}"

    def capture(attempt: int) -> tuple[int, dict[str, Any]]:
        # Level 3: TensorFlow traces an op its cost model deems cheap (Mean, after a few steps)
        # only at the verbose level, so at the default level 2 a window may lack it.
        return _post(client, {"addresses": f"grpc://{tf_server.address}", "duration_ms": 500 << attempt,
                              "host_tracer_level": 3})

    (status, body), attempts = capture_until(
        capture, lambda answer: answer[0] == 200 and _has_training(app, answer[1]["run"], host))
    assert status == 200, body
    assert body["ok"] is True and len(body["results"]) == 1
    result = body["results"][0]
    assert result["kind"] == "ok" and result["host"] == host and result["attempts"] == 1
    session_dir = logdir / "plugins" / "profile" / body["session"]
    assert result["path"] == str(session_dir / f"{host}.xplane.pb")
    assert (session_dir / f"{host}.xplane.pb").stat().st_size > 0
    # The run is listed at once (no restart) and opens.
    runs = {r["run"]: r for r in client.get("/runs").get_json()["runs"]}
    assert len(runs) == attempts  # one session per capture
    assert body["run"] == body["session"] and runs[body["run"]]["hosts"] == [host]
    _check_run(app, body["run"], host)


def test_capture_through_cli(tf_server: ProfilerServer, logdir: Path, tmp_path: Path) -> None:
    """The CLI's options reach the server: it records the ProfileOptions it ran with in the
    XSpace (Task Environment plane, stat profile_options), and the delay holds tracing back."""
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC))
    host = f"localhost_{tf_server.port}"
    app = create_app(logdir, cache_dir=tmp_path / "cache")

    def capture(attempt: int) -> tuple[int, dict[str, Any], int]:
        requested_ns = time.time_ns()
        proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "capture", tf_server.address, "--logdir",
                               str(logdir), "--duration-ms", "400", "--host-tracer-level", "3",
                               "--python-tracer-level", "1", "--delay-ms", "700", "--json"],
                              capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.returncode, json.loads(proc.stdout), requested_ns

    # The options under test stay the same on every attempt; only a window that missed the
    # training loop (a starved process on a busy machine) is captured again.
    (_, report, requested_ns), _ = capture_until(capture, lambda r: _has_training(app, r[1]["run"], host))
    assert report["ok"] and report["options"]["host_tracer_level"] == 3
    _check_run(app, report["run"], host)
    env_plane = app.ctx.profiles.event_store(app.ctx.profiles.run(report["run"]), host).plane("Task Environment")
    assert env_plane is not None
    used = profiler_options_pb2.ProfileOptions.FromString(env_plane.plane_stats["profile_options"])
    assert (used.version, used.host_tracer_level, used.device_tracer_level, used.python_tracer_level,
            used.duration_ms) == (1, 3, 1, 1, 400)
    assert used.repository_path == ""  # our logdir's absolute path is not sent where it is not needed
    assert used.start_timestamp_ns >= requested_ns + 700 * 1_000_000
    start_ns = env_plane.plane_stats["profile_start_time"]
    stop_ns = env_plane.plane_stats["profile_stop_time"]
    assert start_ns >= used.start_timestamp_ns  # the server waited for the delay ...
    assert stop_ns - start_ns >= 400 * 1_000_000  # ... then traced for the duration


def test_one_session_answers_per_address(tf_server: ProfilerServer, logdir: Path, tmp_path: Path) -> None:
    """A live and a dead address: one session, the live host lands in it, the dead one is
    explained, and the answer is still 200 because a run was made."""
    dead = f"127.0.0.1:{free_port()}"
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    status, body = _post(client, {"addresses": f"{tf_server.address}, {dead}", "duration_ms": 300,
                                  "retries": 1})
    assert status == 200 and body["ok"] is False
    live, gone = body["results"]
    assert live["ok"] and live["address"] == tf_server.address
    assert not gone["ok"] and gone["kind"] == "could_not_connect" and gone["attempts"] == 2
    assert "could not capture" in gone["message"] and dead in gone["message"]
    files = sorted(p.name for p in (logdir / "plugins" / "profile" / body["session"]).iterdir())
    assert files == [f"localhost_{tf_server.port}.xplane.pb"]


def test_nothing_listening(logdir: Path, tmp_path: Path) -> None:
    """Nothing listening fails like every other failure (up to 1 + retries attempts), after
    session.failure_floor_s (10 s + the backoffs 0.5 + 1 s of two retries), within the CLI timeout."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC))
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "capture", f"localhost:{port}", "--logdir",
                           str(logdir), "--retries", "2"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 3
    assert f"could not capture from a profiler server at localhost:{port} (up to 3 attempts)" in proc.stderr
    assert "Connection refused" not in proc.stderr and "UNAVAILABLE" not in proc.stderr
    assert not (logdir / "plugins").exists()  # nothing left behind


def test_empty_trace(tf_server: ProfilerServer, logdir: Path, tmp_path: Path) -> None:
    """Every tracer off: the server answers empty_trace. No run is made (the server's
    event-less file is removed) and the answer says why."""
    client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
    status, body = _post(client, {"addresses": tf_server.address, "duration_ms": 200, "host_tracer_level": 0,
                                  "device_tracer_level": 0, "python_tracer_level": 0, "retries": 1})
    assert status == 502, body
    (result,) = body["results"]
    assert result["kind"] == "empty_trace" and result["attempts"] == 2
    assert "collected no events" in body["error"]
    assert body["run"] is None and client.get("/runs?refresh=1").get_json()["runs"] == []


def test_two_captures_of_one_address(tf_server: ProfilerServer, logdir: Path, tmp_path: Path) -> None:
    app = create_app(logdir, cache_dir=tmp_path / "cache")
    first: dict[str, Any] = {}

    def run_first() -> None:
        first["status"], first["body"] = _post(Client(app), {"addresses": tf_server.address, "duration_ms": 2000})

    t = threading.Thread(target=run_first)
    t.start()
    try:
        deadline = time.monotonic() + 30
        while f"localhost:{tf_server.port}" not in session.busy_addresses():
            assert time.monotonic() < deadline and t.is_alive(), first
            time.sleep(0.01)
        status, body = _post(Client(app), {"addresses": f"grpc://LOCALHOST:{tf_server.port}", "duration_ms": 100})
        assert status == 409 and body["kind"] == "busy"
        assert f"localhost:{tf_server.port} is already running" in body["error"]
    finally:
        t.join(timeout=120)
    assert first["status"] == 200 and first["body"]["ok"]
    assert session.busy_addresses() == []


def test_remote_disk(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """A server that does not share our disk: it runs in a mount namespace where a tmpfs hides
    the logdir, so it writes the very path we asked for, but on storage we cannot see. The
    capture succeeds on the server and we must say where the data went."""
    logdir = tmp_path_factory.mktemp("remote") / "logdir"
    logdir.mkdir()
    prefix = mount_namespace_cmd(logdir)
    if prefix is None:
        pytest.skip("cannot create a private mount namespace here (unshare/mount not permitted)")
    with profiler_server("tf_training_server.py", tmp_path / "remote.log", prefix=prefix) as remote:
        client = Client(create_app(logdir, cache_dir=tmp_path / "cache"))
        status, body = _post(client, {"addresses": remote.address, "duration_ms": 300})
        assert status == 502, body
        (result,) = body["results"]
        assert result["kind"] == "remote_disk"
        path = logdir / "plugins" / "profile" / body["session"] / f"localhost_{remote.port}.xplane.pb"
        assert result["path"] == str(path)
        assert str(path) in result["message"] and "ITS OWN machine" in result["message"]
        assert not path.exists()
        # ... and the data really is on the server's side.
        assert remote.view_of(path).stat().st_size > 0


@pytest.mark.skipif(sys.platform != "linux", reason="capabilities are Linux-only")
def test_read_only_logdir(tf_server: ProfilerServer, tmp_path: Path) -> None:
    """A logdir we cannot write to is refused before any connection, by the CLI and by a real
    `tbprof serve`. Root ignores file modes, so as root the processes run without
    CAP_DAC_OVERRIDE (then mode 555 binds them as it binds any user)."""
    logdir = tmp_path / "ro"
    logdir.mkdir()
    logdir.chmod(0o555)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = "/usr/bin/setpriv"
        if not Path(setpriv).exists():
            pytest.skip("running as root without setpriv: cannot make a directory read-only for us")
        caps = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    env = dict(os.environ, PYTHONPATH=str(PLUGIN_SRC), TBPROF_CACHE_DIR=str(tmp_path / "cache"))
    try:
        proc = subprocess.run([*prefix, sys.executable, "-m", "tbprof.cli", "capture", tf_server.address,
                               "--logdir", str(logdir)], capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                              env=env)
        assert proc.returncode == 1, proc.stderr
        assert f"cannot capture into {logdir}" in proc.stderr and "not writable" in proc.stderr
        assert list(logdir.iterdir()) == []
        _read_only_over_http(prefix, logdir, tmp_path, tf_server.address)
    finally:
        logdir.chmod(0o755)


def _read_only_over_http(prefix: list[str], logdir: Path, tmp_path: Path, address: str) -> None:
    import urllib.error
    import urllib.request

    from tests import servers

    def cmd(port: int) -> list[str]:
        return [*prefix, sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(logdir), "--port", str(port)]

    with servers._run(cmd, "/data/plugin/tbprof/settings", tmp_path / "cache", tmp_path / "serve.log") as srv:
        req = urllib.request.Request(srv.api + "capture", data=json.dumps({"addresses": address}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=60)
        assert e.value.code == 403
        body = json.loads(e.value.read())
        assert body["kind"] == "logdir_read_only" and "not writable" in body["error"]
