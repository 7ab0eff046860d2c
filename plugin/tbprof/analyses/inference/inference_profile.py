"""inference_profile: request latency of an inference server's profile (XProf's "Inference
Profile").

Inference request markers are host events carrying a ``request_id`` stat (TensorFlow Serving
and XLA's inference runtimes annotate each request's events with it, XProf groups by it). A
request spans from its first event's start to its last event's end; the tool reports the
request count, latency percentiles and one row per request. A profile without such events has
no inference_profile (the tool is not listed; the no-data page says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.results.whole_run import InferenceProfileResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.planes import HOST_PLANE
from tbprof.errors import NoData
from tbprof.store.tables import ProfileStore

REQUEST_STAT = "request_id"
NO_REQUESTS = ("No inference requests: inference_profile needs host events with a request_id stat "
               "(written by TensorFlow Serving and XLA inference runtimes for each request).")
PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def _request_rows(store: ProfileStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event with a request id: (request id, start ps, end ps) on the host plane."""
    plane = store.plane(HOST_PLANE)
    sid = store.stat_id(REQUEST_STAT)
    if plane is None or sid < 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    col = plane.stat_column(sid)
    rows = col.rows
    return col.as_int(), plane.start_ps[rows], plane.start_ps[rows] + plane.dur_ps[rows]


def has_requests(store: ProfileStore) -> bool:
    plane = store.plane(HOST_PLANE)
    sid = store.stat_id(REQUEST_STAT)
    return plane is not None and sid >= 0 and plane.stat_column(sid).rows.shape[0] > 0


COLUMNS = [
    Column("host", "Host", "str"),
    Column("request_id", "Request id", "int"),
    Column("start_ms", "Start", "float", "ms", "since the profile start"),
    Column("latency_ms", "Latency", "float", "ms", "first event start to last event end"),
    Column("event_count", "Events", "int"),
]


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> InferenceProfileResult:
    cols: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    for store in stores:
        ids, start, end = _request_rows(store)
        if ids.shape[0] == 0:
            continue
        uniq, inv = np.unique(ids, return_inverse=True)
        inv = inv.reshape(-1)
        first = np.full(uniq.shape[0], np.iinfo(np.int64).max)
        last = np.full(uniq.shape[0], np.iinfo(np.int64).min)
        np.minimum.at(first, inv, start)
        np.maximum.at(last, inv, end)
        cols["host"] += [store.host] * uniq.shape[0]
        cols["request_id"] += uniq.tolist()
        cols["start_ms"] += (first / 1e9).tolist()
        cols["latency_ms"] += ((last - first) / 1e9).tolist()
        cols["event_count"] += np.bincount(inv, minlength=uniq.shape[0]).tolist()
    if not cols["request_id"]:
        raise NoData(NO_REQUESTS)
    lat = np.asarray(cols["latency_ms"], dtype=np.float64)
    return {
        "schema_version": SCHEMA_VERSION, "tool": "inference_profile",
        "host": stores[0].host if len(stores) == 1 else None, "hosts": [s.host for s in stores],
        "request_count": int(lat.shape[0]),
        "latency_ms": {"mean": float(lat.mean()), "min": float(lat.min()), "max": float(lat.max()),
                       **{f"p{p:g}": float(np.percentile(lat, p)) for p in PERCENTILES}},
        "tables": {"requests": Table.from_columns(COLUMNS, cols, default_sort="latency_ms")},
    }


TOOLS = (
    Tool(
        name="inference_profile", title="Inference profile", compute=compute, multi_host=True,
        available=has_requests,
        description="Request latency of an inference server profile (needs request_id markers).",
        result=InferenceProfileResult, needs=frozenset({"xplane"}),
        requires="inference request markers: host events with a request_id stat (TensorFlow Serving and XLA inference"
                 " runtimes write them per request).",
        how_to=(
            "Profile the serving process while it answers requests (e.g. TensorFlow Serving's profiler endpoint).",
        ),
    ),
)
