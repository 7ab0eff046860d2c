"""HTTP responses: JSON (memoised encodings), errors, gzip."""

from __future__ import annotations

import gzip
import json
import threading
from collections import OrderedDict
from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.table import TableQuery

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
# repeated request costs a dict lookup instead of re-encoding 100 kB of JSON (10-30 ms).
# Entries hold the result itself, so its id() cannot be reused while cached.
_ENCODED: OrderedDict[int, tuple[Any, bytes, list[bytes]]] = OrderedDict()
_ENCODED_MAX = 64
_ENCODED_LOCK = threading.Lock()


def json_response(request: Request, result: Any, status: int = 200,
                  queries: dict[str, TableQuery] | None = None) -> Response:
    if queries or not isinstance(result, dict) or status != 200:
        return finish(request, to_json_bytes(result, queries), "application/json", status)
    with _ENCODED_LOCK:
        hit = _ENCODED.get(id(result))
        if hit is not None and hit[0] is result:
            _ENCODED.move_to_end(id(result))
    if hit is None or hit[0] is not result:
        hit = (result, to_json_bytes(result), [])
        with _ENCODED_LOCK:
            _ENCODED[id(result)] = hit
            while len(_ENCODED) > _ENCODED_MAX:
                _ENCODED.popitem(last=False)
    body = hit[1]
    if len(body) >= GZIP_MIN_BYTES and "gzip" in request.headers.get("Accept-Encoding", ""):
        if not hit[2]:
            hit[2].append(gzip.compress(body, compresslevel=5))
        return Response(hit[2][0], status=status, mimetype="application/json",
                        headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
    return Response(body, status=status, mimetype="application/json")


_KIND_BY_STATUS = {400: "bad_request", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
                   413: "too_large", 415: "bad_request", 422: "unreadable_profile", 429: "busy"}


def error_response(request: Request, status: int, message: str, **extra: Any) -> Response:
    """``{"error", "kind", "status", ...}``: every refusal names its machine-readable kind."""
    extra.setdefault("kind", _KIND_BY_STATUS.get(status, "internal" if status >= 500 else "error"))
    body = json.dumps({"error": message, "status": status, **extra}).encode()
    return Response(body, status=status, mimetype="application/json")
