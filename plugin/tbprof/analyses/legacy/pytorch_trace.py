"""PyTorch (Kineto) traces: GPU kernel statistics and operator statistics.

A ``*.pt.trace.json`` holds ``cpu_op`` events (ATen operators, nested on the CPU threads),
``cuda_runtime`` calls, and ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` events on the GPU
streams with their launch configuration in ``args`` (``grid``, ``block``, ``registers per
thread``, ``shared memory``, ``est. achieved occupancy %``). Kineto gives an operator and
the kernels it launched the same ``External id``, which links a kernel to the innermost
operator that launched it.

* kernel stats: one row per (kernel, grid, block, registers, shared memory, operator), as
  XProf's kernel_stats keys them.
* op stats: per operator name, calls, host time (total and self: minus the events nested
  directly inside it on its thread) and device time (self: kernels it launched itself;
  total: also those of the operators nested inside it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain.event_tree import parent_rows, self_time_ps, subtree_sum
from tbprof.store.tables import Plane, ProfileStore

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def is_kineto(store: Any) -> bool:
    strings = getattr(store, "strings", None)
    if getattr(store, "format", "") != "chrome_trace" or strings is None:
        return False
    return strings.id("cpu_op") >= 0 or strings.id("kernel") >= 0


def _category(store: ProfileStore, plane: Plane) -> np.ndarray:
    sid = store.stat_id("cat")
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int32)
    return plane.event_stat(sid).dense_str(plane.n_events)


def _int_stat(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int64)
    return plane.event_stat(sid).dense_int(plane.n_events)


def _str_stat(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(plane.n_events, -1, dtype=np.int32)
    return plane.event_stat(sid).dense_str(plane.n_events)


def _float_stat(store: ProfileStore, plane: Plane, name: str) -> np.ndarray:
    sid = store.stat_id(name)
    if sid < 0:
        return np.full(plane.n_events, np.nan)
    return plane.event_stat(sid).dense_float(plane.n_events)


def _dims(text: str) -> str:
    """``[8192, 2, 1]`` (a JSON list kept as text) -> ``8192,2,1``."""
    return text.strip("[]").replace(" ", "")


def op_names_by_external_id(store: ProfileStore) -> dict[int, str]:
    """External id -> operator name, from the ``cpu_op`` events."""
    def build() -> dict[int, str]:
        cpu_op = store.strings.id("cpu_op")
        out: dict[int, str] = {}
        for plane in store.planes:
            rows = np.nonzero(_category(store, plane) == cpu_op)[0]
            ext = _int_stat(store, plane, "External id")[rows]
            keep = ext >= 0
            for e, n in zip(ext[keep].tolist(), store.strings.lookup(plane.name_id[rows[keep]]), strict=False):
                out.setdefault(e, n)
        return out
    return store.memo(("kineto_ext_ops",), build)


# --- kernel stats ------------------------------------------------------------------------------

KERNEL_COLUMNS = [
    Column("kernel_name", "Kernel name", "str"),
    Column("registers_per_thread", "Registers per thread", "int"),
    Column("shmem_bytes", "Shared memory", "int", "bytes", "shared memory per block (Kineto's 'shared memory')"),
    Column("block_dim", "Block dim", "str", "", "x,y,z threads per block"),
    Column("grid_dim", "Grid dim", "str", "", "x,y,z blocks"),
    Column("occupancy_pct", "Est. achieved occupancy", "float", "%", "mean over the launches"),
    Column("op_name", "Op name", "str", "", "the operator that launched the kernel (same External id)"),
    Column("occurrences", "Occurrences", "int"),
    Column("total_duration_us", "Total duration", "float", "us"),
    Column("avg_duration_us", "Avg duration", "float", "us"),
    Column("min_duration_us", "Min duration", "float", "us"),
    Column("max_duration_us", "Max duration", "float", "us"),
]


def kernel_stats_compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    store = stores[0]
    kernel = store.strings.id("kernel")
    ops = op_names_by_external_id(store)
    keys: list[tuple[Any, ...]] = []
    durs: list[np.ndarray] = []
    occ_pct: list[np.ndarray] = []
    for plane in store.planes:
        rows = np.nonzero(_category(store, plane) == kernel)[0]
        if rows.shape[0] == 0:
            continue
        names = store.strings.lookup(plane.name_id[rows])
        grid = store.strings.lookup(_str_stat(store, plane, "grid")[rows])
        block = store.strings.lookup(_str_stat(store, plane, "block")[rows])
        regs = _int_stat(store, plane, "registers per thread")[rows].tolist()
        shmem = _int_stat(store, plane, "shared memory")[rows].tolist()
        ext = _int_stat(store, plane, "External id")[rows].tolist()
        for i in range(rows.shape[0]):
            keys.append((names[i], _dims(grid[i]), _dims(block[i]), max(regs[i], 0), max(shmem[i], 0),
                         ops.get(ext[i], "")))
        durs.append(plane.dur_ps[rows] / 1e6)
        occ_pct.append(_float_stat(store, plane, "est. achieved occupancy %")[rows])
    values: dict[str, list[Any]] = {c.name: [] for c in KERNEL_COLUMNS}
    total_us = 0.0
    if keys:
        dur = np.concatenate(durs)
        occ = np.concatenate(occ_pct)
        index: dict[tuple[Any, ...], int] = {}
        inv = np.asarray([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
        k = len(index)
        count = np.bincount(inv, minlength=k)
        total = np.bincount(inv, weights=dur, minlength=k)
        mins = np.full(k, np.inf)
        maxs = np.zeros(k)
        np.minimum.at(mins, inv, dur)
        np.maximum.at(maxs, inv, dur)
        has_occ = np.isfinite(occ)
        occ_sum = np.bincount(inv[has_occ], weights=occ[has_occ], minlength=k)
        occ_n = np.bincount(inv[has_occ], minlength=k)
        uniq = list(index)
        for i in sorted(range(k), key=lambda i: (-total[i], uniq[i])):
            name, grid_s, block_s, regs_i, shmem_i, op = uniq[i]
            values["kernel_name"].append(name)
            values["registers_per_thread"].append(regs_i)
            values["shmem_bytes"].append(shmem_i)
            values["block_dim"].append(block_s)
            values["grid_dim"].append(grid_s)
            values["occupancy_pct"].append(float(occ_sum[i] / occ_n[i]) if occ_n[i] else float("nan"))
            values["op_name"].append(op)
            values["occurrences"].append(int(count[i]))
            values["total_duration_us"].append(float(total[i]))
            values["avg_duration_us"].append(float(total[i] / count[i]))
            values["min_duration_us"].append(float(mins[i]))
            values["max_duration_us"].append(float(maxs[i]))
        total_us = float(dur.sum())
    table = Table.from_columns(KERNEL_COLUMNS, values, default_sort="total_duration_us")
    return {"schema_version": SCHEMA_VERSION, "tool": "pytorch_kernel_stats", "host": store.host,
            "kernel_event_count": len(keys), "row_count": table.n_rows, "total_duration_us": total_us,
            "tables": {"kernels": table}}


# --- op stats ----------------------------------------------------------------------------------

OP_COLUMNS = [
    Column("operator", "Operator", "str"),
    Column("calls", "Calls", "int"),
    Column("host_total_us", "Host total", "float", "us"),
    Column("host_self_us", "Host self", "float", "us", "minus the events nested directly inside"),
    Column("device_total_us", "Device total", "float", "us", "kernels of the operator and the ones inside it"),
    Column("device_self_us", "Device self", "float", "us", "kernels the operator launched itself"),
    Column("avg_host_total_us", "Avg. host total", "float", "us"),
    Column("avg_device_total_us", "Avg. device total", "float", "us"),
]


def op_stats_compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    store = stores[0]
    cpu_op = store.strings.id("cpu_op")
    device_cats = np.asarray([store.strings.id(c) for c in DEVICE_CATEGORIES])
    # Device time per External id: every kernel / memcpy / memset with that id.
    ext_parts, dev_parts = [], []
    for plane in store.planes:
        rows = np.nonzero(np.isin(_category(store, plane), device_cats[device_cats >= 0]))[0]
        if rows.shape[0]:
            ext_parts.append(_int_stat(store, plane, "External id")[rows])
            dev_parts.append(plane.dur_ps[rows].astype(np.float64))
    dev_ext = np.concatenate(ext_parts) if ext_parts else np.zeros(0, np.int64)
    dev_ps = np.concatenate(dev_parts) if dev_parts else np.zeros(0)
    keep = dev_ext >= 0
    dev_ext, dev_ps = dev_ext[keep], dev_ps[keep]
    ext_keys, ext_inv = np.unique(dev_ext, return_inverse=True)
    dev_by_ext = np.bincount(ext_inv.reshape(-1), weights=dev_ps, minlength=ext_keys.shape[0])

    names: list[np.ndarray] = []
    host_total, host_self, device_self, device_total = [], [], [], []
    for plane in store.planes:
        cat = _category(store, plane)
        is_op = cat == cpu_op
        if not is_op.any():
            continue
        ext = _int_stat(store, plane, "External id")
        own_dev = np.zeros(plane.n_events)
        if ext_keys.shape[0]:
            pos = np.clip(np.searchsorted(ext_keys, ext), 0, ext_keys.shape[0] - 1)
            hit = is_op & (ext >= 0) & (ext_keys[pos] == ext)
            own_dev[hit] = dev_by_ext[pos[hit]]
        parent = parent_rows(plane)
        own = self_time_ps(plane, parent)
        total_dev = subtree_sum(parent, np.asarray(plane.depth), own_dev)
        rows = np.nonzero(is_op)[0]
        names.append(plane.name_id[rows])
        host_total.append(plane.dur_ps[rows].astype(np.float64))
        host_self.append(own[rows].astype(np.float64))
        device_self.append(own_dev[rows])
        device_total.append(total_dev[rows])
    values: dict[str, list[Any]] = {c.name: [] for c in OP_COLUMNS}
    if names:
        name_id = np.concatenate(names)
        uniq, inv = np.unique(name_id, return_inverse=True)
        inv = inv.reshape(-1)
        k = uniq.shape[0]
        sums = {key: np.bincount(inv, weights=np.concatenate(parts), minlength=k) / 1e6
                for key, parts in (("host_total_us", host_total), ("host_self_us", host_self),
                                   ("device_self_us", device_self), ("device_total_us", device_total))}
        calls = np.bincount(inv, minlength=k)
        labels = store.strings.lookup(uniq)
        for i in sorted(range(k), key=lambda i: (-sums["host_total_us"][i], labels[i])):
            values["operator"].append(labels[i])
            values["calls"].append(int(calls[i]))
            for key in ("host_total_us", "host_self_us", "device_total_us", "device_self_us"):
                values[key].append(float(sums[key][i]))
            values["avg_host_total_us"].append(float(sums["host_total_us"][i] / calls[i]))
            values["avg_device_total_us"].append(float(sums["device_total_us"][i] / calls[i]))
    table = Table.from_columns(OP_COLUMNS, values, default_sort="host_self_us")
    return {"schema_version": SCHEMA_VERSION, "tool": "pytorch_op_stats", "host": store.host,
            "operator_count": table.n_rows, "device_time_us": float(dev_ps.sum()) / 1e6,
            "tables": {"operators": table}}


TOOLS = (
    Tool(
        name="pytorch_kernel_stats", title="GPU kernel stats (PyTorch)", compute=kernel_stats_compute,
        available=is_kineto, formats=("chrome_trace",),
        description="Every GPU kernel launch configuration of a PyTorch trace, with the operator that launched it.",
    ),
    Tool(
        name="pytorch_op_stats", title="Operator stats (PyTorch)", compute=op_stats_compute,
        available=is_kineto, formats=("chrome_trace",),
        description="Host and device time per PyTorch operator.",
    ),
)
