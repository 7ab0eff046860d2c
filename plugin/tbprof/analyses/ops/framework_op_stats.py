"""framework_op_stats (alias tensorflow_stats): time per framework op, host and device, every op.

Rows are XProf's: device rows (framework ops the device ran, from HLO ops or TF GPU kernels)
then host rows (framework ops on host threads), each side ordered by total self time, with
an IDLE row per side unless ``include_idle=false``. Unlike XProf (500 ops per side), every op
is a row; the HTTP table layer sorts, filters (``filter.operation``, ``filter.type``,
``filter.host_or_device``) and pages them. With several hosts, each op sums its measures over
the hosts (XProf's all-hosts table). Formulas: docs/formulas.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.ops import headline, kineto_ops, tf1_ops
from tbprof.analyses.ops.kernel_stats import tensorcore_by_op, tensorcore_rules_match
from tbprof.analyses.ops.op_metrics import IDLE, OpMetricsDb, hosts_op_metrics
from tbprof.analyses.results.ops import FrameworkOpStatsResult, OpSide, PieSlice
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_bool
from tbprof.domain.roofline import PerfEnv, bound_by, perf_env
from tbprof.store.tables import ProfileStore
from tbprof.store.view import StoreView

PIE_SLICES = 10

COLUMNS = [
    Column("rank", "Rank", "int", "", "position within its side (host or device) by self time"),
    Column("host_or_device", "Host/device", "str"),
    Column("type", "Operation type", "str"),
    Column("operation", "Operation", "str"),
    Column("occurrences", "Occurrences", "int"),
    Column("total_time_us", "Total time", "float", "us"),
    Column("avg_time_us", "Avg. time", "float", "us"),
    Column("total_self_time_us", "Total self-time", "float", "us"),
    Column("avg_self_time_us", "Avg. self-time", "float", "us"),
    Column("device_self_time_fraction", "Self-time on device", "float", "fraction",
           "share of the device's total time (0..1)"),
    Column("device_cumulative_self_time_fraction", "Cumulative self-time on device", "float", "fraction"),
    Column("host_self_time_fraction", "Self-time on host", "float", "fraction",
           "share of the host threads' total op time (0..1)"),
    Column("host_cumulative_self_time_fraction", "Cumulative self-time on host", "float", "fraction"),
    Column("measured_flop_rate_gflops_per_sec", "Measured FLOP rate", "float", "GFLOP/s",
           "flops / total time; FLOPs from flops stats or the HLO cost analysis, else 0; empty "
           "where the profile counts no FLOPs (PyTorch)"),
    Column("measured_memory_bw_gibibytes_per_sec", "Measured memory BW", "float", "GiB/s",
           "bytes accessed / total time (2^30 bytes/s, as XProf); bytes from bytes stats or "
           "the HLO cost analysis, else 0; empty where the profile counts no bytes (PyTorch)"),
    Column("operational_intensity_flops_per_byte", "Operational intensity", "float", "FLOP/byte"),
    Column("gpu_tensorcore_utilization_fraction", "GPU TensorCore utilization", "float", "fraction",
           "share of the op's kernel time spent in TensorCore kernels (device rows); empty where not "
           "determined"),
    Column("bound_by", "Bound by", "str", "",
           "resource used the largest fraction of its peak: Compute, HBM or Shm/L1 (Unknown: none)"),
    Column("is_eager", "Eager", "bool", "", "executed eagerly (not inside a tf.function / jit)"),
    Column("execution_mode", "Execution mode", "str"),
]


def _side_rows(side: str, db: OpMetricsDb, include_idle: bool,
               tensorcore_by_op: dict[str, tuple[int, int]] | None, env: PerfEnv,
               cost_model: bool = True) -> dict[str, Any]:
    """One side's rows. ``tensorcore_by_op`` None: TensorCore use not determined (null);
    ``cost_model`` False: the profile counts no FLOPs or bytes (a PyTorch trace), so FLOP rate,
    bandwidth and intensity are null, not 0."""
    n = db.n_ops
    name = db.name
    op_type = db.type
    occ = db.occurrences.astype(np.int64)
    time_ps = db.time_ps.astype(np.float64)
    self_ps = db.self_time_ps.astype(np.float64)
    flops = db.flops
    nbytes = db.bytes_accessed
    hbm = db.hbm
    eager = db.is_eager
    total_ps = db.total_time_ps if include_idle else db.total_op_time_ps
    if include_idle and db.total_time_ps > 0:
        idle = float(db.idle_time_ps)
        name = np.concatenate([name, np.array([IDLE], dtype=object)])
        op_type = np.concatenate([op_type, np.array([IDLE], dtype=object)])
        occ = np.concatenate([occ, [0]])
        time_ps = np.concatenate([time_ps, [idle]])
        self_ps = np.concatenate([self_ps, [idle]])
        flops = np.concatenate([flops, [0.0]])
        nbytes = np.concatenate([nbytes, [0.0]])
        hbm = np.concatenate([hbm, [0.0]])
        eager = np.concatenate([eager, [False]])
        n += 1
    # XProf's order: self time descending (ties by name so the order is deterministic).
    order = np.lexsort((name.astype(str), -self_ps))
    name, op_type, occ, time_ps, self_ps = name[order], op_type[order], occ[order], time_ps[order], self_ps[order]
    flops, nbytes, hbm, eager = flops[order], nbytes[order], hbm[order], eager[order]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = self_ps / total_ps if total_ps > 0 else np.zeros(n)
        cum = np.cumsum(frac)
        avg_time = np.where(occ > 0, time_ps / 1e6 / np.maximum(occ, 1), 0.0)
        avg_self = np.where(occ > 0, self_ps / 1e6 / np.maximum(occ, 1), 0.0)
        flop_rate = np.where(time_ps > 0, flops / np.maximum(time_ps, 1) * 1e3, 0.0)  # flops/ps -> GFLOP/s
        # bytes / ps * 1e12 / 2^30: GiB/s, the unit XProf shows bandwidths in (one unit on every page).
        bw = np.where(time_ps > 0, nbytes / np.maximum(time_ps, 1) * (1e12 / 2**30), 0.0)
        intensity = np.where(nbytes > 0, flops / np.maximum(nbytes, 1), 0.0)
    if not cost_model:
        flop_rate, bw, intensity = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    tc = np.zeros(n) if tensorcore_by_op is not None or side != "Device" else np.full(n, np.nan)
    if side == "Device" and tensorcore_by_op:
        for i, op in enumerate(name.tolist()):
            hit = tensorcore_by_op.get(op)
            if hit and hit[0] > 0:
                tc[i] = hit[1] / hit[0]
    zeros = np.zeros(n)
    is_device = side == "Device"
    bound = bound_by(env, flops, hbm, time_ps)
    return {
        "rank": np.arange(1, n + 1), "host_or_device": np.full(n, side, dtype=object), "type": op_type,
        "operation": name, "occurrences": occ, "total_time_us": time_ps / 1e6, "avg_time_us": avg_time,
        "total_self_time_us": self_ps / 1e6, "avg_self_time_us": avg_self,
        "device_self_time_fraction": frac if is_device else zeros,
        "device_cumulative_self_time_fraction": cum if is_device else zeros,
        "host_self_time_fraction": zeros if is_device else frac,
        "host_cumulative_self_time_fraction": zeros if is_device else cum,
        "measured_flop_rate_gflops_per_sec": flop_rate, "measured_memory_bw_gibibytes_per_sec": bw,
        "operational_intensity_flops_per_byte": intensity, "gpu_tensorcore_utilization_fraction": tc,
        "bound_by": bound, "is_eager": eager,
        "execution_mode": np.where(eager, "Eager", "Function").astype(object),
    }


def _pie(values: np.ndarray, labels: np.ndarray) -> list[PieSlice]:
    """Self time per label, largest first, the tail merged into "Other (N)" (N labels)."""
    if values.shape[0] == 0:
        return []
    uniq, inv = np.unique(labels.astype(str), return_inverse=True)
    tot = np.bincount(inv.reshape(-1), weights=values, minlength=uniq.shape[0])
    order = np.argsort(-tot, kind="stable")
    out: list[PieSlice] = [{"name": str(uniq[i]), "self_time_us": float(tot[i])} for i in order[:PIE_SLICES]]
    if order.shape[0] > PIE_SLICES:
        out.append({"name": f"Other ({order.shape[0] - PIE_SLICES})",
                    "self_time_us": float(tot[order[PIE_SLICES:]].sum())})
    return out


def op_stats_table(stores: Sequence[StoreView], include_idle: bool) -> tuple[Table, dict[str, OpSide]]:
    # Kernel reports first: the background warm-up derives the op metrics meanwhile, so on a
    # store that just loaded the two run side by side instead of one after the other.
    tc_all = tensorcore_by_op(stores)
    host = hosts_op_metrics(stores, "host")
    device = hosts_op_metrics(stores, "device_framework")
    tc: dict[str, tuple[int, int]] | None = tc_all if device.n_ops else {}
    if tc and not tensorcore_rules_match(stores):
        tc = None
    env = perf_env(stores)
    # PyTorch traces carry no FLOP or byte counts per operator (no cost model).
    cost_model = not all(kineto_ops.is_kineto(s) for s in stores)
    parts = [_side_rows("Device", device, include_idle, tc, env, cost_model)] if device.total_time_ps > 0 else []
    parts.append(_side_rows("Host", host, include_idle, {}, env, cost_model))
    values = {c.name: np.concatenate([p[c.name] for p in parts]) for c in COLUMNS}
    table = Table.from_columns(COLUMNS, values, default_sort=None)
    sides: dict[str, OpSide] = {}
    for side, db in (("device", device), ("host", host)):
        if side == "device" and db.total_time_ps == 0:
            continue
        sel = values["host_or_device"] == side.capitalize()
        not_idle = sel & (values["type"] != IDLE)
        sides[side] = {
            "op_count": int(db.n_ops),
            "total_time_us": db.total_time_ps / 1e6,
            "op_time_us": db.total_op_time_ps / 1e6,
            "idle_time_us": db.idle_time_ps / 1e6,
            "pie_by_operation": _pie(values["total_self_time_us"][not_idle], values["operation"][not_idle]),
            "pie_by_type": _pie(values["total_self_time_us"][not_idle], values["type"][not_idle]),
        }
    return table, sides


def compute(stores: Sequence[StoreView], options: Mapping[str, Any]) -> FrameworkOpStatsResult:
    include_idle = bool(options.get("include_idle", False))
    table, sides = op_stats_table(stores, include_idle)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "framework_op_stats",
        "host": stores[0].host if len(stores) == 1 else None,
        "hosts": [s.host for s in stores],
        "include_idle": include_idle,
        "row_count": table.n_rows,
        "sides": sides,
        # The same entries op profile and smart suggestions show (analyses/metrics.py).
        "metrics": [headline.idle_metric(stores, side) for side in sides],
        "tables": {"ops": table},
    }


def _available(store: ProfileStore) -> bool:
    return getattr(store, "format", "") == "xspace" or kineto_ops.is_kineto(store) or tf1_ops.is_tf1_timeline(store)


TOOLS = (
    Tool(
        name="framework_op_stats", title="Framework op stats", compute=compute, compute_partials=compute,
        aliases=("tensorflow_stats", "pytorch_op_stats"),  # pytorch_op_stats: until the next release
        multi_host=True, available=_available,
        options=(Option("include_idle", parse_bool, False,
                                 "include the IDLE row of each side (time with no op running)"),),
        description="Time per TensorFlow/JAX op on the host and on the devices: every op, sortable, filterable.",
        result=FrameworkOpStatsResult, needs=frozenset({"framework_ops"}),
        requires="TensorFlow or XLA op events on the host or a device.",
        how_to=("Profile while ops execute (not only while Python runs): e.g. a few training steps after warm-up.",),
    ),
)
