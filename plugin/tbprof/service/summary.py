"""``tbprof summary``: the stable, scriptable headline numbers of a run.

The analyses add their fields through ``SUMMARY_FIELDS`` (the step analyses add step
time, input %, verdict and top ops), so the command keeps one shape for scripts and CI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tbprof.analyses.legacy import tfprof_views
from tbprof.analyses.pages.profile_summary import summarize_store
from tbprof.analyses.pages.summary_fields import step_fields
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.store.any_store import AnyStore

# Each adds keys to the summary from the run's stores: fn(stores) -> dict.
SUMMARY_FIELDS: tuple[Callable[[list[AnyStore]], dict[str, Any]], ...] = (step_fields, tfprof_views.summary_fields)


def summary(profiles: Profiles, run: Run) -> dict[str, Any]:
    stores, unreadable = profiles.stores_tolerant(run, list(run.hosts))
    per_host = [summarize_store(s) for s in stores]
    device_types = sorted({t for h in per_host for t in h["device_types"]})
    out: dict[str, Any] = {
        "run": run.name,
        "hosts": sorted(run.hosts),
        "host_count": len(per_host),
        "device_type": device_types[0] if len(device_types) == 1 else ",".join(device_types),
        "device_count": sum(h["device_count"] for h in per_host),
        "event_count": sum(h["event_count"] for h in per_host),
        "span_ms": max((h["span_ps"] for h in per_host), default=0) / 1e9,
    }
    if unreadable:
        out["host_errors"] = unreadable
    for fn in SUMMARY_FIELDS:
        out.update(fn(stores))
    return out
