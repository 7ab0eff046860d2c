"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import profile_summary  # noqa: F401
from tbprof.analyses import input_pipeline, overview, pod_viewer, step_summary_fields, tf_data  # noqa: F401
