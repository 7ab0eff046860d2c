"""Per-collective overlap: how much of each collective or copy compute on the same device hides.

HTA answers "how much communication overlaps computation" as one percentage per rank; an FSDP or
tensor-parallel user needs it collective by collective, with the exposed ones first and their step.
XProf 2.24.2's ``analyze_async_overlap`` answers it for TPU's XLA async ops only. The rule
(docs/formulas.md, "Per-collective overlap"):

GPU (XSpace and PyTorch):

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

TPU (XSpace), as ``analyze_async_overlap``:

* an **async op** is a window: an event of the plane's ``Async XLA Ops`` line, or where the plane
  has none, a ``<op>-start`` and the first ``<op>-done`` of the same key after it on the op lines
  (``XLA Ops``, ``Sparse Core Ops``); its kind is the op family (``all-gather``, ``copy``, ...);
* its covered time is its intersection with the union of the op lines' other events (every one but
  the async start and done ops);

Both:

* its class by the covered fraction, XProf's thresholds: **hidden** at or above 0.9, **exposed**
  at or below 0.1, else **partially hidden**;
* its **step** is the step (``analyses/steps``) of its (start) event; -1 outside every step.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import COMMUNICATION, COMPUTATION, kernel_kind, merge_intervals
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.results.gpu import CollectiveOverlapResult
from tbprof.analyses.steps.assignment import steps_of
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.derived import Derived
from tbprof.store.tables import KIND_INT64, KIND_UINT64, Plane, ProfileStore

TOOL = "collective_overlap"
HIDDEN, PARTIAL, EXPOSED = "hidden", "partially hidden", "exposed"
# XProf's analyze_async_overlap thresholds on the covered fraction: hidden at or above 0.9,
# exposed at or below 0.1, partially hidden between.
HIDDEN_AT, EXPOSED_AT = 0.9, 0.1
_TPU_PLANE_PREFIX = "/device:TPU"
_OPS_LINES = ("XLA Ops", "Sparse Core Ops")
_ASYNC_OPS_LINE = "Async XLA Ops"
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


DEVICE_EVENTS: Derived[list[DeviceEvents]] = Derived(
    ("collective_overlap", "device_events"), lambda s: _device_events(s))


def device_events(store: ProfileStore) -> list[DeviceEvents]:
    """The stream events of each GPU plane of the host (memoised per store)."""
    return store.derive(DEVICE_EVENTS)


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
    Column("stream", "Stream", "int", "", "the GPU stream; -1 for a TPU async op"), Column("name", "Name", "str"),
    Column("kind", "Kind", "str", "", "GPU: collective (communication kernel) or copy (Memcpy/DMA); "
                                      "TPU: the XLA async op's kind (all-gather, copy, send, ...)"),
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
    ratio = covered / np.maximum(dur, 1)
    return np.where(ratio >= HIDDEN_AT, HIDDEN, np.where(ratio <= EXPOSED_AT, EXPOSED, PARTIAL)).astype(object)


def _append(cols: dict[str, list[Any]], store: ProfileStore, rank: int, plane: int, rows: np.ndarray,
            stream: list[int], names: list[str], kinds: list[str], start: np.ndarray, end: np.ndarray,
            covered: np.ndarray) -> None:
    """Adds the rows of one device's async work (``rows``: each one's event row in ``plane``, for its step)."""
    steps = steps_of(store)
    n = int(start.shape[0])
    if steps.n_steps:
        event_step = steps.event_step(plane)[rows]
        step_num = np.where(event_step >= 0, steps.step_nums[np.clip(event_step, 0, None)], -1)
    else:
        step_num = np.full(n, -1)
    dur = end - start
    covered = np.minimum(covered, dur)
    cols["rank"] += [rank] * n
    cols["host"] += [store.host] * n
    cols["device"] += [store.planes[plane].name] * n
    cols["stream"] += stream
    cols["name"] += names
    cols["kind"] += kinds
    cols["step"] += step_num.astype(np.int64).tolist()
    cols["start_us"] += (start / _PS_PER_US).tolist()
    cols["duration_us"] += (dur / _PS_PER_US).tolist()
    cols["covered_us"] += (covered / _PS_PER_US).tolist()
    cols["exposed_us"] += ((dur - covered) / _PS_PER_US).tolist()
    cols["covered_percent"] += np.where(dur > 0, 100.0 * covered / np.maximum(dur, 1), np.nan).tolist()
    cols["overlap"] += _classify(dur, covered).tolist()


def _gpu_rows(store: ProfileStore, rank: int, cols: dict[str, list[Any]]) -> None:
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
        _append(cols, store, rank, dev.plane, dev.row[t_idx], dev.stream[t_idx].tolist(),
                store.strings.lookup(dev.name_id[t_idx]), np.where(is_copy[t_idx], "copy", "collective").tolist(),
                dev.start_ps[t_idx], dev.end_ps[t_idx], covered)


def instruction_name(name: str) -> str:
    """The HLO instruction of an event name: a bare name, or the full HLO text ``%x = ...``."""
    name = name.strip()
    if name.startswith("%"):
        name = name[1:].split(" = ", 1)[0].strip()
    return name


def async_role(name: str) -> tuple[str, str, str] | None:
    """(pairing key, "start" or "done", base name) of an XLA async op's start or done instruction
    (``all-gather-start.3``, ``copy-done``, ``send.1``: XProf's names), else None."""
    head, dot, tail = name.rpartition(".")
    core, number = (head, "." + tail) if dot and head and tail.isascii() and tail.isdigit() else (name, "")
    for role in ("start", "done"):
        suffix = "-" + role
        if core.endswith(suffix) and len(core) > len(suffix):
            base = core[:-len(suffix)]
            return base + number, role, base
    if core in ("send", "recv"):
        return core + number, "start", core
    return None


def op_family(base: str) -> str:
    """The op kind of an async op's base name: its last dot-separated token that is not a number."""
    tokens = [t for t in base.split(".") if t and not t.isdigit()]
    return tokens[-1] if tokens else base


def _tpu_rows(store: ProfileStore, rank: int, cols: dict[str, list[Any]]) -> None:
    """XLA async ops of each TPU plane: the windows of its ``Async XLA Ops`` line, else its op
    lines' start and done ops paired in time order (first start with the first done of its key);
    covered by the plane's other op-line events (the start and done ops excluded)."""
    for pi, plane in enumerate(store.planes):
        if not plane.name.startswith(_TPU_PLANE_PREFIX) or plane.n_events == 0:
            continue
        line_of = np.asarray([plane.line_names[i] for i in range(plane.n_lines)], dtype=object)
        ev_line = line_of[plane.line_idx] if plane.n_lines else np.zeros(0, object)
        on_ops = np.isin(ev_line, list(_OPS_LINES))
        on_async = ev_line == _ASYNC_OPS_LINE
        if not on_ops.any() and not on_async.any():
            continue
        start = plane.start_ps.astype(np.int64)
        end = start + plane.dur_ps.astype(np.int64)
        uniq, inv = np.unique(plane.name_id, return_inverse=True)
        roles = [async_role(instruction_name(n)) for n in store.strings.lookup(uniq)]
        is_async_name = np.array([r is not None for r in roles], dtype=bool)[inv.reshape(-1)]
        compute = on_ops & ~is_async_name
        rows: list[int] = []
        ends: list[int] = []
        names: list[str] = []
        kinds: list[str] = []
        if on_async.any():
            for r in np.nonzero(on_async)[0].tolist():
                name = instruction_name(store.strings[int(plane.name_id[r])])
                role = async_role(name)
                rows.append(r)
                ends.append(int(end[r]))
                names.append(name)
                kinds.append(op_family(role[2] if role is not None else name))
        else:
            open_starts: dict[str, deque[int]] = {}
            ops_rows = np.nonzero(on_ops & is_async_name)[0]
            for r in ops_rows[np.argsort(start[ops_rows], kind="stable")].tolist():
                role = roles[int(np.searchsorted(uniq, plane.name_id[r]))]
                assert role is not None
                key, kind, base = role
                if kind == "start":
                    open_starts.setdefault(key, deque()).append(r)
                elif open_starts.get(key):
                    first = open_starts[key].popleft()
                    rows.append(first)
                    ends.append(int(end[r]))
                    names.append(instruction_name(store.strings[int(plane.name_id[first])]))
                    kinds.append(op_family(base))
        if not rows:
            continue
        row_arr = np.asarray(rows, np.int64)
        w_start, w_end = start[row_arr], np.asarray(ends, np.int64)
        keep = w_end > w_start  # XProf skips windows of no length
        covered = covered_ps(w_start[keep], w_end[keep], start[compute], end[compute])
        _append(cols, store, rank, pi, row_arr[keep], [-1] * int(keep.sum()),
                [n for n, k in zip(names, keep.tolist(), strict=True) if k],
                [n for n, k in zip(kinds, keep.tolist(), strict=True) if k], w_start[keep], w_end[keep], covered)


def _host_rows(store: ProfileStore, rank: int) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    _gpu_rows(store, rank, cols)
    if store.format == "xspace":
        _tpu_rows(store, rank, cols)
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
    is_collective = events.data["kind"] != "copy"  # TPU: every async op family but copies
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
    return any(p.name.startswith((_GPU_PLANE_PREFIX, _TPU_PLANE_PREFIX)) and p.n_events for p in planes)


TOOLS = (
    Tool(
        name=TOOL, title="Collective overlap", compute=compute, available=has_device_streams,
        multi_host=True,
        description="Each NCCL/RCCL collective kernel and copy on a GPU (compute on its other streams covers it), "
                    "each XLA async op on a TPU (XProf's analyze_async_overlap): hidden / partially hidden / exposed, "
                    "the most exposed first with their step.",
        result=CollectiveOverlapResult, needs=frozenset({"devices"}),
        requires="collective kernels (NCCL/RCCL) on GPU streams beside compute, or XLA async ops on a TPU.",
        how_to=(rec.TORCH_TRACE, rec.TORCH_RANKS, rec.XLA),
    ),
)
