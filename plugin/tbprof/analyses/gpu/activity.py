"""The device activity of one host (rank) as HTA sees it: GPU events, their launches, their kind.

Kineto (PyTorch) traces are HTA's own input; XSpace GPU profiles (CUPTI) are read the same way
(device events on the ``/device:GPU:n`` stream lines with a ``correlation_id``, launched by the
host event with the same id), so every format with device events gets the analyses.

HTA (Holistic Trace Analysis 0.5.0) analyses PyTorch (Kineto) traces; its numbers are the
common language of PyTorch users, so tbprof selects the same events:

* a **device event** is any event with an integer ``stream`` >= 0 on a device plane (kernels,
  memcpys, memsets on CUDA/HIP streams, MTIA work, Triton kernels that ROCm records as ``cpu_op``
  with a stream on the GPU's process). A host event that carries a ``stream`` argument
  (Inductor's Triton launchers in every ``torch.compile`` trace, some eager operators) is the
  host's call, not device work: HTA, reading every row with a stream, would count it, but a
  device timeline holds device events only (docs/differences.md). A device event's **launch**
  is the host event with the same ``correlation`` (``cudaLaunchKernel``, ``hipLaunchKernel``,
  ``cuLaunchKernel``, ...; none when it has no correlation);
* when the trace has at least two distinct ``ProfilerStep#N`` names, the last step is
  incomplete (the profiler stopped inside it): only launches that start before the start of
  the last ``ProfilerStep`` event (host or GPU annotation, whichever starts later) count, and
  only device events launched by them (or, without a correlation, starting before then);
* a device event's **kind** comes from its name, by HTA's rules: communication
  (``nccl…Kernel``), memory (``Memcpy…``, ``Memset…``, ``dma…``), computation (anything that
  is neither and has no ``Memcpy`` or ``Sync`` in its name), else other.

Times are rounded as HTA rounds them: every event inward to whole microseconds of the
trace's clock (start up, end down). Without it, the microsecond-long kernels of a small model
move the idle share visibly (bench/measurements.md#analyses). A sub-microsecond event inside
one microsecond ends before it starts once rounded so (HTA's interval sums count it as -1 µs,
and the breakdowns keep those sums); what a table shows as one event's duration is never
negative (``rounded_dur_ps``; docs/differences.md). The exact times stay beside the rounded
ones: ties between rounded times are decided by them (an order of kernels, a copy's end before
another's start).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from tbprof.domain.kineto_links import prefetch_link_stats
from tbprof.domain.planes import is_accelerator
from tbprof.store import kineto_names as kn
from tbprof.store.arrays import sorted_unique
from tbprof.store.derived import Derived
from tbprof.store.kineto_names import DEVICE_CATEGORIES
from tbprof.store.tables import KIND_INT64, KIND_UINT64, Plane, ProfileStore

COMPUTATION, COMMUNICATION, MEMORY, OTHER = 0, 1, 2, 3
KIND_NAMES = ("COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER")
STEP_MARKER = "ProfilerStep"
_PS_PER_US = 1_000_000
_DERIVED_LINE_MIN = 0xDEADBEEF  # XProf's derived lines ("XLA Ops", "Steps", ...) are not streams


def kernel_kind(name: str) -> int:
    """HTA's kernel type of a device event name (plain string tests: linear, no regex)."""
    if kn.is_collective_kernel(name):
        return COMMUNICATION
    if name.startswith(("Memcpy", "Memset", "dma")):
        return MEMORY
    if "Memcpy" in name or "Sync" in name:
        return OTHER
    return COMPUTATION


@dataclass(frozen=True)
class DeviceActivity:
    """Device events of one host, sorted by start; all times in ps relative to the store origin."""

    start_ps: np.ndarray  # int64, rounded as HTA rounds (Kineto: inward to whole microseconds)
    end_ps: np.ndarray  # int64, idem (a sub-microsecond event can end before it starts)
    stream: np.ndarray  # int64 CUDA stream
    kind: np.ndarray  # int8, COMPUTATION..OTHER
    name_id: np.ndarray  # int32 into the store's strings
    correlation: np.ndarray  # int64
    launch_start_ps: np.ndarray  # int64, -1 when the launch is not in the trace
    launch_dur_ps: np.ndarray  # int64, -1 when the launch is not in the trace
    launch_name_id: np.ndarray  # int32, -1 when the launch is not in the trace
    plane: np.ndarray  # int64, the device plane of each event
    row: np.ndarray  # int64, the event's row in its plane (to read more of its stats)
    # bool: a kernel, memcpy, memset or MTIA event (not a ``cuda_sync`` wait, not a Triton cpu_op):
    # what HTA's idle-time breakdown looks at.
    is_work: np.ndarray
    exact_start_ps: np.ndarray  # int64, the profile's own start (not rounded)
    exact_end_ps: np.ndarray  # int64, the profile's own end
    launch_exact_start_ps: np.ndarray  # int64, the launch's own start; -1 when not in the trace

    def rounded_dur_ps(self) -> np.ndarray:
        """Each event's rounded duration as a table shows it: 0, not negative, for an event that
        the inward rounding makes end before it starts."""
        return np.maximum(self.end_ps - self.start_ps, 0)

    def select(self, mask: np.ndarray) -> DeviceActivity:
        """The events of ``mask`` (a boolean mask or row indices), in the same order."""
        return DeviceActivity(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})

    @property
    def n(self) -> int:
        return int(self.start_ps.shape[0])


def _int_column(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int64)
    col = plane.stat_column(sid)
    out = np.full(plane.n_events, -1, dtype=np.int64)
    # Only integer values count (HTA drops a stream it cannot read as an int).
    ok = (col.kind == KIND_INT64) | (col.kind == KIND_UINT64)
    out[col.rows[ok]] = col.value[ok]
    return out


def _empty() -> DeviceActivity:
    z64 = np.zeros(0, np.int64)
    return DeviceActivity(z64, z64, z64, np.zeros(0, np.int8), np.zeros(0, np.int32), z64, z64, z64,
                          np.zeros(0, np.int32), z64, z64, np.zeros(0, bool), z64, z64, z64)


DEVICE_ACTIVITY: Derived[DeviceActivity] = Derived(("gpu_device_activity",), lambda s: _build(s))


def device_activity(store: ProfileStore) -> DeviceActivity:
    """The host's device events (memoised per store)."""
    return store.derive(DEVICE_ACTIVITY)


def has_device_activity(store: object) -> bool:
    fmt = getattr(store, "format", "")
    strings = getattr(store, "strings", None)
    if strings is None:
        return False
    if fmt == "chrome_trace" and (strings.id("stream") < 0 or strings.id("correlation") < 0):
        return False
    if fmt == "xspace" and strings.id("correlation_id") < 0:
        return False
    if fmt not in ("chrome_trace", "xspace"):
        return False
    return device_activity(store).n > 0  # type: ignore[arg-type]


def _inward_us(store: ProfileStore, start_ps: np.ndarray, dur_ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) rounded inward to whole microseconds of the absolute clock (HTA's rounding)."""
    offset_ps = int(store.origin_ps) % _PS_PER_US  # keeps the arithmetic relative: no int64 overflow
    start_abs = start_ps.astype(np.int64) + offset_ps
    end_abs = start_abs + dur_ps.astype(np.int64)
    start = -((-start_abs) // _PS_PER_US) * _PS_PER_US - offset_ps
    end = (end_abs // _PS_PER_US) * _PS_PER_US - offset_ps
    return start, end


# Device parts: (start_ps, end_ps, stream, name_id, correlation, device plane index, row, is_work,
# exact start_ps, exact end_ps); host parts: (start_ps, dur_ps, name_id, correlation, exact start_ps).
_Parts = tuple[list[tuple[np.ndarray, ...]], list[tuple[np.ndarray, ...]]]


def _collect_kineto(store: ProfileStore) -> tuple[_Parts, np.ndarray]:
    """Kineto: device events carry ``stream`` and ``correlation``; times rounded as HTA does."""
    dev_parts: list[tuple[np.ndarray, ...]] = []
    host_parts: list[tuple[np.ndarray, ...]] = []
    step_starts: list[np.ndarray] = []
    prefetch_link_stats(store)
    names = store.strings.as_list()
    cat_sid = store.stat_id("cat")
    work_cats = np.array([i for i in (store.strings.id(c) for c in DEVICE_CATEGORIES) if i >= 0], np.int64)
    step_ids = np.array([i for i, n in enumerate(names) if STEP_MARKER in n], dtype=np.int32)
    for pi, plane in enumerate(store.planes):
        if plane.n_events == 0:
            continue
        stream = _int_column(store, plane, "stream")
        corr = _int_column(store, plane, "correlation")
        # Every event with a stream on a device plane (Triton kernels recorded as cpu_op too); a
        # host plane's events with a stream are launchers, never device work.
        is_dev = (stream >= 0) if is_accelerator(plane) else np.zeros(plane.n_events, dtype=bool)
        rows = np.nonzero(is_dev)[0]
        if rows.shape[0]:
            start, end = _inward_us(store, plane.start_ps[rows], plane.dur_ps[rows])
            is_work = plane.str_stat_in(cat_sid, work_cats)[rows] if cat_sid >= 0 else np.zeros(rows.shape[0], bool)
            exact = plane.start_ps[rows].astype(np.int64)
            dev_parts.append((start, end, stream[rows], plane.name_id[rows], corr[rows],
                              np.full(rows.shape[0], pi, np.int64), rows.astype(np.int64), is_work,
                              exact, exact + plane.dur_ps[rows]))
        hrows = np.nonzero(~is_dev & (corr >= 0))[0]
        if hrows.shape[0]:
            start, end = _inward_us(store, plane.start_ps[hrows], plane.dur_ps[hrows])
            host_parts.append((start, end - start, plane.name_id[hrows], corr[hrows],
                               plane.start_ps[hrows].astype(np.int64)))
        if step_ids.shape[0]:
            is_step = np.isin(plane.name_id, step_ids) & ~is_dev
            step_starts.append(plane.start_ps[is_step])
    # HTA treats the last step as incomplete once there are two or more step names.
    last = np.concatenate(step_starts) if step_ids.shape[0] >= 2 and step_starts else np.zeros(0, np.int64)
    return (dev_parts, host_parts), last


def _collect_xspace(store: ProfileStore) -> _Parts:
    """XSpace (CUPTI): events on the stream lines of ``/device:GPU:n`` planes with a
    ``correlation_id``, launched by the ``/host:CPU`` event with the same ``correlation_id``;
    the stream is the line id. Times stay exact (nanoseconds): HTA's rounding is a JSON matter."""
    dev_parts: list[tuple[np.ndarray, ...]] = []
    host_parts: list[tuple[np.ndarray, ...]] = []
    sid = store.stat_id("correlation_id")
    if sid < 0:
        return dev_parts, host_parts
    for pi, plane in enumerate(store.planes):
        if plane.n_events == 0:
            continue
        if plane.name.startswith("/device:GPU"):
            rows, corr, line_id = _xspace_device_rows(plane, sid)
            if rows.shape[0]:
                start = plane.start_ps[rows].astype(np.int64)
                end = (plane.start_ps[rows] + plane.dur_ps[rows]).astype(np.int64)
                dev_parts.append((start, end, line_id.astype(np.int64), plane.name_id[rows], corr,
                                  np.full(rows.shape[0], pi, np.int64), rows.astype(np.int64),
                                  np.ones(rows.shape[0], bool), start, end))
        elif plane.name == "/host:CPU":
            rows, corr = _linked_rows(plane, sid)
            if rows.shape[0]:
                start = plane.start_ps[rows].astype(np.int64)
                host_parts.append((start, plane.dur_ps[rows].astype(np.int64), plane.name_id[rows], corr, start))
    return dev_parts, host_parts


def _linked_rows(plane: Plane, sid: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a plane's events with a correlation and their correlations (a few percent of
    a large host plane's events)."""
    rows, corr = plane.event_stat(sid).sparse_int()
    linked = corr >= 0
    return rows[linked], corr[linked]


def _xspace_device_rows(plane: Plane, sid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An XSpace GPU plane's device events: (rows, correlations, streams) of those with a
    correlation on a stream line."""
    rows, corr = _linked_rows(plane, sid)
    line_id = plane.line_ids[plane.line_idx[rows]]
    on_stream = line_id < _DERIVED_LINE_MIN
    return rows[on_stream], corr[on_stream], line_id[on_stream]


def device_intervals(store: ProfileStore) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] | None:
    """Per device plane with device events, in plane order: its name and its events' (start_ps,
    end_ps, kind), in no particular order: what ``device_activity`` holds of them, without the
    launches and the order by start that the idle and communication shares do not read. An XSpace
    store's only (None for another format: a Kineto trace's events are rounded and its last step
    cut first), and where the activity is not derived already (None: read it)."""
    if store.format != "xspace" or store.has_derived(DEVICE_ACTIVITY):
        return None
    sid = store.stat_id("correlation_id")
    out: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
    if sid < 0:
        return out
    for plane in store.planes:
        if plane.n_events == 0 or not plane.name.startswith("/device:GPU"):
            continue
        rows = _xspace_device_rows(plane, sid)[0]
        if rows.shape[0]:
            start = plane.start_ps[rows].astype(np.int64)
            out.append((plane.name, start, start + plane.dur_ps[rows], _kinds(store, plane.name_id[rows])))
    return out


def _kinds(store: ProfileStore, name_id: np.ndarray) -> np.ndarray:
    """``kernel_kind`` of each event name, decided once per distinct name."""
    uniq, inv = np.unique(name_id, return_inverse=True)
    kinds = np.array([kernel_kind(n) for n in store.strings.lookup(uniq)], dtype=np.int8)
    return kinds[inv.reshape(-1)] if uniq.shape[0] else np.zeros(0, np.int8)


def _build(store: ProfileStore) -> DeviceActivity:
    last_steps = np.zeros(0, np.int64)
    if store.format == "xspace":
        dev_parts, host_parts = _collect_xspace(store)
    elif store.stat_id("stream") >= 0 and store.stat_id("correlation") >= 0:
        (dev_parts, host_parts), last_steps = _collect_kineto(store)
    else:
        return _empty()
    if not dev_parts:
        return _empty()
    d_start, d_end, d_stream, d_name, d_corr, d_plane, d_row, d_work, d_exact, d_exact_end = (
        np.concatenate(c) for c in zip(*dev_parts, strict=True))
    if host_parts:
        h_start, h_dur, h_name, h_corr, h_exact = (np.concatenate(c) for c in zip(*host_parts, strict=True))
    else:
        h_start = h_dur = h_corr = h_exact = np.zeros(0, np.int64)
        h_name = np.zeros(0, np.int32)
    if last_steps.shape[0]:
        last_step_start = int(last_steps.max())
        keep_host = h_start < last_step_start
        h_start, h_dur, h_name, h_corr, h_exact = (h_start[keep_host], h_dur[keep_host], h_name[keep_host],
                                                   h_corr[keep_host], h_exact[keep_host])
    # Launch of each device event: the host event with its correlation.
    order = np.argsort(h_corr, kind="stable")
    sorted_corr = h_corr[order]
    pos = np.searchsorted(sorted_corr, d_corr)
    pos_c = np.clip(pos, 0, max(sorted_corr.shape[0] - 1, 0))
    found = (pos < sorted_corr.shape[0]) & (sorted_corr[pos_c] == d_corr) if sorted_corr.shape[0] else pos < 0
    if last_steps.shape[0]:
        # A device event without a correlation (a Triton kernel ROCm records as a cpu_op) is one
        # of HTA's "CPU operators": it stays when it starts before the last step.
        keep_dev = found | ((d_corr < 0) & (d_start < last_step_start))
        d_start, d_end, d_stream, d_name, d_corr, d_plane, d_row, d_work, d_exact, d_exact_end = (
            a[keep_dev] for a in (d_start, d_end, d_stream, d_name, d_corr, d_plane, d_row, d_work, d_exact,
                                  d_exact_end))
        pos_c, found = pos_c[keep_dev], found[keep_dev]
    if sorted_corr.shape[0]:
        src = order[pos_c]
        l_start = np.where(found, h_start[src], -1).astype(np.int64)
        l_dur = np.where(found, h_dur[src], -1).astype(np.int64)
        l_name = np.where(found, h_name[src], -1).astype(np.int32)
        l_exact = np.where(found, h_exact[src], -1).astype(np.int64)
    else:
        l_start = np.full(d_corr.shape[0], -1, np.int64)
        l_dur = l_start.copy()
        l_name = np.full(d_corr.shape[0], -1, np.int32)
        l_exact = l_start.copy()
    kind = _kinds(store, d_name)
    by_start = np.lexsort((d_exact_end, d_end, d_exact, d_start))
    return DeviceActivity(
        start_ps=d_start[by_start].astype(np.int64), end_ps=d_end[by_start].astype(np.int64),
        stream=d_stream[by_start].astype(np.int64), kind=kind[by_start], name_id=d_name[by_start].astype(np.int32),
        correlation=d_corr[by_start].astype(np.int64), launch_start_ps=l_start[by_start],
        launch_dur_ps=l_dur[by_start], launch_name_id=l_name[by_start], plane=d_plane[by_start].astype(np.int64),
        row=d_row[by_start].astype(np.int64), is_work=d_work[by_start].astype(bool),
        exact_start_ps=d_exact[by_start].astype(np.int64),
        exact_end_ps=d_exact_end[by_start].astype(np.int64), launch_exact_start_ps=l_exact[by_start],
    )


def per_device(store: ProfileStore, act: DeviceActivity) -> list[tuple[str, DeviceActivity]]:
    """The activity of each device plane of the host (HTA's unit: one GPU per rank)."""
    out = []
    for pi in sorted_unique(act.plane).tolist():
        out.append((store.planes[pi].name, act.select(act.plane == pi)))
    return out


# --- interval arithmetic (vectorised; inputs need not be sorted) -----------------------------

def merge_intervals(start_ps: np.ndarray, end_ps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as disjoint sorted intervals."""
    if start_ps.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(start_ps, kind="stable")
    s = start_ps[order]
    e = np.maximum.accumulate(end_ps[order])
    # A new group starts where an interval begins after everything before it has ended.
    new = np.ones(s.shape[0], dtype=bool)
    new[1:] = s[1:] > e[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:] - 1, s.shape[0] - 1)
    return s[first], e[last]


def union_ps(start_ps: np.ndarray, end_ps: np.ndarray) -> int:
    s, e = merge_intervals(start_ps, end_ps)
    return int((e - s).sum())


def coverage_by_mask(groups: list[tuple[np.ndarray, np.ndarray]]) -> dict[int, int]:
    """Time covered by each combination of groups: {bitmask of the active groups: ps}.

    Each group's intervals are merged first (as HTA does), then one sweep over all
    boundaries accumulates the length of every stretch under its active-group mask.
    """
    points: list[np.ndarray] = []
    deltas: list[np.ndarray] = []
    for bit, (start_ps, end_ps) in enumerate(groups):
        s, e = merge_intervals(start_ps, end_ps)
        points += [s, e]
        deltas += [np.full(s.shape[0], 1 << bit, np.int64), np.full(e.shape[0], -(1 << bit), np.int64)]
    if not points or sum(p.shape[0] for p in points) == 0:
        return {}
    t = np.concatenate(points)
    d = np.concatenate(deltas)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    running = np.cumsum(d)
    length = np.diff(t)
    mask = running[:-1]
    out: dict[int, int] = {}
    keep = (mask > 0) & (length > 0)
    if keep.any():
        uniq, inv = np.unique(mask[keep], return_inverse=True)
        sums = np.bincount(inv.reshape(-1), weights=length[keep].astype(np.float64), minlength=uniq.shape[0])
        out = {int(m): round(v) for m, v in zip(uniq.tolist(), sums.tolist(), strict=True)}
    return out
