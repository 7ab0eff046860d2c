"""A plane's compiled steps two at a time: the kernels release the GIL, so a step started on a
thread runs beside the next one on the calling thread (``plane_builder.finish_plane``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# A step's value, once it is done (waits for it; raises what it raised).
Later = Callable[[], Any]


class _OnThread:
    """``fn()`` on a thread of its own; ``result()`` waits for it and raises what it raised."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tbprof-plane", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as e:  # handed to the caller's result()
            self._error = e

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def now_or_beside(fn: Callable[[], Any], beside: bool) -> Later:
    """``fn`` started on a thread (``beside``) or run now; call the returned function for its value."""
    if beside:
        return _OnThread(fn).result
    value = fn()
    return lambda: value
