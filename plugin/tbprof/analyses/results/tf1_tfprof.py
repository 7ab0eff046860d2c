"""Results of the TF1 timeline tools and tfprof's views and advice."""

from typing import Literal, NotRequired, TypedDict

from tbprof.analyses.results.common import ToolEnvelope


class EmptyNote(TypedDict, total=False):
    """Step files without a single op event, named (``tf1_timeline._empty_note``)."""

    empty_files: list[str]
    message: str


class Tf1StepsChart(TypedDict):
    step: list[int]
    step_time_ms: list[float]


class Tf1StepsResult(ToolEnvelope, EmptyNote):
    step_count: int
    chart: Tf1StepsChart
    average_step_time_ms: float
    min_step_time_ms: float
    max_step_time_ms: float


class TypeTime(TypedDict):
    type: str
    self_time_us: float


class Tf1OpSide(TypedDict):
    op_count: int
    total_self_time_us: float
    self_time_by_type: list[TypeTime]


class Tf1OpStatsResult(ToolEnvelope, EmptyNote):
    step_count: int
    steps: list[int]
    sides: dict[str, Tf1OpSide]  # "host" and "device"


class Tf1MemorySeries(TypedDict):
    step: int
    file: str
    allocator: str
    time_ms: list[float]
    bytes_in_use: list[int]


class Tf1MemoryResult(ToolEnvelope):
    series: list[Tf1MemorySeries]
    message: NotRequired[str]  # why there are no allocator counters


class AcceleratorUse(TypedDict):
    device: str
    busy_us: int
    span_us: int
    utilization: float
    low: bool


class ExpensiveOpType(TypedDict):
    op_type: str
    exec_us: int
    accelerator_us: int
    cpu_us: int
    share: float


class ExpensiveScope(TypedDict):
    scope: str
    total_exec_us: int
    total_accelerator_us: int
    total_cpu_us: int
    self_exec_us: int


class ExpensiveCallSite(TypedDict):
    call_site: str
    depth: int
    total_exec_us: int
    total_accelerator_us: int
    total_cpu_us: int


class ExpensiveOperations(TypedDict):
    op_types: list[ExpensiveOpType]
    scopes: list[ExpensiveScope]
    call_sites: list[ExpensiveCallSite]


class Alternative(TypedDict):
    kind: Literal["batch_norm", "nhwc_on_gpu"]
    nodes: list[str]
    node_count: int


class AdviceCheck(TypedDict):
    check: str  # accelerator_utilization | expensive_operations | faster_alternatives
    status: Literal["ok", "warning", "info", "not_applicable"]
    findings: list[AcceleratorUse] | ExpensiveOperations | list[Alternative]
    text: list[str]


class TfprofAdviceResult(ToolEnvelope):
    steps: list[int]
    checks: list[AdviceCheck]
    warnings: list[str]


class TfprofViewOptions(TypedDict):
    """tfprof's options as the view ran with them (``tfprof_engine.ViewOptions``)."""

    max_depth: int
    min_bytes: int
    min_peak_bytes: int
    min_residual_bytes: int
    min_output_bytes: int
    min_micros: int
    min_accelerator_micros: int
    min_cpu_micros: int
    min_params: int
    min_float_ops: int
    min_occurrence: int
    step: int
    order_by: str
    account_type_regexes: list[str]
    start_name_regexes: list[str]
    trim_name_regexes: list[str]
    show_name_regexes: list[str]
    hide_name_regexes: list[str]
    account_displayed_op_only: bool
    select: list[str]


class TfprofViewsResult(ToolEnvelope):
    view: str
    step: int
    steps: list[int]
    has_trace: bool
    node_count: int
    options: TfprofViewOptions
    # the root's totals, "total_<metric>" (no total_definition_count in the op and code views)
    root: dict[str, int]
    displayed_rows: int
    notes: list[str]
    warnings: list[str]
