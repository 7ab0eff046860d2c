"""Per-host conversion on executors: a local process pool and a real Dask ``LocalCluster`` with
worker processes give the same stores and answers as converting in this process; a worker
killed in the middle of a run is retried."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod
from tbprof.analyses.encode import to_json_bytes
from tbprof.service.executor import DaskExecutor, HostTask, InProcess, ProcessPool, convert_host
from tbprof.service.profiles import Profiles
from tbprof.service.summary import summary

pytestmark = pytest.mark.slow

HOSTS = 6


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six hosts: copies of jax_2hosts' two real host files."""
    root = tmp_path_factory.mktemp("pod")
    make_pod(root, HOSTS)
    return root


@pytest.fixture(autouse=True)
def _workers_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    # Worker processes start fresh interpreters: they must import this checkout's tbprof too.
    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _answers(profiles: Profiles) -> dict[str, Any]:
    run = next(iter(profiles.index.runs().values()))
    tool = profiles.tool("overview_page")
    return json.loads(to_json_bytes({"summary": summary(profiles, run),
                                     "overview": profiles.compute(run, list(run.hosts), tool, {})}))


def _same_stores(a: Profiles, b: Profiles) -> None:
    run_a, run_b = next(iter(a.index.runs().values())), next(iter(b.index.runs().values()))
    for host in run_a.hosts:
        sa, sb = a.store(run_a, host), b.store(run_b, host)
        assert len(sa.planes) == len(sb.planes)
        for pa, pb in zip(sa.planes, sb.planes, strict=True):
            assert np.array_equal(pa.start_ps, pb.start_ps) and np.array_equal(pa.dur_ps, pb.dur_ps)
            assert np.array_equal(pa.name_id, pb.name_id)


def test_process_pool_equals_in_process(pod: Path, tmp_path: Path) -> None:
    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    pool = ProcessPool(2)
    pool.start()  # as a server starts it (a small pod would not start a pool on its own)
    try:
        pooled = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
        progress: list[tuple[int, int]] = []
        pooled.progress = lambda done, total: progress.append((done, total))
        assert _answers(pooled) == _answers(reference)
        # Every host was converted by a worker, each reported once; the workers sent partials
        # (also written to the cache) and the server loaded no store for these all-hosts answers.
        assert progress == [(i, HOSTS) for i in range(1, HOSTS + 1)]
        assert len(list((tmp_path / "c2" / "partials").glob("*.bin"))) == HOSTS
        run = next(iter(pooled.index.runs().values()))
        assert not any(pooled.is_loaded(run, h) for h in run.hosts)
        _same_stores(pooled, reference)
    finally:
        pool.close()


def test_background_load_converts_each_host_once(pod: Path, tmp_path: Path) -> None:
    """`tbprof summary` starts converting a pod's hosts on a thread while it imports the analyses,
    then asks for the same stores: that waits for the conversion in flight instead of sending
    every host to the pool a second time (progress would count 2 x HOSTS)."""
    pool = ProcessPool(2)
    try:
        profiles = Profiles(pod, cache_dir=tmp_path / "cache", executor=pool)
        progress: list[tuple[int, int]] = []
        profiles.progress = lambda done, total: progress.append((done, total))
        run = next(iter(profiles.index.runs().values()))
        loading = profiles.load_in_background(run, list(run.hosts))
        stores, errors = profiles.stores_tolerant(run, list(run.hosts))
        loading.join()
        assert len(stores) == HOSTS and errors == []
        assert progress == [(i, HOSTS) for i in range(1, HOSTS + 1)]
    finally:
        pool.close()


def test_unreadable_host_is_reported_not_fatal(pod: Path, tmp_path: Path) -> None:
    folder = next((pod / "plugins" / "profile").iterdir())
    broken = tmp_path / "pod"
    import shutil

    shutil.copytree(pod, broken)
    (broken / "plugins" / "profile" / folder.name / "host0001.xplane.pb").write_bytes(b"\x0a\xff\xff")
    result = convert_host(HostTask("host0001", str(broken / "plugins" / "profile" / folder.name /
                                                  "host0001.xplane.pb"), "xspace", str(tmp_path / "c")))
    assert result["host"] == "host0001" and "not a readable XSpace profile" in result["error"]
    pool = ProcessPool(2)
    pool.start()
    try:
        profiles = Profiles(broken, cache_dir=tmp_path / "c3", executor=pool)
        out = summary(profiles, next(iter(profiles.index.runs().values())))
        assert out["host_count"] == HOSTS - 1
        assert [e["host"] for e in out["host_errors"]] == ["host0001"]
    finally:
        pool.close()


def _kill_first_worker_once(marker: str) -> None:
    """Runs in a worker: the first task to get here kills its own process (as the OOM killer would)."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def test_killed_pool_worker_is_retried(pod: Path, tmp_path: Path) -> None:
    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    pool = ProcessPool(2)
    try:
        p = pool._get_pool()
        marker = str(tmp_path / "killed")
        # A worker dies (as the OOM killer would kill it): the pool is broken. Waiting for that
        # death first makes the test deterministic on a loaded machine; the conversion then
        # finds the broken pool, rebuilds it and converts every host.
        killed = p.submit(_kill_first_worker_once, marker)
        assert killed.exception(timeout=120) is not None and Path(marker).exists()
        pooled = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
        assert _answers(pooled) == _answers(reference)
    finally:
        pool.close()


def test_dask_local_cluster_equals_in_process(pod: Path, tmp_path: Path) -> None:
    from distributed import LocalCluster

    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      scheduler_port=0) as cluster:
        executor = DaskExecutor(cluster.scheduler_address)
        try:
            on_dask = Profiles(pod, cache_dir=tmp_path / "c2", executor=executor)
            assert _answers(on_dask) == _answers(reference)
            assert len(list((tmp_path / "c2" / "partials").glob("*.bin"))) == HOSTS
        finally:
            executor.close()


def test_dask_worker_killed_mid_run_is_retried(pod: Path, tmp_path: Path) -> None:
    from distributed import LocalCluster

    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      scheduler_port=0) as cluster:
        executor = DaskExecutor(cluster.scheduler_address)
        try:
            client = executor._client
            # Kill one worker process as soon as the first host has been handed out.
            pids = list(client.run(os.getpid).values())
            started = threading.Event()
            on_dask = Profiles(pod, cache_dir=tmp_path / "c2", executor=executor)

            def kill_after_first(done: int, total: int) -> None:
                if not started.is_set():
                    started.set()
                    os.kill(pids[0], signal.SIGKILL)

            on_dask.progress = kill_after_first
            assert _answers(on_dask) == _answers(reference)
            assert started.is_set()
        finally:
            executor.close()


def test_dask_cli_scheduler_and_workers_through_the_cli(pod: Path, tmp_path: Path) -> None:
    """A scheduler and two workers started with the ``dask`` CLI (as on a cluster), used by
    ``tbprof summary --dask-scheduler``: the same answer as in-process."""
    import subprocess
    import time

    from tests.servers import PLUGIN_SRC, free_port

    dask = str(Path(sys.executable).parent / "dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_SRC)}
    logs = [open(tmp_path / name, "wb") for name in ("scheduler.log", "worker.log")]
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=logs[0], stderr=logs[0], env=env, start_new_session=True)]
    try:
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                       "--no-dashboard", "--host", "127.0.0.1"],
                                      stdout=logs[1], stderr=logs[1], env=env, start_new_session=True))
        from distributed import Client

        deadline = time.monotonic() + 60
        with Client(address, timeout=60) as client:
            while len(client.scheduler_info()["workers"]) < 2:
                assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
                time.sleep(0.2)

        def cli(*extra: str) -> dict[str, Any]:
            done = subprocess.run([sys.executable, "-m", "tbprof.cli", "summary", str(pod), "--json",
                                   "--cache-dir", str(tmp_path / ("c" + str(len(extra)))), *extra],
                                  capture_output=True, text=True, env=env, timeout=300)
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

        assert cli("--dask-scheduler", address) == cli()
        # The workers converted every host and wrote its partial into the cache the CLI named.
        assert len(list((tmp_path / "c2" / "partials").glob("*.bin"))) == HOSTS
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=20)
            except (ProcessLookupError, OSError):
                pass
            except Exception:
                os.killpg(proc.pid, signal.SIGKILL)
        for log in logs:
            log.close()


def test_progress_route_counts_converted_hosts(pod: Path, tmp_path: Path) -> None:
    from werkzeug.test import Client

    from tbprof.http.app import create_app

    client = Client(create_app(pod, cache_dir=tmp_path / "cache"))
    run = client.get("/runs").get_json()["runs"][0]["run"]
    assert client.get("/progress", query_string={"run": run}).get_json()["hosts_converted"] == 0
    assert client.get("/data", query_string={"run": run, "host": "__all__", "tool": "overview_page"}).status_code == 200
    body = client.get("/progress", query_string={"run": run}).get_json()
    assert (body["hosts_converted"], body["hosts_total"]) == (HOSTS, HOSTS)
    missing = client.get("/progress", query_string={"run": "nope"})
    assert missing.status_code == 404 and missing.get_json()["kind"] == "not_found"


def test_default_workers_and_when_a_pool_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from tbprof.service.executor import POOL_MIN_BYTES, default_workers, make_executor

    monkeypatch.delenv("TBPROF_WORKERS", raising=False)
    assert default_workers() == len(os.sched_getaffinity(0))  # one worker per core this process may use
    monkeypatch.setenv("TBPROF_WORKERS", "1")
    assert isinstance(make_executor(), InProcess)
    # A pool that is not running starts only for enough bytes of host files (or unknown sizes).
    pool = ProcessPool(2)
    small = [HostTask(f"h{i}", "/x", "xspace", "/c", size_bytes=POOL_MIN_BYTES // 4) for i in range(3)]
    big = [*small, HostTask("h3", "/x", "xspace", "/c", size_bytes=POOL_MIN_BYTES // 4)]
    unknown = [*small, HostTask("h4", "/x", "xspace", "/c")]
    assert pool.in_process(small) and not pool.in_process(big) and not pool.in_process(unknown)
    pool.start()
    try:
        assert not pool.in_process(small)  # a running pool (a server's) takes every batch
    finally:
        pool.close()


def test_a_large_host_keeps_its_store_a_small_one_only_its_partial(pod: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import tbprof.service.executor as executor_mod

    path = next(pod.rglob("host0000.xplane.pb"))
    size = path.stat().st_size
    small = convert_host(HostTask("h", str(path), "xspace", str(tmp_path / "a"), size_bytes=size, write_store=False))
    assert small["partial"] and not small["stored"] and not (tmp_path / "a" / "stores").exists()
    # The same file counted as large (the threshold below its size): its store is written too.
    monkeypatch.setattr(executor_mod, "WRITE_STORE_MIN_BYTES", size)
    large = convert_host(HostTask("h", str(path), "xspace", str(tmp_path / "b"), size_bytes=size, write_store=False))
    assert large["partial"] == small["partial"] and large["stored"]
    assert len(list((tmp_path / "b" / "stores").iterdir())) == 1


def test_a_task_that_wants_no_store_reads_nothing_from_the_cache(pod: Path, tmp_path: Path) -> None:
    """The server hands out a partials-only task after its own lookup of the cache (a listing of
    the partial files and of the stores): the worker converts the file, even with a store and a
    partial of it in the cache, and writes the same partial back."""
    path = next(pod.rglob("host0000.xplane.pb"))
    cache = tmp_path / "c"
    first = convert_host(HostTask("h", str(path), "xspace", str(cache), write_store=True))
    assert first["stored"] and len(list((cache / "stores").iterdir())) == 1
    written = sorted((cache / "partials").iterdir())
    assert len(written) == 1
    again = convert_host(HostTask("h", str(path), "xspace", str(cache), write_store=False))
    assert not again["cached"] and not again["stored"] and "convert_s" in again["timings"]
    assert again["partial"] == first["partial"] == written[0].read_bytes()
    assert sorted((cache / "partials").iterdir()) == written  # replaced in place, no leftover


def test_a_partial_file_makes_its_folder_when_it_is_missing(tmp_path: Path) -> None:
    """The partials folder is made by the first write (not checked before each), private to the
    user, and made again when it was removed meanwhile (the cache cleared)."""
    from tbprof.service.partials import PartialFiles

    files = PartialFiles(tmp_path / "cache")
    files.save("k" * 32, b"one")
    assert files.load("k" * 32) == b"one"
    assert (files.dir.stat().st_mode & 0o777) == 0o700
    for f in files.dir.iterdir():
        f.unlink()
    files.dir.rmdir()
    files.save("k" * 32, b"two")
    assert files.load("k" * 32) == b"two" and [f.name for f in files.dir.iterdir()] == [files._path("k" * 32).name]


def test_start_early_only_for_a_pod_worth_a_pool(pod: Path, tmp_path: Path) -> None:
    """``tbprof summary`` starts the workers before it imports and lists, but only for a run
    whose hosts reach the pool's threshold; closing without waiting ends the idle workers."""
    small = ProcessPool(2)  # the default threshold (64 MB): six 650 KB hosts start nothing
    assert not small.start_early(str(pod)) and small._pool is None
    assert not ProcessPool(2, min_pool_bytes=1).start_early(str(tmp_path / "missing"))
    assert not InProcess().start_early(str(pod))
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        assert pool.start_early(str(pod))
        pool.wait_ready()
        assert pool._pool is not None
        procs = list(pool._pool._processes.values())
        assert len(procs) == 2 and all(p.is_alive() for p in procs)
        reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
        assert _answers(Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)) == _answers(reference)
    finally:
        pool.close(wait=False)
    assert pool._pool is None and not any(p.is_alive() for p in procs)


@pytest.mark.parametrize("parts", [None, "HEADLINE_PARTS"])
def test_the_fork_server_preloads_what_a_conversion_imports(pod: Path, tmp_path: Path, parts: str | None) -> None:
    """A worker forked after WORKER_PRELOAD (and the tools) imports no tbprof module while it
    converts a host for its partial: each import there would be paid again by every worker.
    (The fork server skips a preload that fails to import, so each must also import.) A
    command's worker preloaded for the headline's parts (``_preload_worker``: no tool module, as
    ``tbprof summary`` forks them) imports none either while it converts for those parts."""
    host = next(pod.rglob("*.xplane.pb"))
    code = f"""
import importlib, sys
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.service.executor import WORKER_PRELOAD, HostTask, _preload_worker, convert_batch, open_batch
from tbprof.service.tools import TOOL_MODULES
parts = {parts or "None"}
if parts is None:
    for m in WORKER_PRELOAD + list(TOOL_MODULES):
        importlib.import_module(m)
else:
    _preload_worker(parts)
    # (Some tool modules are what a conversion imports anyway: the headline's op tables, the summary.)
    assert sum(m not in sys.modules for m in TOOL_MODULES) >= len(TOOL_MODULES) // 2, "the tools were preloaded"
before = set(sys.modules)
batch = [HostTask("h", {str(host)!r}, "xspace", {str(tmp_path / "c")!r}, write_store=False, parts=parts)]
out = convert_batch(batch)
imported = sorted(m for m in set(sys.modules) - before if m.startswith("tbprof"))
assert open_batch(out, batch)["results"][0]["partial"] is not None
print(imported)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=dict(os.environ))
    assert out.stdout.strip() == "[]", out.stdout


# What computing the headline's parts of a host does not run: the tools (their registry, tables
# and results), the analyses of the other parts (kernels, precision, memory), the profile
# summary, the HLO cost analysis and the tfprof store.
NOT_FOR_THE_HEADLINE = ("tbprof.analyses.tool", "tbprof.analyses.table", "tbprof.analyses.results.common",
                        "tbprof.analyses.ops.kernel_stats", "tbprof.analyses.ops.precision",
                        "tbprof.analyses.memory.memory_profile", "tbprof.analyses.overview.profile_summary",
                        "tbprof.analyses.overview.headline", "tbprof.analyses.gpu.breakdown",
                        "tbprof.domain.hlo_cost", "tbprof.store.tfprof")


def test_a_headline_worker_imports_only_what_the_headline_parts_compute(pod: Path, tmp_path: Path) -> None:
    """A worker that ``tbprof summary`` forks preloads for the headline's parts (``_preload_worker``)
    and converts a host for them without importing what only the other parts, the tools or the
    summary need: a pod's workers are ready that much sooner (bench/measurements.md#services)."""
    host = next(pod.rglob("*.xplane.pb"))
    code = f"""
import sys
import tbprof.cli.summary
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.service.executor import HostTask, _preload_worker, convert_batch, open_batch
_preload_worker(HEADLINE_PARTS)
batch = [HostTask("h", {str(host)!r}, "xspace", {str(tmp_path / "c")!r}, write_store=False, parts=HEADLINE_PARTS)]
assert open_batch(convert_batch(batch), batch)["results"][0]["partial"] is not None
print(sorted(m for m in {NOT_FOR_THE_HEADLINE!r} if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=dict(os.environ))
    assert out.stdout.strip() == "[]", out.stdout


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked from the command on Linux only")
def test_forked_workers_freeze_their_imports_and_leave_no_descriptor(pod: Path, tmp_path: Path) -> None:
    """A command's forked workers (``start_early`` in a process with no other thread) wait for
    the last fork on a pipe, then preload and freeze what they imported out of the garbage
    collector; their pipes are closed in the command once they have ended, and the answers are
    the in-process ones. (Forked here directly: other tests of this process leave threads, with
    which ``start_early`` would use the fork server.)"""
    import functools
    import gc

    from tbprof.service.executor import _preload_worker
    from tbprof.service.forked_workers import ForkedWorkers

    before = _open_fds()
    workers = ForkedWorkers(2, lambda job: str(gc.get_freeze_count()).encode(),
                            functools.partial(_preload_worker, None))
    try:
        frozen = [int(answer) for _, answer in workers.run([b""] * 4)]  # type: ignore[arg-type]
        assert len(frozen) == 4 and all(n > 0 for n in frozen), frozen
    finally:
        workers.close(wait=True)
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        pool._start_forked()
        assert pool.forked
        pool.wait_ready()
        reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
        assert _answers(Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)) == _answers(reference)
    finally:
        pool.close(wait=True)
    assert _open_fds() <= before
