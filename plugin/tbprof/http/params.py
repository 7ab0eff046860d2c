"""Request argument parsing: every malformed value becomes a 400 that names it."""

from __future__ import annotations

from werkzeug.datastructures import MultiDict

from tbprof.analyses.table import TableQuery
from tbprof.errors import BadParameter
from tbprof.service.comparisons import SideSpec, parse_iterations
from tbprof.service.profiles import ALL_HOSTS

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
