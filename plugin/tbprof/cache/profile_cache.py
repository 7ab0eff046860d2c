"""Converts each profile file once: the process-wide memory budget (an LRU bounded in bytes,
``store/memo.py``) over a disk cache.

Concurrent requests for the same file wait for one conversion (single flight), so ten
browser tabs opening a cold 60 MB profile cost one conversion, not ten.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tbprof.cache.disk_cache import DiskCache, cache_key
from tbprof.cache.failures import FailureMemo
from tbprof.cache.memory_guard import conversion, streaming_budget_bytes
from tbprof.cache.paths import default_cache_dir, user_cache_dir
from tbprof.cache.remote_cache import RemoteCache, open_disk_cache
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.fs import Location, UrlPath, is_url
from tbprof.store.memo import Memo, MemoryBudget, estimate_bytes
from tbprof.store.tables import ProfileStore

log = logging.getLogger("tbprof")

# A loader of one kind of location: a reader takes any Location, a test's loader may take a Path.
L = TypeVar("L", bound=Location)


def convert_file(path: L, key: str, disk: DiskCache | RemoteCache | None, reader: Callable[[L], Any],
                 streamer: Callable[..., Any] | None) -> tuple[Any, bool]:
    """The one decision, once the disk cache has no entry, of how a file is converted (the
    store cache's and a worker's, ``service/executor.convert_host``): (value, streamed).

    A file larger than the memory free streams into the local disk cache (``streamer(path,
    disk, key, budget_bytes)``, RunKind.streamer: its entry is then written; it reads a local
    file, or an object in a bucket by ranged requests); else it is read in memory with its
    estimate reserved meanwhile, and a file denser than its size said (the reader's
    MemoryRefusal, from the scanner's counts) streams after all where it can. Raises
    MemoryRefusal where neither fits or memory ran out anyway.
    """
    streamable = None if streamer is None or not isinstance(path, (Path, UrlPath)) else isinstance(disk, DiskCache)
    stream_dir = disk.root if isinstance(disk, DiskCache) else None
    with conversion(path, streamable, stream_dir) as stream_budget:
        try:
            if stream_budget is None:
                try:
                    return reader(path), False
                except MemoryRefusal:
                    if not streamable:
                        raise
                    stream_budget = streaming_budget_bytes()
            assert streamer is not None
            return streamer(path, disk, key, stream_budget), True
        except MemoryError as e:  # the estimate was optimistic: an answer, not a crash, and not
            # remembered as a failure of the file (it may fit later)
            raise MemoryRefusal(str(path), "ran out of memory while converting the file; open "
                                "it on a machine with more memory") from e


class ProfileCache:
    """Stores by cache key in a ``Memo`` of the process-wide memory budget (``store/memo.py``),
    or of a budget of its own when ``memory_bytes`` is given (tests, tools that want a bound)."""

    def __init__(self, cache_dir: Path | str | None = None, memory_bytes: int | None = None,
                 use_disk: bool = True, before_save: Callable[[ProfileStore], None] | None = None) -> None:
        # A folder, or a URL shared by a team and by workers (cache/remote_cache.py).
        explicit = os.environ.get("TBPROF_CACHE_DIR", "")
        self.cache_dir: Path | str = cache_dir or (explicit if is_url(explicit) else default_cache_dir())
        self.disk: DiskCache | RemoteCache | None = (
            open_disk_cache(self.cache_dir, user_cache_dir()) if use_disk else None)
        self._memo = Memo(MemoryBudget(memory_bytes) if memory_bytes is not None else None)
        self._lock = threading.Lock()
        self._savers: list[threading.Thread] = []
        self._pending: list[tuple[str, ProfileStore]] = []
        self.failures = FailureMemo()
        # Fills ``store.derived`` just before a store is written (the service derives the values
        # worth keeping; this layer does not know them).
        self.before_save = before_save

    @property
    def memory_bytes(self) -> int:
        return self._memo.budget.max_bytes

    def get(self, path: L, loader: Callable[[L], Any], kind: str = "xspace",
            streamer: Callable[..., Any] | None = None) -> Any:
        """The converted profile of ``path``; converts (once) when neither cache has it.

        ``streamer(path, disk, key, budget_bytes) -> store`` converts a file larger than memory
        into the local disk cache (``RunKind.streamer``; None: the format cannot stream)."""
        key = cache_key(path, kind)
        return self._memo.get(("store", key), lambda: self._load(key, path, loader, streamer), size=_store_bytes)

    def _load(self, key: str, path: L, loader: Callable[[L], Any], streamer: Callable[..., Any] | None = None) -> Any:
        failed = self.failures.get(key)
        if failed is not None:  # the same bytes failed before: answer that, do not parse again
            raise failed
        value = self.disk.load(key) if self.disk is not None else None
        if value is not None:
            return value
        try:
            value, streamed = convert_file(path, key, self.disk, loader, streamer)
        except MemoryRefusal:
            raise
        except ProfileReadError as e:
            self.failures.put(key, e)
            raise
        if streamed:
            return value  # its entry is written already
        if self.disk is not None and isinstance(value, ProfileStore):
            # Written later, in the background: the request that converted the file
            # answers first (``persist_pending``), then the store's columns go to disk.
            with self._lock:
                self._pending.append((key, value))
        return value

    def _save(self, key: str, store: ProfileStore) -> None:
        assert self.disk is not None
        if self.before_save is not None:
            try:
                self.before_save(store)
            except Exception:  # a derived value that fails is merely not kept
                log.debug("tbprof: deriving values to keep with %s failed", store.source_path, exc_info=True)
        try:
            self.disk.save(key, store)
        except Exception:  # a lazily read plane whose stats turn out unreadable: the file is not cached
            log.debug("tbprof: not caching %s", store.source_path, exc_info=True)

    def persist_pending(self) -> None:
        """Starts the disk writes of stores converted since the last call (after a request is
        answered). Non-daemon threads, so a CLI run still finishes its write before exit."""
        with self._lock:
            pending, self._pending = self._pending, []
        for key, value in pending:
            assert self.disk is not None
            saver = threading.Thread(target=self._save, args=(key, value), name="tbprof-cache-save")
            saver.start()
            with self._lock:
                self._savers = [s for s in self._savers if s.is_alive()]  # finished writes are forgotten
                self._savers.append(saver)

    def persist_detached(self) -> None:
        """Writes pending stores from a detached child process, for a command-line process that
        has printed its answer and is about to exit: writing a large store (bench/measurements.md#serving)
        then does not delay the prompt, and the next command finds the entry once the child has
        committed it (an entry is renamed into place whole, so a command that comes sooner simply
        converts again). Where forking is not safe (not Linux, other threads alive: a process
        pool, fsspec's event loop) the writes run as ``persist_pending`` does and the process
        waits for them."""
        with self._lock:
            pending = self._pending
            detach = bool(pending) and _can_fork_writer() and isinstance(self.disk, DiskCache)
            if detach:
                self._pending = []
        if not detach:
            self.persist_pending()
            return
        disk = self.disk
        assert isinstance(disk, DiskCache)
        for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
            stream.flush()
        if os.fork() != 0:
            return  # the parent answers and exits; the child is adopted by init
        try:  # the child: no terminal, no inherited pipes (a caller reading our output sees EOF now)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            # A writer that cannot finish (a hung disk) must not live forever.
            signal.alarm(_DETACHED_WRITE_LIMIT_S)
            for key, value in pending:
                self._save(key, value)
        finally:
            os._exit(0)

    def flush(self) -> None:
        """Writes pending stores and waits for every disk write (tests and benchmarks)."""
        self.persist_pending()
        while self._savers:
            self._savers.pop().join()

    def contains(self, path: Location, kind: str = "xspace") -> bool:
        """In memory, or converted on disk (opening it is then a matter of milliseconds)."""
        try:
            key = cache_key(path, kind)
        except (OSError, ProfileReadError):
            return False
        return self.contains_key(key)

    def contains_key(self, key: str, listed: set[str] | None = None) -> bool:
        """``contains`` for a cache key already computed (a pod's hosts: no second stat each);
        ``listed``: ``listed_keys()``, taken once for many keys."""
        if self._memo.contains(("store", key)):
            return True
        if listed is not None and key not in listed:
            return False
        return self.disk is not None and self.disk.has(key)

    def listed_keys(self) -> set[str] | None:
        """The keys the local disk cache may hold (one listing), None where unknown (no local cache)."""
        return self.disk.listed() if isinstance(self.disk, DiskCache) else None

    def clear_memory(self) -> None:
        self._memo.clear()


# Seconds a detached writer may take before the kernel ends it (SIGALRM's default action).
_DETACHED_WRITE_LIMIT_S = 600


def _can_fork_writer() -> bool:
    # A fork copies only the calling thread: with other threads alive, a lock one of them held
    # (in malloc, logging, an event loop) stays held in the child forever.
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def _store_bytes(value: Any) -> int:
    # Stores know their column bytes; anything else a reader returns is estimated.
    nbytes = getattr(value, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, int) else estimate_bytes(value)
