"""Results of the op tools: framework op stats, kernel stats, op profile, and torch-tb-profiler's
operator (by shape) and module views."""

from typing import Literal, NotRequired, TypedDict

from tbprof.analyses.results.common import PerRankEnvelope, ToolEnvelope


class PieSlice(TypedDict):
    name: str
    self_time_us: float


class OpSide(TypedDict):
    """One side (host or device) of the op stats: totals and the two pies."""

    op_count: int
    total_time_us: float
    op_time_us: float
    idle_time_us: float
    pie_by_operation: list[PieSlice]
    pie_by_type: list[PieSlice]


class FrameworkOpStatsResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    include_idle: bool
    row_count: int
    sides: dict[str, OpSide]  # "host" and, when the profile has device ops, "device"


class KernelSlice(TypedDict):
    name: str
    total_duration_us: float


class KernelStatsResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    has_gpu_kernels: bool
    kernel_event_count: int
    row_count: int
    total_duration_us: float
    tensorcore_duration_us: float
    tensorcore_eligible_duration_us: float
    # Shares of kernel time by XProf's rules; None where the rules recognise nothing in the run
    # (tensorcore_note says why): a 0 % there would be false.
    tensorcore_fraction: float | None
    tensorcore_eligible_fraction: float | None
    tensorcore_note: str
    pie_by_kernel: list[KernelSlice]
    message: NotRequired[str]  # why there are no kernels


class OpPeaks(TypedDict):
    flop_rate_gflops_per_sec: float
    hbm_bw_gbytes_per_sec: float


class OpNode(TypedDict):
    """A node of an op profile tree (root, category, scope, program, op, idle), children ordered."""

    name: str
    kind: str
    self_time_us: float
    total_time_us: float
    occurrences: int
    flops: float
    bytes_accessed: float
    children: list["OpNode"]
    flop_rate_gflops_per_sec: float
    memory_bw_gbytes_per_sec: float
    # Null where a peak is unknown or the node has no time (XProf shows "-").
    flops_utilization: float | None
    hbm_bw_utilization: float | None
    time_wasted_fraction: float | None
    num_children: int
    fraction: float
    category: NotRequired[str]  # leaves (ops and idle)
    framework_op: NotRequired[str]  # device ops
    program: NotRequired[str]
    opcode: NotRequired[str]  # device ops with their HLO
    source: NotRequired[str]


class OpProfileResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    order_by: str
    side: Literal["host", "device"]
    peaks: OpPeaks
    op_count: int
    shown_op_count: int
    total_time_us: float
    idle_time_us: float
    by_category: OpNode
    by_name_scope: OpNode
    by_program: OpNode | None


class OperatorsByShapeResult(PerRankEnvelope):
    group_by: str
    group_count: int


class ModuleViewResult(PerRankEnvelope):
    module_count: int
