"""Routes of the A/B comparison: compare, compare_table, compare_csv (docs/api.md, "compare").

``base_run``/``base_host``/``base_steps`` name the baseline, ``run``/``host``/``steps`` the
candidate; tables sort, filter, page and export exactly like a tool's (``data``/``table``/``csv``).
"""

from __future__ import annotations

import re

from werkzeug.wrappers import Request, Response

from tbprof.analyses.compare import stats as cs
from tbprof.analyses.results.compare import CompareResult, CompareSide
from tbprof.analyses.table import Table, TableQuery, table_json
from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.errors import BadParameter
from tbprof.http import params, responses
from tbprof.http.context import AppContext
from tbprof.service.comparisons import SideSpec, compare_pair, compared
from tbprof.service.selection import pick_table


def _confidence(request: Request) -> float:
    raw = request.args.get("confidence")
    if raw in (None, ""):
        return cs.DEFAULT_CONFIDENCE
    try:
        value = float(raw)
    except ValueError:
        raise BadParameter(f"parameter confidence={raw!r} is not a number") from None
    if not 0.5 <= value < 1.0:
        raise BadParameter(f"parameter confidence={value} must be in [0.5, 1)")
    return value


def _sides(request: Request) -> tuple[SideSpec, SideSpec, float]:
    return params.side_spec(request.args, "base_"), params.side_spec(request.args, ""), _confidence(request)


def _result(ctx: AppContext, request: Request) -> CompareResult:
    return compare_pair(ctx.profiles, *_sides(request))


def _pick(result: CompareResult, name: str | None) -> tuple[str, Table]:
    return pick_table(result, name, "the comparison", prefer=("ops",))


def compare(ctx: AppContext, request: Request) -> Response:
    """The comparison's JSON; ``rows=N`` caps every table (as ``data`` does)."""
    result, key = compared(ctx.profiles, *_sides(request))
    query = params.table_query(request.args)
    rows = params.int_arg(request.args, "rows", None)
    if rows is None and not params.queried(query):
        return responses.memoised_json(request, ("compare", key), result)
    queries: dict[str, TableQuery] = {}
    if rows is not None:
        queries = {n: TableQuery(limit=rows) for n, t in result.get("tables", {}).items() if isinstance(t, Table)}
    if params.queried(query):
        name, _ = _pick(result, request.args.get("table"))
        queries[name] = query
    return responses.json_response(request, result, queries=queries)


def compare_table(ctx: AppContext, request: Request) -> Response:
    result = _result(ctx, request)
    name, table = _pick(result, request.args.get("table"))
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "table": name,
                                             **table_json(table, params.table_query(request.args))})


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def compare_csv(ctx: AppContext, request: Request) -> Response:
    result = _result(ctx, request)
    name, table = _pick(result, request.args.get("table"))
    body = responses.table_csv(table, params.table_query(request.args))

    def side(d: CompareSide) -> str:
        hosts = d["hosts"]
        return f"{d['run']}_{'all_hosts' if len(hosts) > 1 else hosts[0]}"

    filename = _SAFE.sub("_", f"compare_{side(result['baseline'])}_vs_{side(result['candidate'])}_{name}")
    return responses.send(request, body, "text/csv",
                            headers={"Content-Disposition": f'attachment; filename="{filename.strip("_")}.csv"'})

