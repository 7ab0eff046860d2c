"""Derived values computed once per store (step assignment, op metrics, tfprof node stats).

Single flight: a caller that asks while another thread (the background warm-up, another
request) computes the same key waits for that computation instead of repeating it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Memo:
    def __init__(self) -> None:
        self._values: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[Any, threading.Lock] = {}

    def get(self, key: Any, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._values:
                return self._values[key]  # type: ignore[no-any-return]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]  # type: ignore[no-any-return]
            value = compute()
            with self._lock:
                return self._values.setdefault(key, value)  # type: ignore[no-any-return]

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
