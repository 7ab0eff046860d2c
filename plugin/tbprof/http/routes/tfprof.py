"""``tfprof_export``: a tfprof view as a Chrome trace timeline (JSON) or a gzipped pprof profile.

    GET tfprof_export?run=R[&host=H]&format=timeline|pprof[&metric=micros]&<tfprof_views options>

The options are the ``tfprof_views`` tool's (view, step, max_depth, regexes, ...), so the
file holds exactly the view the page shows.
"""

from __future__ import annotations

import re

from werkzeug.wrappers import Request, Response

from tbprof.analyses.tfprof import tfprof_export
from tbprof.analyses.tfprof.tfprof_views import TOOL, run_view
from tbprof.errors import BadParameter
from tbprof.http import params, responses
from tbprof.http.context import AppContext
from tbprof.service.selection import select_hosts

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
FORMATS = ("timeline", "pprof")


def tfprof_export_route(ctx: AppContext, request: Request) -> Response:
    args = request.args
    run = ctx.profiles.run(params.required(args, "run"))
    if "tfprof" not in run.traits:
        raise BadParameter(f"run {run.name!r} is a {run.kind} run; tfprof_export reads tfprof ProfileProto runs")
    host = select_hosts(run, args.get("host"))[0]
    fmt = args.get("format", "timeline")
    if fmt not in FORMATS:
        raise BadParameter(f"format={fmt!r} is not one of {', '.join(FORMATS)}")
    tool = ctx.profiles.tool(TOOL)
    raw = {k: v for k, v in params.tool_options(args).items() if k not in ("format", "metric")}
    options = tool.parse_options(raw)
    profile = ctx.profiles.tfprof_profile(run, host)
    result = run_view(profile, options)
    stem = _SAFE.sub("_", f"{run.name}_{host}_{result.view}").strip("_")
    # tfprof_export.ExportError is a BadParameter: a 400 (http/errors.py).
    if fmt == "timeline":
        body = responses.to_json_bytes(tfprof_export.timeline_trace(profile, result),
                                       narrow="export a narrower view (fewer nodes: max_depth=, min_micros=)")
        return responses.send(request, body, "application/json", headers={
            "Content-Disposition": f'attachment; filename="{stem}_timeline.json"'})
    metric = args.get("metric", "micros")
    body = tfprof_export.pprof_gz(profile, result, metric)
    # Already gzipped (pprof's on-disk form): sent as is.
    return Response(body, mimetype="application/octet-stream", headers={
        "Content-Disposition": f'attachment; filename="{stem}_{metric}.pb.gz"'})
