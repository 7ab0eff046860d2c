"""Per-host partials: what the all-hosts tools need of one store, small and JSON-able.

An all-hosts tool (overview, input pipeline, op and kernel stats, pod viewer, ``tbprof
summary``) combines per-host derived values (the step assignment, the op tables, the kernel
reports) and a little plane metadata; it never reads events across hosts. So a worker that has
just converted a host computes those values once (``build_partial``), hands them to the server
as plain JSON (no pickle), and the server runs the *unchanged* tool over ``HostPartial``
stand-ins instead of full stores: the combination is the tool's own code, so the all-hosts
answer from partials is the store path's answer (``tests/service/test_partials.py`` checks that
every covered tool's JSON is identical).

A ``HostPartial`` answers ``memo`` only for the keys in ``CARRIED``; a tool that asks for
anything else raises ``MissingPartial`` and the service falls back to the stores. One partial
per host serves every covered tool at any options (the options select among values the partial
holds), so the server keys partials by host cache key only.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from tbprof.analyses.gpu import breakdown as gpu_breakdown
from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import op_metrics, precision
from tbprof.analyses.ops.kernel_stats import KERNEL_REPORTS_KEY, KernelReports, kernel_reports
from tbprof.analyses.ops.op_metrics import OpMetricsDb
from tbprof.analyses.pages.profile_summary import summarize_store
from tbprof.analyses.steps.assignment import STEPS_KEY, Steps, steps_of
from tbprof.analyses.table import Column, Table
from tbprof.store.tables import ProfileStore

# Bumped when what a partial holds, or how a carried value is computed, changes: a persisted
# partial of another version is ignored (recomputed from the store).
PARTIAL_VERSION = 3  # 2: the memory digests compare reads; 3: the overview's precision facts

# Tools that run on partials when every host of an all-hosts request has one (XSpace runs).
PARTIAL_TOOLS = frozenset({"overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats",
                           "pod_viewer"})
PARTIAL_FORMATS = frozenset({"xspace"})

T = TypeVar("T")


class MissingPartial(LookupError):
    """A tool asked a partial for a derived value it does not carry (use the stores)."""


# --- arrays and dataclasses as JSON --------------------------------------------------------

def pack_array(a: np.ndarray) -> dict[str, Any]:
    """An array as JSON with its dtype and shape. float64 survives exactly (``repr`` round-trips;
    NaN/inf as JSON's non-standard NaN/Infinity, which Python's json reads back)."""
    a = np.asarray(a)
    return {"dtype": "object" if a.dtype == object else a.dtype.str, "shape": list(a.shape),
            "data": a.reshape(-1).tolist()}


def unpack_array(d: dict[str, Any]) -> np.ndarray:
    shape = tuple(d["shape"])
    if d["dtype"] == "object":
        out = np.empty(len(d["data"]), dtype=object)
        out[:] = d["data"]
        return out.reshape(shape)
    return np.array(d["data"], dtype=np.dtype(d["dtype"])).reshape(shape)


def _pack_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"__array__": pack_array(v)}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {"__dict__": [[k, _pack_value(x)] for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"__tuple__": [_pack_value(x) for x in v]}
    if isinstance(v, list):
        return [_pack_value(x) for x in v]
    if isinstance(v, bytes):
        return {"__bytes__": base64.b64encode(v).decode("ascii")}
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError(f"a partial cannot hold a {type(v).__name__}")


def _unpack_value(v: Any) -> Any:
    if isinstance(v, list):
        return [_unpack_value(x) for x in v]
    if isinstance(v, dict):
        if "__array__" in v:
            return unpack_array(v["__array__"])
        if "__bytes__" in v:
            return base64.b64decode(v["__bytes__"])
        if "__tuple__" in v:
            return tuple(_unpack_value(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k if not isinstance(k, list) else tuple(k): _unpack_value(x) for k, x in v["__dict__"]}
    return v


def _pack_fields(obj: Any, names: Sequence[str]) -> dict[str, Any]:
    return {n: _pack_value(getattr(obj, n)) for n in names}


def _unpack_fields(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _unpack_value(v) for k, v in d.items()}


# --- the carried values ----------------------------------------------------------------------

# What the all-hosts tools read of a step assignment. Not carried: the planes and the per-event
# step maps (``event_step``), which only single-host tools use; a HostPartial's Steps have none.
_STEPS_FIELDS = ("source", "method", "detail", "diagnosis", "has_device", "names", "step_nums", "begin_ps",
                 "end_ps", "type_ps", "device_planes", "per_device_type_ps", "dropped_boundary_steps",
                 "candidate_count", "notes")
_DB_FIELDS = tuple(f.name for f in dataclasses.fields(OpMetricsDb))


def _pack_steps(s: Steps) -> dict[str, Any]:
    return _pack_fields(s, _STEPS_FIELDS)


def _unpack_steps(d: dict[str, Any]) -> Steps:
    return Steps(**_unpack_fields(d))


def _pack_db(db: OpMetricsDb) -> dict[str, Any]:
    return _pack_fields(db, _DB_FIELDS)


def _unpack_db(d: dict[str, Any]) -> OpMetricsDb:
    return OpMetricsDb(**_unpack_fields(d))


def _pack_table(t: Table) -> dict[str, Any]:
    return {"columns": [dataclasses.asdict(c) for c in t.columns], "data": _pack_value(t.data),
            "default_sort": t.default_sort, "default_desc": t.default_desc, "meta": _pack_value(t.meta)}


def _unpack_table(d: dict[str, Any]) -> Table:
    return Table(columns=[Column(**c) for c in d["columns"]], data=_unpack_value(d["data"]),
                 default_sort=d["default_sort"], default_desc=d["default_desc"], meta=_unpack_value(d["meta"]))


def _pack_kernels(k: KernelReports) -> dict[str, Any]:
    return {"table": _pack_table(k.table), "kernel_count": k.kernel_count,
            "tensorcore_by_op": [[op, int(a), int(b)] for op, (a, b) in k.tensorcore_by_op.items()]}


def _unpack_kernels(d: dict[str, Any]) -> KernelReports:
    return KernelReports(_unpack_table(d["table"]), int(d["kernel_count"]),
                         {op: (a, b) for op, a, b in d["tensorcore_by_op"]})


MEMORY_DIGESTS_KEY = ("tbprof.partials.memory_digests", 1)
# What compare reads of a host's memory_profile result, per allocator (not the timeline).
_DIGEST_KEYS = ("host", "memory_ids", "allocators", "memory_id")


def memory_digests(store: ProfileStore) -> list[dict[str, Any]]:
    """memory_profile's result for each allocator of the host at the default options, as far
    as compare reads it: the allocators' summaries and the breakdown at the peak. The tool
    itself computes them (a 2-point timeline, dropped), so the digests are its numbers."""
    first = memory_profile.compute([store], {"max_points": 2})
    ids = list(first.get("memory_ids") or [])
    results = [first] + [memory_profile.compute([store], {"memory_id": m, "max_points": 2}) for m in ids[1:]]
    out = []
    for r in results:
        digest = {k: r.get(k) for k in _DIGEST_KEYS}
        breakdown = (r.get("tables") or {}).get("breakdown")
        digest["tables"] = {"breakdown": breakdown} if isinstance(breakdown, Table) else {}
        out.append(digest)
    return out


def _pack_digests(digests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"digests": [{**{k: _pack_value(d[k]) for k in _DIGEST_KEYS},
                         "breakdown": _pack_table(d["tables"]["breakdown"]) if d["tables"] else None}
                        for d in digests]}


def _unpack_digests(packed: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**{k: _unpack_value(d[k]) for k in _DIGEST_KEYS},
             "tables": {"breakdown": _unpack_table(d["breakdown"])} if d["breakdown"] is not None else {}}
            for d in packed["digests"]]


@dataclass(frozen=True)
class Carried:
    """One derived value a partial carries: its memo key, how a store computes it, and its JSON form."""

    name: str
    key: Hashable
    compute: Callable[[ProfileStore], Any]
    pack: Callable[[Any], dict[str, Any]]
    unpack: Callable[[dict[str, Any]], Any]


CARRIED: tuple[Carried, ...] = (
    Carried("steps", STEPS_KEY, steps_of, _pack_steps, _unpack_steps),
    Carried("host_ops", op_metrics.HOST_KEY, op_metrics.host_op_metrics, _pack_db, _unpack_db),
    Carried("device_ops", op_metrics.DEVICE_KEY, op_metrics.device_op_metrics, _pack_db, _unpack_db),
    Carried("kernel_reports", KERNEL_REPORTS_KEY, kernel_reports, _pack_kernels, _unpack_kernels),
    # ``tbprof summary``'s GPU fields: (has device activity, idle % per GPU, communication % per GPU).
    Carried("gpu_summary", gpu_breakdown.SUMMARY_VALUES_KEY, gpu_breakdown.summary_values,
            lambda v: {"active": bool(v[0]), "idle": list(v[1]), "comm": list(v[2])},
            lambda d: (bool(d["active"]), list(d["idle"]), list(d["comm"]))),
    # The overview's device compute precision (HLO element types, tensor shapes present).
    Carried("precision", precision.HOST_PRECISION_KEY, precision.host_precision, dataclasses.asdict,
            lambda d: precision.HostPrecision(**d)),
    # compare's memory section of a pod (service/comparisons.py).
    Carried("memory_digests", MEMORY_DIGESTS_KEY, memory_digests, _pack_digests, _unpack_digests),
)


# --- the stand-in store ------------------------------------------------------------------------

@dataclass(frozen=True)
class PlaneInfo:
    """A plane without its events: what the all-hosts tools read of it."""

    name: str
    n_events: int
    plane_stats: dict[str, Any]


@dataclass
class HostPartial:
    """One host as the all-hosts tools see it: plane metadata and the carried derived values."""

    host: str
    format: str
    source_path: str
    span_ps: int
    hostnames: list[str]
    errors: list[str]
    warnings: list[str]
    metadata: dict[str, Any]
    planes: list[PlaneInfo]
    summary: dict[str, Any]  # summarize_store of the host (``tbprof summary``)
    available_tools: list[str]  # tools with data for this host (the run's tool list)
    memos: dict[Hashable, Any] = field(default_factory=dict)

    @property
    def n_events(self) -> int:
        return sum(p.n_events for p in self.planes)

    def memo(self, key: Hashable, compute: Callable[[], T], size: Callable[[T], int] | None = None) -> T:
        """The carried value of ``key`` (as ``ProfileStore.memo``); MissingPartial for any other."""
        try:
            value: T = self.memos[key]
        except KeyError:
            raise MissingPartial(f"the partial of host {self.host!r} does not carry {key!r}") from None
        return value


def build_partial(store: ProfileStore, available_tools: Sequence[str]) -> dict[str, Any]:
    """The JSON partial of one store (computes, or takes from the store's memo, every carried value)."""
    return {
        "version": PARTIAL_VERSION,
        "host": store.host, "format": store.format, "source_path": store.source_path, "span_ps": int(store.span_ps),
        "hostnames": list(store.hostnames), "errors": list(store.errors), "warnings": list(store.warnings),
        "metadata": _pack_value(store.metadata),
        "planes": [{"name": p.name, "n_events": int(p.n_events), "plane_stats": _pack_value(dict(p.plane_stats))}
                   for p in store.planes],
        "summary": summarize_store(store),
        "available_tools": list(available_tools),
        "carried": {c.name: c.pack(c.compute(store)) for c in CARRIED},
    }


def partial_from_json(d: dict[str, Any]) -> HostPartial:
    """A HostPartial from ``build_partial``'s JSON (ValueError if it is of another version)."""
    if d.get("version") != PARTIAL_VERSION:
        raise ValueError(f"partial version {d.get('version')!r}, expected {PARTIAL_VERSION}")
    return HostPartial(
        host=d["host"], format=d["format"], source_path=d["source_path"], span_ps=int(d["span_ps"]),
        hostnames=list(d["hostnames"]), errors=list(d["errors"]), warnings=list(d["warnings"]),
        metadata=_unpack_value(d["metadata"]),
        planes=[PlaneInfo(p["name"], int(p["n_events"]), _unpack_value(p["plane_stats"])) for p in d["planes"]],
        summary=d["summary"], available_tools=list(d["available_tools"]),
        memos={c.key: c.unpack(d["carried"][c.name]) for c in CARRIED})
