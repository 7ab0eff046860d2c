"""The warm-ups of the stores a request used (``service/tools.warmups``), started once per store
after the request has its answer, on one background thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from tbprof.store.tables import ProfileStore

if TYPE_CHECKING:
    from tbprof.store.any_store import AnyStore

log = logging.getLogger("tbprof")


class Warmups:
    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tbprof-warm")
        self._lock = threading.Lock()
        self._used: list[AnyStore] = []

    def used(self, stores: Iterable[AnyStore]) -> None:
        """Stores the current request used: warmed up by the next ``start``."""
        with self._lock:
            self._used.extend(stores)

    def start(self) -> None:
        """Starts the warm-ups of the stores used since the last call (after an answer), so
        they never compete with the request for the interpreter."""
        with self._lock:
            stores, self._used = self._used, []
        for store in stores:
            self._warm(store)

    def wait(self) -> None:
        """Waits until the warm-ups started so far have finished (tests and benchmarks)."""
        self._thread.submit(lambda: None).result()

    def _warm(self, store: AnyStore) -> None:
        from tbprof.service import tools as registry  # the tools load when a store is warmed up

        if not registry.warmups() or not isinstance(store, ProfileStore) or store.warm_started:
            return
        store.warm_started = True

        def run() -> None:
            for fn in registry.warmups():
                try:
                    fn(store)
                except Exception:  # a failing warm-up only costs speed; the request reports it
                    log.debug("tbprof: warm-up %r failed", fn, exc_info=True)

        self._thread.submit(run)
