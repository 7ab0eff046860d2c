"""trace_viewer: the tracks of a profile and their event counts (the events stream through
the ``trace`` route, window by window; see tbprof.timeline). A PyTorch run's ranks open in one
timeline (host=__all__, a rank per process group; store/combine.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tbprof.analyses.results.timeline import TraceViewerResult
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.combine import combined
from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> TraceViewerResult:
    # Several hosts (a PyTorch run's ranks): one timeline, rank by rank (store/combine.py).
    store = combined(stores)
    index = track_index(store)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "trace_viewer",
        "host": store.host,
        "hosts": [s.host for s in stores],
        "format": store.format,
        "span_ps": store.span_ps,
        "origin_ps": store.origin_ps,
        "event_count": store.n_events,
        "warnings": list(store.warnings),
        **index.to_json(),
    }


TOOLS = (
    Tool(
        name="trace_viewer", title="Trace viewer", compute=compute,
        available=lambda store: store.n_events > 0,
        aliases=("trace_viewer@",),
        description="Timeline of every event, streamed window by window with level of detail.",
        result=TraceViewerResult, needs=frozenset({"events"}),
        multi_host_needs=frozenset({"kineto"}),
        requires="any timed events.",
        how_to=("Any profiler output with events opens here.",),
    ),
)
