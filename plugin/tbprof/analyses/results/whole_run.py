"""Results of the whole-run views: overview, input pipeline, pod viewer, tf.data, smart suggestions,
inference profile, profile summary."""

from typing import Literal, NotRequired, TypedDict

from tbprof.analyses.results.common import (
    Diagnostics,
    InputBound,
    InputThresholds,
    NumberColumn,
    Stat,
    StepsInfo,
    ToolEnvelope,
)


class NextStep(TypedDict):
    tool: str
    why: str


class Cause(TypedDict):
    """One cause of step time the recommendation names, with its share of the step time."""

    cause: Literal["input", "device_collectives", "kernel_launch", "all_others"]
    percent: float
    statement: str


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
    causes: list[Cause]  # the statements by share of the step time, largest first
    next_steps: list[NextStep]


class DeviceInfo(TypedDict):
    host: str
    plane: str
    device_type: str
    model: str
    xprof_device_type: str
    core_count: int | None  # SMs / compute units; null where the profile does not say (TPUs)
    compute_capability: str


class RunEnvironment(TypedDict):
    host_count: int
    hosts: list[str]
    hardware_type: str
    device_type: str
    device_model: str
    device_count: int
    devices: list[DeviceInfo]
    # XProf's run-environment device type ("Nvidia GPU (Hopper)", "AMD GPU - gfx942", "TPU v6 Lite").
    xprof_device_type: str


PrecisionSource = Literal["hlo_element_types", "tensor_shapes", "operator_input_types", "unknown"]


class PrecisionJson(TypedDict):
    # Null when nothing in the profile tells (analyses/ops/precision.py).
    device_compute_16bit_percent: float | None
    device_compute_32bit_percent: float | None
    device_compute_precision_source: PrecisionSource


class PerformanceSummary(PrecisionJson):
    step_time_ms: Stat
    # category key ("device_compute_ms", ...) -> its per-step statistics
    breakdown_ms: dict[str, Stat]
    # null each when there is no step time to share out (no steps)
    percent_of_step_time: dict[str, float | None]
    input_percent: float | None
    host_op_time_percent: float
    device_op_time_percent: float
    host_op_count_percent: float
    device_op_count_percent: float
    host_op_time_eager_percent: float
    device_op_time_eager_percent: float


class OverviewResult(ToolEnvelope):
    hosts: list[str]
    steps: StepsInfo
    run_environment: RunEnvironment
    performance_summary: PerformanceSummary
    # columns of the step-time chart: "step", "host", "step_time_ms" and one per category ("input_ms", ...)
    step_time_graph: dict[str, list[str] | NumberColumn]
    top_ops_side: str  # "host" or "device"
    recommendation: OverviewRecommendation
    diagnostics: Diagnostics


class InputPipelineVerdict(TypedDict):
    input_bound: InputBound
    input_bound_reason: str
    input_classification: str
    input_percent: float | None  # null without steps
    statement: str
    summary_next_step: str
    kernel_launch_statement: str
    all_other_statement: str
    device_collectives_statement: str
    input_thresholds_percent: InputThresholds


class InputDeviceSide(TypedDict):
    step_time_ms: Stat
    input_ms: Stat
    breakdown_ms: dict[str, Stat]
    input_percent_per_step: Stat
    # columns of the chart: "step", "step_time_ms", "input_ms"
    step_time_graph: dict[str, list[str] | NumberColumn]


class InputTimeBreakdown(TypedDict):
    enqueue_us: float
    demanded_file_read_us: float
    advanced_file_read_us: float
    preprocessing_us: float
    unclassified_non_enqueue_us: float


class InputHostSide(TypedDict):
    tf_data_used: bool
    input_time_breakdown_us: InputTimeBreakdown
    input_op_time_ms: float


class InputPipelineResult(ToolEnvelope):
    hosts: list[str]
    steps: StepsInfo
    verdict: InputPipelineVerdict
    device_side: InputDeviceSide
    host_side: InputHostSide
    recommendations: list[str]
    diagnostics: Diagnostics


class PodSteps(TypedDict):
    """The steps of the pod, as columns."""

    index: NumberColumn
    step: list[str]
    step_num: NumberColumn


class PodCore(TypedDict):
    """One device (core) of the pod, per step: its time, begin and bottleneck."""

    host: str
    device: str
    total_duration_us: NumberColumn
    begin_ps: NumberColumn
    bottleneck: list[str]
    breakdown_us: dict[str, NumberColumn]  # by category label


class PodViewerResult(ToolEnvelope):
    hosts: list[str]
    device_type: str
    step_breakdown_events: dict[str, str]
    steps_info: StepsInfo
    step_count: int
    steps: PodSteps
    cores: list[PodCore]
    diagnostics: Diagnostics


class PipelinePath(TypedDict):
    """A pipeline's critical path and bottleneck (``tf_data._analyse``)."""

    root: str
    critical_path: list[str]
    bottleneck: str
    root_calls: int
    root_slow_calls: int
    root_avg_latency_us: float


class TfDataPipeline(PipelinePath):
    host: str
    pipeline: str
    root_iterator_id: int
    slow_call_percent: float
    bottleneck_kind: str
    suggestion: str
    input_bound_hint: str


class TfDataResult(ToolEnvelope):
    hosts: list[str]
    pipelines: list[TfDataPipeline]
    slow_call_threshold_us: float
    diagnostics: list[str]


Severity = Literal["high", "medium", "low"]


class Suggestion(TypedDict):
    rule: str
    title: str
    severity: Severity
    message: str
    page: str
    # the numbers the rule read, by name with unit (a headline metric's key, or e.g. "device_time_us")
    evidence: dict[str, float | int | str | None]


class SmartSuggestionResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    suggestions: list[Suggestion]
    rules: list[str]
    message: str


class InferenceProfileResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    request_count: int
    latency_ms: dict[str, float]  # mean, min, max and the percentiles (p50, p90, ...)


class PlaneLine(TypedDict):
    id: int
    name: str
    display_name: str
    event_count: int


class PlaneSummary(TypedDict):
    name: str
    id: int
    device_type: str
    device_name: str
    line_count: int
    event_count: int
    stat_count: int
    first_event_ps: int | None
    last_event_end_ps: int | None
    lines: list[PlaneLine]
    stats: dict[str, float | int | str]


class HostSummary(TypedDict):
    host: str
    source_path: str
    format: str
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    span_ps: int
    event_count: int
    device_types: list[str]
    device_count: int
    device_names: list[str]
    planes: list[PlaneSummary]


class TopOp(TypedDict):
    name: str
    type: str
    self_time_us: float
    occurrences: int


class ProfileHeadline(TypedDict):
    """A run's headline numbers, what ``tbprof summary`` prints.

    The Python API's ``summary()`` and the agent's ``summary`` answer these too, with the run's
    name, its hosts and its unreadable hosts."""

    host_count: int
    device_type: str
    device_count: int
    event_count: int
    span_ms: float
    step_source: str
    step_method: str
    step_confidence: str
    step_count: int
    avg_step_time_ms: float | None  # None: no steps
    stddev_step_time_ms: float | None
    input_percent: float | None
    input_bound: InputBound
    step_diagnosis: str
    top_ops_side: str  # "device" | "host"
    top_ops: list[TopOp]
    # A tfprof run's: graph nodes, traced steps, time and memory per step.
    tfprof_nodes: NotRequired[int]
    tfprof_steps: NotRequired[int]
    tfprof_exec_us_per_step: NotRequired[int]
    tfprof_requested_bytes_per_step: NotRequired[int]
    # A run with device activity: its GPUs' mean idle %, and with several GPUs their mean
    # communication % (None: no GPU's share is defined).
    device_idle_percent: NotRequired[float]
    communication_percent: NotRequired[float | None]


class ProfileSummaryResult(ToolEnvelope):
    host_count: int
    event_count: int
    headline: ProfileHeadline
    hosts: list[HostSummary]


class KpiSource(TypedDict):
    metric: str
    tool: str  # the tool that computed it
    why_missing: str | None  # why the metric is null (None: it was computed)


class KpiMetricsResult(ToolEnvelope):
    hosts: list[str]
    step_time_ms: float | None
    roofline_utilization_percent: float | None
    mfu_percent: float | None
    peak_memory_bytes: int | None
    peak_memory_allocator: str | None
    sources: list[KpiSource]
