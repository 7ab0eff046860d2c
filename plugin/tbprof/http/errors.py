"""The one table from domain errors (``tbprof.errors``) to HTTP statuses.

Domain errors say what went wrong; only this edge decides how HTTP says it. The first row
whose class the error is an instance of wins, so subclasses come before their bases.
"""

from __future__ import annotations

from typing import Any

from tbprof.errors import BadParameter, NotFound, ProfileReadError, TbprofError, UnsafeCacheDir

HTTP_STATUS: tuple[tuple[type[TbprofError], int], ...] = (
    (NotFound, 404),  # NoData too: a page shows "no data" by its kind
    (BadParameter, 400),  # options, table queries, step selections, regexes, searches
    (ProfileReadError, 422),  # MemoryRefusal, StorageError: the file, not the request
    (UnsafeCacheDir, 500),  # the server's own configuration
    (TbprofError, 500),
)


def http_status(error: TbprofError) -> int:
    """The status of a domain error (``HTTP_STATUS``'s first matching row)."""
    for cls, status in HTTP_STATUS:
        if isinstance(error, cls):
            return status
    return 500


def error_fields(error: TbprofError) -> dict[str, Any]:
    """What an error answer carries besides its message and status: its ``kind``, and for an
    unreadable file which file and why."""
    extra: dict[str, Any] = {"kind": error.kind}
    if isinstance(error, ProfileReadError):
        extra.update(file=error.path, reason=error.reason)
    return extra
