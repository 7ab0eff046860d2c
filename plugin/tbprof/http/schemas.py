"""Wire shapes of the HTTP routes and of every tool result, for the TypeScript side.

``wire_types()`` (the routes' types, then every type the tools' results reach, each tool's
``result`` read from the tool list, ``service/tools.py``) is what ``scripts/gen_ts_schemas.py``
writes into ``frontend/src/data/schema.gen.ts``; ``tests/http/test_schemas.py`` checks real
answers against these shapes (``wire_view``: a result's ``Table`` is a ``TableJson`` on the wire)
and the generated file against this list.
"""


import types
from typing import Any, NotRequired, TypedDict, Union, get_args, get_origin, get_type_hints, is_typeddict

import numpy as np

from tbprof.analyses.results.common import TableJson, ToolEnvelope
from tbprof.analyses.results.compare import CompareResult
from tbprof.analyses.table import Table
from tbprof.http.errors import ErrorKind
from tbprof.service import tools as registry


class ErrorBody(TypedDict):
    """Every 4xx/5xx answer: a sentence for people, a ``kind`` for programs."""

    error: str
    status: int
    kind: ErrorKind  # one of http/errors.py's ERROR_STATUS
    file: NotRequired[str]  # unreadable_profile: the file
    reason: NotRequired[str]  # unreadable_profile: what is wrong with it


class RunJson(TypedDict):
    run: str
    kind: str
    hosts: list[str]
    mtime: float
    tools: list[str]
    tools_exact: bool
    multi_host_tools: list[str]
    error: NotRequired[str]


class RunsResponse(TypedDict):
    schema_version: int
    runs: list[RunJson]
    all_hosts: str
    total: NotRequired[int]  # runs in all (matching q), when a page, a search or one run was asked for


class ToolOptionJson(TypedDict):
    """A tool option and the control a page draws for it."""

    name: str
    default: Any
    help: str
    choices: NotRequired[list[str]]  # a select
    min: NotRequired[float]  # a bounded number
    max: NotRequired[float]
    group: NotRequired[str]  # options shown together under this heading
    advanced: NotRequired[bool]  # under a collapsed "More options"


class ToolJson(TypedDict):
    name: str
    title: str
    multi_host: bool
    options: list[ToolOptionJson]


class ToolsResponse(TypedDict):
    schema_version: int
    run: str
    tools: list[ToolJson]


class ToolTitleJson(TypedDict):
    """A tool as its descriptor (analyses/tool.py Tool) describes it, for menus and no-data pages."""

    name: str
    title: str
    description: str
    requires: str  # what a profile must contain for the tool to have data
    how_to: list[str]  # how to record a profile that has it
    needs: list[str]  # the run traits it needs (store/traits.py)


class SettingsResponse(TypedDict):
    schema_version: int
    version: str
    capture_enabled: bool
    all_hosts: str
    tools: list[ToolTitleJson]


class ProgressResponse(TypedDict):
    """``GET progress?run=R``: hosts converted so far (store or partial at hand) of all the run's hosts."""

    schema_version: int
    run: str
    hosts_total: int
    hosts_converted: int


class TableResponse(TableJson):
    schema_version: int
    table: str


def wire_view(tp: Any) -> Any:
    """The JSON shape of a Python-side result type: a ``Table`` goes out as a ``TableJson``, a numpy
    array as a JSON array of numbers (analyses/encode.py)."""
    if tp is Table:
        return TableJson
    if get_origin(tp) is np.ndarray or tp is np.ndarray:
        return list[float]
    return tp


def _typed_dicts(roots: tuple[type, ...]) -> list[type]:
    """Every TypedDict reachable from ``roots`` (through fields, lists, dicts and unions), each after
    the ones it refers to, in first-seen order: the order of the generated TypeScript."""
    out: list[type] = []
    seen: set[int] = set()

    def visit(tp: Any) -> None:
        tp = wire_view(tp)
        if is_typeddict(tp):
            if id(tp) in seen:
                return
            seen.add(id(tp))
            for sub in get_type_hints(tp).values():
                visit(sub)
            out.append(tp)
            return
        origin = get_origin(tp)
        if origin in (list, dict, Union, types.UnionType):
            for arg in get_args(tp):
                visit(arg)

    for root in roots:
        visit(root)
    return out


# The routes' answers; compare's (analyses/results/compare.py) is no tool's result: it reads two runs.
ROUTE_TYPES: tuple[type, ...] = (
    ErrorBody, RunJson, RunsResponse, ToolOptionJson, ToolJson, ToolsResponse, ToolTitleJson, SettingsResponse,
    ProgressResponse, TableResponse, CompareResult,
)


def wire_types() -> tuple[type, ...]:
    """The generated file's types: the routes' types, the envelope, then every tool's result type
    (``Tool.result``) with the types it refers to, dependencies first. Read from the tool list
    when called (it imports every tool module)."""
    return tuple(_typed_dicts((*ROUTE_TYPES, ToolEnvelope, *registry.result_types().values())))
# Named literal unions, emitted as TypeScript type aliases.
WIRE_ALIASES: dict[str, Any] = {"ErrorKind": ErrorKind}
