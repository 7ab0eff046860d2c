"""How every answer leaves: its body encoded by the one JSON encoder (analyses/encode.py), errors
included, and gzip decided in one place (``send``).

The services return results and their memo keys; only this edge turns them into bytes: a
memoised result's JSON body, and that body gzipped, are kept here under the result's own key
(``memoised_json``), in the process-wide byte budget.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Hashable
from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.table import TableQuery
from tbprof.domain.answer_size import NARROW_TABLES
from tbprof.http.errors import status_of
from tbprof.store.memo import Memo

__all__ = ["error_response", "json_response", "memoised_json", "send", "table_csv", "to_json_bytes"]

# Smaller bodies go as they are: gzip's header and the client's work cost more than they save.
GZIP_MIN_BYTES = 1024
# How hard a body is compressed, by how often that is paid: a tool's answer or a comparison once
# per body (memoised) or per request; a trace window per pan and zoom, where level 1 already
# shrinks a whole-span frame several times over and higher levels save few more bytes for much
# more time (bench/measurements.md#trace-viewer); the frontend's files once per build.
GZIP_LEVEL = 5
WINDOW_GZIP_LEVEL = 1
STATIC_GZIP_LEVEL = 9


def accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "")


def gzip_bytes(body: bytes, level: int) -> bytes:
    """``body`` gzipped (no timestamp: the same body compresses to the same bytes)."""
    return gzip.compress(body, compresslevel=level, mtime=0)


def send(request: Request, body: bytes, mimetype: str, status: int = 200, headers: dict[str, str] | None = None,
         *, level: int = GZIP_LEVEL, gzipped: Callable[[], bytes] | None = None) -> Response:
    """The one place an answer is sent: gzipped when it has GZIP_MIN_BYTES or more and the client
    accepts gzip. ``gzipped`` gives the compressed bytes where they are kept (memoised);
    without it the body is compressed now, at ``level``."""
    hdrs = dict(headers or {})
    if len(body) >= GZIP_MIN_BYTES:
        hdrs["Vary"] = "Accept-Encoding"
        if accepts_gzip(request):
            body = gzipped() if gzipped is not None else gzip_bytes(body, level)
            hdrs["Content-Encoding"] = "gzip"
    return Response(body, status=status, mimetype=mimetype, headers=hdrs)


def json_response(request: Request, result: Any, status: int = 200,
                  queries: dict[str, TableQuery] | None = None, narrow: str = NARROW_TABLES) -> Response:
    """``result`` encoded now (``analyses/encode.py``, refused past what one answer may take with
    ``narrow`` saying how to ask for less); a memoised result's body: ``memoised_json``."""
    return send(request, to_json_bytes(result, queries, narrow=narrow), "application/json", status)


# JSON bodies of memoised results (tool results, comparisons) and those bodies gzipped, under the
# result's memo key, in the process-wide byte budget (store/memo.py) with the results themselves.
_BODIES = Memo()


def memoised_json(request: Request, key: Hashable | None, result: Any) -> Response:
    """The answer of a result a service memoises under ``key`` (``Profiles.computed``,
    ``comparisons.compared``; None: not memoised, encoded now): its body encoded once, and
    gzipped once, so a repeated request costs a lookup instead of an encoding."""
    if key is None:
        return json_response(request, result)
    body = _BODIES.get(("json", key), lambda: to_json_bytes(result), size=len)
    return send(request, body, "application/json",
                gzipped=lambda: _BODIES.get(("gzip", key), lambda: gzip_bytes(body, GZIP_LEVEL), size=len))


def error_response(request: Request, kind: str, message: str, /, status: int | None = None,
                   **extra: Any) -> Response:
    """``{"error", "status", "kind", ...}``: every refusal names its machine-readable kind, whose
    status the error table gives (http/errors.py; ``status`` only for werkzeug's own refusals)."""
    code = status_of(kind) if status is None else status
    return send(request, to_json_bytes({"error": message, "status": code, "kind": kind, **extra}),
                "application/json", code)
