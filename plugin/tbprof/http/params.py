"""Request argument parsing: every malformed value becomes a 400 that names it."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

from tbprof.analyses.table import TableQuery
from tbprof.errors import BadParameter
from tbprof.http.errors import HttpRefused
from tbprof.service.comparisons import SideSpec, parse_iterations
from tbprof.service.selection import ALL_HOSTS

# Arguments with a meaning of their own; everything else is passed to the tool as an option.
RESERVED = {"run", "host", "tool", "table", "sort", "desc", "offset", "limit", "rows"}
FILTER_PREFIX = "filter."
MAX_LIMIT = 1_000_000


def required(args: MultiDict[str, str], name: str) -> str:
    value = args.get(name)
    if value is None or value == "":
        raise BadParameter(f"missing required parameter {name!r}")
    if "\x00" in value:
        raise BadParameter(f"parameter {name!r} contains a NUL byte")
    return value


def int_arg(args: MultiDict[str, str], name: str, default: int | None, lo: int = 0,
            hi: int = MAX_LIMIT) -> int | None:
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"parameter {name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise BadParameter(f"parameter {name}={value} is out of range [{lo}, {hi}]")
    return value


def bool_arg(args: MultiDict[str, str], name: str) -> bool | None:
    raw = args.get(name)
    if raw is None or raw == "":
        return None
    low = raw.lower()
    if low in ("1", "true", "yes"):
        return True
    if low in ("0", "false", "no"):
        return False
    raise BadParameter(f"parameter {name}={raw!r} must be true or false")


def table_query(args: MultiDict[str, str]) -> TableQuery:
    filters = tuple((k[len(FILTER_PREFIX):], v) for k, v in args.items(multi=True)
                    if k.startswith(FILTER_PREFIX) and v != "")
    return TableQuery(sort=args.get("sort") or None, desc=bool_arg(args, "desc"),
                      offset=int_arg(args, "offset", 0) or 0, limit=int_arg(args, "limit", None, lo=1),
                      filters=filters)


def queried(query: TableQuery) -> bool:
    """Whether a request sorts, filters or pages a table (its answer is not a memoised body)."""
    return any((query.sort, query.desc is not None, query.offset, query.limit, query.filters))


def tool_options(args: MultiDict[str, str]) -> dict[str, str]:
    return {k: v for k, v in args.items() if k not in RESERVED and not k.startswith(FILTER_PREFIX)}


def side_spec(args: MultiDict[str, str], prefix: str) -> SideSpec:
    """A side of a comparison from ``<prefix>run``, ``<prefix>host``, ``<prefix>steps``,
    ``<prefix>iterations`` (the trace diff's ProfilerStep numbers, e.g. ``3,4``)."""
    run = args.get(prefix + "run")
    if not run:
        raise BadParameter(f"missing required parameter {prefix + 'run'!r}")
    host = args.get(prefix + "host") or None
    if host is not None and host != ALL_HOSTS and "\x00" in host:
        raise BadParameter(f"parameter {prefix + 'host'!r} contains a NUL byte")
    iterations = parse_iterations(args.get(prefix + "iterations", "") or "", prefix + "iterations")
    return SideSpec(run=run, host=host, steps=args.get(prefix + "steps", "") or "", iterations=iterations)


def json_body(request: Request, max_bytes: int, fields: Collection[str], what: str,
              limit_note: str = "") -> dict[str, Any]:
    """A POST's JSON object (``what`` it is, for the messages): refused unless its content type
    is JSON (``unsupported_media_type``; a JSON content type cannot be sent cross-site without a
    CORS preflight, which is never granted), past ``max_bytes`` (``too_large``), or when it is no
    JSON object or names a field outside ``fields`` (``BadParameter``). ``limit_note``: what
    the byte limit means to the user, appended to its message."""
    if request.mimetype != "application/json":
        raise HttpRefused("unsupported_media_type", f"send {what} as application/json")
    too_large = HttpRefused("too_large", f"request body larger than {max_bytes} bytes{limit_note}")
    if request.content_length is not None and request.content_length > max_bytes:
        raise too_large
    # Read at most the limit: werkzeug's stream stops a chunked body there, so a large chunked
    # body is never read whole (bench/measurements.md#conversion-memory).
    request.max_content_length = max_bytes
    try:
        raw = request.stream.read(max_bytes)
        more = request.stream.read(1)  # the stream raises (or yields a byte) past the limit
    except RequestEntityTooLarge:
        raise too_large from None
    if more:
        raise too_large
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise BadParameter("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise BadParameter("the request body must be a JSON object")
    unknown = sorted(set(body) - set(fields))
    if unknown:
        raise BadParameter(f"unknown field(s) {unknown}; known: {sorted(fields)}")
    return body
