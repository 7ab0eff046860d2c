"""Wire shapes of tool results: the JSON keys the dashboard reads, as TypedDicts.

``scripts/gen_ts_schemas.py`` turns these (via ``http/schemas.py``) into the TypeScript
interfaces of ``frontend/src/data/schema.gen.ts``; ``tests/http/test_schemas.py`` checks that
every tool's answer on the sample profiles has these shapes and that the generated file is
fresh, so a renamed key fails on both sides instead of drifting. Deep, tool-specific parts
that only one page reads are ``dict[str, Any]`` until that page is typed.
"""


from typing import Any, Literal, NotRequired, TypedDict

InputBound = Literal["high", "moderate", "potential", "no", "unknown"]


class TableColumnJson(TypedDict):
    name: str
    label: str
    kind: Literal["str", "int", "float", "bool"]
    unit: str
    description: NotRequired[str]


class TableJson(TypedDict):
    columns: list[TableColumnJson]
    rows: list[list[str | int | float | bool | None]]
    total_rows: int
    offset: int
    meta: NotRequired[dict[str, Any]]


class HostError(TypedDict):
    host: str
    file: str
    error: str


class MetricJson(TypedDict):
    """A headline metric with its one definition (``analyses/metrics.py``)."""

    key: str
    label: str
    of: str
    definition: str
    value_percent: float | None


class ToolEnvelope(TypedDict):
    """Every tool answer has these; ``tables`` hold the tables every page renders alike;
    ``metrics`` the headline metrics the page shows (one definition each, analyses/metrics.py)."""

    schema_version: int
    tool: str
    tables: NotRequired[dict[str, TableJson]]
    host_errors: NotRequired[list[HostError]]
    metrics: NotRequired[list[MetricJson]]


class InputThresholds(TypedDict):
    """XProf's input-bound thresholds, percent of step time: ``high`` at or above, ``moderate`` at or above."""

    high: float
    moderate: float


class StepsInfo(TypedDict):
    step_source: str
    method: str
    # How the steps were found: "markers" | "annotated" | "inferred" | "none" (docs/formulas.md).
    step_confidence: str
    detail: str
    diagnosis: str
    step_count: int
    notes: list[str]
    per_host: list[dict[str, Any]]


class Diagnostics(TypedDict):
    errors: list[str]
    warnings: list[str]
    info: list[str]


class NextStep(TypedDict):
    tool: str
    why: str


class OverviewRecommendation(TypedDict):
    bottleneck: str
    input_bound: InputBound
    input_bound_reason: str  # what the verdict rests on ("" when not input-bound)
    statement: str
    kernel_launch_bottleneck: str
    kernel_launch_statement: str
    all_other_bottleneck: str
    all_other_statement: str
    device_collectives_bottleneck: str
    device_collectives_statement: str
    precision_statement: str
    input_thresholds_percent: InputThresholds
    next_steps: list[NextStep]


class Stat(TypedDict):
    avg: float
    stddev: float
    min: float
    max: float


class PerformanceSummary(TypedDict):
    step_time_ms: Stat
    breakdown_ms: dict[str, Stat]
    percent_of_step_time: dict[str, float]
    input_percent: float
    host_op_time_percent: float
    device_op_time_percent: float
    host_op_count_percent: float
    device_op_count_percent: float
    host_op_time_eager_percent: float
    device_op_time_eager_percent: float
    # Null when nothing in the profile tells (analyses/ops/precision.py).
    device_compute_16bit_percent: float | None
    device_compute_32bit_percent: float | None
    device_compute_precision_source: Literal["hlo_element_types", "tensor_shapes", "operator_input_types", "unknown"]


class OverviewResult(ToolEnvelope):
    hosts: list[str]
    steps: StepsInfo
    run_environment: dict[str, Any]
    performance_summary: PerformanceSummary
    step_time_graph: dict[str, list[Any]]
    top_ops_side: str
    recommendation: OverviewRecommendation
    diagnostics: Diagnostics


class InputPipelineVerdict(TypedDict):
    input_bound: InputBound
    input_bound_reason: str
    input_classification: str
    input_percent: float
    statement: str
    summary_next_step: str
    kernel_launch_statement: str
    all_other_statement: str
    device_collectives_statement: str
    input_thresholds_percent: InputThresholds


class InputPipelineResult(ToolEnvelope):
    hosts: list[str]
    steps: StepsInfo
    verdict: InputPipelineVerdict
    device_side: dict[str, Any]
    host_side: dict[str, Any]
    recommendations: list[str]
    diagnostics: Diagnostics


class GpuBreakdownResult(ToolEnvelope):
    """HTA's GPU breakdowns (``gpu_breakdown``); per-rank numbers are in its tables."""

    hosts: list[str]
    ranks: list[int]
    device_idle_percent: float | None
    communication_percent: float | None


class GpuCountersResult(ToolEnvelope):
    """HTA's queue length and memory bandwidth (``gpu_counters``); per-stream / per-type numbers are
    in its tables."""

    hosts: list[str]
    ranks: list[int]
    max_queue_length: int | None
    peak_memory_bw_gibps: float | None  # GiB/s (the dashboard's bandwidth unit)


# tool id -> the shape of its answer (tools not named here are checked against ToolEnvelope).
TOOL_RESULTS: dict[str, type] = {
    "overview_page": OverviewResult,
    "input_pipeline_analyzer": InputPipelineResult,
    "gpu_breakdown": GpuBreakdownResult,
    "gpu_counters": GpuCountersResult,
}
