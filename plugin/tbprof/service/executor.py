"""Where per-host work runs: in-process, a local process pool, or a Dask distributed cluster.

A pod's hosts convert independently, so converting them is a map over host files. Hosts go
to the workers in batches of consecutive hosts (``batches``: about ``BATCHES_PER_WORKER`` per
worker, the last ones smaller, so the server handles tens of messages for a pod of a thousand
hosts, not a thousand, and the workers finish together).
A batch's task (``convert_batch``) converts each file (``convert_host``), writes the store or
the host's partial into the *shared* disk cache, decodes the hosts' partials and combines the
batch's op tables (a tree: the server merges one table per batch, not one per host), and
answers with one binary frame for the batch (analyses/partial_batches.py): each host's
values as arrays, which the server decodes with bounds checks (``open_batch``) as batches
arrive. Stores never travel back to the server (no pickled stores, and the server's memory
stays the partials plus the stores a page opens, which it maps from the cache). The executor
only ever ships strings (a path or URL, a run kind, a cache dir) to workers and a dict holding
one frame's bytes back.

* ``InProcess``: ``--workers 1``; what tests and single-host runs use.
* ``ProcessPool``: ``--workers N`` (default 1, see ``default_workers``); worker processes
  (never forked from a threaded server), kept for the life of the server. A worker that dies
  (OOM killer, a crash) breaks the pool: it is rebuilt and the unfinished hosts retried once.
* ``DaskExecutor``: ``--dask-scheduler ADDRESS`` / ``$TBPROF_DASK_SCHEDULER``, with
  ``--dask-security`` / ``$TBPROF_DASK_SECURITY`` for a TLS cluster (``dask_security``); Dask
  retries a task whose worker died (``retries``), and its workers must see the same cache dir.

Results arrive as they finish (``map_batches`` yields batches in completion order), so one slow
batch never holds back the others' results, and a progress callback counts hosts done / total.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.service.dask_security import has_dask_tls_config, make_security, security_spec

# The pool module (multiprocessing) loads only when a pool is made (bench/measurements.md#services).
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from tbprof.cache.disk_cache import DiskCache
    from tbprof.cache.remote_cache import RemoteCache
    from tbprof.service.forked_workers import ForkedWorkers

log = logging.getLogger("tbprof")

DASK_ENV = "TBPROF_DASK_SCHEDULER"
WORKERS_ENV = "TBPROF_WORKERS"
TASK_RETRIES = 2  # a task whose worker died is run again at most this often

Progress = Callable[[int, int], None]  # (hosts done, hosts total)

# A worker that only needs a host's partial still writes the host's store into the cache when
# the file is at least this big: writing has a fixed cost per entry (~100 column files) and
# little per MB, converting costs in proportion to the file. A small host would pay more to
# write than to convert again when a user opens it; a large one costs the worker a little more
# and opens at once (bench/measurements.md#services).
WRITE_STORE_MIN_BYTES = 8 << 20


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
    # Whether the worker writes the full store into the cache (a request that loads stores), or
    # only returns (and writes) the host's partial (an all-hosts tool that runs on partials).
    write_store: bool = True
    want_partial: bool = True
    # The parts of the partial the request reads (analyses/partials.py ``Parts``; None: all): a
    # worker computes those only.
    parts: frozenset[str] | None = None


# Batches per worker: one would make the server merge the fewest tables, but a worker that
# draws a batch of big hosts would then finish last alone, and the server would decode every
# batch's partials at the end, when they all arrive together. Four let the others take up the
# slack, and the server decode the first three quarters while the workers convert the rest
# (faster than two on 32 cores at 256 and 1024 hosts: bench/measurements.md#services).
BATCHES_PER_WORKER = 4
# The first batch's share of the hosts against the last's: workers take batches in order, so
# the last ones decide how unevenly the workers finish (and how much the server has left to
# decode once the last arrives); large first batches keep the batch count, and with it the
# server's merges, what it was.
FIRST_TO_LAST = 4


def batches(tasks: Sequence[HostTask], workers: int) -> list[list[HostTask]]:
    """The tasks cut into at most ``workers * BATCHES_PER_WORKER`` runs of consecutive hosts
    (consecutive: a batch's combined op tables then stand for a run of the pod's hosts, see
    analyses/partials.PodPartials), of two hosts at least where there are hosts enough for
    every worker (a batch of one host combines nothing). Sizes fall linearly from the first
    batch to the last (about ``FIRST_TO_LAST`` times fewer hosts), so the workers' last batches
    are short and they finish together."""
    n = min(len(tasks), max(1, workers * BATCHES_PER_WORKER), max(1, workers, len(tasks) // 2))
    if n == 0:
        return []
    least = 2 if len(tasks) >= 2 * n else 1
    spare = len(tasks) - least * n
    # Batch i's weight falls from FIRST_TO_LAST * n (the first) to about n (the last).
    weights = [FIRST_TO_LAST * n - (FIRST_TO_LAST - 1) * i for i in range(n)]
    total = sum(weights)
    out, start, cumulative = [], 0, 0
    for w in weights:
        # (Rounded up: a remainder goes to the earlier batches, never to the last.)
        extra_before = -(-cumulative * spare // total)
        cumulative += w
        end = start + least + -(-cumulative * spare // total) - extra_before
        out.append(list(tasks[start:end]))
        start = end
    return out


def convert_batch(tasks: Sequence[HostTask]) -> dict[str, Any]:
    """Converts consecutive hosts (``convert_host`` each), decodes their partials and combines
    their op tables here (a tree: the server merges one table per batch, not one per host), and
    answers with one frame for the batch (analyses/partial_batches.py ``encode_batch``): ``{"frame":
    bytes}``, which ``open_batch`` decodes in the server. The combined tables are of no host,
    with the ``COMBINED`` values (none for a single host, or when a host has no partial)."""
    from tbprof.analyses.partial_batches import decoded, encode_batch

    # One disk cache for the batch's hosts (opening one checks the folder's safety and sweeps its
    # writers' leftovers: once a batch, not once a host).
    caches: dict[str, DiskCache | RemoteCache] = {}
    results = [convert_host(t, with_summary=False, caches=caches) for t in tasks]
    started = time.perf_counter()
    parts = decoded(results)
    combined, combined_hosts, timings = None, [], {}
    with_partial = [(r, p) for r, p in zip(results, parts, strict=True) if r.get("partial") is not None]
    if len(with_partial) >= 2 and all(p is not None for _, p in with_partial):
        from tbprof.analyses.partials import combine_partials, encode_partials

        try:
            combined = encode_partials([], combine_partials([p for _, p in with_partial if p is not None]))
            combined_hosts = [r["host"] for r, _ in with_partial]
        except (ValueError, TypeError):  # the server then combines host by host
            log.debug("tbprof: no combined tables for a batch", exc_info=True)
    timings["combine_s"] = round(time.perf_counter() - started, 4)  # decoding and combining
    return {"frame": encode_batch(results, parts, combined, combined_hosts, timings)}


def open_batch(answer: Any, batch: Sequence[HostTask]) -> dict[str, Any]:
    """A worker's ``convert_batch`` answer for ``batch``, decoded and checked: ``{"results":
    [convert_host's result per host, without its summary], "parts": {host: HostPartial},
    "combined": bytes | None, "combined_hosts": [...], "timings": {...}, "open_s": seconds this
    took}``. Raises ValueError for an answer that is not a frame of this batch's hosts (a
    damaged or foreign answer: the frame's decoder checks every length and offset against its
    bytes)."""
    from tbprof.analyses.partial_batches import decode_batch

    started = time.perf_counter()
    if not isinstance(answer, dict) or not isinstance(answer.get("frame"), (bytes, bytearray)):
        raise ValueError("the answer is not a batch's frame")
    got = decode_batch(answer["frame"], [t.host for t in batch])
    return {"results": got.results, "parts": got.parts, "combined": got.combined,
            "combined_hosts": got.combined_hosts, "timings": got.timings,
            "open_s": time.perf_counter() - started}


def _host_summary(store: object) -> dict[str, Any]:
    # Imported here: a batch's hosts carry no summary (``convert_batch``), so a pod's worker
    # never imports the profile summary's analyses.
    from tbprof.analyses.overview.profile_summary import summarize_store
    from tbprof.store.tables import ProfileStore

    return dict(summarize_store(store)) if isinstance(store, ProfileStore) else {}


def convert_host(task: HostTask, with_summary: bool = True,
                 caches: dict[str, DiskCache | RemoteCache] | None = None) -> dict[str, Any]:
    """Converts one host file and returns its summary and partial: ``{"host", "key", "seconds",
    "cached", "stored", "summary", "partial", "timings"}`` or ``{"host", "error", "file"}``
    (``summary`` is absent when ``with_summary`` is false: a batch's frame carries the
    partial's). ``caches``: the disk caches opened so far, by cache folder, to open each once for
    several hosts (``convert_batch``).

    ``partial`` (analyses/partials.py) is what the all-hosts tools need of the host, in its binary
    form; it is also written next to the stores (service/partials.py). The store itself goes into the
    disk cache when ``task.write_store`` (a request that needs full stores) or the file is large
    (``WRITE_STORE_MIN_BYTES``: cheap to write, slow to convert again). A task that wants no
    store is converted without looking the host up in the cache: the server hands out only hosts
    with neither a partial nor a store there.
    ``fields``: the partial before its binary form, where this call built it (a batch's frame is
    written from it; ``convert_batch`` sends no such key). ``timings`` splits the seconds:
    ``load_s`` (the cached store, for a task that wants one), ``convert_s`` (read and decode),
    ``partial_s`` (the derived values), ``encode_s`` (their binary form), ``write_s`` (the
    partial's file and the store written to the cache), and ``cpu_s``: the CPU time the task took.

    Runs in a worker: imports here so that a worker pays for what it uses only.
    """
    from tbprof.cache.disk_cache import cache_key
    from tbprof.cache.paths import user_cache_dir
    from tbprof.cache.profile_cache import convert_file
    from tbprof.cache.remote_cache import open_disk_cache
    from tbprof.fs import FileInfo, UrlPath, location
    from tbprof.readers.kinds import KINDS
    from tbprof.service.partials import PartialFiles, encode_partial, partial_dict
    from tbprof.store.tables import ProfileStore

    started = time.perf_counter()
    cpu_started = time.process_time()  # the worker's CPU (decoder threads too): load-independent
    timings: dict[str, float] = {}
    key = ""
    fields: dict[str, Any] | None = None

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round(timings.get(name, 0.0) + now - since, 4)
        return now

    try:
        kind = KINDS[task.kind]
        path = location(task.path)
        if isinstance(path, UrlPath) and task.size_bytes >= 0:
            path.listing.remember(path.key, FileInfo(task.size_bytes, task.mtime_ns))
        key = cache_key(path, kind.store_format)
        disk = caches.get(task.cache_dir) if caches is not None else None
        if disk is None:
            disk = open_disk_cache(task.cache_dir, user_cache_dir())
            if caches is not None:
                caches[task.cache_dir] = disk
        files = PartialFiles(disk.root)
        partial = None
        t = time.perf_counter()
        # A task that wants no store comes from the server's lookup (host_partials.py
        # ``HostPartials._get`` lists the partial files and the stores once for the pod) and only
        # for a host with neither: looking it up again here would cost a failed open and a stat
        # per host, in folders the other workers are writing to.
        store = disk.load(key) if task.write_store else None
        cached = store is not None
        t = lap("load_s", t)
        stored = cached
        if store is None:
            # The store cache's own decision (read, or stream a file larger than memory into the
            # local cache: the entry is then written already).
            store, stored = convert_file(path, key, disk, kind.reader, kind.streamer)
            t = lap("convert_s", t)
        if isinstance(store, ProfileStore) and task.want_partial:
            store.keep_memo_private()  # this store is dropped when the task returns
            fields = partial_dict(store, task.parts)
            t = lap("partial_s", t)
            partial = encode_partial(fields) if fields is not None else None
            t = lap("encode_s", t)
            if partial is not None:
                files.save(key, partial)
                t = lap("write_s", t)
        worth_keeping = task.write_store or partial is None or task.size_bytes >= WRITE_STORE_MIN_BYTES
        if isinstance(store, ProfileStore) and not stored and worth_keeping:
            disk.save(key, store)
            stored = True
            t = lap("write_s", t)
        summary = {"summary": _host_summary(store)} if with_summary else {}
    except ProfileReadError as e:  # "key": these bytes are unreadable (remembered until the file changes)
        # A MemoryRefusal (no memory or cache disk now) may pass later: not remembered.
        remember = bool(key) and not isinstance(e, MemoryRefusal)
        return {"host": task.host, "file": e.path, "error": e.reason, **({"key": key} if remember else {})}
    except OSError as e:
        return {"host": task.host, "file": task.path, "error": f"cannot read the file: {e.strerror or e}"}
    timings["cpu_s"] = round(time.process_time() - cpu_started, 4)
    out = {"host": task.host, "key": key, "cached": cached, "stored": stored, **summary,
           "partial": partial, "timings": timings, "seconds": round(time.perf_counter() - started, 4)}
    if partial is not None and fields is not None:
        out["fields"] = fields  # the batch's frame takes what it carries from here (never sent)
    return out


class Executor(Protocol):
    name: str
    workers: int

    def map_batches(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        """``convert_batch``'s result for each batch of the tasks, as each finishes."""
        ...

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        """``convert_host``'s result for each task, a batch at a time."""
        ...

    def in_process(self, tasks: Sequence[HostTask]) -> bool:
        """Whether ``map_hosts`` would run these tasks in the caller's process."""
        ...

    def start(self) -> None: ...

    def release(self) -> None:
        """No more work is coming (a one-shot command that has its hosts' answers): workers
        forked for it may leave now, while the command derives its answer, rather than after."""
        ...

    def start_early(self, logdir: str, parts: frozenset[str] | None = None) -> bool:
        """Starts the workers in the background when ``logdir`` holds a pod worth them (a
        one-shot command, before it imports and lists); whether it did. ``parts``: what the
        command's hosts' partials hold (``HostTask.parts``; None: all), so that the workers
        import only what computing those needs."""
        ...

    def wait_handed_out(self, still_loading: Callable[[], bool], timeout_s: float) -> None:
        """Waits until the workers ``start_early`` forked have their first batches, while
        ``still_loading()`` (the thread that hands them out has not ended) and at most
        ``timeout_s``; returns at once where no worker was forked from this process."""
        ...

    def close(self, wait: bool = True) -> None:
        """Ends the workers: ``wait`` for each to exit cleanly, else (a one-shot command that has
        its answer, the workers idle) end them at once."""
        ...


def _hosts_of(batch_results: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for batch in batch_results:
        yield from batch["results"]


class InProcess:
    """Hosts converted in the caller's process, ``batch_hosts`` at a time (default 1: nothing
    travels, so combining in batches and framing the answer gain nothing, and progress counts
    every host; tests batch to check the tree combine and the frames without processes)."""

    name = "in-process"
    workers = 1

    def __init__(self, batch_hosts: int = 1) -> None:
        self.batch_hosts = max(1, batch_hosts)

    def map_batches(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        for i in range(0, len(tasks), self.batch_hosts):
            batch = tasks[i:i + self.batch_hosts]
            if len(batch) == 1:  # nothing to combine, nothing travels: no frame to write and read
                result = {k: v for k, v in convert_host(batch[0], with_summary=False).items() if k != "fields"}
                yield {"results": [result], "parts": {}, "combined": None, "combined_hosts": [], "timings": {}}
            else:
                yield open_batch(convert_batch(batch), batch)

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        return _hosts_of(self.map_batches(tasks))

    def in_process(self, tasks: Sequence[HostTask]) -> bool:
        return True

    def start(self) -> None:
        pass

    def release(self) -> None:
        pass

    def start_early(self, logdir: str, parts: frozenset[str] | None = None) -> bool:
        return False

    def wait_handed_out(self, still_loading: Callable[[], bool], timeout_s: float) -> None:
        pass

    def close(self, wait: bool = True) -> None:
        pass


def largest_folder_bytes(logdir: str, suffix: str = ".xplane.pb", enough: int | None = None) -> int:
    """Bytes of the ``suffix`` files of the folder below ``logdir`` (a local path) that holds the
    most (a run's hosts share a session folder); stops counting at ``enough``. Plain ``os``
    calls: this runs before the command imports numpy and the readers."""
    best = 0
    for root, _, files in os.walk(logdir, followlinks=False):
        total = 0
        for name in files:
            if name.endswith(suffix):
                try:
                    total += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    continue
        best = max(best, total)
        if enough is not None and best >= enough:
            break
    return best


# Imported once by the fork server, so each worker forks with them loaded (a fresh interpreter
# importing numpy and the decoder takes seconds on a small machine; a fork takes milliseconds).
# The tool modules too: a worker lists the tools with data for its host (``available_tools``).
# And what the first conversion imports (the XSpace reader, its protobuf modules, the cache's
# helpers): imported by each worker on its first host, they made that host several times slower
# than the next, a large share of a worker's time when a pod's hosts are spread over many
# workers (bench/measurements.md#services).
WORKER_PRELOAD = ["tbprof.service.executor", "tbprof.readers.kinds", "tbprof.cache.disk_cache",
                  "tbprof.service.partials", "tbprof.analyses.partials",
                  "tbprof.analyses.partial_batches", "tbprof.analyses.partial_frames",
                  "tbprof.readers.xplane", "tbprof.readers.xplane_columns", "tbprof.readers.files",
                  "tbprof.protos.xplane_pb2", "tbprof.protos.hlo_pb2", "tbprof._core.wire",
                  "tbprof.cache.remote_cache", "tbprof.cache.memory_guard", "tbprof.cache.paths",
                  "tbprof.cache.profile_cache"]


def _worker_ready() -> bool:
    return True


def _preload_worker(parts: frozenset[str] | None = None) -> None:
    """A forked worker's first act (``ProcessPool._start_forked``, once every worker is forked):
    it imports what the fork server would have preloaded, each worker in parallel with the
    others and with the command. A module that fails to import is skipped, as the fork server
    skips it (the task then says why). The tool modules only where the partials carry the tool
    list (``parts``; None: all): a worker asks each tool whether its host has data for that
    alone, and a command that reads less (``tbprof summary``) would have every worker import
    them (~20 ms) before its first host (bench/measurements.md#services).

    The collector is off while it imports (a module's objects live as long as the worker: the
    ~23 collections an import of ~140 modules ran freed a few objects, for ~4 ms of every
    worker's start, bench/measurements.md#services); then the objects imported (and those
    inherited from the command) are frozen out of it: a full collection would walk them all
    again every few hosts (copying the pages it writes, which the worker shares with the
    command)."""
    import gc

    gc.disable()
    try:
        _import_preload(parts)
    finally:
        gc.freeze()
        gc.enable()


def _import_preload(parts: frozenset[str] | None) -> None:
    import importlib

    for name in WORKER_PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            log.debug("tbprof: a worker could not preload %s", name, exc_info=True)
    from tbprof.analyses.partials import TOOL_LIST

    if parts is None or TOOL_LIST in parts:
        from tbprof.service.tools import TOOL_MODULES

        for name in TOOL_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:
                log.debug("tbprof: a worker could not preload %s", name, exc_info=True)


def _batch_bytes(batch: Sequence[HostTask]) -> bytes:
    """A batch's tasks as a forked worker's job (``_convert_batch_bytes``): JSON of their fields
    (strings, numbers, booleans, the parts as a sorted list), never a pickle."""
    import json
    from dataclasses import fields

    names = [f.name for f in fields(HostTask)]
    return json.dumps([{**{n: getattr(t, n) for n in names}, "parts": None if t.parts is None else sorted(t.parts)}
                       for t in batch], separators=(",", ":")).encode()


def _batch_from_bytes(job: bytes) -> list[HostTask]:
    """``_batch_bytes``' tasks again; ValueError for a job that is not one."""
    import json

    out = []
    for fields in json.loads(job):
        if not isinstance(fields, dict):
            raise ValueError("a job's task is not an object")
        parts = fields.get("parts")
        out.append(HostTask(**{**fields, "parts": None if parts is None else frozenset(parts)}))
    return out


def _convert_batch_bytes(job: bytes) -> bytes:
    """In a forked worker: ``convert_batch`` of a job's tasks; the answer is the batch's frame."""
    frame: bytes = convert_batch(_batch_from_bytes(job))["frame"]
    return frame


# Whether a pool of this process was started by a fork server (or spawned): its queues' named
# semaphores are unlinked by the resource tracker at an orderly exit only (``orderly_exit_needed``).
_named_semaphores = False


def orderly_exit_needed() -> bool:
    """Whether this process must exit through the interpreter's shutdown (not ``os._exit``): a
    pool started by the fork server left named semaphores that only an orderly exit unlinks. A
    pool forked from this process (``ProcessPool.start_early``) has none."""
    return _named_semaphores


def can_fork_now() -> bool:
    """Whether this process may fork its workers itself: Linux, and no thread but this one alive
    (a fork copies only the calling thread: a lock another thread held stays held in the child)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and threading.active_count() == 1 and threading.current_thread() is threading.main_thread())


# Below this many bytes of host files, a pool that is not running yet is not started: the
# hosts convert in this process. Starting the pool (fork server, imports) costs about what 2
# workers save on a few tens of MB of hosts; a 64-host pod below this size summarised faster
# in-process than with a pool it had to start (bench/measurements.md#services). So a one-shot
# command starts a pool from 64 MB on; a served pool starts with the server.
POOL_MIN_BYTES = 64 << 20
# How often ``wait_handed_out`` looks whether the loading thread has ended.
HANDED_OUT_POLL_S = 0.002


class ProcessPool:
    """A local pool of worker processes: for a one-shot command that has started no thread yet,
    forked from the command itself (``start_early``: ``ForkedWorkers``, pipes and no pickle);
    else forked from a fork server (never from the threaded server itself: a fork of a process
    with threads can inherit a held lock and hang).

    Started by ``start`` (a server, at its start), by ``start_early`` (a command, before it
    imports and lists) or by the first batch of hosts whose files total at least
    ``min_pool_bytes`` (a small pod converts in-process, sooner than the pool would start)."""

    name = "process-pool"

    def __init__(self, workers: int, min_pool_bytes: int = POOL_MIN_BYTES) -> None:
        self.workers = workers
        self.min_pool_bytes = min_pool_bytes
        self._pool: ProcessPoolExecutor | None = None
        self._forked: ForkedWorkers | None = None  # start_early's, forked from this process
        self._pool_lock = threading.Lock()  # start_early's thread and a conversion may both start it
        self._started: list[Future[bool]] = []
        self._starting: threading.Thread | None = None  # start_early's
        self.dispatch_s = 0.0  # the last map_batches: seconds to start the pool and hand out its batches
        # Forked workers (``--timings``): when the last was ready and when the first batch was
        # handed out (``time.perf_counter``), so the critical path shows: workers or command.
        self.ready_at: float | None = None
        self.handed_at: float | None = None
        self._closed = False

    @property
    def forked(self) -> bool:
        """Whether the running workers were forked from this process (``start_early``)."""
        return self._forked is not None

    def _get_pool(self) -> ProcessPoolExecutor:
        with self._pool_lock:
            return self._get_pool_locked()

    def _get_pool_locked(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            global _named_semaphores
            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            ctx = multiprocessing.get_context(method)
            if method == "forkserver":
                from tbprof.service.tools import TOOL_MODULES

                ctx.set_forkserver_preload(WORKER_PRELOAD + list(TOOL_MODULES))
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
            _named_semaphores = True
        return self._pool

    def _start_forked(self, parts: frozenset[str] | None = None) -> None:
        """Forks the workers from this process now, each importing what converting a host for
        ``parts`` needs (``_preload_worker``) in parallel with the others and with this process.
        Called while this process has no other thread and has imported little: a fork then takes
        a fraction of a millisecond, where the fork server first imports everything itself (an
        interpreter start and numpy) and then forks the workers one request at a time
        (bench/measurements.md#services). No multiprocessing: its imports alone (~8 ms) delayed
        every worker's start (service/forked_workers.py)."""
        import functools

        # numpy first, which this process needs anyway: each worker then inherits it instead of
        # importing it, the largest import, which many workers importing at once made them
        # ready several times later (bench/measurements.md#services).
        import numpy  # noqa: F401

        from tbprof.service.forked_workers import ForkedWorkers

        with self._pool_lock:
            if self._pool is not None or self._forked is not None:
                return
            try:
                self._forked = ForkedWorkers(self.workers, _convert_batch_bytes,
                                             functools.partial(_preload_worker, parts))
            except OSError as e:  # no process or pipe left (EAGAIN, EMFILE): the pool starts on demand
                log.warning("tbprof: could not fork the workers now (%s); they start when needed", e)

    def start(self) -> None:
        """Starts the workers now (they import in the background while the caller lists the
        logdir), so the first conversion does not wait for their start."""
        pool = self._get_pool()
        self._started = [pool.submit(_worker_ready) for _ in range(self.workers)]

    def release(self) -> None:
        """Lets workers forked from this process leave (their job pipes closed: each exits once
        idle), so that the system takes their memory down while the command derives its answer;
        ``close`` then finds them gone. A later conversion runs on the fork server's pool."""
        with self._pool_lock:
            if self._forked is not None:
                self._forked.release()

    def start_early(self, logdir: str, parts: frozenset[str] | None = None) -> bool:
        """Starts the workers when ``logdir`` is a local folder with a run of at least
        ``min_pool_bytes`` of XSpace hosts (what ``map_batches`` would start the pool for), so
        that they import numpy and tbprof while this process does the same and lists the logdir,
        instead of after. A small pod or a single host starts nothing.

        In a process with no other thread (a command, first thing) the workers are forked from
        it at once (``_start_forked``, importing what computing ``parts`` needs); else the fork
        server starts them on a thread."""
        if self._pool is not None or self._forked is not None or not os.path.isdir(logdir):
            return False
        if largest_folder_bytes(logdir, enough=self.min_pool_bytes) < self.min_pool_bytes:
            return False
        if can_fork_now() and self.workers <= default_cores():
            # (More workers than cores would each import on a shared core: the fork server
            # imports once.)
            self._start_forked(parts)
            return self._forked is not None
        self._starting = threading.Thread(target=self.start, name="tbprof-pool-start", daemon=True)
        self._starting.start()
        return True

    def wait_handed_out(self, still_loading: Callable[[], bool], timeout_s: float) -> None:
        forked = self._forked
        if forked is None:
            return
        deadline = time.monotonic() + timeout_s
        # (Polled: the loading thread may end without handing anything out, every host cached.)
        while not forked.handed.wait(HANDED_OUT_POLL_S):
            if not still_loading() or time.monotonic() >= deadline:
                return

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Waits until the workers ``start`` or ``start_early`` launched are ready (benchmarks, tests)."""
        if self._forked is not None:
            self._forked.wait_ready(timeout_s)
            return
        if self._starting is not None:
            self._starting.join(timeout_s)
        wait(self._started, timeout=timeout_s)

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        return _hosts_of(self.map_batches(tasks))

    def map_batches(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        if self.in_process(tasks):
            yield from InProcess().map_batches(tasks)  # less work than starting the pool
            return
        todo = batches(tasks, self.workers)
        self._closed = False
        for attempt in range(TASK_RETRIES + 1):
            if self._closed:  # ended during this run (a command leaving, Ctrl-C): no new pool for the rest
                for batch in todo:
                    yield _failed(batch, "the workers were ended before this file was converted")
                return
            forked = self._forked
            if forked is not None and forked.alive():
                broken = yield from self._run_forked(forked, todo, attempt)
            else:
                broken = yield from self._run_pooled(todo, attempt)
            if not broken:
                return
            # A worker died (killed, out of memory): run the batches it took down again, a host
            # per batch (one host may be the cause), on the workers left, else on a new pool.
            lost = [t for b in broken for t in b]
            log.warning("tbprof: a worker process died; retrying %d host(s) (attempt %d)", len(lost), attempt + 1)
            todo = [[t] for t in lost]
        died = f"the worker converting this file died {TASK_RETRIES + 1} times (out of memory?)"
        for batch in todo:
            yield _failed(batch, died)

    def _run_forked(self, forked: ForkedWorkers, todo: list[list[HostTask]],
                    attempt: int) -> Generator[dict[str, Any], None, list[list[HostTask]]]:
        """The batches on the workers forked from this process, each answer decoded as it
        arrives; returns the batches lost with a worker that died."""
        from tbprof.service.forked_workers import Died, Failed

        dispatched = time.perf_counter()
        jobs = [_batch_bytes(b) for b in todo]
        if attempt == 0:
            self.dispatch_s = time.perf_counter() - dispatched
        broken: list[list[HostTask]] = []
        for i, answer in forked.run(jobs):
            if isinstance(answer, Died):
                broken.append(todo[i])
            elif isinstance(answer, Failed):
                yield _failed(todo[i], f"the worker converting this file failed: {answer.error}")
            else:
                yield _opened_or_failed({"frame": answer}, todo[i], "a worker's answer is refused: ")
        if attempt == 0:
            self.ready_at, self.handed_at = forked.ready_at(), forked.handed_at
        return broken

    def _run_pooled(self, todo: list[list[HostTask]],
                    attempt: int) -> Generator[dict[str, Any], None, list[list[HostTask]]]:
        """The batches on the fork server's pool (started on demand, a worker per batch);
        returns the batches lost with a worker that died, after which the pool is dropped (a
        broken pool runs nothing more) for the next attempt to start another."""
        # Imported only for a pool that runs: the CLI exits at once unless it was (cli/main.py).
        from concurrent.futures.process import BrokenProcessPool

        dispatched = time.perf_counter()
        pool = self._get_pool()
        futures: dict[Future[dict[str, Any]], list[HostTask]] = {}
        broken: list[list[HostTask]] = []
        for i, batch in enumerate(todo):
            try:
                futures[pool.submit(convert_batch, batch)] = batch
            except BrokenProcessPool:  # a worker died before every batch was handed out
                broken.extend(todo[i:])
                break
        if attempt == 0:  # starting the pool (on demand, a worker per batch) and handing out
            self.dispatch_s = time.perf_counter() - dispatched
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    answer = f.result()
                except BrokenProcessPool:
                    broken.append(futures[f])
                    continue
                yield _opened_or_failed(answer, futures[f], "a worker's answer is refused: ")
        if broken:
            with self._pool_lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
        return broken

    def in_process(self, tasks: Sequence[HostTask]) -> bool:
        """True when the pool is not running and the hosts' files are too small to pay for its start."""
        known = [t.size_bytes for t in tasks if t.size_bytes >= 0]
        return (self._pool is None and self._forked is None and len(known) == len(tasks)
                and sum(known) < self.min_pool_bytes)

    def close(self, wait: bool = True) -> None:
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, None
            forked, self._forked = self._forked, None
        if forked is not None:
            forked.close(wait=wait)
        if pool is None:
            return
        if wait:
            pool.shutdown(wait=True, cancel_futures=True)
            return
        # Idle workers of a command that has answered: SIGTERM ends each at once, where an orderly
        # exit tears down its interpreter (numpy, the readers) first. They hold nothing unwritten:
        # every cache file is written to a temporary name and renamed.
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.join(1.0)
        # The pool's own thread ends once it sees its workers gone; a command whose threads have
        # all ended may leave at once (cli/main.py).
        manager = getattr(pool, "_executor_manager_thread", None)
        if isinstance(manager, threading.Thread):
            manager.join(1.0)


_MAX_PLAIN_DEPTH = 32


def plain_data(value: Any, depth: int = 0) -> Any:
    """``value`` (as msgpack gives it: tuples for lists) as plain data: dicts with string keys, lists,
    strings, bytes, numbers, booleans, None. Anything else raises ValueError."""
    if value is None or isinstance(value, (str, bytes, bool, int, float)):
        return value
    if depth >= _MAX_PLAIN_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(value, (list, tuple)):
        return [plain_data(v, depth + 1) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: plain_data(v, depth + 1) for k, v in value.items()}
    raise ValueError(f"a {type(value).__name__} is not tbprof's data")


def _failed(batch: Sequence[HostTask], error: str) -> dict[str, Any]:
    """``open_batch``'s form for a batch none of whose hosts was converted."""
    return {"results": [{"host": t.host, "file": t.path, "error": error} for t in batch], "parts": {},
            "combined": None, "combined_hosts": [], "timings": {}}


def _opened_or_failed(answer: Any, batch: Sequence[HostTask], refused: str) -> dict[str, Any]:
    try:
        return open_batch(answer, batch)
    except ValueError as e:  # damaged, or not of this batch: its hosts are reported, the others kept
        log.warning("tbprof: %s%s", refused, e)
        return _failed(batch, f"{refused}{e}")


class DaskExecutor:
    """Tasks on a Dask distributed cluster (``pip install "tbprof[distributed]"``)."""

    name = "dask"

    def __init__(self, scheduler: str, security: str | None = None) -> None:
        """``security``: a ``--dask-security`` value (``dask_security``); None: Dask's own
        configuration (``distributed.comm.tls``) decides, as for any Dask client."""
        try:
            from distributed import Client
        except ImportError as e:
            raise ValueError('--dask-scheduler needs dask: pip install "tbprof[distributed]"') from e
        self.scheduler = scheduler
        tls = None
        if security is not None:
            if not scheduler.startswith("tls://"):
                raise ValueError(f"--dask-security needs a tls:// scheduler address, not {scheduler}")
            tls = make_security(security)
        elif scheduler.startswith("tls://") and not has_dask_tls_config():
            raise ValueError(f"cannot connect to the Dask scheduler at {scheduler}: a tls:// scheduler needs a "
                             "client certificate: --dask-security (docs/remote.md)")
        try:
            # Results are taken as msgpack data only: a worker (anyone who can reach an
            # unauthenticated scheduler can replace its functions) never gets a pickle unpickled
            # here (docs/remote.md).
            self._client = Client(scheduler, timeout=10, deserializers=["msgpack"], security=tls)
        except OSError as e:  # ssl.SSLError is an OSError
            raise ValueError(f"cannot connect to the Dask scheduler at {scheduler}: {e}") from e
        self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))
        self.dispatch_s = 0.0

    def map_hosts(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        return _hosts_of(self.map_batches(tasks))

    def map_batches(self, tasks: Sequence[HostTask]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed

        # A task per batch, so the scheduler tracks tens of results for a large pod, not one per
        # host. pure=False: a host converted again (its file changed) is a new task, not a cached one.
        todo = batches(tasks, self.workers)
        dispatched = time.perf_counter()
        futures = [self._client.submit(convert_batch, b, pure=False, retries=TASK_RETRIES,
                                       key=f"tbprof-convert-{b[0].host}-{len(b)}-{os.urandom(4).hex()}") for b in todo]
        by_key = {f.key: b for f, b in zip(futures, todo, strict=True)}
        self.dispatch_s = time.perf_counter() - dispatched
        for f in as_completed(futures):
            batch = by_key[f.key]
            try:
                answer = plain_data(f.result())
            except Exception as e:  # failed on every retry, or not tbprof's data (refused, never unpickled)
                yield _failed(batch, f"the Dask task failed: {e}")
                continue
            yield _opened_or_failed(answer, batch, "the Dask task failed: its answer is refused: ")

    def in_process(self, tasks: Sequence[HostTask]) -> bool:
        return False

    def start(self) -> None:
        pass

    def release(self) -> None:
        pass

    def start_early(self, logdir: str, parts: frozenset[str] | None = None) -> bool:
        return False

    def wait_handed_out(self, still_loading: Callable[[], bool], timeout_s: float) -> None:
        pass

    def close(self, wait: bool = True) -> None:
        self._client.close()


def default_workers() -> int:
    """``$TBPROF_WORKERS``, else the cores this process may use (1: in-process).

    Workers send the server per-host partials (small, binary), not stores, so the per-host
    work (decoding, steps, op tables) runs on every core and the server only combines
    (bench/pod_bench.py, docs/remote.md; bench/measurements.md#services). Until partials,
    a worker handed its whole store over through the disk cache, which cost more than it saved.
    """
    env = os.environ.get(WORKERS_ENV, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return default_cores()


def default_cores() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def make_executor(workers: int | None = None, dask_scheduler: str | None = None,
                  dask_security: str | None = None) -> Executor:
    """The executor the flags ask for: Dask when a scheduler is named (flag or environment,
    with ``--dask-security``'s certificates if given), else a process pool of ``workers``
    (default ``default_workers()``), in-process for 1."""
    scheduler = dask_scheduler or os.environ.get(DASK_ENV, "").strip() or None
    security = security_spec(dask_security)
    if scheduler:
        return DaskExecutor(scheduler, security)
    if dask_security:
        raise ValueError("--dask-security needs --dask-scheduler (or $TBPROF_DASK_SCHEDULER)")
    n = workers if workers is not None else default_workers()
    if n < 1:
        raise ValueError(f"--workers must be at least 1, got {n}")
    return InProcess() if n == 1 else ProcessPool(n)
