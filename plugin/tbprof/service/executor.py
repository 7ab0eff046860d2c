"""Where per-host work runs: in-process, a local process pool, or a Dask distributed cluster.

A pod's hosts convert independently, so converting them is a map over host files. Each task
(``convert_host``) converts one file, writes the store into the *shared* disk cache and
returns a small JSON-able per-host summary; stores never travel back to the server (no
pickled stores, and the server's memory stays the summaries plus the stores a page opens,
which it maps from the cache). The executor only ever ships strings (a path or URL, a run
kind, a cache dir) to workers and dicts back.

* ``InProcess``: ``--workers 1``; what tests and single-host runs use.
* ``ProcessPool``: ``--workers N`` (default 1, see ``default_workers``); worker processes
  (never forked from a threaded server), kept for the life of the server. A worker that dies
  (OOM killer, a crash) breaks the pool: it is rebuilt and the unfinished hosts retried once.
* ``DaskExecutor``: ``--dask-scheduler ADDRESS`` / ``$TBPROF_DASK_SCHEDULER``; Dask retries a
  task whose worker died (``retries``), and its workers must see the same cache dir.

Results arrive as they finish (``map_hosts`` yields in completion order), so one slow host
never holds back the others' results, and a progress callback counts hosts done / total.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tbprof.errors import ProfileReadError

if TYPE_CHECKING:  # the pool module (multiprocessing, ~9 ms) loads only when a pool is made
    from concurrent.futures import ProcessPoolExecutor

log = logging.getLogger("tbprof")

DASK_ENV = "TBPROF_DASK_SCHEDULER"
WORKERS_ENV = "TBPROF_WORKERS"
TASK_RETRIES = 2  # a task whose worker died is run again at most this often

Progress = Callable[[int, int], None]  # (hosts done, hosts total)


@dataclass(frozen=True)
class HostTask:
    host: str
    path: str  # local path or fsspec URL of the host file
    kind: str  # a key of readers.kinds.KINDS
    cache_dir: str  # the disk cache every worker writes to (shared with the server)
    # What the server's listing says of a URL's file, so a worker need not ask again (a
    # request per host; the cache key must also be the server's).
    size_bytes: int = -1
    mtime_ns: int = -1


def convert_host(task: HostTask) -> dict[str, Any]:
    """Converts one host file into the disk cache (unless it is there already) and returns its
    summary: ``{"host", "key", "seconds", "cached", "summary"}`` or ``{"host", "error", "file"}``.

    Runs in a worker: imports here so that a worker pays for what it uses only.
    """
    from pathlib import Path

    from tbprof.analyses.pages.profile_summary import summarize_store
    from tbprof.readers.kinds import KINDS
    from tbprof.store.disk_cache import DiskCache, cache_key
    from tbprof.store.fs import FileInfo, UrlPath, location
    from tbprof.store.memory_guard import plan
    from tbprof.store.paths import user_cache_dir
    from tbprof.store.remote_cache import open_disk_cache
    from tbprof.store.tables import ProfileStore

    started = time.perf_counter()
    try:
        kind = KINDS[task.kind]
        path = location(task.path)
        if isinstance(path, UrlPath) and task.size_bytes >= 0:
            path.listing.remember(path.key, FileInfo(task.size_bytes, task.mtime_ns))
        key = cache_key(path, kind.store_format)
        disk = open_disk_cache(task.cache_dir, user_cache_dir())
        store = disk.load(key)
        cached = store is not None
        if store is None:
            # A file larger than memory streams into a local cache (the same hook as ProfileCache).
            streamable = None if kind.streamer is None or not isinstance(path, Path) else isinstance(disk, DiskCache)
            stream_budget, _ = plan(path, streamable, disk.root if isinstance(disk, DiskCache) else None)
            if stream_budget is not None and kind.streamer is not None:
                store = kind.streamer(path, disk, key, stream_budget)
            else:
                store = kind.reader(path)
                if isinstance(store, ProfileStore):
                    disk.save(key, store)
        summary = summarize_store(store) if isinstance(store, ProfileStore) else {}
    except ProfileReadError as e:
        return {"host": task.host, "file": e.path, "error": e.reason}
    except OSError as e:
        return {"host": task.host, "file": task.path, "error": f"cannot read the file: {e.strerror or e}"}
    return {"host": task.host, "key": key, "cached": cached, "summary": summary,
            "seconds": round(time.perf_counter() - started, 4)}


class Executor(Protocol):
    name: str
    workers: int

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]: ...

    def start(self) -> None: ...

    def close(self) -> None: ...


class InProcess:
    name = "in-process"
    workers = 1

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        for task in tasks:
            yield convert_host(task)

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass


# Imported once by the fork server, so each worker forks with them loaded (a fresh interpreter
# importing numpy and the decoder takes ~2-3 s on this 2-core machine; a fork takes ms).
WORKER_PRELOAD = ["tbprof.service.executor", "tbprof.readers.kinds", "tbprof.store.disk_cache",
                  "tbprof.analyses.pages.profile_summary"]


def _worker_ready() -> bool:
    return True


class ProcessPool:
    """A local pool of worker processes forked from a fork server (never from the threaded
    server itself: a fork of a process with threads can inherit a held lock and hang)."""

    name = "process-pool"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            ctx = multiprocessing.get_context(method)
            if method == "forkserver":
                ctx.set_forkserver_preload(WORKER_PRELOAD)
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
        return self._pool

    def start(self) -> None:
        """Starts the workers now (they import in the background while the caller lists the
        logdir), so the first conversion does not wait for their start."""
        pool = self._get_pool()
        for _ in range(self.workers):
            pool.submit(_worker_ready)

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        from concurrent.futures.process import BrokenProcessPool

        todo = list(tasks)
        for attempt in range(TASK_RETRIES + 1):
            pool = self._get_pool()
            futures: dict[Future[dict[str, Any]], HostTask] = {}
            broken: list[HostTask] = []
            for i, t in enumerate(todo):
                try:
                    futures[pool.submit(convert_host, t)] = t
                except BrokenProcessPool:  # a worker died before every host was handed out
                    broken.extend(todo[i:])
                    break
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    try:
                        yield f.result()
                    except BrokenProcessPool:
                        broken.append(futures[f])
            if not broken:
                return
            # A worker died (killed, out of memory): the pool is unusable; start a new one and
            # run the hosts it took down again.
            log.warning("tbprof: a worker process died; retrying %d host(s) (attempt %d)", len(broken), attempt + 1)
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            todo = broken
        for task in todo:
            yield {"host": task.host, "file": task.path,
                   "error": f"the worker converting this file died {TASK_RETRIES + 1} times (out of memory?)"}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class DaskExecutor:
    """Tasks on a Dask distributed cluster (``pip install "tbprof[distributed]"``)."""

    name = "dask"

    def __init__(self, scheduler: str) -> None:
        try:
            from distributed import Client
        except ImportError as e:
            raise ValueError('--dask-scheduler needs dask: pip install "tbprof[distributed]"') from e
        self.scheduler = scheduler
        try:
            self._client = Client(scheduler, timeout=10)
        except OSError as e:
            raise ValueError(f"cannot connect to the Dask scheduler at {scheduler}: {e}") from e
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed

        # pure=False: a host converted again (its file changed) is a new task, not a cached one.
        futures = [self._client.submit(convert_host, t, pure=False, retries=TASK_RETRIES,
                                       key=f"tbprof-convert-{t.host}-{os.urandom(4).hex()}") for t in tasks]
        by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
        for f in as_completed(futures):
            try:
                yield f.result()
            except Exception as e:  # the task failed on every retry (its workers kept dying)
                task = by_key[f.key]
                yield {"host": task.host, "file": task.path, "error": f"the Dask task failed: {e}"}

    def start(self) -> None:
        pass

    def close(self) -> None:
        self._client.close()


def default_workers() -> int:
    """``$TBPROF_WORKERS``, else 1 (in-process).

    Not the core count: measured on 2 cores (bench/pod_bench.py, docs/remote.md), a process
    pool is slower than converting in-process for every pod tried (2 hosts: 3.6 s vs 2.9 s for
    ``tbprof summary``; 64 small hosts; 4 x 60 MB hosts 4.98 s vs 4.60 s): the decoder already runs its
    planes on threads with the GIL released, and handing a store over through the disk cache
    (about 100 column files per host) costs more than converting it. Workers pay off with
    more cores than the decoder's threads use, or on other machines (Dask).
    """
    env = os.environ.get(WORKERS_ENV, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return 1


def make_executor(workers: int | None = None, dask_scheduler: str | None = None) -> Executor:
    """The executor the flags ask for: Dask when a scheduler is named (flag or environment),
    else a process pool of ``workers`` (default ``default_workers()``), in-process for 1."""
    scheduler = dask_scheduler or os.environ.get(DASK_ENV, "").strip() or None
    if scheduler:
        return DaskExecutor(scheduler)
    n = workers if workers is not None else default_workers()
    if n < 1:
        raise ValueError(f"--workers must be at least 1, got {n}")
    return InProcess() if n == 1 else ProcessPool(n)
