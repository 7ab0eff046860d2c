"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import (  # noqa: F401
    input_pipeline,
    overview,
    pod_viewer,
    profile_summary,
    pytorch_trace,
    step_summary_fields,
    tf1_timeline,
    tf_data,
    tfprof_advice,
    tfprof_views,
    trace_viewer,
)
from tbprof.analyses import kernel_stats, memory_profile, op_profile, tf_stats  # noqa: F401
