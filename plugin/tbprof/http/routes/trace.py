"""Trace viewer routes: ``trace`` (window + level of detail), ``trace_search``, ``trace_event``.

Thin handlers: parse, call ``timeline``, encode. Window answers are kept in the store's memo
as encoded (and gzipped) bodies, under the process-wide memory budget, so reopening or
re-panning to a view costs a dictionary lookup; the first answer for a view is computed.
"""

from __future__ import annotations

from werkzeug.wrappers import Request, Response

from tbprof.analyses.tool import SCHEMA_VERSION
from tbprof.errors import BadParameter
from tbprof.http import params, responses
from tbprof.http.context import AppContext
from tbprof.service.selection import ALL_HOSTS, select_hosts
from tbprof.store.combine import combined
from tbprof.store.tables import ProfileStore
from tbprof.timeline import encoding
from tbprof.timeline.details import derived_event_details, event_details
from tbprof.timeline.range import range_summary
from tbprof.timeline.search import search
from tbprof.timeline.tracks import track_index
from tbprof.timeline.window import query_window

MAX_WIDTH_PX = 65536
MAX_PS = 1 << 62


def _store(ctx: AppContext, request: Request) -> tuple[str, ProfileStore]:
    args = request.args
    run = ctx.profiles.run(params.required(args, "run"))
    host = args.get("host")
    if host == ALL_HOSTS and len(run.hosts) > 1:
        if not ctx.profiles.tool("trace_viewer").multi_host_for(run.traits):
            raise BadParameter("the trace viewer shows one host at a time; choose host= one of "
                               f"{sorted(run.hosts)}")
        # A PyTorch run's ranks in one timeline: the same combined store as the tool's answer
        # (an unreadable rank left out there and here).
        stores, _ = ctx.profiles.stores_tolerant(run, list(run.hosts))
        return run.name, combined([s for s in stores if isinstance(s, ProfileStore)])
    hosts = select_hosts(run, host)
    return run.name, ctx.profiles.event_store(run, hosts[0])


def _tracks_arg(store: ProfileStore, raw: str | None) -> list[int] | None:
    if not raw:
        return None
    n_tracks = len(track_index(store).tracks)
    try:
        tracks = sorted({int(t) for t in raw.split(",")})
    except ValueError:
        raise BadParameter(f"parameter tracks={raw!r} must be comma-separated track ids") from None
    if any(not 0 <= t < n_tracks for t in tracks):
        raise BadParameter(f"parameter tracks={raw!r} names a track outside 0..{n_tracks - 1}")
    return tracks


# How to ask for less of a search page, a range's summary, an event's details.
NARROW_SEARCH = "ask for a smaller page (limit=) or a narrower query"
NARROW_RANGE = "ask for fewer rows (limit=), a narrower range or fewer tracks (tracks=)"
NARROW_DETAILS = ("the event's own fields and its linked events' names take more than that; its name and times "
                  "are in the trace answer, and $TBPROF_MEMORY_BYTES raises the bound")


def trace(ctx: AppContext, request: Request) -> Response:
    args = request.args
    run_name, store = _store(ctx, request)
    start_ps = params.int_arg(args, "start_ps", None, lo=-MAX_PS, hi=MAX_PS)
    end_ps = params.int_arg(args, "end_ps", None, lo=-MAX_PS, hi=MAX_PS)
    width_px = params.int_arg(args, "width_px", 2000, lo=1, hi=MAX_WIDTH_PX) or 2000
    fmt = args.get("format", "binary")
    if fmt not in ("binary", "json"):
        raise BadParameter(f"parameter format={fmt!r} must be binary or json")
    if start_ps is not None and end_ps is not None and end_ps <= start_ps:
        raise BadParameter(f"end_ps={end_ps} must be greater than start_ps={start_ps}")
    tracks = _tracks_arg(store, args.get("tracks"))
    key = ("timeline", "response", (run_name, start_ps, end_ps, width_px, fmt, tuple(tracks) if tracks else None))

    def build() -> tuple[bytes, str]:
        result = query_window(store, start_ps, end_ps, width_px, tracks)
        if fmt == "json":
            body = responses.to_json_bytes({**encoding.encode_json(result, store), "run": run_name},
                                           narrow=encoding.NARROW_WINDOW)
            return body, "application/json"
        return encoding.encode_binary(result, store), encoding.BINARY_MIME

    # Encoded windows, and gzipped ones, live in the store's memo (dropped with the store),
    # charged to the process-wide byte budget at their length even where the store skips
    # estimating sizes.
    body, mime = store.memo(key, build, size=lambda entry: len(entry[0]) + len(entry[1]))

    def gzipped() -> bytes:
        return store.memo((*key, "gzip"), lambda: responses.gzip_bytes(body, responses.WINDOW_GZIP_LEVEL), size=len)

    return responses.send(request, body, mime, headers={"Cache-Control": "no-cache"}, gzipped=gzipped)


def trace_search(ctx: AppContext, request: Request) -> Response:
    args = request.args
    run_name, store = _store(ctx, request)
    query = params.required(args, "q")
    regex = params.bool_arg(args, "regex") or False
    offset = params.int_arg(args, "offset", 0) or 0
    limit = params.int_arg(args, "limit", 100, lo=1, hi=1000) or 100
    from_ps = params.int_arg(args, "from_ps", None, lo=-MAX_PS, hi=MAX_PS)
    result = search(store, query, regex=regex, offset=offset, limit=limit, from_ps=from_ps)  # SearchError: 400
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run_name,
                                             "host": store.host, **result}, narrow=NARROW_SEARCH)


def trace_event(ctx: AppContext, request: Request) -> Response:
    args = request.args
    run_name, store = _store(ctx, request)
    track = params.int_arg(args, "track", None, lo=0, hi=1 << 20)
    if track is not None:
        # A derived line's event: track= and index= (its event_row in the trace frame).
        index = params.int_arg(args, "index", None, lo=0, hi=1 << 40)
        if index is None:
            raise BadParameter("trace_event with track= needs index= (the event's row in a derived track)")
        details = derived_event_details(store, track, index)
    else:
        plane = params.int_arg(args, "plane", None, lo=0, hi=1 << 20)
        row = params.int_arg(args, "row", None, lo=0, hi=1 << 40)
        if plane is None or row is None:
            raise BadParameter("trace_event needs plane= and row= (from a trace or trace_search answer)")
        details = event_details(store, plane, row)
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run_name,
                                             "host": store.host, **details}, narrow=NARROW_DETAILS)


def trace_range(ctx: AppContext, request: Request) -> Response:
    args = request.args
    run_name, store = _store(ctx, request)
    start_ps = params.int_arg(args, "start_ps", None, lo=-MAX_PS, hi=MAX_PS)
    end_ps = params.int_arg(args, "end_ps", None, lo=-MAX_PS, hi=MAX_PS)
    if start_ps is None or end_ps is None or end_ps <= start_ps:
        raise BadParameter("trace_range needs start_ps < end_ps")
    limit = params.int_arg(args, "limit", 100, lo=1, hi=10000) or 100
    summary = range_summary(store, start_ps, end_ps, _tracks_arg(store, args.get("tracks")), limit)
    return responses.json_response(request, {"schema_version": SCHEMA_VERSION, "run": run_name,
                                             "host": store.host, **summary}, narrow=NARROW_RANGE)
