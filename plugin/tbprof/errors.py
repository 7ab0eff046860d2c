"""The errors every layer may raise: what went wrong, in the domain's terms, never how to say it.

They live at the bottom of the package so that readers, stores, analyses and the service raise
them without importing the layers that translate them. Each edge maps them in one place:
http (``http/errors.py``: an HTTP status and JSON ``{"error", "kind"}``), cli (``cli/main.py``:
an exit code); the Python API lets them through as they are (each is also a ``LookupError`` or
``ValueError``). ``kind`` is the machine-readable name an answer carries.
"""

from __future__ import annotations


class TbprofError(Exception):
    """Base of the errors that are answers, not bugs."""

    kind = "error"


class NotFound(TbprofError, LookupError):
    """Unknown run, host, tool or event."""

    kind = "not_found"


class NoData(NotFound):
    """A tool asked of a run whose profile has no data for it (its own ``kind`` so a page can
    show "no data" instead of an error)."""

    kind = "no_data"


class BadParameter(TbprofError, ValueError):
    """A parameter (option, query, selection, host choice) that cannot be applied as given."""

    kind = "bad_request"


class AnswerTooLarge(BadParameter):
    """A request whose answer would exceed the size one answer may take (refused before it is
    built; asking for less, e.g. a narrower query, gets an answer)."""

    kind = "answer_too_large"


# Its name until 0.x: docs/python_api.md named it, so scripts may catch it.
BadRequest = BadParameter


class ProfileReadError(TbprofError):
    """A profile file that cannot be read."""

    kind = "unreadable_profile"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class MemoryRefusal(ProfileReadError):
    """A file refused because converting it would not fit in the memory free *now* (not
    remembered as a failure of the file: it may fit later)."""


class UnsafeCacheDir(TbprofError, ValueError):
    """A cache dir another user could write to: its entries would be trusted input."""

    kind = "unsafe_cache_dir"


class StorageError(ProfileReadError):
    """Object storage that cannot be listed or read: bad credentials, a missing bucket, an
    unreachable endpoint (its own ``kind``)."""

    kind = "storage_error"
