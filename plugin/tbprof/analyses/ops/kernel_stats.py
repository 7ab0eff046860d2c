"""kernel_stats: every GPU kernel launch configuration, with its op and TensorCore use.

One row per (kernel name, grid, block, registers/thread, static and dynamic shared memory,
uses-TensorCore, op TensorCore-eligible, op name), as XProf keys its kernel reports, but with
every row (XProf keeps the top 1000). A kernel is a device event with a ``kernel_details``
stat (``regs:58 static_shared:0 dynamic_shared:8192 grid:128,1,1 block:128,1,1 occ_pct:50``)
lasting at least 1 ns. Its op is the framework op of its HLO op (from the program's HLO proto)
or else of its ``tf_op`` stat. TensorCore rules are XProf's: a kernel uses TensorCores when
its name contains one of the cuBLAS/cuDNN TensorCore patterns; an op is eligible when its name
ends like a convolution/matmul op, its einsum has two operands, or one of its kernels uses
TensorCores. Durations are whole nanoseconds as XProf counts them.

The rows' ``kernel_uses_tensorcore`` column is XProf's rule; the page's TensorCore shares and the
per-op TensorCore use also know the kernels of GPUs newer than XProf's name list (Hopper's
``nvjet_sm90_*`` cuBLASLt GEMMs, ``wgmma`` / ``sm90_xmma`` / ``tensorop`` CUTLASS and cuDNN kernels,
flash and fused multi-head attention): a run of those reads 0 % by XProf's list alone. Where a
run's matrix kernels are all of names known neither way, the shares are null ("not
determined"), never 0 %.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.ops import kineto_ops
from tbprof.analyses.ops.op_metrics import device_events
from tbprof.analyses.partial_formats import KERNEL_REPORTS_KEY
from tbprof.analyses.results.ops import KernelSlice, KernelStatsResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain import tf_op
from tbprof.domain.event_columns import factorize
from tbprof.domain.hlo_map import hlo_programs
from tbprof.domain.planes import device_planes
from tbprof.store.tables import ProfileStore
from tbprof.store.view import CarriedValue, StoreView

TENSORCORE_KERNEL_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688",
    "xmma_gemm", "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
)

# TensorCore kernels XProf 2.24.2's list lacks (Hopper and later; attention kernels).
NEWER_TENSORCORE_KERNEL_PATTERNS = ("nvjet_", "wgmma", "sm90_xmma", "sm100_xmma", "tensorop", "flash_fwd",
                                    "flash_bwd", "fmha", "_sdpa_", "gmma_")
# Kernels known to run on the SIMT cores (cuBLAS's single/double-precision and matrix-vector kernels).
_SIMT_KERNEL_PATTERNS = ("sgemm", "dgemm", "gemv", "gemmSN", "gemmk1", "_simt_", "dot_kernel")

_ELIGIBLE_SUFFIXES = ("Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D",
                      "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropFilter",
                      "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul", "/CudnnRNN",
                      "XlaDot", "XlaDotV2")
_ELIGIBLE_CONTAINS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")

# When nothing in the run matches XProf's rules, their 0 % says nothing: JAX and PyTorch ops do
# not carry TensorFlow op names, and newer GEMM kernels (cuBLASLt's nvjet_*, Triton's
# gemm_fusion_*) are not in XProf's name list, yet run on TensorCores.
TENSORCORE_UNJUDGED_NOTE = (
    "Not determined: no op or kernel of this run matches XProf's TensorCore rules (TensorFlow "
    "matmul/convolution op names, cuBLAS/cuDNN TensorCore kernel names), which do not recognise "
    "JAX or PyTorch op names nor newer GEMM kernels (nvjet, Triton); the per-kernel columns "
    "are XProf's.")

NO_GPU_MESSAGE = ("This profile has no GPU kernels: kernel statistics come from the CUDA or HIP kernel events "
                  "that the profiler records on /device:GPU:n planes (run the profiled program on a GPU "
                  "with the CUPTI or ROCm tracer enabled).")


def kernel_uses_tensorcore(kernel_name: str) -> bool:
    return any(p in kernel_name for p in TENSORCORE_KERNEL_PATTERNS)


def kernel_on_tensorcores(kernel_name: str) -> bool:
    """XProf's rule, plus the TensorCore kernels of newer GPUs (see the module docstring)."""
    return kernel_uses_tensorcore(kernel_name) or any(p in kernel_name for p in NEWER_TENSORCORE_KERNEL_PATTERNS)


def kernel_on_simt_cores(kernel_name: str) -> bool:
    return any(p in kernel_name for p in _SIMT_KERNEL_PATTERNS)


TENSORCORE_UNKNOWN_KERNELS_NOTE = (
    "Not determined: the matrix multiplies and convolutions of this run run kernels whose names say neither that "
    "they use TensorCores nor that they do not (e.g. Triton GEMMs); a 0 % would be a guess.")


def op_tensorcore_eligible(op_name: str) -> bool:
    return op_name.endswith(_ELIGIBLE_SUFFIXES) or any(p in op_name for p in _ELIGIBLE_CONTAINS)


# PyTorch operators that run matrix multiplies or convolutions, the ops TensorCores serve
# (the PyTorch counterpart of XProf's TensorFlow list above).
_TORCH_ELIGIBLE_PREFIXES = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                            "aten::einsum", "aten::conv", "aten::cudnn_conv", "aten::_conv", "aten::convolution",
                            "aten::_scaled_mm", "aten::lstm", "aten::gru", "aten::_cudnn_rnn", "aten::addbmm")


def torch_op_tensorcore_eligible(op_name: str) -> bool:
    return op_name.startswith(_TORCH_ELIGIBLE_PREFIXES)


def einsum_tensorcore_eligible(equation: str) -> bool:
    if not equation:
        return False
    parts = equation.split("->")
    return len(parts) == 2 and len(parts[0].split(",")) == 2


@dataclass(frozen=True)
class LaunchParams:
    registers_per_thread: int = 0
    static_shmem_bytes: int = 0
    dynamic_shmem_bytes: int = 0
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (1, 1, 1)
    occupancy_pct: float = 0.0


_UINT = re.compile(r"\+?[0-9]+\Z")


def parse_kernel_details(details: str) -> LaunchParams:
    """``regs:58 static_shared:0 dynamic_shared:8192 grid:128,1,1 block:128,1,1 occ_pct:50``.

    Tokens are split on spaces and newlines; unparsable tokens keep the defaults (XProf's rules).
    """
    values: dict[str, Any] = {}
    for token in re.split(r"[ \n]", details):
        kv = token.split(":")
        if len(kv) != 2:
            continue
        key, value = kv
        if key in ("regs", "static_shared", "dynamic_shared"):
            if _UINT.match(value):
                values[key] = int(value)
        elif key in ("grid", "block"):
            dims = value.split(",")
            if len(dims) == 3 and all(_UINT.match(d) for d in dims):
                values[key] = (int(dims[0]), int(dims[1]), int(dims[2]))
        elif key == "occ_pct":
            try:
                values[key] = float(value)
            except ValueError:
                pass
    return LaunchParams(values.get("regs", 0), values.get("static_shared", 0), values.get("dynamic_shared", 0),
                        values.get("grid", (1, 1, 1)), values.get("block", (1, 1, 1)), values.get("occ_pct", 0.0))


COLUMNS = [
    Column("host", "Host", "str", "", "the host whose GPUs ran the kernel"),
    Column("kernel_name", "Kernel name", "str"),
    Column("registers_per_thread", "Registers per thread", "int"),
    Column("shmem_bytes", "Shared memory", "int", "bytes", "static + dynamic shared memory per block"),
    Column("static_shmem_bytes", "Static shared memory", "int", "bytes"),
    Column("dynamic_shmem_bytes", "Dynamic shared memory", "int", "bytes"),
    Column("block_dim", "Block dim", "str", "", "x,y,z threads per block"),
    Column("grid_dim", "Grid dim", "str", "", "x,y,z blocks"),
    Column("occupancy_pct", "Theoretical occupancy", "float", "%"),
    Column("op_tensorcore_eligible", "Op is TensorCore eligible", "bool"),
    Column("kernel_uses_tensorcore", "Kernel uses TensorCore", "bool"),
    Column("op_name", "Op name", "str"),
    Column("occurrences", "Occurrences", "int"),
    Column("total_duration_us", "Total duration", "float", "us"),
    Column("avg_duration_us", "Avg duration", "float", "us"),
    Column("min_duration_us", "Min duration", "float", "us"),
    Column("max_duration_us", "Max duration", "float", "us"),
]


@dataclass
class KernelReports:
    table: Table
    kernel_count: int  # kernel events
    # op name -> (total kernel ns, TensorCore kernel ns): XProf's per-op TensorCore utilisation.
    tensorcore_by_op: dict[str, tuple[int, int]]


def kernel_reports(store: StoreView) -> KernelReports:
    return store.derive(KERNEL_REPORTS)


def _kernel_reports(store: ProfileStore) -> KernelReports:
    strings = store.strings
    programs = hlo_programs(store)
    # Per event: kernel name id, launch-params id, op-name key, eligible flag, duration (ns).
    names, params_ids, op_keys, eligible, dur_ns = [], [], [], [], []
    params_index: dict[LaunchParams, int] = {}
    params_list: list[LaunchParams] = []
    occupancy_first: list[float] = []
    op_index: dict[str, int] = {}
    op_list: list[str] = []

    def op_key(name: str) -> int:
        k = op_index.get(name)
        if k is None:
            k = op_index[name] = len(op_list)
            op_list.append(name)
        return k

    if kineto_ops.is_kineto(store):
        for kl in kineto_ops.kernel_launches(store):
            n_codes = len(kl.params)
            u_params = np.empty(n_codes, dtype=np.int64)
            u_op = np.empty(n_codes, dtype=np.int64)
            u_elig = np.empty(n_codes, dtype=bool)
            for j, (launch, op_name, nid) in enumerate(zip(kl.params, kl.op_names, kl.name_ids.tolist(), strict=True)):
                lp = LaunchParams(*launch)
                pk = params_index.get(lp)
                if pk is None:
                    pk = params_index[lp] = len(params_list)
                    params_list.append(lp)
                    occupancy_first.append(lp.occupancy_pct)
                u_params[j] = pk
                u_op[j] = op_key(op_name)
                u_elig[j] = torch_op_tensorcore_eligible(op_name) or kernel_on_tensorcores(strings[nid])
            names.append(kl.plane.name_id[kl.rows].astype(np.int64))
            params_ids.append(u_params[kl.code])
            op_keys.append(u_op[kl.code])
            eligible.append(u_elig[kl.code])
            dur_ns.append(kl.plane.dur_ps[kl.rows] // 1000)
    for dev in ([] if kineto_ops.is_kineto(store) else device_events(store)):
        plane, st = dev.plane, dev.stats
        kd = st.str_id("kernel_details")
        keep = (kd > 0) & (plane.dur_ps[dev.rows] // 1000 > 0)
        rows = dev.rows[keep]
        if rows.shape[0] == 0:
            continue
        kd, tfop, hlo, eq = kd[keep], st.str_id("tf_op")[keep], st.str_id("hlo_op")[keep], st.str_id("equation")[keep]
        prog = np.where(st.has("program_id"), st.int("program_id"), -1)[keep]
        name_id = plane.name_id[rows].astype(np.int64)
        # One decision per distinct (name, details, tf_op, hlo_op, program, equation).
        code, first = factorize(name_id, kd, tfop, hlo, prog, eq)
        u_params = np.empty(first.shape[0], dtype=np.int64)
        u_op = np.empty(first.shape[0], dtype=np.int64)
        u_elig = np.empty(first.shape[0], dtype=bool)
        combos = zip(name_id[first].tolist(), kd[first].tolist(), tfop[first].tolist(), hlo[first].tolist(),
                     prog[first].tolist(), eq[first].tolist(), strict=False)
        for j, (nid, kid, tid, hid, pid, qid) in enumerate(combos):
            lp = parse_kernel_details(strings[kid])
            pk = params_index.get(lp)
            if pk is None:
                pk = params_index[lp] = len(params_list)
                params_list.append(lp)
                occupancy_first.append(lp.occupancy_pct)
            u_params[j] = pk
            uses_tc = kernel_uses_tensorcore(strings[nid])
            op_name = ""
            elig = False
            if tid > 0:
                op_name = tf_op.parse_tf_op(strings[tid]).name
                elig = (einsum_tensorcore_eligible(strings[qid] if qid > 0 else "")
                        or op_tensorcore_eligible(op_name) or uses_tc)
            if hid > 0 and pid >= 0:
                program = programs.get(pid)
                hlo_op = program.op(strings[hid].rsplit("::", 1)[-1]) if program else None
                if hlo_op is not None:
                    op_name = tf_op.parse_tf_op(hlo_op.provenance).name if hlo_op.provenance else ""
                    elig = op_tensorcore_eligible(op_name) or elig
            u_op[j] = op_key(op_name)
            u_elig[j] = elig
        names.append(name_id)
        params_ids.append(u_params[code])
        op_keys.append(u_op[code])
        eligible.append(u_elig[code])
        dur_ns.append(plane.dur_ps[rows] // 1000)
    if not names:
        empty = Table.from_columns(COLUMNS, {c.name: [] for c in COLUMNS}, default_sort="total_duration_us")
        return KernelReports(empty, 0, {})
    name_a = np.concatenate(names)
    par_a = np.concatenate(params_ids)
    op_a = np.concatenate(op_keys)
    elig_a = np.concatenate(eligible)
    ns_a = np.concatenate(dur_ns)
    inv, first_row = factorize(name_a, par_a, op_a, elig_a.astype(np.int64))
    keys = np.stack([name_a[first_row], par_a[first_row], op_a[first_row], elig_a[first_row].astype(np.int64)], axis=1)
    k = keys.shape[0]
    occ = np.bincount(inv, minlength=k).astype(np.int64)
    total = np.bincount(inv, weights=ns_a.astype(np.float64), minlength=k).round().astype(np.int64)
    mins = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    maxs = np.zeros(k, dtype=np.int64)
    np.minimum.at(mins, inv, ns_a)
    np.maximum.at(maxs, inv, ns_a)
    kname = strings.lookup(keys[:, 0])
    lps = [params_list[i] for i in keys[:, 1].tolist()]
    opn = [op_list[i] for i in keys[:, 2].tolist()]
    uses = np.array([kernel_uses_tensorcore(x) for x in kname], dtype=bool)
    elig_k = keys[:, 3].astype(bool)
    # XProf's order: total duration descending, then the report key ascending.
    sort_key = [(-int(t), nm, lp.grid, lp.block, lp.registers_per_thread, lp.static_shmem_bytes,
                 lp.dynamic_shmem_bytes, bool(u), bool(e), o)
                for t, nm, lp, u, e, o in zip(total.tolist(), kname, lps, uses.tolist(), elig_k.tolist(), opn,
                                              strict=False)]
    order = np.array(sorted(range(k), key=sort_key.__getitem__), dtype=np.int64)
    values: dict[str, Any] = {
        "host": [store.host] * k,
        "kernel_name": [kname[i] for i in order],
        "registers_per_thread": [lps[i].registers_per_thread for i in order],
        "shmem_bytes": [lps[i].static_shmem_bytes + lps[i].dynamic_shmem_bytes for i in order],
        "static_shmem_bytes": [lps[i].static_shmem_bytes for i in order],
        "dynamic_shmem_bytes": [lps[i].dynamic_shmem_bytes for i in order],
        "block_dim": [",".join(map(str, lps[i].block)) for i in order],
        "grid_dim": [",".join(map(str, lps[i].grid)) for i in order],
        "occupancy_pct": [occupancy_first[keys[i, 1]] for i in order],
        "op_tensorcore_eligible": elig_k[order],
        "kernel_uses_tensorcore": uses[order],
        "op_name": [opn[i] for i in order],
        "occurrences": occ[order],
        "total_duration_us": total[order] / 1e3,
        "avg_duration_us": (total[order] // occ[order]) / 1e3,
        "min_duration_us": mins[order] / 1e3,
        "max_duration_us": maxs[order] / 1e3,
    }
    table = Table.from_columns(COLUMNS, values, default_sort="total_duration_us")
    tc: dict[str, tuple[int, int]] = {}
    on_tc = [kernel_on_tensorcores(x) for x in kname]
    for o, t, u in zip(opn, total.tolist(), on_tc, strict=False):
        tot, tcns = tc.get(o, (0, 0))
        tc[o] = (tot + t, tcns + (t if u else 0))
    return KernelReports(table, int(ns_a.shape[0]), tc)


def _pie(table: Table, limit: int = 10) -> list[KernelSlice]:
    """Total time per kernel name, largest first; the rest merged into "Other (N)" (N names)."""
    if table.n_rows == 0:
        return []
    names = table.data["kernel_name"].astype(str)
    uniq, inv = np.unique(names, return_inverse=True)
    tot = np.bincount(inv.reshape(-1), weights=table.data["total_duration_us"], minlength=uniq.shape[0])
    order = np.argsort(-tot, kind="stable")
    out: list[KernelSlice] = [{"name": str(uniq[i]), "total_duration_us": float(tot[i])} for i in order[:limit]]
    if order.shape[0] > limit:
        out.append({"name": f"Other ({order.shape[0] - limit})", "total_duration_us": float(tot[order[limit:]].sum())})
    return out


def tensorcore_by_op(stores: Sequence[StoreView]) -> dict[str, tuple[int, int]]:
    """op name -> (kernel time, TensorCore kernel time) over the hosts' GPU kernels."""
    merged: dict[str, tuple[int, int]] = {}
    for s in stores:
        for op, (total_ns, tc_ns) in kernel_reports(s).tensorcore_by_op.items():
            a, b = merged.get(op, (0, 0))
            merged[op] = (a + total_ns, b + tc_ns)
    return merged


def hosts_table(stores: Sequence[StoreView]) -> Table:
    """The kernel tables of several hosts as one: XProf's all-hosts kernel stats keep one row
    per host and kernel (the same kernel on two hosts is two rows), by total duration."""
    tables = [kernel_reports(s).table for s in stores]
    if len(tables) == 1:
        return tables[0]
    data = {c.name: np.concatenate([t.data[c.name] for t in tables]) for c in COLUMNS}
    host_idx = np.concatenate([np.full(t.n_rows, i) for i, t in enumerate(tables)])
    rank = np.concatenate([np.arange(t.n_rows) for t in tables])
    order = np.lexsort((rank, host_idx, -data["total_duration_us"]))
    return Table.from_columns(COLUMNS, {k: v[order] for k, v in data.items()}, default_sort="total_duration_us")


def tensorcore_judged(table: Table) -> bool:
    """Whether XProf's TensorCore rules recognise any kernel or op of ``table`` (a kernels
    table): only then are its TensorCore shares a statement about the run."""
    return table.n_rows > 0 and bool(table.data["op_tensorcore_eligible"].any()
                                     or table.data["kernel_uses_tensorcore"].any())


def _on_tensorcores(table: Table) -> np.ndarray:
    return np.array([kernel_on_tensorcores(str(n)) for n in table.data["kernel_name"]], dtype=bool)


def tensorcore_undetermined_note(table: Table) -> str:
    """Why a table's TensorCore shares are not determined ("" when they are): no kernel or op is
    recognised, or no matrix kernel is known to use TensorCores while some are known neither way."""
    if table.n_rows == 0:
        return ""
    on_tc = _on_tensorcores(table)
    if not (tensorcore_judged(table) or on_tc.any()):
        return TENSORCORE_UNJUDGED_NOTE
    eligible = table.data["op_tensorcore_eligible"].astype(bool) | on_tc
    unknown = [not kernel_on_simt_cores(str(n)) for n in table.data["kernel_name"][eligible & ~on_tc]]
    if not on_tc.any() and any(unknown):
        return TENSORCORE_UNKNOWN_KERNELS_NOTE
    return ""


def tensorcore_rules_match(stores: Sequence[StoreView]) -> bool:
    """Whether the hosts' TensorCore use is determined (``tensorcore_undetermined_note`` is empty)."""
    return any(kernel_reports(s).table.n_rows for s in stores) and not any(
        tensorcore_undetermined_note(kernel_reports(s).table) for s in stores if kernel_reports(s).table.n_rows)


def compute(stores: Sequence[StoreView], options: Mapping[str, Any]) -> KernelStatsResult:
    table = hosts_table(stores)
    total_us = float(table.data["total_duration_us"].sum()) if table.n_rows else 0.0
    on_tc = _on_tensorcores(table) if table.n_rows else np.zeros(0, bool)
    eligible = table.data["op_tensorcore_eligible"].astype(bool) | on_tc if table.n_rows else on_tc
    tc_us = float(table.data["total_duration_us"][on_tc].sum()) if table.n_rows else 0.0
    eligible_us = float(table.data["total_duration_us"][eligible].sum()) if table.n_rows else 0.0
    out: KernelStatsResult = {
        "schema_version": SCHEMA_VERSION,
        "tool": "kernel_stats",
        "host": stores[0].host if len(stores) == 1 else None,
        "hosts": [s.host for s in stores],
        "has_gpu_kernels": table.n_rows > 0,
        "kernel_event_count": sum(kernel_reports(s).kernel_count for s in stores),
        "row_count": table.n_rows,
        "total_duration_us": total_us,
        "tensorcore_duration_us": tc_us,
        "tensorcore_eligible_duration_us": eligible_us,
        # Shares of kernel time, XProf's rules; null when the rules recognise nothing here.
        "tensorcore_fraction": None, "tensorcore_eligible_fraction": None, "tensorcore_note": "",
        "pie_by_kernel": _pie(table),
        "tables": {"kernels": table},
    }
    note = tensorcore_undetermined_note(table)
    if table.n_rows and not note and total_us > 0:
        out["tensorcore_fraction"] = tc_us / total_us
        out["tensorcore_eligible_fraction"] = eligible_us / total_us
    elif table.n_rows:
        out["tensorcore_note"] = note or TENSORCORE_UNJUDGED_NOTE
    if table.n_rows == 0:
        out["message"] = NO_GPU_MESSAGE
    return out


TOOLS = (
    Tool(
        name="kernel_stats", title="GPU kernel stats", compute=compute, compute_partials=compute, multi_host=True,
        few_planes=True,
        aliases=("pytorch_kernel_stats",),  # an id old links and scripts use; goes at the next release
        available=lambda store: any(p.name.startswith("/device:GPU") for p in device_planes(store)),
        description="Every GPU kernel launch configuration: time, occupancy, TensorCore use, op.",
        result=KernelStatsResult, needs=frozenset({"devices"}),
        requires="GPU kernel launches (a /device:GPU:N plane with kernel events).",
        how_to=(
            "Profile on a machine with a GPU and the CUDA profiling library (CUPTI) available.",
            "CPU-only runs have no kernels: use TensorFlow stats or the trace viewer instead.",
            rec.TORCH_TRACE,
        ),
    ),
)


# A host's kernel reports as a derived value (store/view.py; analyses/partials.py carries it).
KERNEL_REPORTS: CarriedValue[KernelReports] = CarriedValue(KERNEL_REPORTS_KEY, _kernel_reports)
