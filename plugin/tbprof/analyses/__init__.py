"""Analyses: pure functions ``stores -> dict``, one module per page, registered as tools."""

from tbprof.analyses import profile_summary  # noqa: F401
from tbprof.analyses import kernel_stats, memory_profile, op_profile, tf_stats  # noqa: F401
