"""Workers forked from a command (service/forked_workers.py, executor.py ``ProcessPool``'s forked
path): every job answered once, in any order; a worker that dies or raises gives its jobs back
as a clean answer, never a hang or a traceback; a killed worker's hosts are converted again and
the answers are the in-process ones; the tasks travel as JSON, never pickled."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from make_pod import make_pod
from tbprof.analyses.encode import to_json_bytes
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.service.executor import HostTask, InProcess, ProcessPool, _batch_bytes, _batch_from_bytes
from tbprof.service.forked_workers import DIED, Failed, ForkedWorkers
from tbprof.service.profiles import Profiles
from tbprof.service.summary import summary

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")]


def _nothing() -> None:
    pass


def _echo(job: bytes) -> bytes:
    """The work of the generic tests: b"raise" raises, b"die" ends the worker as the OOM killer
    would, b"slow" sleeps a little first; anything else comes back with the worker's pid."""
    if job == b"raise":
        raise RuntimeError("a bug in the work")
    if job == b"die":
        os.kill(os.getpid(), signal.SIGKILL)
    if job == b"slow":
        time.sleep(0.2)
    if job == b"garble" or job.startswith(b"half"):  # its answer: a header that is none, or half an answer
        from tbprof.service import forked_workers

        real = forked_workers._write_all

        def damaged(fd: int, data: bytes) -> None:
            if job == b"garble":
                real(fd, b"\x09" + data[1:])
            else:
                real(fd, data[:len(data) // 2])
                os._exit(0)

        forked_workers._write_all = damaged
    return job + b"@" + str(os.getpid()).encode()


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def test_every_job_answered_once_by_several_workers() -> None:
    before = _open_fds()
    workers = ForkedWorkers(3, _echo, _nothing)
    try:
        assert workers.wait_ready(60)
        jobs = [f"job{i}".encode() for i in range(20)]
        got = dict(workers.run(jobs))
        assert sorted(got) == list(range(20))
        answers = {i: a for i, a in got.items() if isinstance(a, bytearray)}
        assert len(answers) == 20 and all(answers[i].startswith(jobs[i] + b"@") for i in range(20))
        # Jobs were spread over more than one worker (each takes two at once, 20 jobs for 3).
        assert len({bytes(a.split(b"@")[1]) for a in answers.values()}) > 1
        # A second run on the same workers, with jobs larger than a pipe holds (written as the
        # worker reads them) and answers as large.
        big = [bytes([65 + i]) * (3 << 20) for i in range(3)]
        again = dict(workers.run(big))
        assert [again[i][:len(big[i]) + 1] for i in range(3)] == [b + b"@" for b in big]  # type: ignore[index]
    finally:
        workers.close(wait=True)
    assert _open_fds() <= before


def test_waiting_for_the_first_batches_ends_when_they_are_out_or_the_loader_ends(pod: Path, tmp_path: Path) -> None:
    """``ProcessPool.wait_handed_out`` (``tbprof summary`` holds its imports back with it): it
    returns once the forked workers have their first jobs; before that, as soon as the loading
    thread has ended (a pod whose partials were all cached hands nothing out), else at the
    timeout; at once for a pool with no forked workers."""
    import threading

    pool = ProcessPool(2, min_pool_bytes=1)
    pool.wait_handed_out(lambda: True, 60)  # nothing forked: no wait
    try:
        pool._start_forked(HEADLINE_PARTS)
        forked = pool._forked
        assert forked is not None and not forked.handed.is_set()
        started = time.monotonic()
        pool.wait_handed_out(lambda: False, 60)  # the loader has ended
        pool.wait_handed_out(lambda: True, 0.05)  # still loading: the timeout
        assert time.monotonic() - started < 30 and not forked.handed.is_set()
        profiles = Profiles(pod, cache_dir=tmp_path / "c", executor=pool)
        run = next(iter(profiles.index.runs().values()))
        loading = threading.Thread(target=lambda: profiles.views(run, list(run.hosts), parts=HEADLINE_PARTS))
        loading.start()
        pool.wait_handed_out(lambda: True, 60)
        assert forked.handed.is_set() and forked.handed_at is not None
        loading.join(120)
        assert not loading.is_alive()
    finally:
        pool.close(wait=True)


def test_a_raising_job_and_a_dying_worker_are_clean_answers() -> None:
    workers = ForkedWorkers(2, _echo, _nothing)
    try:
        got = dict(workers.run([b"slow", b"raise", b"die", b"a", b"b", b"c", b"d"]))
        assert sorted(got) == list(range(7))
        assert got[1] == Failed("RuntimeError: a bug in the work")
        assert got[2] is DIED
        # Jobs the dead worker had queued come back DIED too; every other job was answered.
        assert all(isinstance(got[i], bytearray) or got[i] is DIED for i in range(3, 7))
        assert isinstance(got[0], bytearray)
        assert workers.alive() == 1
        # A worker whose answer's header is none, or that leaves in the middle of an answer: its
        # job comes back DIED (the first worker ended by the command).
        assert dict(workers.run([b"garble"])) == {0: DIED}
        assert workers.alive() == 0
    finally:
        workers.close(wait=False)
    workers = ForkedWorkers(2, _echo, _nothing)
    try:
        got = dict(workers.run([b"half" + b"." * 200_000, b"slow"]))
        assert got[0] is DIED and isinstance(got[1], bytearray) and workers.alive() == 1
        # Every worker dead: what is left comes back DIED, at once.
        workers.run([b"die"]).__next__()
        assert workers.alive() == 0
        assert dict(workers.run([b"x", b"y"])) == {0: DIED, 1: DIED}
    finally:
        workers.close(wait=False)


def test_tasks_travel_as_json_and_come_back_equal(tmp_path: Path) -> None:
    batch = [HostTask("h0", str(tmp_path / "a.xplane.pb"), "xspace", str(tmp_path / "c"), 12, 34,
                      write_store=False, parts=HEADLINE_PARTS),
             HostTask("h\u00e91", "gs://bucket/b.xplane.pb", "xspace", str(tmp_path / "c"))]
    job = _batch_bytes(batch)
    assert isinstance(json.loads(job), list)
    assert _batch_from_bytes(job) == batch
    with pytest.raises(ValueError):
        _batch_from_bytes(b"[1]")


HOSTS = 6


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six hosts: copies of jax_2hosts' two real host files."""
    root = tmp_path_factory.mktemp("pod")
    make_pod(root, HOSTS)
    return root


def _answers(profiles: Profiles) -> dict[str, Any]:
    run = next(iter(profiles.index.runs().values()))
    tool = profiles.tool("overview_page")
    return json.loads(to_json_bytes({"summary": summary(profiles, run),
                                     "overview": profiles.compute(run, list(run.hosts), tool, {})}))


@pytest.mark.parametrize("killed", [1, 2])
def test_killed_forked_workers_hosts_are_converted_again(pod: Path, tmp_path: Path, killed: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """One of two forked workers killed (as the OOM killer would) before the pod's run: its
    batches come back and run again, a host at a time, on the other; both killed: on the fork
    server's pool. The answers are the in-process ones either way."""
    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))  # the fork server's
    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        pool._start_forked()
        assert pool._forked is not None
        pool.wait_ready()
        for pid in pool._forked.pids[:killed]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        pooled = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
        assert _answers(pooled) == _answers(reference)
        assert (pool._pool is not None) == (killed == 2)
    finally:
        pool.close(wait=True)


def test_an_unreadable_host_on_forked_workers_is_reported_not_fatal(pod: Path, tmp_path: Path) -> None:
    """A host whose file is not an XSpace profile, converted by a forked worker, is one of the
    summary's unreadable hosts; the others are summarised."""
    import shutil

    broken = tmp_path / "pod"
    shutil.copytree(pod, broken)
    bad = next(broken.rglob("host0001.xplane.pb"))
    bad.write_bytes(b"\x0a\xff\xff")
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        pool._start_forked(HEADLINE_PARTS)
        profiles = Profiles(broken, cache_dir=tmp_path / "c", executor=pool)
        out = summary(profiles, next(iter(profiles.index.runs().values())), parts=HEADLINE_PARTS)
    finally:
        pool.close(wait=False)
    assert out["host_count"] == HOSTS - 1
    assert [e["host"] for e in out["host_errors"]] == ["host0001"]
    assert "not a readable XSpace profile" in out["host_errors"][0]["error"]


def test_a_fork_that_fails_leaves_no_worker_and_the_pool_starts_when_needed(
        pod: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No process left to fork (EAGAIN) after the first worker: the one forked is ended, the
    command goes on, and its hosts convert on a pool started when they are needed."""
    real_fork = os.fork
    forks: list[int] = []

    def fork_once() -> int:
        if forks:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))  # the fork server's
    monkeypatch.setattr(os, "fork", fork_once)
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        pool._start_forked(HEADLINE_PARTS)
        assert pool._forked is None and len(forks) == 1
        with pytest.raises(ChildProcessError):
            os.waitpid(forks[0], os.WNOHANG)  # ended and reaped
        monkeypatch.setattr(os, "fork", real_fork)
        reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
        assert _answers(Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)) == _answers(reference)
    finally:
        pool.close(wait=True)


def test_released_workers_leave_and_a_later_conversion_still_answers(pod: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``release`` (a command that has its hosts' answers) lets the forked workers leave while it
    derives: they exit on their own; a conversion after that runs on the fork server's pool and
    answers as in-process."""
    plugin = str(Path(__file__).resolve().parents[2] / "plugin")
    monkeypatch.setenv("PYTHONPATH", plugin + os.pathsep + os.environ.get("PYTHONPATH", ""))  # the fork server's
    reference = Profiles(pod, cache_dir=tmp_path / "c1", executor=InProcess())
    pool = ProcessPool(2, min_pool_bytes=1)
    try:
        pool._start_forked(HEADLINE_PARTS)
        assert pool._forked is not None
        forked = pool._forked
        pids = forked.pids
        first = Profiles(pod, cache_dir=tmp_path / "c2", executor=pool)
        run = next(iter(first.index.runs().values()))
        assert first.views(run, list(run.hosts), parts=HEADLINE_PARTS).partials
        pool.release()
        assert forked.alive() == 0
        for pid in pids:  # each leaves by itself (its pipes closed), nothing sent to it
            deadline = time.monotonic() + 60
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                assert time.monotonic() < deadline, "a released worker did not leave"
                time.sleep(0.01)
        again = Profiles(pod, cache_dir=tmp_path / "c3", executor=pool)
        assert _answers(again) == _answers(reference)
        assert pool._pool is not None  # the fork server's
    finally:
        pool.close(wait=True)
