"""The one table of error kinds: every ``kind`` an error answer carries, and its HTTP status.

Errors below the edge say what went wrong by a kind (``tbprof.errors``' classes, a capture's
``CaptureRefused``, the guard's ``Refusal``) and never how HTTP says it: only this table decides
the status. ``tests/http/test_error_table.py`` checks that every kind the code raises is a row
here and every row is raised somewhere; the wire type ``ErrorKind`` (http/schemas.py, generated
into TypeScript) is this table's keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from tbprof.errors import ProfileReadError, TbprofError

ERROR_STATUS: dict[str, int] = {
    # tbprof.errors and their subclasses: the request names something the logdir lacks ...
    "not_found": 404,
    "no_data": 404,  # a page shows "no data" by this kind
    "sql_unavailable": 404,  # DuckDB is not installed (service/sql)
    # ... a parameter that cannot be applied (options, table queries, step selections, regexes) ...
    "bad_request": 400,
    "answer_too_large": 400,  # asking for less gets an answer
    # ... the file, not the request ...
    "unreadable_profile": 422,
    "storage_error": 422,
    # ... the server's own configuration, or an error without a kind of its own.
    "unsafe_cache_dir": 500,
    "error": 500,
    # Capture refusals before any connection (capture/session.py), and a capture that reached no server.
    "bad_address": 400,
    "bad_option": 400,
    "no_logdir": 400,
    "capture_disabled": 403,
    "logdir_read_only": 403,
    "busy": 409,
    "capture_failed": 502,
    # The edge's own: the guard (http/guard.py), request bodies (http/params.py), routing.
    "forbidden_host": 403,
    "forbidden_origin": 403,
    "method_not_allowed": 405,
    "too_large": 413,
    "unsupported_media_type": 415,
    "http": 400,  # werkzeug's own refusals (400 unless werkzeug names another status)
    "internal": 500,  # a bug: said without a traceback
}

if TYPE_CHECKING:
    ErrorKind = str
else:
    # The wire type: exactly the table's kinds (mypy sees a str: a Literal cannot be computed).
    ErrorKind = Literal[tuple(ERROR_STATUS)]


class HttpRefused(Exception):
    """A request the edge refuses before any service sees it (a body that is not JSON, or too
    large), by its kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def status_of(kind: str) -> int:
    """The status of a kind (ERROR_STATUS; a kind missing from it is a bug: 500)."""
    return ERROR_STATUS.get(kind, 500)


def http_status(error: TbprofError) -> int:
    """The status of a domain error, by its kind."""
    return status_of(error.kind)


def error_fields(error: TbprofError) -> dict[str, Any]:
    """What an error answer carries besides its message, status and kind: for an unreadable
    file, which file and why."""
    if isinstance(error, ProfileReadError):
        return {"file": error.path, "reason": error.reason}
    return {}
