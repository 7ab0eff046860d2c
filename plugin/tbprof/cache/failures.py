"""Conversions that failed, remembered per cache key (path, size, mtime, version).

Asking again for a file that could not be read answers the same error without parsing the
file again: a damaged 500 MB profile clicked ten times costs one parse, not ten. A file that
is rewritten gets a new key and is tried again. Bounded by count and by message bytes.

A failure caused by the process or the machine being short of something now (descriptors,
memory: ``disk_cache.TRANSIENT_ERRNOS`` anywhere in the error's causes) is not the file's fault
and is never remembered: the next request tries again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from tbprof.cache.disk_cache import TRANSIENT_ERRNOS
from tbprof.errors import ProfileReadError

MAX_ENTRIES = 1024


class FailureMemo:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._errors: OrderedDict[str, ProfileReadError] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()

    def get(self, key: str) -> ProfileReadError | None:
        with self._lock:
            found = self._errors.get(key)
        if found is None:
            return None
        # A fresh exception each time (raising one object from several threads chains tracebacks).
        return ProfileReadError(found.path, found.reason)

    def put(self, key: str, error: ProfileReadError) -> None:
        if is_transient_failure(error):
            return
        # Only the reason is kept (truncated), not the traceback and the frames it holds.
        with self._lock:
            self._errors[key] = ProfileReadError(error.path[:4096], error.reason[:4096])
            self._errors.move_to_end(key)
            while len(self._errors) > self._max:
                self._errors.popitem(last=False)


def is_transient_failure(error: BaseException) -> bool:
    """``error`` or one of its causes is an OSError of ``TRANSIENT_ERRNOS`` (EMFILE, ENFILE, ...)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in TRANSIENT_ERRNOS:
            return True
        e = e.__cause__ or e.__context__
    return False
