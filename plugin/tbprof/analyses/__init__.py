"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import (
    profile_summary,  # noqa: F401
    pytorch_trace,  # noqa: F401
    tf1_timeline,  # noqa: F401
    tfprof_advice,  # noqa: F401
    tfprof_views,  # noqa: F401
    trace_viewer,  # noqa: F401
)
