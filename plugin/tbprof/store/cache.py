"""Converts each profile file once: memory LRU (bounded by bytes) over a disk cache.

Concurrent requests for the same file wait for one conversion (single flight), so ten
browser tabs opening a cold 60 MB profile cost one conversion, not ten.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.store.disk_cache import DiskCache, cache_key
from tbprof.store.failures import FailureMemo
from tbprof.store.memory_guard import conversion
from tbprof.store.paths import default_cache_dir
from tbprof.store.tables import ProfileStore

DEFAULT_MEMORY_BYTES = 4 << 30

Loader = Callable[[Path], Any]


class ProfileCache:
    def __init__(self, cache_dir: Path | None = None, memory_bytes: int = DEFAULT_MEMORY_BYTES,
                 use_disk: bool = True) -> None:
        self.cache_dir = cache_dir or default_cache_dir()
        self.disk = DiskCache(self.cache_dir) if use_disk else None
        self.memory_bytes = memory_bytes
        self._lru: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._used_bytes = 0
        self._inflight: dict[str, Future[Any]] = {}
        self._lock = threading.Lock()
        self._savers: list[threading.Thread] = []
        self._pending: list[tuple[str, ProfileStore]] = []
        self.failures = FailureMemo()

    def get(self, path: Path, loader: Loader, kind: str = "xspace") -> Any:
        """The converted profile of ``path``; converts (once) when neither cache has it."""
        key = cache_key(path, kind)
        with self._lock:
            hit = self._lru.get(key)
            if hit is not None:
                self._lru.move_to_end(key)
                return hit[0]
            future = self._inflight.get(key)
            owner = future is None
            if owner:
                future = Future()
                self._inflight[key] = future
        assert future is not None
        if not owner:
            return future.result()
        try:
            failed = self.failures.get(key)
            if failed is not None:  # the same bytes failed before: answer that, do not parse again
                raise failed
            value = self.disk.load(key) if self.disk is not None else None
            if value is None:
                with conversion(path):
                    try:
                        value = loader(path)
                    except MemoryError as e:  # the estimate was optimistic: still an answer, not a crash
                        raise ProfileReadError(str(path), "ran out of memory while converting the file; open "
                                               "it on a machine with more memory") from e
                    except MemoryRefusal:
                        raise
                    except ProfileReadError as e:
                        self.failures.put(key, e)
                        raise
                if self.disk is not None and isinstance(value, ProfileStore):
                    # Written later, in the background: the request that converted the file
                    # answers first (``persist_pending``), then ~100 MB go to disk.
                    with self._lock:
                        self._pending.append((key, value))
        except BaseException as e:
            with self._lock:
                del self._inflight[key]
            future.set_exception(e)
            raise
        with self._lock:
            del self._inflight[key]
            self._remember(key, value)
        future.set_result(value)
        return value

    def persist_pending(self) -> None:
        """Starts the disk writes of stores converted since the last call (after a request is
        answered). Non-daemon threads, so a CLI run still finishes its write before exit."""
        with self._lock:
            pending, self._pending = self._pending, []
        for key, value in pending:
            assert self.disk is not None
            saver = threading.Thread(target=self.disk.save, args=(key, value), name="tbprof-cache-save")
            saver.start()
            self._savers.append(saver)

    def flush(self) -> None:
        """Writes pending stores and waits for every disk write (tests and benchmarks)."""
        self.persist_pending()
        while self._savers:
            self._savers.pop().join()

    def contains(self, path: Path, kind: str = "xspace") -> bool:
        """In memory, or converted on disk (opening it is then a matter of milliseconds)."""
        try:
            key = cache_key(path, kind)
        except (OSError, ProfileReadError):
            return False
        with self._lock:
            if key in self._lru:
                return True
        return self.disk is not None and self.disk.has(key)

    def _remember(self, key: str, value: Any) -> None:
        size = int(getattr(value, "nbytes", 1 << 20))
        self._lru[key] = (value, size)
        self._used_bytes += size
        while self._used_bytes > self.memory_bytes and len(self._lru) > 1:
            _, (_, old_size) = self._lru.popitem(last=False)
            self._used_bytes -= old_size

    def clear_memory(self) -> None:
        with self._lock:
            self._lru.clear()
            self._used_bytes = 0
