"""Per-collective overlap: how much of each collective or copy compute on the same device hides.

HTA answers "how much communication overlaps computation" as one percentage per rank; an FSDP or
tensor-parallel user needs it collective by collective, with the exposed ones first and their step.
The rule (docs/formulas.md, "Per-collective overlap"):

* the **device events** of a host are the events on the streams of its ``/device:GPU:n`` planes:
  a Kineto event with an integer ``stream`` argument (kernels, memcpys, memsets), an XSpace event
  on a stream line (not one of XProf's derived lines) with a ``correlation_id``; times exactly as
  the file has them (no rounding);
* each is classified by HTA's name rules (``gpu/activity.kernel_kind``): a **collective** is a
  communication kernel (``nccl…Kernel``, RCCL's too), a **copy** a ``Memcpy…`` or ``dma…`` event,
  **compute** a computation kernel;
* a collective's or copy's **covered** time is the length of its span's intersection with the
  union of the compute kernels on *other* streams of the same device (work on its own stream
  runs before or after it, never beside it); **exposed** = duration - covered;
* its class: **hidden** when nothing is exposed, **exposed** when nothing is covered, else
  **partially hidden**;
* its **step** is the step (``analyses/steps``) its event belongs to; none outside every step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.gpu.activity import COMMUNICATION, COMPUTATION, kernel_kind, merge_intervals
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import CollectiveOverlapResult
from tbprof.analyses.steps.assignment import steps_of
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import KIND_INT64, KIND_UINT64, Plane, ProfileStore

TOOL = "collective_overlap"
HIDDEN, PARTIAL, EXPOSED = "hidden", "partially hidden", "exposed"
_PS_PER_US = 1e6
_DERIVED_LINE_MIN = 0xDEADBEEF  # XProf's derived lines ("XLA Ops", "Steps", ...) are not streams
_GPU_PLANE_PREFIX = "/device:GPU"


@dataclass(frozen=True)
class DeviceEvents:
    """The stream events of one device plane, exact times (ps from the store origin)."""

    plane: int
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64
    stream: np.ndarray  # int64
    name_id: np.ndarray  # int32
    row: np.ndarray  # int64, the event's row in its plane


def int_stat(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    out = np.full(plane.n_events, -1, dtype=np.int64)
    sid = store.stat_id(name)
    if sid < 0:
        return out
    col = plane.stat_column(sid)
    ok = (col.kind == KIND_INT64) | (col.kind == KIND_UINT64)
    out[col.rows[ok]] = col.value[ok]
    return out


def device_events(store: ProfileStore) -> list[DeviceEvents]:
    """The stream events of each GPU plane of the host (memoised per store)."""
    return store.memo(("collective_overlap", "device_events"), lambda: _device_events(store))


def _device_events(store: ProfileStore) -> list[DeviceEvents]:
    out = []
    for pi, plane in enumerate(store.planes):
        if not plane.name.startswith(_GPU_PLANE_PREFIX) or plane.n_events == 0:
            continue
        if store.format == "xspace":
            line_id = plane.line_ids[plane.line_idx]
            rows = np.nonzero((line_id < _DERIVED_LINE_MIN) & (int_stat(store, plane, "correlation_id") >= 0))[0]
            stream = line_id[rows].astype(np.int64)
        else:
            stream_all = int_stat(store, plane, "stream")
            rows = np.nonzero(stream_all >= 0)[0]
            stream = stream_all[rows]
        if rows.shape[0] == 0:
            continue
        start = plane.start_ps[rows].astype(np.int64)
        out.append(DeviceEvents(pi, start, start + plane.dur_ps[rows].astype(np.int64), stream,
                                plane.name_id[rows].astype(np.int32), rows.astype(np.int64)))
    return out


def covered_ps(start_ps: np.ndarray, end_ps: np.ndarray, cover_start: np.ndarray, cover_end: np.ndarray) -> np.ndarray:
    """For each span [start, end): the length of its intersection with the union of the cover spans.

    Through the cumulative covered length F(t) of the merged cover (covered = F(end) - F(start)):
    two binary searches per span, no loop."""
    ms, me = merge_intervals(cover_start, cover_end)
    if ms.shape[0] == 0:
        return np.zeros(start_ps.shape[0], np.int64)
    cum = np.concatenate([[0], np.cumsum(me - ms)])

    def measure_before(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(ms, t, side="right")  # merged intervals starting at or before t
        last_end = me[np.clip(k - 1, 0, None)]
        beyond = np.where(k > 0, np.maximum(last_end - t, 0), 0)
        return cum[k] - beyond

    return np.maximum(measure_before(end_ps) - measure_before(start_ps), 0)


def _kinds(store: ProfileStore, name_id: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(HTA kind per event, whether it is a copy) from its name, once per distinct name."""
    uniq, inv = np.unique(name_id, return_inverse=True)
    names = store.strings.lookup(uniq)
    kinds = np.array([kernel_kind(n) for n in names], dtype=np.int8)
    copies = np.array([n.startswith(("Memcpy", "dma")) for n in names], dtype=bool)
    inv = inv.reshape(-1)
    return kinds[inv], copies[inv]


COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("stream", "Stream", "int"), Column("name", "Name", "str"),
    Column("kind", "Kind", "str", "", "collective (communication kernel) or copy (Memcpy/DMA)"),
    Column("step", "Step", "int", "", "the step the event belongs to; -1: outside every step"),
    Column("start_us", "Start", "float", "us", "from the profile's start"),
    Column("duration_us", "Duration", "float", "us"),
    Column("covered_us", "Covered", "float", "us", "overlapped by compute kernels on other streams of the device"),
    Column("exposed_us", "Exposed", "float", "us", "duration - covered"),
    Column("covered_percent", "Covered %", "float", "%"),
    Column("overlap", "Overlap", "str", "", "hidden, partially hidden or exposed"),
]

SUMMARY_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("kind", "Kind", "str"), Column("count", "Count", "int"),
    Column("duration_us", "Duration", "float", "us", "sum over the events"),
    Column("covered_us", "Covered", "float", "us"), Column("exposed_us", "Exposed", "float", "us"),
    Column("covered_percent", "Covered %", "float", "%", "covered / duration"),
    Column("hidden", "Hidden", "int"), Column("partially_hidden", "Partially hidden", "int"),
    Column("exposed", "Exposed", "int"),
]


def _classify(dur: np.ndarray, covered: np.ndarray) -> np.ndarray:
    return np.where(covered >= dur, HIDDEN, np.where(covered <= 0, EXPOSED, PARTIAL)).astype(object)


def _host_rows(store: ProfileStore, rank: int) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    steps = steps_of(store)
    for dev in device_events(store):
        kind, is_copy = _kinds(store, dev.name_id)
        target = (kind == COMMUNICATION) | is_copy
        if not target.any():
            continue
        compute = kind == COMPUTATION
        t_idx = np.nonzero(target)[0]
        covered = np.zeros(t_idx.shape[0], np.int64)
        for stream in np.unique(dev.stream[t_idx]).tolist():
            on = dev.stream[t_idx] == stream
            other = compute & (dev.stream != stream)
            covered[on] = covered_ps(dev.start_ps[t_idx[on]], dev.end_ps[t_idx[on]],
                                     dev.start_ps[other], dev.end_ps[other])
        dur = dev.end_ps[t_idx] - dev.start_ps[t_idx]
        covered = np.minimum(covered, dur)
        event_step = steps.event_step(dev.plane)[dev.row[t_idx]] if steps.n_steps else np.full(t_idx.shape[0], -1)
        step_num = np.where(event_step >= 0, steps.step_nums[np.clip(event_step, 0, None)] if steps.n_steps else -1, -1)
        n = t_idx.shape[0]
        cols["rank"] += [rank] * n
        cols["host"] += [store.host] * n
        cols["device"] += [store.planes[dev.plane].name] * n
        cols["stream"] += dev.stream[t_idx].tolist()
        cols["name"] += store.strings.lookup(dev.name_id[t_idx])
        cols["kind"] += np.where(is_copy[t_idx], "copy", "collective").tolist()
        cols["step"] += step_num.astype(np.int64).tolist()
        cols["start_us"] += (dev.start_ps[t_idx] / _PS_PER_US).tolist()
        cols["duration_us"] += (dur / _PS_PER_US).tolist()
        cols["covered_us"] += (covered / _PS_PER_US).tolist()
        cols["exposed_us"] += ((dur - covered) / _PS_PER_US).tolist()
        cols["covered_percent"] += np.where(dur > 0, 100.0 * covered / np.maximum(dur, 1), np.nan).tolist()
        cols["overlap"] += _classify(dur, covered).tolist()
    return cols


def _summary(events: Table) -> Table:
    d = events.data
    keys = sorted({(int(r), str(h), str(dv), str(k)) for r, h, dv, k in
                   zip(d["rank"].tolist(), d["host"].tolist(), d["device"].tolist(), d["kind"].tolist(), strict=True)})
    rows: dict[str, list[Any]] = {c.name: [] for c in SUMMARY_COLUMNS}
    for rank, host, device, kind in keys:
        m = (d["rank"] == rank) & (d["host"] == host) & (d["device"] == device) & (d["kind"] == kind)
        dur, cov = float(d["duration_us"][m].sum()), float(d["covered_us"][m].sum())
        rows["rank"].append(rank)
        rows["host"].append(host)
        rows["device"].append(device)
        rows["kind"].append(kind)
        rows["count"].append(int(m.sum()))
        rows["duration_us"].append(dur)
        rows["covered_us"].append(cov)
        rows["exposed_us"].append(float(d["exposed_us"][m].sum()))
        rows["covered_percent"].append(100.0 * cov / dur if dur > 0 else None)
        for col, cls in (("hidden", HIDDEN), ("partially_hidden", PARTIAL), ("exposed", EXPOSED)):
            rows[col].append(int((d["overlap"][m] == cls).sum()))
    return Table.from_columns(SUMMARY_COLUMNS, rows, default_sort="exposed_us")


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> CollectiveOverlapResult:
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    cols: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    for rank, store in ranked:
        for name, values in _host_rows(store, rank).items():
            cols[name] += values
    # The most exposed first (stable: ties keep rank and start order), also without a query's sort.
    order = np.argsort(-np.asarray(cols["exposed_us"], np.float64), kind="stable").tolist()
    events = Table.from_columns(COLUMNS, {k: [v[i] for i in order] for k, v in cols.items()}, default_sort="exposed_us")
    summary = _summary(events)
    is_collective = events.data["kind"] == "collective"
    total = float(events.data["duration_us"][is_collective].sum())
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked],
        "collective_count": int(is_collective.sum()),
        "collective_exposed_us": float(events.data["exposed_us"][is_collective].sum()) if total > 0 else None,
        "collective_covered_percent": (100.0 * float(events.data["covered_us"][is_collective].sum()) / total
                                       if total > 0 else None),
        "tables": {"events": events, "summary": summary},
    }


def has_device_streams(store: object) -> bool:
    planes = getattr(store, "planes", None)
    if planes is None or getattr(store, "format", "") not in ("chrome_trace", "xspace"):
        return False
    return any(p.name.startswith(_GPU_PLANE_PREFIX) and p.n_events for p in planes)


TOOLS = (
    Tool(
        name=TOOL, title="Collective overlap", compute=compute, available=has_device_streams,
        multi_host=True, formats=("chrome_trace", "xspace"), kinds=("pytorch", "xspace"),
        description="Each NCCL/RCCL collective kernel and copy: the time compute kernels on other streams of the "
                    "same GPU hide, hidden / partially hidden / exposed, the most exposed first with their step.",
    ),
)
