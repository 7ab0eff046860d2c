"""HTTP responses: JSON (the one encoder, analyses/encode.py), errors, gzip."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.table import TableQuery
from tbprof.domain.answer_size import NARROW_TABLES

__all__ = ["error_response", "finish", "json_response", "memoised_json", "table_csv", "to_json_bytes"]

GZIP_MIN_BYTES = 1024


def finish(request: Request, body: bytes, mimetype: str, status: int = 200,
           headers: dict[str, str] | None = None) -> Response:
    """Gzips large bodies when the client accepts it."""
    hdrs = dict(headers or {})
    if len(body) >= GZIP_MIN_BYTES and accepts_gzip(request):
        body = gzip.compress(body, compresslevel=5)
        hdrs["Content-Encoding"] = "gzip"
        hdrs["Vary"] = "Accept-Encoding"
    return Response(body, status=status, mimetype=mimetype, headers=hdrs)


def accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "")


def json_response(request: Request, result: Any, status: int = 200,
                  queries: dict[str, TableQuery] | None = None, narrow: str = NARROW_TABLES) -> Response:
    """``result`` encoded now (``analyses/encode.py``, refused past what one answer may take with
    ``narrow`` saying how to ask for less); a memoised result's body: ``memoised_json``."""
    return finish(request, to_json_bytes(result, queries, narrow=narrow), "application/json", status)


def memoised_json(request: Request, body: Callable[[bool], bytes]) -> Response:
    """The answer of a body the service memoises: ``body(gzipped)`` (``Profiles.result_json``,
    ``comparisons.compare_pair_json``), gzipped when large and the client accepts it."""
    plain = body(False)
    if len(plain) >= GZIP_MIN_BYTES and accepts_gzip(request):
        return Response(body(True), mimetype="application/json",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(plain, mimetype="application/json")


_KIND_BY_STATUS = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
                   415: "bad_request", 422: "unreadable_profile"}


def error_response(request: Request, status: int, message: str, **extra: Any) -> Response:
    """``{"error", "kind", "status", ...}``: every refusal names its machine-readable kind."""
    extra.setdefault("kind", _KIND_BY_STATUS.get(status, "internal" if status >= 500 else "http"))
    body = json.dumps({"error": message, "status": status, **extra}).encode()
    return Response(body, status=status, mimetype="application/json")
