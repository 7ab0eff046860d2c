"""Core routes: runs, tools, data, csv, settings."""

from __future__ import annotations

import re
from typing import Any

from werkzeug.wrappers import Request, Response

from tbprof import __version__
from tbprof.analyses.table import Table, TableQuery, table_json
from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.errors import BadParameter
from tbprof.http import params, responses
from tbprof.http.context import AppContext
from tbprof.service import tools as registry
from tbprof.service.logdir import Run
from tbprof.service.selection import ALL_HOSTS, pick_table, select_hosts

# The longest run-name search (``q``): a search box's text, not a document.
MAX_RUN_QUERY_CHARS = 256
MAX_RUNS_PAGE = 10_000


def _run_entry(ctx: AppContext, run: Run, multi_host: dict[tuple[tuple[str, ...], str], list[str]]) -> dict[str, Any]:
    profiles = ctx.profiles
    entry: dict[str, Any] = run.to_json()
    loaded = all(profiles.is_loaded(run, h) for h in run.hosts)
    try:
        entry["tools"] = profiles.tools(run) if loaded else profiles.candidate_tools(run)
        entry["tools_exact"] = loaded
    except Exception as e:  # one broken run must not hide the others
        entry["tools"] = []
        entry["tools_exact"] = True
        entry["error"] = str(e)
    # Runs of a kind share their tool lists: one lookup per distinct list, not per run.
    names = tuple(entry["tools"])
    multi = multi_host.get((names, run.kind))
    if multi is None:
        multi = multi_host[(names, run.kind)] = [t for t in names if profiles.tool(t).multi_host_for(run.traits)]
    entry["multi_host_tools"] = list(multi)
    return entry


def _search_terms(raw: str | None) -> list[str]:
    """``q``: whitespace-separated terms that must all occur in a run's name, ignoring case
    (the frontend's run filter, base/search.ts: plain substrings, no pattern syntax)."""
    if raw is None:
        return []
    if len(raw) > MAX_RUN_QUERY_CHARS:
        raise BadParameter(f"parameter q is {len(raw)} characters; at most {MAX_RUN_QUERY_CHARS} are allowed")
    if "\x00" in raw:
        raise BadParameter("parameter q contains a NUL byte")
    return raw.casefold().split()


def runs(ctx: AppContext, request: Request) -> Response:
    """Runs, newest first, with their hosts and the tools that have data for them.

    ``offset``/``limit``: a page of the list (with ``total``); ``q``: only runs whose name
    holds every term of it (``total`` counts those); ``run``: just that run (a page's deep
    link to a run beyond the first page), 404 when the logdir has none of that name. Without
    them, every run. Each search is one pass over the names (substring tests of terms of at
    most MAX_RUN_QUERY_CHARS), so its time is linear in the listing.

    Tools are exact for runs already converted (memory or disk cache); for the others they
    are the tools that read that kind of run, flagged ``tools_exact: false`` (the ``tools``
    route converts and answers exactly), so listing a large logdir converts nothing.
    """
    args = request.args
    refresh = params.bool_arg(args, "refresh") or False
    multi_host: dict[tuple[tuple[str, ...], str], list[str]] = {}
    body: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "all_hosts": ALL_HOSTS}
    if "run" in args:
        if refresh:
            ctx.profiles.index.runs(refresh=True)
        run = ctx.profiles.run(params.required(args, "run"))  # NotFound (404) for an unknown name
        body.update(runs=[_run_entry(ctx, run, multi_host)], total=1)
        return responses.json_response(request, body)
    offset = params.int_arg(args, "offset", 0, hi=1 << 31) or 0
    limit = params.int_arg(args, "limit", None, lo=1, hi=MAX_RUNS_PAGE)
    terms = _search_terms(args.get("q"))
    ordered = ctx.profiles.index.newest_first(refresh=refresh)
    if terms:
        ordered = [r for r in ordered if all(t in r.name.casefold() for t in terms)]
    page = ordered[offset:] if limit is None else ordered[offset:offset + limit]
    body["runs"] = [_run_entry(ctx, run, multi_host) for run in page]
    if "offset" in args or "limit" in args or terms:
        body["total"] = len(ordered)
    return responses.json_response(request, body)


def tools(ctx: AppContext, request: Request) -> Response:
    run = ctx.profiles.run(params.required(request.args, "run"))
    names = ctx.profiles.tools(run)
    return responses.json_response(request, {
        "schema_version": SCHEMA_VERSION, "run": run.name, "tools": [
            {"name": n, "title": ctx.profiles.tool(n).title,
             "multi_host": ctx.profiles.tool(n).multi_host_for(run.traits),
             "options": [o.to_json() for o in ctx.profiles.tool(n).options]}
            for n in names]})


def progress(ctx: AppContext, request: Request) -> Response:
    """Hosts of a run converted so far (a store in memory or the disk cache, or the host's
    partial in memory) out of all its hosts: what a page polls while a pod converts. Asks no
    store to load, so it answers during a conversion."""
    run = ctx.profiles.run(params.required(request.args, "run"))
    converted = sum(1 for h in run.hosts if ctx.profiles.is_ready(run, h))
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run.name,
                                             "hosts_total": len(run.hosts), "hosts_converted": converted})


def settings(ctx: AppContext, request: Request) -> Response:
    # Every tool, so the frontend can name the tools a run has no data for and say what they need.
    all_tools = [{"name": t.name, "title": t.title, "description": t.description, "requires": t.requires,
                  "how_to": list(t.how_to), "needs": sorted(t.needs)} for t in registry.all_tools()]
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "version": __version__,
                                             "capture_enabled": ctx.capture_enabled, "all_hosts": ALL_HOSTS,
                                             "tools": all_tools})


def _result(ctx: AppContext, request: Request) -> tuple[dict[str, Any], str, str, list[str]]:
    args = request.args
    run = ctx.profiles.run(params.required(args, "run"))
    tool = ctx.profiles.tool(params.required(args, "tool"))
    hosts = select_hosts(run, args.get("host"))
    result = ctx.profiles.compute(run, hosts, tool, params.tool_options(args))
    return result, run.name, tool.name, hosts


def _pick_table(result: dict[str, Any], name: str | None, tool: str) -> tuple[str, Table]:
    return pick_table(result, name, f"tool {tool!r}")


def data(ctx: AppContext, request: Request) -> Response:
    """The tool's JSON. ``rows=N`` caps every table not queried explicitly at its first N rows
    (default order; ``total_rows`` still counts all), so a page's first response stays small
    and its table widgets page through the rest with the ``table`` route."""
    args = request.args
    run = ctx.profiles.run(params.required(args, "run"))
    tool_ = ctx.profiles.tool(params.required(args, "tool"))
    hosts = select_hosts(run, args.get("host"))
    options = params.tool_options(args)
    result, key = ctx.profiles.computed(run, hosts, tool_, options)  # its errors before the query's
    tool = tool_.name
    query = params.table_query(args)
    rows = params.int_arg(args, "rows", None)
    if rows is None and not params.queried(query):
        return responses.memoised_json(request, key, result)
    queries: dict[str, TableQuery] = {}
    if rows is not None:
        queries = {name: TableQuery(limit=rows) for name, t in result.get("tables", {}).items()
                   if isinstance(t, Table)}
    if params.queried(query):
        name, _ = _pick_table(result, request.args.get("table"), tool)
        queries[name] = query
    return responses.json_response(request, result, queries=queries)



def table(ctx: AppContext, request: Request) -> Response:
    """One table of a tool result, sorted/filtered/paged (what the frontend's table widget
    asks for): ``{"table", "columns", "rows", "total_rows", "offset"[, "meta"]}``."""
    result, _, tool, _ = _result(ctx, request)
    name, found = _pick_table(result, request.args.get("table"), tool)
    body = {"schema_version": SCHEMA_VERSION, "table": name,
            **table_json(found, params.table_query(request.args))}
    return responses.json_response(request, body)


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def csv(ctx: AppContext, request: Request) -> Response:
    result, run, tool, hosts = _result(ctx, request)
    name, table = _pick_table(result, request.args.get("table"), tool)
    body = responses.table_csv(table, params.table_query(request.args))
    host_part = "all_hosts" if len(hosts) > 1 else hosts[0]
    filename = _SAFE.sub("_", f"{run}_{host_part}_{tool}_{name}").strip("_") + ".csv"
    return responses.send(request, body, "text/csv",
                            headers={"Content-Disposition": f'attachment; filename="{filename}"'})


