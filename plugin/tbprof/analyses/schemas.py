"""The registry of tool result types: tool id -> the TypedDict its ``compute`` returns.

The types live by subject in ``analyses/results/``; each tool module types its ``compute`` with
its own, so mypy checks every producer (``Tool[R]``). This list is what the other checks read:
``scripts/gen_ts_schemas.py`` (via ``http/schemas.py``) writes every type reachable from it as
TypeScript for the pages, and ``tests/analyses/test_result_types.py`` checks every tool's real
answer on every sample profile against its entry, so a renamed key fails on both sides.
"""

from tbprof.analyses.results.common import (
    Diagnostics,
    HostError,
    HostSteps,
    InputBound,
    InputThresholds,
    MetricJson,
    PerRankEnvelope,
    Stat,
    StepFacts,
    StepsInfo,
    TableColumnJson,
    TableJson,
    ToolEnvelope,
)
from tbprof.analyses.results.gpu import (
    CollectiveOverlapResult,
    CollectivesResult,
    CriticalPathResult,
    DeviceTimeAttributionResult,
    GpuBreakdownResult,
    GpuCountersResult,
    GpuUtilizationResult,
    HostBoundnessResult,
    KernelSequencesResult,
    StragglersResult,
)
from tbprof.analyses.results.hlo import (
    GraphViewerResult,
    HloStatsResult,
    MemoryViewerResult,
    PeakAllocationsResult,
    RooflineModelResult,
)
from tbprof.analyses.results.memory import MemoryProfileResult
from tbprof.analyses.results.ops import (
    FrameworkOpStatsResult,
    KernelStatsResult,
    ModuleViewResult,
    OperatorsByShapeResult,
    OpProfileResult,
)
from tbprof.analyses.results.tf1_tfprof import (
    Tf1MemoryResult,
    Tf1OpStatsResult,
    Tf1StepsResult,
    TfprofAdviceResult,
    TfprofViewsResult,
)
from tbprof.analyses.results.timeline import TraceViewerResult
from tbprof.analyses.results.whole_run import (
    InferenceProfileResult,
    InputPipelineResult,
    KpiMetricsResult,
    OverviewResult,
    PodViewerResult,
    ProfileSummaryResult,
    SmartSuggestionResult,
    TfDataResult,
)

__all__ = [
    "NO_RESULT_TOOLS",
    "TOOL_RESULTS",
    "Diagnostics",
    "HostError",
    "HostSteps",
    "InputBound",
    "InputThresholds",
    "MetricJson",
    "PerRankEnvelope",
    "Stat",
    "StepFacts",
    "StepsInfo",
    "TableColumnJson",
    "TableJson",
    "ToolEnvelope",
]

# Every tool of service/tools.py, in its order (tests/analyses/test_result_types.py checks both lists
# name every tool exactly once).
TOOL_RESULTS: dict[str, type] = {
    "overview_page": OverviewResult,
    "input_pipeline_analyzer": InputPipelineResult,
    "framework_op_stats": FrameworkOpStatsResult,
    "kernel_stats": KernelStatsResult,
    "memory_profile": MemoryProfileResult,
    "pod_viewer": PodViewerResult,
    "tf_data_bottleneck_analysis": TfDataResult,
    "op_profile": OpProfileResult,
    "trace_viewer": TraceViewerResult,
    "hlo_stats": HloStatsResult,
    "roofline_model": RooflineModelResult,
    "memory_viewer": MemoryViewerResult,
    "peak_allocations": PeakAllocationsResult,
    "graph_viewer": GraphViewerResult,
    "smart_suggestion": SmartSuggestionResult,
    "kpi_metrics": KpiMetricsResult,
    "inference_profile": InferenceProfileResult,
    "gpu_breakdown": GpuBreakdownResult,
    "gpu_counters": GpuCountersResult,
    "kernel_sequences": KernelSequencesResult,
    "gpu_utilization": GpuUtilizationResult,
    "collectives": CollectivesResult,
    "collective_overlap": CollectiveOverlapResult,
    "device_time_attribution": DeviceTimeAttributionResult,
    "host_boundness": HostBoundnessResult,
    "stragglers": StragglersResult,
    "critical_path": CriticalPathResult,
    "operators_by_shape": OperatorsByShapeResult,
    "module_view": ModuleViewResult,
    "tf1_steps": Tf1StepsResult,
    "tf1_op_stats": Tf1OpStatsResult,
    "tf1_memory": Tf1MemoryResult,
    "tfprof_views": TfprofViewsResult,
    "tfprof_advice": TfprofAdviceResult,
    "profile_summary": ProfileSummaryResult,
}

# XProf's TPU counter tools: tbprof has no decoder for their data, so they always answer "no data"
# (analyses/tpu/tpu_only.py) and have no result type.
NO_RESULT_TOOLS: tuple[str, ...] = ("megascale_stats", "perf_counters", "utilization_viewer", "kernel_utilization")
