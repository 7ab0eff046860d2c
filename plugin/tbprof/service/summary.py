"""``tbprof summary``: the stable, scriptable headline numbers of a run.

The analyses add their fields through ``SUMMARY_FIELDS`` (the step analyses add step
time, input %, verdict and top ops), so the command keeps one shape for scripts and CI.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tbprof.analyses.overview.profile_summary import summarize_store
from tbprof.analyses.overview.summary_fields import step_fields
from tbprof.domain.planes import on_device_side
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.store.any_store import AnyStore
from tbprof.store.tfprof import TfprofProfile

# Of the stores (tfprof's too), or of per-host partials for the fields in ON_PARTIALS (typed on
# store/view.py's StoreView, what a partial holds).
Fields = Callable[[list[Any]], dict[str, Any]]


def _has_tfprof(stores: list[AnyStore]) -> bool:
    return any(isinstance(s, TfprofProfile) for s in stores)


def _has_devices(stores: list[Any]) -> bool:
    # Stores, or the per-host partials (analyses/partials.py) with their planes' names.
    return any(not isinstance(s, TfprofProfile) and any(on_device_side(p) for p in s.planes)
               for s in stores)


# Each adds keys to the summary from the run's stores: (fields, or "module:function" imported
# only when the run has that data, so a CPU profile's summary loads no tfprof or GPU analyses).
SUMMARY_FIELDS: tuple[tuple[Fields | str, Callable[[list[Any]], bool]], ...] = (
    (step_fields, lambda stores: True),
    ("tbprof.analyses.tfprof.tfprof_views:summary_fields", _has_tfprof),
    ("tbprof.analyses.gpu.breakdown:summary_fields", _has_devices),
)


def _fields(fn: Fields | str) -> Fields:
    if callable(fn):
        return fn
    module, name = fn.split(":")
    loaded: Fields = getattr(importlib.import_module(module), name)
    return loaded


# Fields computed from per-host partials as well as from stores (analyses/partials.py): a pod
# whose summary needs no other field is summarised without loading its stores.
ON_PARTIALS: tuple[Fields | str, ...] = (step_fields, "tbprof.analyses.gpu.breakdown:summary_fields")


def summary(profiles: Profiles, run: Run) -> dict[str, Any]:
    hosts = list(run.hosts)
    parts = profiles.host_partials(run, hosts) if len(hosts) > 1 else None
    # Chosen up front: partials when every field that applies reads only what they hold.
    if parts is not None and all(fn in ON_PARTIALS for fn, applies in SUMMARY_FIELDS if applies(parts[0])):
        started = time.perf_counter()
        out = _summary(run, parts[0], [p.summary for p in parts[0]], parts[1])
        profiles.phase_seconds["combine_s"] = time.perf_counter() - started
        return out
    stores, unreadable = profiles.stores_tolerant(run, hosts)
    return _summary(run, list(stores), [summarize_store(s) for s in stores], unreadable)


def _summary(run: Run, stores: list[Any], per_host: Sequence[Mapping[str, Any]],
             unreadable: list[dict[str, str]]) -> dict[str, Any]:
    """The summary from the hosts' stores, or their partials (``stores``), and their headlines."""
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
