"""Logdirs on S3 (moto's real S3 server over HTTP, s3fs): the same runs and numbers as the
local copy of the same files, through the Python service, the CLI and `tbprof serve`.

TensorBoard itself runs on ``s3://`` as on a machine without TensorFlow (it then reads the
bucket with boto3): TensorBoard 2.21 *with* TensorFlow refuses the scheme at start (its own
event ingestion needs ``tensorflow-io``) before it loads any plugin."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests import servers

sys.path.insert(0, str(servers.REPO / "bench"))  # make_pod: N hosts from real host files
from tests.remote.conftest import S3

pytestmark = pytest.mark.slow


def _without_paths(value: Any) -> Any:
    """The result as JSON with file locations dropped: the remote side names s3:// URLs, the local one paths."""
    from tbprof.analyses.encode import to_json_bytes

    return _drop_paths(json.loads(to_json_bytes(value)))


def _drop_paths(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_paths(v) for k, v in value.items() if k not in ("source_path", "file", "path")}
    if isinstance(value, list):
        return [_drop_paths(v) for v in value]
    return value


def test_runs_and_numbers_match_local(s3_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    from tbprof.service.profiles import Profiles
    from tbprof.service.summary import summary

    remote = Profiles(s3_logdir, cache_dir=tmp_path / "cache_remote")
    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    remote_runs, local_runs = remote.index.runs(), local.index.runs()
    # Same run names, kinds and host names: discovery reads names only, wherever they are.
    assert {n: (r.kind, sorted(r.hosts)) for n, r in remote_runs.items()} == \
           {n: (r.kind, sorted(r.hosts)) for n, r in local_runs.items()}
    pod = next(n for n in remote_runs if n.startswith("jax_2hosts/"))
    assert str(remote_runs[pod].hosts["worker0"]).startswith("s3://tbprof-logs/logs/jax_2hosts/")
    assert _without_paths(summary(remote, remote_runs[pod])) == _without_paths(summary(local, local_runs[pod]))
    tool = remote.tool("overview_page")
    assert _without_paths(remote.compute(remote_runs[pod], list(remote_runs[pod].hosts), tool, {})) == \
           _without_paths(local.compute(local_runs[pod], list(local_runs[pod].hosts), tool, {}))


def test_listing_is_cached_between_refreshes(s3_logdir: str, tmp_path: Path) -> None:
    from tbprof.fs import UrlPath, location
    from tbprof.service.logdir import MIN_REFRESH_S, RunIndex

    root = location(s3_logdir)
    assert isinstance(root, UrlPath)
    index = RunIndex(root, ttl_s=3600)
    first = index.runs()
    # A file added after the listing is not seen until a refresh: the index did not list again.
    root.listing.fs.pipe("tbprof-logs/logs/late/plugins/profile/s1/h.xplane.pb", b"x")
    try:
        assert index.runs() is first
        time.sleep(MIN_REFRESH_S + 0.1)  # a forced refresh of a URL waits this long since the last listing
        assert "late/s1" in index.runs(refresh=True)
    finally:
        root.listing.fs.rm("tbprof-logs/logs/late", recursive=True)


def _cli(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env, "PYTHONPATH": str(servers.PLUGIN_SRC), "TBPROF_CACHE_DIR": str(tmp_path / "c")}
    return subprocess.run([sys.executable, "-m", "tbprof.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=300)


def test_cli_summary_of_a_url(s3: S3, s3_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    done = _cli(["summary", f"{s3_logdir}/jax_mlp", "--json", "--workers", "1"], s3.env, tmp_path)
    assert done.returncode == 0, done.stderr
    local = _cli(["summary", str(profiles_root / "jax_mlp"), "--json", "--workers", "1"], {}, tmp_path)
    assert _without_paths(json.loads(done.stdout)) == _without_paths(json.loads(local.stdout))


def test_missing_bucket_and_unreachable_endpoint_are_clear(s3: S3, tmp_path: Path) -> None:
    done = _cli(["summary", "s3://no-such-bucket/logs"], s3.env, tmp_path)
    assert done.returncode == 2  # unreadable profile / storage
    assert "bucket 'no-such-bucket' does not exist" in done.stderr and "Traceback" not in done.stderr
    # An endpoint nobody listens on (port 9 is discard; nothing serves it here): the reason is named.
    done = _cli(["summary", "s3://tbprof-logs/logs"], {**s3.env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
                                                       "AWS_MAX_ATTEMPTS": "1"}, tmp_path)
    assert done.returncode == 2 and "cannot list" in done.stderr and "Traceback" not in done.stderr


def test_serve_on_s3(s3: S3, s3_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    from tbprof.service.profiles import Profiles

    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    pod = next(n for n in local.index.runs() if n.startswith("jax_2hosts/"))
    expected = _without_paths(local.compute(local.index.runs()[pod], list(local.index.runs()[pod].hosts),
                                            local.tool("overview_page"), {}))
    with servers.tbprof_serve(s3_logdir, tmp_path / "cache", tmp_path / "serve.log", extra_env=s3.env,
                              extra_args=("--workers", "2")) as srv:
        status, body = srv.get_json("runs")
        assert status == 200, body
        assert pod in {r["run"] for r in body["runs"]}
        status, data = srv.get_json(f"data?run={pod}&host=__all__&tool=overview_page")
        assert status == 200, data
        assert _without_paths(data) == expected
        assert "Traceback" not in srv.log()


def test_tensorboard_plugin_on_s3(s3_logdir: str, profiles_root: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """TensorBoard's own plugin object on an ``s3://`` logdir (the TBContext TensorBoard builds),
    served through its WSGI app: the runs and the all-hosts overview of the bucket."""
    import argparse

    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tbprof.service.profiles import Profiles
    from tbprof.tb_plugin import TbprofLoader

    monkeypatch.setenv("TBPROF_CACHE_DIR", str(tmp_path / "cache"))
    parser = argparse.ArgumentParser()
    TbprofLoader().define_flags(parser)
    flags = parser.parse_args(["--tbprof_workers", "1"])
    plugin = TbprofLoader().load(base_plugin.TBContext(logdir=s3_logdir, flags=flags))
    assert plugin.is_active()
    client = Client(plugin.get_plugin_apps()["/*"])
    runs = client.get("/data/plugin/tbprof/runs").get_json()["runs"]
    pod = next(r["run"] for r in runs if r["run"].startswith("jax_2hosts/"))
    answer = client.get("/data/plugin/tbprof/data", query_string={"run": pod, "host": "__all__",
                                                                  "tool": "overview_page"})
    assert answer.status_code == 200
    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    run = local.index.runs()[pod]
    assert _without_paths(answer.get_json()) == _without_paths(local.compute(run, list(run.hosts),
                                                                             local.tool("overview_page"), {}))


class _Requests(logging.Handler):
    """Counts the requests moto's server logs (one werkzeug INFO line per request)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def count(self, method: str, needle: str = "") -> int:
        return sum(1 for line in self.lines if f'"{method} ' in line and needle in line)


def test_a_pod_is_listed_with_one_request_and_read_with_one_get_per_host(s3: S3, tmp_path: Path) -> None:
    from make_pod import make_pod
    from tbprof.service.profiles import Profiles
    from tbprof.service.summary import summary

    hosts = 16
    make_pod(tmp_path / "pod", hosts)
    s3.fs.mkdir("pod-requests")  # type: ignore[attr-defined]
    s3.fs.put(str(tmp_path / "pod") + "/", "pod-requests/logs/", recursive=True)  # type: ignore[attr-defined]
    counter = _Requests()
    werkzeug_log = logging.getLogger("werkzeug")
    level = werkzeug_log.level
    werkzeug_log.setLevel(logging.INFO)
    werkzeug_log.addHandler(counter)
    try:
        profiles = Profiles("s3://pod-requests/logs", cache_dir=tmp_path / "cache")
        runs = profiles.index.runs()
        assert [len(r.hosts) for r in runs.values()] == [hosts]
        # Discovery: one recursive listing, no request per file (sizes and times come with it).
        assert counter.count("GET", "list-type=2") == 1 and counter.count("HEAD") == 0
        assert profiles.index.runs() is runs  # within the refresh interval: no request at all
        assert len(counter.lines) == 1
        summary(profiles, next(iter(runs.values())))
        # Reading: one GET per host file, and still no HEAD (the listing answered the stats).
        assert counter.count("GET", ".xplane.pb") == hosts and counter.count("HEAD") == 0
    finally:
        werkzeug_log.removeHandler(counter)
        werkzeug_log.setLevel(level)


def test_compare_and_check_between_a_bucket_and_a_local_copy(s3: S3, s3_logdir: str, profiles_root: Path,
                                                             tmp_path: Path) -> None:
    remote, local = f"{s3_logdir}/jax_mlp", str(profiles_root / "jax_mlp")
    done = _cli(["compare", remote, local, "--json"], s3.env, tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # The same file on both sides (one read from the bucket): the compare finds them identical.
    assert report["identical"] is True
    assert report["step_time"]["change"]["median_delta_ms"] == 0
    done = _cli(["check", remote, local, "--max-regression", "5%"], s3.env, tmp_path)
    assert done.returncode == 0, done.stderr


def test_bad_credentials_are_named(tmp_path: Path) -> None:
    """moto's server with IAM authentication on (``INITIAL_NO_AUTH_ACTION_COUNT=0``): keys it does
    not know are refused, and tbprof says it is the credentials."""
    import urllib.error
    import urllib.request

    port = servers.free_port()
    log = open(tmp_path / "moto.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"}, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2).close()
                break
            except urllib.error.HTTPError:
                break  # answering, even if with an error: it is up
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "moto.log").read_text()
                time.sleep(0.2)
        env = {"AWS_ACCESS_KEY_ID": "unknown-key", "AWS_SECRET_ACCESS_KEY": "unknown-secret",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
        done = _cli(["summary", "s3://some-bucket/logs"], env, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "permission denied" in done.stderr and "check the credentials" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def tensorboard_answers_like_local(logdir: str, env: dict[str, str], tool: str, profiles_root: Path,
                                   tmp_path: Path) -> None:
    """A real TensorBoard process on the bucket ``logdir``, as on a machine without TensorFlow,
    answers ``tool`` for jax_2hosts' all hosts as the local copy does (TensorBoard and tbprof
    both start from the bucket: TensorBoard through its own file layer, tbprof through fsspec)."""
    from tbprof.service.profiles import Profiles

    with servers.tensorboard(logdir, tmp_path / "cache", tmp_path / "tb.log", extra_env=env,
                             without_tensorflow=True) as tb:
        status, runs = tb.get_json("runs")
        assert status == 200, tb.log()
        pod = next(r["run"] for r in runs["runs"] if r["run"].startswith("jax_2hosts/"))
        status, answer = tb.get_json(f"data?run={pod}&host=__all__&tool={tool}")
        assert status == 200, tb.log()
        assert "Traceback" not in tb.log()
    local = Profiles(profiles_root, cache_dir=tmp_path / "cache_local")
    run = local.index.runs()[pod]
    assert _without_paths(answer) == _without_paths(local.compute(run, list(run.hosts), local.tool(tool), {}))


def test_tensorboard_process_on_s3(s3: S3, s3_logdir: str, profiles_root: Path, tmp_path: Path) -> None:
    """A real ``tensorboard --logdir s3://...`` process, on a machine without TensorFlow (with it,
    TensorBoard's own ingestion needs tensorflow-io for ``s3://``): TensorBoard reads the bucket
    through boto3 (``S3_ENDPOINT``), tbprof through s3fs (``AWS_ENDPOINT_URL``)."""
    tensorboard_answers_like_local(s3_logdir, {**s3.env, "S3_ENDPOINT": s3.endpoint}, "overview_page",
                                   profiles_root, tmp_path)


def test_a_bucket_file_over_the_budget_streams_by_ranged_reads(s3_logdir: str, profiles_root: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile in a bucket larger than the memory budget converts by streaming too: ranged GETs
    of bounded windows into the local disk cache, the same store as the local file's in-memory
    conversion; a small window (8 KB: many requests, every header on some window boundary)."""
    from tbprof.cache.disk_cache import DiskCache
    from tbprof.cache.memory_guard import LIMIT_ENV, memory_factor
    from tbprof.readers.kinds import KINDS
    from tbprof.readers.xplane import read_xspace
    from tbprof.readers.xplane_stream import stream_xspace
    from tbprof.service.profiles import Profiles
    from tests.conftest import xplane_of
    from tests.core.store_digest import store_digest

    local = xplane_of(profiles_root, "jax_mlp")
    want = store_digest(read_xspace(local))
    remote = Profiles(s3_logdir, cache_dir=tmp_path / "cache")
    run = next(r for n, r in remote.index.runs().items() if n.startswith("jax_mlp/"))
    url = run.hosts[next(iter(run.hosts))]
    got = stream_xspace(url, DiskCache(tmp_path / "direct"), "entry", 4 << 20, window_bytes=8 << 10)
    assert store_digest(got) == want
    # Through the service: the guard refuses it in memory (half its estimate), so it streams.
    monkeypatch.setenv(LIMIT_ENV, str(local.stat().st_size * memory_factor(local) // 2))
    kind = KINDS["xspace"]
    store = remote.cache.get(url, kind.reader, kind=kind.store_format, streamer=kind.streamer)
    assert isinstance(store.planes[0].start_ps, np.memmap)
    assert store_digest(store) == want


def test_a_bucket_file_rewritten_while_streaming_is_a_read_error(s3: S3, profiles_root: Path, tmp_path: Path) -> None:
    """The object is rewritten shorter after discovery listed it: the ranged reads come back
    short (or the size check at the end differs), and the conversion is a 422 that says the file
    changed, with no entry left in the cache."""
    from tbprof.cache.disk_cache import DiskCache
    from tbprof.errors import ProfileReadError
    from tbprof.readers.xplane_stream import stream_xspace
    from tbprof.service.profiles import Profiles
    from tests.conftest import xplane_of

    fs = s3.fs
    local = xplane_of(profiles_root, "jax_mlp")
    fs.mkdir("tbprof-rewrite")  # type: ignore[attr-defined]
    fs.put(str(local), "tbprof-rewrite/logs/run/plugins/profile/s/vm.xplane.pb")  # type: ignore[attr-defined]
    remote = Profiles("s3://tbprof-rewrite/logs", cache_dir=tmp_path / "cache")
    run = next(iter(remote.index.runs().values()))
    url = run.hosts["vm"]
    data = local.read_bytes()
    fs.pipe("tbprof-rewrite/logs/run/plugins/profile/s/vm.xplane.pb", data[: len(data) // 2])  # type: ignore[attr-defined]
    disk = DiskCache(tmp_path / "direct")
    with pytest.raises(ProfileReadError, match="changed while it was being read"):
        stream_xspace(url, disk, "entry", 4 << 20, window_bytes=8 << 10)
    assert not disk.has("entry")


def test_a_chrome_trace_in_a_bucket_is_read_by_ranged_windows(s3_logdir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chrome trace in a bucket is read window by window (ranged GETs), gzip streamed: the
    store pinned for the local file (tests/core/chrome_digests.json), with 8 KB windows."""
    from tbprof.fs import location
    from tbprof.readers import chrome_trace
    from tests.core.chrome_digest import DEMO, DIGESTS, semantic_digest

    local = next((DEMO / "jax_mlp").rglob("vm.trace.json.gz"))
    rel = local.relative_to(DEMO)
    monkeypatch.setattr(chrome_trace, "WINDOW_BYTES", 8 << 10)
    store = chrome_trace.read_chrome_trace(location(f"{s3_logdir}/{rel.as_posix()}"))
    want = json.loads(DIGESTS.read_text())[str(rel)]
    assert json.loads(json.dumps(semantic_digest(store))) == want


def test_a_chrome_trace_in_a_bucket_over_the_budget_streams_to_the_disk_cache(
        s3_logdir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Chrome trace in a bucket larger than the memory budget is built in the local disk cache
    (readers/chrome_stream.py) from ranged reads: the store pinned for the local file, directly
    with 8 KB windows and tiny chunks, and through the service when the guard refuses it."""
    from tbprof.cache.disk_cache import DiskCache
    from tbprof.cache.memory_guard import LIMIT_ENV
    from tbprof.fs import location
    from tbprof.readers.chrome_stream import stream_chrome_trace
    from tbprof.readers.kinds import KINDS
    from tbprof.service.profiles import Profiles
    from tests.core.chrome_digest import DEMO, DIGESTS, semantic_digest

    local = next((DEMO / "jax_mlp").rglob("vm.trace.json.gz"))
    rel = local.relative_to(DEMO)
    url = location(f"{s3_logdir}/{rel.as_posix()}")
    want = json.loads(DIGESTS.read_text())[str(rel)]
    got = stream_chrome_trace(url, DiskCache(tmp_path / "direct"), "entry", 8 << 20, chunk_events=16,
                              window_bytes=8 << 10)
    assert json.loads(json.dumps(semantic_digest(got))) == want
    # Through the service: a budget below the gzip's estimate (30x its bytes), so it streams.
    monkeypatch.setenv(LIMIT_ENV, str(local.stat().st_size * 10))
    remote = Profiles(s3_logdir, cache_dir=tmp_path / "cache")
    kind = KINDS["chrome_trace"]
    store = remote.cache.get(url, kind.reader, kind=kind.store_format, streamer=kind.streamer)
    assert isinstance(store.planes[0].start_ps, np.memmap)
    assert json.loads(json.dumps(semantic_digest(store))) == want
