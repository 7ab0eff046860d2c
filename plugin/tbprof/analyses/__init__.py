"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import (  # noqa: F401
    input_pipeline,
    kernel_stats,
    memory_profile,
    op_profile,
    overview,
    pod_viewer,
    profile_summary,
    step_summary_fields,
    tf_data,
    tf_stats,
)
