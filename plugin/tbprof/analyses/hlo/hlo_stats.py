"""hlo_stats: one row per HLO op, as XProf's "HLO Op Stats" tool.

The rows are the device side of the op metrics (``ops/op_metrics.py``), keyed as XProf keys
them (``host_hlo_ops``: a kernel's op by module name and op name, a copy's by program), summed
over the hosts, ranked by total self time. Rates use the op's total
time: ``model_flop_rate`` = FLOPs / time in GFLOP/s (10^9 FLOP/s), ``measured_memory_bw`` =
bytes accessed / time and ``hbm_bw`` = the HBM part of them / time, both in GiB/s (2^30
bytes/s) as XProf prints them; ``operational_intensity`` = FLOPs / bytes accessed;
``bound_by`` is ``domain/roofline.bound_by``. Percentages are of the device time span of the
hosts (idle included), as XProf divides by its op metrics' total time. Column names are
XProf's DataTable ids; formulas: docs/formulas.md "HLO op stats".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.ops.op_metrics import (
    OpMetricsDb,
    combine,
    device_events,
    device_op_events,
    device_op_metrics,
)
from tbprof.analyses.results.hlo import CategoryTime, HloStatsResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.domain import roofline
from tbprof.domain.hlo_map import HloProgram, hlo_programs, program_id_text
from tbprof.domain.hlo_text import instruction_text, source_frames
from tbprof.domain.planes import device_planes_of
from tbprof.store.tables import ProfileStore

PS_PER_US = 1e6
BYTES_PER_GIB = float(2**30)
NO_DEVICE_MESSAGE = ("No HLO ops: this profile has no XLA device ops (a CPU-only profile, or a GPU "
                     "profile of TensorFlow ops that XLA did not compile).")


@dataclass
class HloOpRates:
    """Per device op: the op metrics plus the derived rates (parallel arrays, rank order)."""

    db: OpMetricsDb
    order: np.ndarray  # indices into db, by total self time (descending), then name
    model_flop_rate: np.ndarray  # GFLOP/s over the op's total time
    measured_memory_bw: np.ndarray  # GiB/s, all bytes accessed
    hbm_bw: np.ndarray  # GiB/s, the HBM bytes
    operational_intensity: np.ndarray  # FLOP per byte accessed
    hbm_operational_intensity: np.ndarray  # FLOP per HBM byte
    bound_by: np.ndarray  # "Compute", "HBM", "Shm/L1", "Unknown"
    env: roofline.PerfEnv


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def merge_ops(db: OpMetricsDb, keys: list[Any]) -> OpMetricsDb:
    """Rows with equal ``keys`` as one row, as XProf keys its HLO op metrics: the row keeps the
    program, category and framework op of its op with the most self time and, as XProf prices
    an op per occurrence from one HLO instruction, that op's FLOPs and bytes per occurrence
    times the merged occurrences; times and occurrences are summed."""
    if db.n_ops == 0:
        return db
    index: dict[Any, int] = {}
    inv = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    n = len(index)
    if n == db.n_ops:
        return db
    # The representative of each key: most self time, then first in table order.
    rep_order = np.lexsort((np.arange(db.n_ops), -db.self_time_ps, inv))
    first = np.ones(rep_order.shape[0], dtype=bool)
    first[1:] = inv[rep_order][1:] != inv[rep_order][:-1]
    rep = rep_order[first]  # one row index per key, in key order

    def total(col: np.ndarray) -> np.ndarray:
        return np.bincount(inv, weights=col.astype(np.float64), minlength=n)

    occurrences = total(db.occurrences)
    scale = occurrences / np.maximum(db.occurrences[rep], 1)
    return OpMetricsDb(
        name=db.name[rep], type=db.type[rep], provenance=db.provenance[rep], program_id=db.program_id[rep],
        occurrences=occurrences.astype(np.int64), time_ps=total(db.time_ps).astype(np.int64),
        self_time_ps=total(db.self_time_ps).astype(np.int64), flops=db.flops[rep] * scale,
        bytes_accessed=db.bytes_accessed[rep] * scale, is_eager=total(db.is_eager) > 0,
        total_time_ps=db.total_time_ps, hbm_bytes=db.hbm[rep] * scale)


_COPY_PREFIXES = ("Memcpy", "Memset")


def host_hlo_ops(store: ProfileStore) -> OpMetricsDb:
    """One host's HLO ops as XProf counts them (memoised): a kernel's op is keyed by its module
    *name* and op name, so programs compiled twice under one name (two ``jit__normal``) share
    their ops, while an op that runs as a memory copy (``MemcpyD2D`` events, e.g.
    ``wrapped_slice``) is keyed by its program id, as observed in XProf 2.24.2's output."""
    return store.memo(("hlo_stats", "ops"), lambda: _host_hlo_ops(store))


def _host_hlo_ops(store: ProfileStore) -> OpMetricsDb:
    db = device_op_metrics(store)
    if db.n_ops == 0:
        return db
    ev = device_op_events(store)
    # An op runs either as kernels or as copies: its first event says which.
    first = np.full(db.n_ops, -1, dtype=np.int64)
    first[ev.op[::-1]] = np.arange(ev.op.shape[0] - 1, -1, -1)
    planes = [dev.plane for dev in device_events(store)]
    copy_op = np.zeros(db.n_ops, dtype=bool)
    for k in np.flatnonzero(first >= 0).tolist():
        e = int(first[k])
        plane = planes[int(ev.plane_index[e])]
        copy_op[k] = store.strings[int(plane.name_id[int(ev.row[e])])].startswith(_COPY_PREFIXES)
    programs = hlo_programs(store)
    keys: list[Any] = []
    for name, pid, copy in zip(db.name.tolist(), db.program_id.tolist(), copy_op.tolist(), strict=True):
        program = programs.get(pid)
        keys.append(("program", pid, name) if copy or program is None else ("module", program.module_name, name))
    return merge_ops(db, keys)


def op_rates(stores: Sequence[ProfileStore]) -> HloOpRates:
    db = combine([host_hlo_ops(s) for s in stores])
    order = np.lexsort((db.name.astype(str), -db.self_time_ps)) if db.n_ops else np.zeros(0, dtype=np.int64)
    time_s = db.time_ps.astype(np.float64) / 1e12
    env = roofline.perf_env(stores)
    return HloOpRates(
        db=db, order=order,
        model_flop_rate=_div(db.flops, time_s) / 1e9,
        measured_memory_bw=_div(db.bytes_accessed, time_s) / BYTES_PER_GIB,
        hbm_bw=_div(db.hbm, time_s) / BYTES_PER_GIB,
        operational_intensity=_div(db.flops, db.bytes_accessed),
        hbm_operational_intensity=_div(db.flops, db.hbm),
        bound_by=roofline.bound_by(env, db.flops, db.hbm, db.time_ps),
        env=env,
    )


def programs_of(stores: Sequence[ProfileStore]) -> dict[int, HloProgram]:
    """program id -> program over the hosts (a program id is the module's fingerprint)."""
    out: dict[int, HloProgram] = {}
    for s in stores:
        for pid, program in hlo_programs(s).items():
            out.setdefault(pid, program)
    return out


def device_count(stores: Sequence[ProfileStore]) -> int:
    return sum(len(device_planes_of(s)) for s in stores)


class _Texts:
    """HLO text and source of ops, with one id index per program built on first use."""

    def __init__(self, programs: dict[int, HloProgram]) -> None:
        self.programs = programs
        self._by_id: dict[int, dict[int, Any]] = {}

    def _index(self, program: HloProgram) -> dict[int, Any]:
        idx = self._by_id.get(program.program_id)
        if idx is None:
            idx = {}
            if program.module is not None:
                for comp in program.module.computations:
                    for ins in comp.instructions:
                        idx[ins.id] = ins
            self._by_id[program.program_id] = idx
        return idx

    def of(self, program_id: int, name: str) -> tuple[str, str]:
        program = self.programs.get(program_id)
        if program is None:
            return "", ""
        ins = program.instruction(name)
        if ins is None:
            return "", ""
        frames = source_frames(program.module, ins.metadata, max_frames=1)
        return instruction_text(ins, self._index(program)), frames[0] if frames else ""


COLUMNS = [
    Column("rank", "Rank", "int"),
    Column("program_id", "Program id", "str"),
    Column("category", "HLO op category", "str"),
    Column("hlo_op_name", "HLO op name", "str"),
    Column("hlo_op_expression", "HLO op text", "str", "", "the instruction as XLA prints it (attributes omitted)"),
    Column("tf_op_name", "Framework op name", "str"),
    Column("occurrences", "#Occurrences", "int"),
    Column("total_time", "Total time", "float", "us"),
    Column("avg_time", "Avg. time", "float", "us"),
    Column("total_self_time", "Total self time", "float", "us"),
    Column("avg_self_time", "Avg. self time", "float", "us"),
    Column("total_self_time_percent", "Total self time", "float", "%", "share of the device time (idle included)"),
    Column("cumulative_total_self_time_percent", "Cumulative total self time", "float", "%"),
    Column("model_flop_rate", "Model GFLOP/s", "float", "GFLOP/s"),
    Column("measured_memory_bw", "Measured memory BW", "float", "GiB/s", "all bytes accessed / total time"),
    Column("hbm_bw", "HBM BW", "float", "GiB/s"),
    Column("operational_intensity", "Operational intensity", "float", "FLOP/byte"),
    Column("bound_by", "Bound by", "str"),
    Column("source_info", "Source info", "str", "", "file:line of the op in the program's source"),
]


def hlo_table(stores: Sequence[ProfileStore], rates: HloOpRates | None = None) -> Table:
    r = rates or op_rates(stores)
    db, o = r.db, r.order
    total_ps = float(db.total_time_ps) or 1.0
    occ = db.occurrences[o].astype(np.float64)
    self_pct = db.self_time_ps[o] / total_ps * 100.0
    texts = _Texts(programs_of(stores))
    pairs = [texts.of(int(p), str(n)) for p, n in zip(db.program_id[o].tolist(), db.name[o].tolist(), strict=True)]
    values: dict[str, Any] = {
        "rank": np.arange(1, o.shape[0] + 1),
        "program_id": [program_id_text(p) for p in db.program_id[o].tolist()],
        "category": db.type[o],
        "hlo_op_name": db.name[o],
        "hlo_op_expression": [p[0] for p in pairs],
        "tf_op_name": db.provenance[o],
        "occurrences": db.occurrences[o],
        "total_time": db.time_ps[o] / PS_PER_US,
        "avg_time": _div(db.time_ps[o] / PS_PER_US, occ),
        "total_self_time": db.self_time_ps[o] / PS_PER_US,
        "avg_self_time": _div(db.self_time_ps[o] / PS_PER_US, occ),
        "total_self_time_percent": self_pct,
        "cumulative_total_self_time_percent": np.cumsum(self_pct),
        "model_flop_rate": r.model_flop_rate[o],
        "measured_memory_bw": r.measured_memory_bw[o],
        "hbm_bw": r.hbm_bw[o],
        "operational_intensity": r.operational_intensity[o],
        "bound_by": r.bound_by[o],
        "source_info": [p[1] for p in pairs],
    }
    return Table.from_columns(COLUMNS, values, default_sort="total_self_time")


def _by_category(table: Table) -> list[CategoryTime]:
    if table.n_rows == 0:
        return []
    cats, inv = np.unique(table.data["category"].astype(str), return_inverse=True)
    tot = np.bincount(inv.reshape(-1), weights=table.data["total_self_time"], minlength=cats.shape[0])
    order = np.argsort(-tot, kind="stable")
    return [{"category": str(cats[i]), "total_self_time_us": float(tot[i])} for i in order]


def has_hlo_ops(store: ProfileStore) -> bool:
    return bool(hlo_programs(store)) and bool(device_planes_of(store))


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> HloStatsResult:
    rates = op_rates(stores)
    table = hlo_table(stores, rates)
    top = min(10, table.n_rows)
    out: HloStatsResult = {
        "schema_version": SCHEMA_VERSION, "tool": "hlo_stats",
        "host": stores[0].host if len(stores) == 1 else None, "hosts": [s.host for s in stores],
        "op_count": table.n_rows,
        "device_count": device_count(stores),
        "total_time_us": rates.db.total_time_ps / PS_PER_US,
        "total_self_time_us": float(table.data["total_self_time"].sum()) if table.n_rows else 0.0,
        "self_time_by_category": _by_category(table),
        "top_ops_by_self_time": [
            {"hlo_op_name": str(table.data["hlo_op_name"][i]), "program_id": str(table.data["program_id"][i]),
             "total_self_time_us": float(table.data["total_self_time"][i])} for i in range(top)],
        "tables": {"hlo_ops": table},
    }
    if table.n_rows == 0:
        out["message"] = NO_DEVICE_MESSAGE
    return out


TOOLS = (
    Tool(
        name="hlo_stats", title="HLO op stats", compute=compute, multi_host=True, available=has_hlo_ops,
        few_planes=True,
        description="One row per HLO op: occurrences, total and self time, FLOP rate, bandwidth, bound by.",
    ),
)
