"""roofline_model: the device's roofs and one point per HLO op and per program, as XProf's
"Roofline Model" tool.

Roofs: ``peak_flop_rate`` (GFLOP/s), ``peak_hbm_bw`` (GiB/s) and, on GPUs, the shared-memory
roof XProf calls ``peak_vmem_write_bw`` (GiB/s); a ridge point is peak FLOP rate / peak
bandwidth with the bandwidth in GB/s (10^9 bytes/s), as XProf computes it. Points: every HLO
op (the ``hlo_stats`` rows) plus a "Program" row for all device time of the chosen hosts (idle
included), with or without infeed/outfeed ops (option ``include_infeed_outfeed``, XProf's
filter, default true as XProf's page opens; ``roofline_table`` makes both).
Per point: measured FLOP rate, operational intensity (FLOP per byte, all bytes and HBM bytes),
``bound_by``, the roof at the point's HBM intensity (``optimal_flop_rate``), and
``roofline_efficiency`` = max(compute efficiency, HBM bandwidth utilization). Formulas:
docs/formulas.md "Roofline model".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.hlo.hlo_stats import (
    BYTES_PER_GIB,
    NO_DEVICE_MESSAGE,
    PS_PER_US,
    HloOpRates,
    device_count,
    has_hlo_ops,
    hlo_table,
    op_rates,
)
from tbprof.analyses.results.hlo import RooflineModelResult, RooflinePeaks, UndeterminedBytes
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_bool
from tbprof.domain import roofline
from tbprof.domain.hlo_cost import hlo_op_bytes
from tbprof.domain.hlo_map import hlo_programs
from tbprof.domain.planes import device_display_name, device_model, device_planes_of, is_accelerator
from tbprof.store.tables import ProfileStore

INFEED_OUTFEED = ("infeed", "outfeed")  # a category containing either word ("host infeed" too)
# Ops that may contain other ops: their FLOPs and bytes are their inner ops', which are points of
# their own, so the program point leaves them out (their time stays in the device time).
MAY_HAVE_INNER_OPS = ("call", "conditional", "while", "megacore fusion")


def is_infeed_or_outfeed(categories: np.ndarray) -> np.ndarray:
    text = categories.astype(str)
    return np.any([np.char.find(text, word) >= 0 for word in INFEED_OUTFEED], axis=0) if text.shape[0] else \
        np.zeros(0, dtype=bool)
# XProf's roofline page opens with its "Include Infeed/Outfeed" filter on true.
INCLUDE_INFEED_OUTFEED_DEFAULT = True


def device_type(stores: Sequence[ProfileStore]) -> str:
    """XProf's device type of the first device plane ("Nvidia GPU (Hopper)", "AMD GPU - gfx942",
    "TPU v6 Lite"), "" when there is none."""
    for s in stores:
        for pi in device_planes_of(s):
            return device_model(s.planes[pi])
    return ""


def device_name(stores: Sequence[ProfileStore]) -> str:
    """The first device's name as every page shows it (domain/planes.device_display_name: the
    product name, "NVIDIA H200"); "" when there is no device plane."""
    for s in stores:
        for pi in device_planes_of(s):
            return device_display_name(s.planes[pi])
    return ""


def core_count(stores: Sequence[ProfileStore]) -> int:
    """XProf's ``device_core_count``: every accelerator plane of each host, idle ones included
    (a profiler lists each GPU of the machine, used or not), over the hosts. XProf divides the
    roofline's "Total time per core" by it; ``device_count`` counts the devices that ran."""
    return sum(sum(1 for p in s.planes if is_accelerator(p)) for s in stores)


def peaks(env: roofline.PerfEnv) -> RooflinePeaks:
    flop_rate = env.peak_tflops * 1e3
    return {
        "peak_flop_rate": flop_rate,
        "peak_hbm_bw": env.peak_hbm_gbps * roofline.GIB_PER_GB,
        "hbm_ridge_point": flop_rate / env.peak_hbm_gbps if env.peak_hbm_gbps > 0 else 0.0,
        "peak_vmem_write_bw": env.peak_shm_gbps * roofline.GIB_PER_GB,
        "vmem_write_ridge_point": flop_rate / env.peak_shm_gbps if env.peak_shm_gbps > 0 else 0.0,
    }


# What a reader compares first (bound by, intensity, FLOP rate, efficiency) right after the op's
# name; then the rest in XProf's order.
COLUMNS = [
    Column("operation", "Operation", "str"),
    Column("bound_by", "Bound by", "str"),
    Column("operational_intensity", "Operational intensity", "float", "FLOP/byte"),
    Column("hbm_operational_intensity", "HBM operational intensity", "float", "FLOP/byte"),
    Column("measured_flop_rate", "Measured FLOP rate", "float", "GFLOP/s"),
    Column("roofline_efficiency", "Roofline efficiency", "float", "fraction"),
    Column("category", "Category", "str"),
    Column("step", "Step", "str", "", "Total: the whole profile"),
    Column("rank", "Rank", "int", "", "0: the program row"),
    Column("occurrences", "#Occurrences", "int"),
    Column("total_time", "Total time", "float", "us"),
    Column("avg_time", "Avg. time", "float", "us"),
    Column("total_self_time", "Total self time", "float", "us"),
    Column("avg_self_time", "Avg. self time", "float", "us"),
    Column("total_self_time_percent", "Total self time", "float", "fraction",
           "share of the device time, 0..1 (XProf's roofline table uses fractions)"),
    Column("cumulative_total_self_time_percent", "Cumulative total self time", "float", "fraction"),
    Column("model_flop_rate", "Model FLOP rate", "float", "GFLOP/s"),
    Column("measured_memory_bw", "Measured memory BW", "float", "GiB/s"),
    Column("hbm_bw", "HBM BW", "float", "GiB/s"),
    Column("bottleneck_operational_intensity", "Bottleneck operational intensity", "float", "FLOP/byte",
           "HBM intensity when HBM-bound, else the intensity over all bytes"),
    Column("total_time_per_core", "Total time per core", "float", "us"),
    Column("total_time_in_percentage", "Total time", "float", "fraction"),
    Column("optimal_flop_rate", "Optimal FLOP rate", "float", "GFLOP/s", "the roof at the HBM intensity"),
    Column("compute_efficiency", "FLOP rate / peak", "float", "fraction"),
    Column("max_mem_bw_utilization", "Max memory BW utilization", "float", "fraction"),
    Column("include_infeed_outfeed", "Include infeed/outfeed", "bool"),
    Column("hlo_module_id", "Program id", "str"),
    Column("source_info", "Source info", "str"),
]


def _div(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    b_arr = np.broadcast_to(np.asarray(b, dtype=np.float64), np.shape(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b_arr > 0, np.asarray(a, dtype=np.float64) / np.where(b_arr > 0, b_arr, 1.0), 0.0)


def _roof_columns(env: roofline.PerfEnv, flops: np.ndarray, nbytes: np.ndarray, hbm: np.ndarray,
                  time_ps: np.ndarray) -> dict[str, np.ndarray]:
    """The columns every point derives from its FLOPs, bytes and time."""
    time_s = time_ps.astype(np.float64) / 1e12
    flop_rate = _div(flops, time_s) / 1e9
    hbm_bw = _div(hbm, time_s) / BYTES_PER_GIB
    oi = _div(flops, nbytes)
    hbm_oi = _div(flops, hbm)
    bound = roofline.bound_by(env, flops, hbm, time_ps)
    peak = env.peak_tflops * 1e3
    optimal = np.minimum(hbm_oi * env.peak_hbm_gbps, peak) if env.peak_hbm_gbps > 0 else np.zeros_like(hbm_oi)
    compute_eff = flop_rate / peak if peak > 0 else np.zeros_like(flop_rate)
    peak_hbm_gib = env.peak_hbm_gbps * roofline.GIB_PER_GB
    mem_util = hbm_bw / peak_hbm_gib if peak_hbm_gib > 0 else np.zeros_like(hbm_bw)
    return {
        "measured_flop_rate": flop_rate, "model_flop_rate": flop_rate,
        "measured_memory_bw": _div(nbytes, time_s) / BYTES_PER_GIB, "hbm_bw": hbm_bw,
        "operational_intensity": oi, "hbm_operational_intensity": hbm_oi,
        "bottleneck_operational_intensity": np.where(bound == roofline.HBM, hbm_oi, oi),
        "bound_by": bound, "optimal_flop_rate": optimal, "compute_efficiency": compute_eff,
        "max_mem_bw_utilization": mem_util, "roofline_efficiency": np.maximum(compute_eff, mem_util),
    }


UNDETERMINED_NAMES_SHOWN = 8


def bytes_undetermined(stores: Sequence[ProfileStore], names: Sequence[str], program_ids: Sequence[int],
                       bytes_accessed: np.ndarray) -> np.ndarray:
    """Per op, whether its bytes are unknown: no bytes from its events, and its HLO op, found in its
    program, has none from the cost analysis (hlo_cost leaves such ops out)."""
    found = np.zeros(len(names), dtype=bool)
    programs = [(s, hlo_programs(s)) for s in stores]
    for i, (name, pid) in enumerate(zip(names, program_ids, strict=True)):
        if bytes_accessed[i] > 0:
            continue
        for store, progs in programs:
            program = progs.get(int(pid))
            if program is not None and program.op(str(name)) is not None:
                found[i] = str(name) not in hlo_op_bytes(store, int(pid))
                break
    return found


def undetermined_bytes(stores: Sequence[ProfileStore], rates: HloOpRates,
                       include_infeed_outfeed: bool) -> UndeterminedBytes:
    """The program point's ops whose bytes are unknown, and their share of its time."""
    db, o = rates.db, rates.order
    keep = ~np.isin(db.type[o].astype(str), MAY_HAVE_INNER_OPS)
    if not include_infeed_outfeed:
        keep &= ~is_infeed_or_outfeed(db.type[o])
    idx = o[keep]
    unknown = idx[bytes_undetermined(stores, db.name[idx], db.program_id[idx], db.bytes_accessed[idx])]
    total_ps = float(db.total_time_ps) - (0.0 if include_infeed_outfeed
                                          else float(db.time_ps[o[is_infeed_or_outfeed(db.type[o])]].sum()))
    by_time = unknown[np.argsort(-db.time_ps[unknown], kind="stable")]
    return {"op_count": int(unknown.shape[0]),
            "time_fraction": float(db.time_ps[unknown].sum()) / total_ps if total_ps > 0 else 0.0,
            "ops": [str(db.name[i]) for i in by_time[:UNDETERMINED_NAMES_SHOWN]]}


def roofline_table(stores: Sequence[ProfileStore], rates: HloOpRates | None = None,
                   include_infeed_outfeed: Sequence[bool] = (True, False)) -> Table:
    """The program row and the op rows once per value of ``include_infeed_outfeed`` asked for."""
    r = rates or op_rates(stores)
    db, env = r.db, r.env
    ops = hlo_table(stores, r)
    o = r.order
    cores = max(1, core_count(stores))
    io = is_infeed_or_outfeed(db.type[o])
    outer = np.isin(db.type[o].astype(str), MAY_HAVE_INNER_OPS)
    parts: list[dict[str, Any]] = []
    # No device ops: no points at all (XProf's table is empty on CPU profiles).
    for include in (include_infeed_outfeed if o.shape[0] else ()):
        keep = np.ones(o.shape[0], dtype=bool) if include else ~io
        idx = o[keep]
        total_ps = float(db.total_time_ps) - (0.0 if include else float(db.time_ps[o[io]].sum()))
        # The program point: every innermost device op of the hosts over the whole device time.
        inner = o[keep & ~outer]
        prog: dict[str, Any] = _roof_columns(
            env, np.array([db.flops[inner].sum()]), np.array([db.bytes_accessed[inner].sum()]),
            np.array([db.program_hbm[inner].sum()]), np.array([total_ps]))
        prog.update(step=["Total"], rank=[0], category=["Program"], operation=["Program"], occurrences=[1],
                    total_time=[total_ps / PS_PER_US], avg_time=[total_ps / PS_PER_US], total_self_time=[0.0],
                    avg_self_time=[0.0], total_self_time_percent=[0.0], cumulative_total_self_time_percent=[0.0],
                    total_time_per_core=[total_ps / PS_PER_US / cores], total_time_in_percentage=[1.0],
                    include_infeed_outfeed=[include], hlo_module_id=["0"], source_info=[""])
        parts.append(prog)
        roof: dict[str, Any] = _roof_columns(env, db.flops[idx], db.bytes_accessed[idx], db.hbm[idx], db.time_ps[idx])
        frac = _div(db.self_time_ps[idx].astype(np.float64), total_ps)
        n = idx.shape[0]
        roof.update(
            step=["Total"] * n, rank=np.arange(1, n + 1), category=db.type[idx], operation=db.name[idx],
            occurrences=db.occurrences[idx], total_time=ops.data["total_time"][keep],
            avg_time=ops.data["avg_time"][keep], total_self_time=ops.data["total_self_time"][keep],
            avg_self_time=ops.data["avg_self_time"][keep], total_self_time_percent=frac,
            cumulative_total_self_time_percent=np.cumsum(frac),
            total_time_per_core=ops.data["total_time"][keep] / cores,
            total_time_in_percentage=frac, include_infeed_outfeed=[include] * n,
            hlo_module_id=ops.data["program_id"][keep], source_info=ops.data["source_info"][keep])
        parts.append(roof)
    values: dict[str, Any] = {c.name: (np.concatenate([np.asarray(p[c.name], dtype=object if c.kind == "str" else None)
                                       for p in parts]) if parts else []) for c in COLUMNS}
    return Table.from_columns(COLUMNS, values, default_sort=None)


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> RooflineModelResult:
    rates = op_rates(stores)
    include = bool(options.get("include_infeed_outfeed", INCLUDE_INFEED_OUTFEED_DEFAULT))
    table = roofline_table(stores, rates, (include,))
    out: RooflineModelResult = {
        "schema_version": SCHEMA_VERSION, "tool": "roofline_model",
        "host": stores[0].host if len(stores) == 1 else None, "hosts": [s.host for s in stores],
        "device_type": device_type(stores),
        "device_name": device_name(stores),
        "include_infeed_outfeed": include,
        "device_count": device_count(stores),
        **peaks(rates.env),
        "op_count": int(rates.order.shape[0]),
        "undetermined_bytes": undetermined_bytes(stores, rates, include),
        "tables": {"roofline": table},
    }
    if rates.order.shape[0] == 0:
        out["message"] = NO_DEVICE_MESSAGE
    return out


TOOLS = (
    Tool(
        name="roofline_model", title="Roofline model", compute=compute, multi_host=True, available=has_hlo_ops,
        few_planes=True,
        options=(Option("include_infeed_outfeed", parse_bool, INCLUDE_INFEED_OUTFEED_DEFAULT,
                        "count infeed and outfeed ops in the program point and list them as points "
                        "(XProf's 'Include Infeed/Outfeed' filter)"),),
        description="Device roofs (peak FLOP rate, HBM bandwidth) and one point per HLO op and per program.",
        result=RooflineModelResult, needs=frozenset({"hlo"}),
        requires="XLA device ops and the device's peaks (the GPU plane's clock, SM count and memory bandwidth stats).",
        how_to=(rec.XLA,),
    ),
)
