"""``POST sql``: one read-only SQL query over a run (service/sql), and ``GET sql_tables``: its views.

Body (JSON): ``{"run": "...", "query": "SELECT ...", "host": "<host>|__all__" (optional: all hosts),
"max_rows": 1000 (optional, at most MAX_ROWS)}``. The answer is ``run_sql``'s ``SqlResult`` with
``schema_version``. A bad query is a 400 carrying DuckDB's message (``kind: bad_request``); a body
over MAX_BODY_BYTES is a 413, one that is not JSON a 415 (http/params.py ``json_body``). The
text travels in a JSON body, not the URL: a query may be long, and a JSON POST cannot be sent
cross-site without a preflight (never granted); the app's guard checks its Host and Origin as
for every POST.
"""

from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.domain.answer_size import NARROW_SQL
from tbprof.errors import BadParameter
from tbprof.http import params, responses
from tbprof.http.context import AppContext
from tbprof.service.sql import MAX_QUERY_CHARS, run_sql, sql_tables

MAX_ROWS = 10_000
DEFAULT_ROWS = 1_000
TIMEOUT_S = 30.0
# The query's characters as UTF-8 (at most 4 bytes each), and the other fields.
MAX_BODY_BYTES = 4 * MAX_QUERY_CHARS + 4096
_FIELDS = frozenset({"run", "query", "host", "max_rows"})


def _text(body: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise BadParameter(f"field {name!r} must be a non-empty string")
    return value


def sql(ctx: AppContext, request: Request) -> Response:
    body = params.json_body(request, MAX_BODY_BYTES, _FIELDS, "the query",
                            limit_note=f" (a query may have {MAX_QUERY_CHARS:,} characters)")
    run = ctx.profiles.run(_text(body, "run") or "")
    query = _text(body, "query") or ""
    host = _text(body, "host", required=False)
    max_rows = body.get("max_rows", DEFAULT_ROWS)
    if not isinstance(max_rows, int) or isinstance(max_rows, bool) or not 0 <= max_rows <= MAX_ROWS:
        raise BadParameter(f"field 'max_rows' must be an integer from 0 to {MAX_ROWS}")
    result = run_sql(ctx.profiles, run.name, query, host=host, max_rows=max_rows, timeout_s=TIMEOUT_S)
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run.name, **result},
                                   narrow=NARROW_SQL)


def tables(ctx: AppContext, request: Request) -> Response:
    run = ctx.profiles.run(params.required(request.args, "run"))
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run.name, "kind": run.kind,
                                              "tables": sql_tables(ctx.profiles, run.name)})
