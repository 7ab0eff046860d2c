"""HTTP responses: JSON (memoised encodings), errors, gzip."""

from __future__ import annotations

import gzip
import json
from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.table import TableQuery
from tbprof.store.memo import Memo, estimate_bytes

__all__ = ["error_response", "finish", "json_response", "table_csv", "to_json_bytes"]

GZIP_MIN_BYTES = 1024


def finish(request: Request, body: bytes, mimetype: str, status: int = 200,
           headers: dict[str, str] | None = None) -> Response:
    """Gzips large bodies when the client accepts it."""
    hdrs = dict(headers or {})
    if len(body) >= GZIP_MIN_BYTES and "gzip" in request.headers.get("Accept-Encoding", ""):
        body = gzip.compress(body, compresslevel=5)
        hdrs["Content-Encoding"] = "gzip"
        hdrs["Vary"] = "Accept-Encoding"
    return Response(body, status=status, mimetype=mimetype, headers=hdrs)


# Encoded bodies of memoised results (tool results are computed once and never mutated), so a
# repeated request costs a lookup instead of re-encoding 100 kB of JSON (10-30 ms). They live
# in the process-wide memory budget (store/memo.py). Entries hold the result, so its id() cannot
# be reused while cached.
_ENCODED = Memo()


def _body_bytes(entry: tuple[Any, bytes]) -> int:
    # The entry keeps its result alive even after the results memo dropped it: charge both.
    return len(entry[1]) + estimate_bytes(entry[0])


def _encoded(result: dict[str, Any], gzipped: bool) -> bytes:
    def encode() -> tuple[Any, bytes]:
        body = _encoded(result, False) if gzipped else to_json_bytes(result)
        return result, (gzip.compress(body, compresslevel=5) if gzipped else body)

    key = (id(result), gzipped)
    entry = _ENCODED.get(key, encode, size=_body_bytes)
    if entry[0] is not result:  # an id reused after its entry was evicted and the result freed
        _ENCODED.clear_key(key)
        entry = _ENCODED.get(key, encode, size=_body_bytes)
    return entry[1]


def json_response(request: Request, result: Any, status: int = 200,
                  queries: dict[str, TableQuery] | None = None) -> Response:
    if queries or not isinstance(result, dict) or status != 200:
        return finish(request, to_json_bytes(result, queries), "application/json", status)
    body = _encoded(result, False)
    if len(body) >= GZIP_MIN_BYTES and "gzip" in request.headers.get("Accept-Encoding", ""):
        return Response(_encoded(result, True), status=status, mimetype="application/json",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(body, status=status, mimetype="application/json")


_KIND_BY_STATUS = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
                   415: "bad_request", 422: "unreadable_profile"}


def error_response(request: Request, status: int, message: str, **extra: Any) -> Response:
    """``{"error", "kind", "status", ...}``: every refusal names its machine-readable kind."""
    extra.setdefault("kind", _KIND_BY_STATUS.get(status, "internal" if status >= 500 else "http"))
    body = json.dumps({"error": message, "status": status, **extra}).encode()
    return Response(body, status=status, mimetype="application/json")
