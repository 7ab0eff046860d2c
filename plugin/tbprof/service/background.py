"""Conversions started on a thread before anyone asks for their stores (``Profiles.load_in_background``),
and waiting for them: a command imports its analyses while its file is scanned."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable


class BackgroundLoads:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Thread] = {}

    def start(self, key: Hashable, load: Callable[[], None]) -> threading.Thread:
        """Runs ``load`` on a daemon thread, known by ``key`` until someone waits for it."""
        thread = threading.Thread(target=load, name="tbprof-load", daemon=True)
        with self._lock:
            self._loading[key] = thread
        thread.start()
        return thread

    def wait(self, key: Hashable) -> None:
        """Waits for the load of ``key`` if one runs (not from its own thread)."""
        with self._lock:
            loading = self._loading.pop(key, None)
        if loading is not None and loading is not threading.current_thread():
            loading.join()
