"""Device time attribution: each device line's busy time as a union of disjoint intervals, as
XProf 2.24.2's agent CLI ``get_device_time_attribution`` answers it, per device and host.

The rule (XProf's, docs/formulas.md "Device time attribution"):

* every line of a device plane (``/device:…``) with events gets its **busy time**: the length of
  the union of its events' intervals (overlapping or nested events count once);
* the **kernel lines** are the lines whose events are top-level device work: on a TPU the lines
  named exactly ``XLA Ops`` or ``Pallas`` (any case); on other devices every line whose name has
  none of ``counter``, ``modules``, ``overlay``, ``sync flag``, ``sensor`` (any case);
* a device's **device time** is the union over its kernel lines; ``total_device_time_us`` (per
  host) is the union over every device's kernel lines of the host (XProf's ``total_device_duration``: a
  wall-clock time during which some device worked, not a sum);
* ``by_line_name_us``: the busy time of each line *name*, its lines on every device together, as
  XProf keys it (on a TPU the cores' ``XLA Ops`` lines are one entry there, one row each here).

A PyTorch (Kineto) trace's GPU stream lines also carry ``gpu_user_annotation`` spans, which are
no device work: only the events with an integer ``stream`` argument (kernels, memcpys, memsets)
count there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import merge_intervals
from tbprof.analyses.gpu.collective_overlap import int_stat
from tbprof.analyses.results.gpu import DeviceTimeAttributionResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import Plane, ProfileStore

TOOL = "device_time_attribution"
_PS_PER_US = 1e6
_DEVICE_PREFIX = "/device:"
_TPU_KERNEL_LINES = frozenset(("XLA OPS", "PALLAS"))
_NOT_KERNEL_WORDS = ("COUNTER", "MODULES", "OVERLAY", "SYNC FLAG", "SENSOR")


def is_kernel_line(plane_name: str, line_name: str) -> bool:
    upper = line_name.upper()
    if "TPU" in plane_name.upper():
        return upper in _TPU_KERNEL_LINES
    return not any(w in upper for w in _NOT_KERNEL_WORDS)


def _union_ps(start: np.ndarray, end: np.ndarray) -> int:
    s, e = merge_intervals(start, end)
    return int((e - s).sum())


def _line_events(store: ProfileStore, plane: Plane) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(line index, start_ps, end_ps) of each line's device events."""
    start = plane.start_ps.astype(np.int64)
    end = start + plane.dur_ps.astype(np.int64)
    keep = int_stat(store, plane, "stream") >= 0 if store.format == "chrome_trace" else None
    out = []
    bounds = plane.line_offsets
    for li in range(plane.n_lines):
        lo, hi = int(bounds[li]), int(bounds[li + 1])
        if hi <= lo:
            continue
        if keep is not None:
            rows = np.arange(lo, hi)[keep[lo:hi]]
            if rows.shape[0] == 0:
                continue
            out.append((li, start[rows], end[rows]))
        else:
            out.append((li, start[lo:hi], end[lo:hi]))
    return out


COLUMNS = [
    Column("host", "Host", "str"), Column("device", "Device", "str"), Column("line", "Line", "str"),
    Column("kernel_line", "Kernel line", "bool", "", "its events are top-level device work (counted in device time)"),
    Column("events", "Events", "int"),
    Column("busy_us", "Busy", "float", "us", "union of the line's event intervals"),
    Column("busy_percent_of_device", "% of device time", "float", "%",
           "busy / the device's device time (kernel lines only)"),
]

DEVICE_COLUMNS = [
    Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("device_time_us", "Device time", "float", "us", "union of the kernel lines' intervals"),
    Column("kernel_line_busy_sum_us", "Sum over kernel lines", "float", "us",
           "the kernel lines' busy times added up"),
    Column("concurrency", "Concurrency", "float", "", "sum over kernel lines / device time: mean lines busy at once"),
    Column("kernel_lines", "Kernel lines", "int"),
]


def host_attribution(store: ProfileStore) -> tuple[dict[str, list[Any]], dict[str, list[Any]], int, dict[str, int]]:
    """(line rows, device rows, the host's total device time in ps, busy ps per line name)."""
    lines: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    devices: dict[str, list[Any]] = {c.name: [] for c in DEVICE_COLUMNS}
    all_kernel: list[tuple[np.ndarray, np.ndarray]] = []
    by_name: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for plane in store.planes:
        if not plane.name.startswith(_DEVICE_PREFIX) or plane.n_events == 0:
            continue
        per_line = _line_events(store, plane)
        kernel = [(s, e) for li, s, e in per_line if is_kernel_line(plane.name, plane.line_names[li])]
        device_ps = _union_ps(np.concatenate([s for s, _ in kernel]), np.concatenate([e for _, e in kernel])) \
            if kernel else 0
        busy_sum = 0
        for li, s, e in per_line:
            name = plane.line_names[li]
            busy = _union_ps(s, e)
            is_kernel = is_kernel_line(plane.name, name)
            busy_sum += busy if is_kernel else 0
            by_name.setdefault(name, []).append((s, e))
            lines["host"].append(store.host)
            lines["device"].append(plane.name)
            lines["line"].append(name)
            lines["kernel_line"].append(is_kernel)
            lines["events"].append(int(s.shape[0]))
            lines["busy_us"].append(busy / _PS_PER_US)
            lines["busy_percent_of_device"].append(100.0 * busy / device_ps if is_kernel and device_ps > 0 else None)
        all_kernel += kernel
        devices["host"].append(store.host)
        devices["device"].append(plane.name)
        devices["device_time_us"].append(device_ps / _PS_PER_US)
        devices["kernel_line_busy_sum_us"].append(busy_sum / _PS_PER_US)
        devices["concurrency"].append(busy_sum / device_ps if device_ps > 0 else None)
        devices["kernel_lines"].append(len(kernel))
    total = _union_ps(np.concatenate([s for s, _ in all_kernel]), np.concatenate([e for _, e in all_kernel])) \
        if all_kernel else 0
    by_name_ps = {n: _union_ps(np.concatenate([s for s, _ in v]), np.concatenate([e for _, e in v]))
                  for n, v in by_name.items()}
    return lines, devices, total, by_name_ps


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> DeviceTimeAttributionResult:
    lines: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    devices: dict[str, list[Any]] = {c.name: [] for c in DEVICE_COLUMNS}
    totals: dict[str, float] = {}
    by_name_us: dict[str, dict[str, float]] = {}
    for store in stores:
        ln, dv, total, by_name = host_attribution(store)
        for k, v in ln.items():
            lines[k] += v
        for k, v in dv.items():
            devices[k] += v
        if dv["device"]:
            totals[store.host] = total / _PS_PER_US
        by_name_us[store.host] = {n: ps / _PS_PER_US for n, ps in by_name.items()}
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for s in stores],
        "total_device_time_us": totals,
        "device_count": len(devices["device"]),
        "by_line_name_us": by_name_us,
        "tables": {"lines": Table.from_columns(COLUMNS, lines, default_sort="busy_us"),
                   "devices": Table.from_columns(DEVICE_COLUMNS, devices, default_sort="device_time_us")},
    }


def has_device_planes(store: object) -> bool:
    planes = getattr(store, "planes", None)
    if planes is None or getattr(store, "format", "") not in ("chrome_trace", "xspace"):
        return False
    return any(p.name.startswith(_DEVICE_PREFIX) and p.n_events for p in planes)


TOOLS = (
    Tool(
        name=TOOL, title="Device time attribution", compute=compute, available=has_device_planes,
        multi_host=True,
        description="XProf's get_device_time_attribution: each device line's busy time as disjoint intervals, "
                    "each device's time (union of its kernel lines) and their concurrency.",
        result=DeviceTimeAttributionResult, needs=frozenset({"devices"}),
        requires="device planes or GPU streams with kernel events.",
        how_to=(rec.TORCH_TRACE, "JAX/TensorFlow on a GPU or TPU: any jax.profiler or tf.profiler trace has them."),
    ),
)
