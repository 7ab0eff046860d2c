"""Wire shapes of the HTTP routes (and, re-exported, of tool results) for the TypeScript side.

``WIRE_TYPES`` is the explicit list that ``scripts/gen_ts_schemas.py`` writes into
``frontend/src/data/schema.gen.ts``; ``tests/http/test_schemas.py`` checks real answers
against these shapes and the generated file against this list.
"""


from typing import Any, Literal, NotRequired, TypedDict

from tbprof.analyses.schemas import (
    CriticalPathOverlay,
    CriticalPathResult,
    Diagnostics,
    GpuBreakdownResult,
    GpuCountersResult,
    HostError,
    InputPipelineResult,
    InputPipelineVerdict,
    InputThresholds,
    MetricJson,
    NextStep,
    OverviewRecommendation,
    OverviewResult,
    PerformanceSummary,
    Stat,
    StepsInfo,
    TableColumnJson,
    TableJson,
    ToolEnvelope,
)

# Every error kind a route answers (errors.py's, the app's own, and the capture route's refusals).
ErrorKind = Literal["not_found", "no_data", "bad_request", "unreadable_profile", "method_not_allowed", "http",
                    "internal", "bad_address", "bad_option", "no_logdir", "capture_disabled", "logdir_read_only",
                    "busy", "forbidden_host", "forbidden_origin", "too_large"]


class ErrorBody(TypedDict):
    """Every 4xx/5xx answer: a sentence for people, a ``kind`` for programs."""

    error: str
    status: int
    kind: ErrorKind
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
    total: NotRequired[int]  # runs in all, when a page was asked for (offset, limit)


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
    name: str
    title: str
    description: str


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


# The order of the generated file: dependencies first.
WIRE_TYPES: tuple[type, ...] = (
    ErrorBody, RunJson, RunsResponse, ToolOptionJson, ToolJson, ToolsResponse, ToolTitleJson, SettingsResponse,
    ProgressResponse,
    TableColumnJson, TableJson, TableResponse, HostError, MetricJson, ToolEnvelope, InputThresholds, StepsInfo,
    Diagnostics, NextStep, OverviewRecommendation, Stat, PerformanceSummary, OverviewResult, InputPipelineVerdict,
    InputPipelineResult, GpuBreakdownResult, GpuCountersResult, CriticalPathOverlay, CriticalPathResult,
)
# Named literal unions, emitted as TypeScript type aliases.
WIRE_ALIASES: dict[str, Any] = {"ErrorKind": ErrorKind}
