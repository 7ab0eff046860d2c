"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import (  # noqa: F401
    input_pipeline,
    kernel_stats,
    memory_profile,
    op_profile,
    overview,
    pod_viewer,
    profile_summary,
    pytorch_trace,
    step_summary_fields,
    tf1_timeline,
    tf_data,
    tf_stats,
    tfprof_advice,
    tfprof_views,
    trace_viewer,
)
