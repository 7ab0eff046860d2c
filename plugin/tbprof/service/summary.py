"""``tbprof summary``: the stable, scriptable headline numbers of a run.

The analyses add their fields through ``SUMMARY_FIELDS`` (the step analyses add step
time, input %, verdict and top ops), so the command keeps one shape for scripts and CI.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from tbprof.analyses.pages.profile_summary import summarize_store
from tbprof.analyses.pages.summary_fields import step_fields
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.store.any_store import AnyStore
from tbprof.store.tables import ProfileStore
from tbprof.store.tfprof import TfprofProfile

Fields = Callable[[list[AnyStore]], dict[str, Any]]


def _has_tfprof(stores: list[AnyStore]) -> bool:
    return any(isinstance(s, TfprofProfile) for s in stores)


def _has_devices(stores: list[AnyStore]) -> bool:
    return any(isinstance(s, ProfileStore) and any(p.name.startswith("/device:") for p in s.planes) for s in stores)


# Each adds keys to the summary from the run's stores: (fields, or "module:function" imported
# only when the run has that data, so a CPU profile's summary loads no tfprof or GPU analyses).
SUMMARY_FIELDS: tuple[tuple[Fields | str, Callable[[list[AnyStore]], bool]], ...] = (
    (step_fields, lambda stores: True),
    ("tbprof.analyses.legacy.tfprof_views:summary_fields", _has_tfprof),
    ("tbprof.analyses.gpu.breakdown:summary_fields", _has_devices),
)


def _fields(fn: Fields | str) -> Fields:
    if callable(fn):
        return fn
    module, name = fn.split(":")
    loaded: Fields = getattr(importlib.import_module(module), name)
    return loaded


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
    for fn, applies in SUMMARY_FIELDS:
        if applies(stores):
            out.update(_fields(fn)(stores))
    return out
