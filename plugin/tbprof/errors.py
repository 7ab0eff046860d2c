"""The errors every layer may raise, each with the HTTP status and machine-readable ``kind`` it maps to.

They live at the bottom of the package so that readers, stores, analyses and the service
raise them without importing the layers that translate them (http: status + JSON
``{"error", "kind"}``; cli: exit codes).
"""

from __future__ import annotations


class TbprofError(Exception):
    """Base of the errors that are answers, not bugs."""

    kind = "error"
    http_status = 500


class NotFound(TbprofError, LookupError):
    """Unknown run, host, tool or event (HTTP 404)."""

    kind = "not_found"
    http_status = 404


class NoData(NotFound):
    """A tool asked of a run whose profile has no data for it (HTTP 404, its own ``kind`` so a page
    can show "no data" instead of an error)."""

    kind = "no_data"


class BadRequest(TbprofError, ValueError):
    """A request that cannot be answered as asked (HTTP 400)."""

    kind = "bad_request"
    http_status = 400


class ProfileReadError(TbprofError):
    """A profile file that cannot be read. HTTP turns it into a 422, the CLI into exit 2."""

    kind = "unreadable_profile"
    http_status = 422

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class MemoryRefusal(ProfileReadError):
    """A file refused because converting it would not fit in the memory free *now* (HTTP 422;
    not remembered as a failure of the file: it may fit later)."""


class UnsafeCacheDir(TbprofError, ValueError):
    """A cache dir another user could write to: its entries would be trusted input (the CLI exits 1)."""

    kind = "unsafe_cache_dir"
    http_status = 500


class StorageError(ProfileReadError):
    """Object storage that cannot be listed or read: bad credentials, a missing bucket, an
    unreachable endpoint (HTTP 422 with its own ``kind``, CLI exit 2)."""

    kind = "storage_error"
