"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import (
    profile_summary,  # noqa: F401
    trace_viewer,  # noqa: F401
)
