"""A plane's compiled steps two at a time: the kernels release the GIL, so a step started on a
thread runs beside the next one on the calling thread (``plane_builder.finish_plane``)."""

from __future__ import annotations

import _thread
from collections.abc import Callable
from typing import Any

# A step's value, once it is done (waits for it; raises what it raised).
Later = Callable[[], Any]


class _OnThread:
    """``fn()`` on a thread of its own; ``result()`` waits for it and raises what it raised.

    Started with ``_thread``, not ``threading.Thread``, whose ``start`` waits for the new thread
    to take the GIL and say so: a switch interval or more (5 ms, and as much again to take it
    back) while a command's main thread imports beside the conversion, more than a plane's step
    saves (bench/measurements.md#xspace-build). Done is told by a lock the thread releases."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._value: Any = None
        self._error: BaseException | None = None
        self._done = _thread.allocate_lock()
        self._done.acquire()
        try:
            _thread.start_new_thread(self._run, ())
        except BaseException:
            self._done.release()
            raise

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as e:  # handed to the caller's result()
            self._error = e
        finally:
            self._done.release()

    def result(self) -> Any:
        with self._done:
            pass
        if self._error is not None:
            raise self._error
        return self._value


def now_or_beside(fn: Callable[[], Any], beside: bool) -> Later:
    """``fn`` started on a thread (``beside``) or run now; call the returned function for its value."""
    if beside:
        try:
            return _OnThread(fn).result
        except RuntimeError:  # no thread to be had: run now
            pass
    value = fn()
    return lambda: value
