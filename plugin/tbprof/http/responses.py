"""Encoding results: JSON (tables queried and paged), CSV, errors, gzip."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import threading
from collections import OrderedDict
from typing import Any

import numpy as np
from werkzeug.wrappers import Request, Response

from tbprof.analyses.table import Table, TableQuery, apply_query, table_json

GZIP_MIN_BYTES = 1024


def _default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        f = float(o)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", errors="replace")
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _sanitize(value: Any, queries: dict[str, TableQuery]) -> Any:
    """Tables become JSON tables (with their query applied); NaN/inf become null."""
    if isinstance(value, Table):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "tables" and isinstance(v, dict):
                out[k] = {name: table_json(t, queries.get(name)) if isinstance(t, Table) else _sanitize(t, queries)
                          for name, t in v.items()}
            else:
                out[k] = _sanitize(v, queries)
        return out
    if isinstance(value, (list, tuple)):
        return [_sanitize(v, queries) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, Table):
        return table_json(value)
    return value


def to_json_bytes(result: Any, queries: dict[str, TableQuery] | None = None) -> bytes:
    clean = _sanitize(result, queries or {})
    return json.dumps(clean, default=_default, separators=(",", ":"), allow_nan=False).encode()


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


def error_response(request: Request, status: int, message: str, **extra: Any) -> Response:
    body = json.dumps({"error": message, "status": status, **extra}).encode()
    return Response(body, status=status, mimetype="application/json")


def table_csv(table: Table, query: TableQuery | None = None) -> bytes:
    index, _ = apply_query(table, query or TableQuery())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    for row in table.rows(index):
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue().encode()
