"""profile_summary: what a profile file contains (planes, lines, counts, span, devices) and the
run's headline numbers (``headline``: what ``tbprof summary`` prints)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.overview.headline import headline
from tbprof.analyses.results.whole_run import HostSummary, PlaneLine, PlaneSummary, ProfileSummaryResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.planes import (
    DEVICE_SIDE,
    device_counts,
    device_display_name,
    device_type,
    kind_of_name,
    on_device_side,
)
from tbprof.store.tables import Plane, ProfileStore
from tbprof.store.tfprof import TfprofProfile


def _plane_summary(store: ProfileStore, plane: Plane) -> PlaneSummary:
    first_ps, last_ps = plane.time_range_ps() or (None, None)
    counts = np.diff(plane.line_offsets)
    lines: list[PlaneLine] = [{"id": int(plane.line_ids[i]), "name": plane.line_names[i],
              "display_name": plane.line_display_names[i] or plane.line_names[i],
              "event_count": int(counts[i])} for i in range(plane.n_lines)]
    stats = {k: v for k, v in plane.plane_stats.items() if isinstance(v, (int, float, str))}
    return {
        "name": plane.name, "id": plane.id, "device_type": device_type(plane),
        "device_name": device_display_name(plane) if on_device_side(plane) else "",
        "line_count": plane.n_lines, "event_count": plane.n_events, "stat_count": len(plane.stats),
        "first_event_ps": first_ps, "last_event_end_ps": last_ps, "lines": lines, "stats": stats,
    }


def summarize_store(store: ProfileStore | TfprofProfile) -> HostSummary:
    """Headline numbers of one host (a tfprof profile has no planes: no devices, no events)."""
    planes = [_plane_summary(store, p) for p in store.planes] if isinstance(store, ProfileStore) else []
    types, count = device_counts(store) if isinstance(store, ProfileStore) else (["CPU"], 0)
    return {
        "host": store.host, "source_path": store.source_path, "format": store.format,
        "hostnames": store.hostnames, "errors": store.errors, "warnings": store.warnings,
        "span_ps": store.span_ps, "event_count": store.n_events,
        "device_types": types, "device_count": count,
        "device_names": sorted({p["device_name"] for p in planes
                                if kind_of_name(p["name"]) in DEVICE_SIDE and p["device_name"]}),
        "planes": planes,
    }


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> ProfileSummaryResult:
    hosts = [summarize_store(s) for s in stores]
    rows: dict[str, list[Any]] = {k: [] for k in ("host", "plane", "line", "event_count", "device_type")}
    for h in hosts:
        for p in h["planes"]:
            # A plane without lines still gets its row.
            for line_name, count in [(x["display_name"], x["event_count"]) for x in p["lines"]] or [("", 0)]:
                rows["host"].append(h["host"])
                rows["plane"].append(p["name"])
                rows["line"].append(line_name)
                rows["event_count"].append(count)
                rows["device_type"].append(p["device_type"])
    lines = Table.from_columns([
        Column("host", "Host", "str"), Column("plane", "Plane", "str"), Column("line", "Line", "str"),
        Column("event_count", "Events", "int"), Column("device_type", "Device type", "str"),
    ], rows, default_sort=None)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "profile_summary",
        "host_count": len(hosts),
        "event_count": sum(h["event_count"] for h in hosts),
        "headline": headline(stores),
        "hosts": hosts,
        "tables": {"lines": lines},
    }


TOOLS = (
    Tool(
        name="profile_summary", title="Profile summary", compute=compute, multi_host=True,
        description="Planes, lines, event counts, time span and devices of the profile.",
        result=ProfileSummaryResult, needs=frozenset({"events"}),
        requires="a readable profile file.",
        how_to=("Any XSpace (*.xplane.pb) or Chrome trace file opens here.",),
    ),
)
