"""Results of HTA's and torch-tb-profiler's GPU analyses (per-rank numbers are in their tables)."""

from tbprof.analyses.results.common import PerRankEnvelope


class GpuBreakdownResult(PerRankEnvelope):
    device_idle_percent: float | None
    communication_percent: float | None


class GpuCountersResult(PerRankEnvelope):
    max_queue_length: int | None
    peak_memory_bw_gbps: float | None


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


class StragglersResult(PerRankEnvelope):
    stragglers: list[int]  # the straggling ranks
    waited_for: int | None  # the rank the others wait for in collectives
    metric_kernel: str | None
    mean_iteration_us: float | None
    message: str | None  # why no straggler was found
