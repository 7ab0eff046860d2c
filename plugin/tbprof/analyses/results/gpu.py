"""Results of HTA's and torch-tb-profiler's GPU analyses (per-rank numbers are in their tables)."""

from typing import Literal, TypedDict

from tbprof.analyses.results.common import PerRankEnvelope, ToolEnvelope


class GpuBreakdownResult(PerRankEnvelope):
    device_idle_percent: float | None
    communication_percent: float | None


class GpuCountersResult(PerRankEnvelope):
    max_queue_length: int | None
    peak_memory_bw_gibps: float | None  # GiB/s (the dashboard's bandwidth unit)


class KernelSequencesResult(PerRankEnvelope):
    operator_name: str
    min_pattern_len: int
    pattern_count: int
    repeated_pattern_count: int


class GpuUtilizationResult(PerRankEnvelope):
    gpu_utilization_percent: float | None
    est_sm_efficiency_percent: float | None
    est_achieved_occupancy_percent: float | None


class CollectivesResult(PerRankEnvelope):
    matched_across_ranks: bool
    synchronizing_us: float | None


class CollectiveOverlapResult(PerRankEnvelope):
    collective_count: int
    collective_exposed_us: float | None  # summed over the collectives of every rank
    collective_covered_percent: float | None


class DeviceTimeAttributionResult(ToolEnvelope):
    hosts: list[str]
    total_device_time_us: dict[str, float]  # host -> union of its devices' kernel lines (hosts with devices)
    device_count: int
    by_line_name_us: dict[str, dict[str, float]]  # host -> line name -> busy time, XProf's keys


class HostBoundnessResult(PerRankEnvelope):
    status: Literal["HOST_BOUND", "NOT_HOST_BOUND", "INSUFFICIENT_DATA"]
    reasons: list[str]
    idle_time_ratio_percent: float | None  # mean over the devices
    host_wait_share_percent: float | None
    equivalent_idle_devices: float | None


class StragglersResult(PerRankEnvelope):
    stragglers: list[int]  # the straggling ranks
    waited_for: int | None  # the rank the others wait for in collectives
    metric_kernel: str | None
    mean_iteration_us: float | None
    message: str | None  # why no straggler was found


class CriticalPathOverlay(TypedDict):
    """The path as the trace viewer draws it: events [plane, row, line, start_ps, dur_ps, depth];
    flows [from event, to event, from_ps, to_ps] (indices into events)."""

    events: list[list[int]]
    flows: list[list[int]]


class CriticalPathResult(ToolEnvelope):
    """HTA's critical path (``critical_path``) of one rank and annotation instance."""

    host: str
    rank: int
    ranks: list[int]
    hosts: list[str]
    annotation: str
    instance: int
    times: Literal["ns", "us"]
    hta_compat: bool  # one device event per launch, as HTA links them
    instances: list[str]
    step_name: str
    window_start_ps: int
    window_end_ps: int
    nodes: int
    edges: int
    path_edges: int
    path_events: int
    total_us: float
    breakdown_percent: dict[str, float]
    overlay: CriticalPathOverlay
