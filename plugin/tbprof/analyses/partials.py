"""Per-host partials: what the all-hosts tools need of one store, small and binary.

An all-hosts tool (overview, input pipeline, op and kernel stats, pod viewer, ``tbprof
summary``) combines per-host derived values (the step assignment, the op tables, the kernel
reports) and a little plane metadata; it never reads events across hosts. So a worker that has
just converted a host computes those values once (``build_partial``), hands them to the server
in a compact binary form (``encode_partials``: a JSON header and the numeric arrays' raw bytes;
no pickle), and the server runs the *unchanged* tool over ``HostPartial``
stand-ins instead of full stores: the combination is the tool's own code, so the all-hosts
answer from partials is the store path's answer (``tests/service/test_partials.py`` checks that
every covered tool's JSON is identical).

A ``HostPartial`` is a ``StoreView`` (store/view.py): plane metadata, and ``derive`` of the
derived values in ``CARRIED``. The covered tools are those whose ``Tool.compute_partials`` is
set, a compute typed on ``Sequence[StoreView]``, so mypy refuses one that reads what a partial
lacks; the service gives them partials and every other tool stores, chosen up front. One partial
per host serves every covered tool at any options (the options select among values the partial
holds), so the server keys partials by host cache key only.

A pod's hosts convert in batches (service/executor.py), and a batch's worker also combines what
the all-hosts tools sum over hosts, the op tables (``combine_partials``): the server then merges
one table per batch instead of one per host (``PodPartials``; ``op_metrics.combine`` is
associative over contiguous runs of hosts, which the tests check on real pods).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
import zlib
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from tbprof.analyses.gpu import shares as gpu_shares
from tbprof.analyses.ops import op_metrics
from tbprof.analyses.ops.op_metrics import OpMetricsDb
from tbprof.analyses.partial_formats import HOST_PRECISION_KEY, KERNEL_REPORTS_KEY, PARTIAL_FORMATS, PARTIAL_VERSION
from tbprof.analyses.steps.assignment import STEPS, Steps
from tbprof.domain.planes import device_counts
from tbprof.store.tables import ProfileStore
from tbprof.store.view import CarriedValue

if TYPE_CHECKING:
    # The analyses of the parts a pod's summary does not read (kernels, precision, memory, their
    # tables) are imported where a value is computed or decoded, not with this module: a pod's
    # worker that computes only the headline's parts imports ~25 modules fewer before its first
    # host (bench/measurements.md#services).
    from tbprof.analyses.ops.kernel_stats import KernelReports
    from tbprof.analyses.ops.precision import HostPrecision
    from tbprof.analyses.table import Table

__all__ = ["PARTIAL_FORMATS", "PARTIAL_VERSION"]  # and the rest of this module

T = TypeVar("T")


# --- arrays and dataclasses as JSON --------------------------------------------------------

def pack_array(a: np.ndarray) -> dict[str, Any]:
    """An array with its dtype and shape. An object array's values are a JSON list; a numeric
    array stays an ndarray, which ``encode_partials`` writes as raw bytes (bit-exact, NaN and
    inf included) and ``json.dumps`` alone refuses."""
    a = np.asarray(a)
    if a.dtype == object:
        return {"dtype": "object", "shape": list(a.shape), "data": a.reshape(-1).tolist()}
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": a}


def unpack_array(d: dict[str, Any]) -> np.ndarray:
    shape = tuple(d["shape"])
    if d["dtype"] == "object":
        out = np.empty(len(d["data"]), dtype=object)
        out[:] = d["data"]
        return out.reshape(shape)
    data = d["data"]
    if isinstance(data, np.ndarray):  # decoded from the binary form: a view of its buffer
        return data.reshape(shape)
    return np.array(data, dtype=np.dtype(d["dtype"])).reshape(shape)


def pack_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"__array__": pack_array(v)}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {"__dict__": [[k, pack_value(x)] for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"__tuple__": [pack_value(x) for x in v]}
    if isinstance(v, list):
        return [pack_value(x) for x in v]
    if isinstance(v, bytes):
        return {"__bytes__": base64.b64encode(v).decode("ascii")}
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError(f"a partial cannot hold a {type(v).__name__}")


def unpack_value(v: Any) -> Any:
    if isinstance(v, list):
        return [unpack_value(x) for x in v]
    if isinstance(v, dict):
        if "__array__" in v:
            return unpack_array(v["__array__"])
        if "__bytes__" in v:
            return base64.b64decode(v["__bytes__"])
        if "__tuple__" in v:
            return tuple(unpack_value(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k if not isinstance(k, list) else tuple(k): unpack_value(x) for k, x in v["__dict__"]}
    return v


def _pack_fields(obj: Any, names: Sequence[str]) -> dict[str, Any]:
    return {n: pack_value(getattr(obj, n)) for n in names}


def _unpack_fields(d: dict[str, Any]) -> dict[str, Any]:
    return {k: unpack_value(v) for k, v in d.items()}


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
    return {"columns": [dataclasses.asdict(c) for c in t.columns], "data": pack_value(t.data),
            "default_sort": t.default_sort, "default_desc": t.default_desc, "meta": pack_value(t.meta)}


def _unpack_table(d: dict[str, Any]) -> Table:
    from tbprof.analyses.table import Column, Table

    return Table(columns=[Column(**c) for c in d["columns"]], data=unpack_value(d["data"]),
                 default_sort=d["default_sort"], default_desc=d["default_desc"], meta=unpack_value(d["meta"]))


def _pack_kernels(k: KernelReports) -> dict[str, Any]:
    return {"table": _pack_table(k.table), "kernel_count": k.kernel_count,
            "tensorcore_by_op": [[op, int(a), int(b)] for op, (a, b) in k.tensorcore_by_op.items()]}


def _unpack_kernels(d: dict[str, Any]) -> KernelReports:
    from tbprof.analyses.ops.kernel_stats import KernelReports

    return KernelReports(_unpack_table(d["table"]), int(d["kernel_count"]),
                         {op: (a, b) for op, a, b in d["tensorcore_by_op"]})


MEMORY_DIGESTS_KEY = ("tbprof.partials.memory_digests", 1)
# What compare reads of a host's memory_profile result, per allocator (not the timeline).
_DIGEST_KEYS = ("host", "memory_ids", "allocators", "memory_id")


def memory_digests(store: ProfileStore) -> list[dict[str, Any]]:
    """memory_profile's result for each allocator of the host at the default options, as far
    as compare reads it: the allocators' summaries and the breakdown at the peak. The tool
    itself computes them (a 2-point timeline, dropped), so the digests are its numbers."""
    from tbprof.analyses.memory import memory_profile
    from tbprof.analyses.table import Table

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
    return {"digests": [{**{k: pack_value(d[k]) for k in _DIGEST_KEYS},
                         "breakdown": _pack_table(d["tables"]["breakdown"]) if d["tables"] else None}
                        for d in digests]}


def _unpack_digests(packed: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**{k: unpack_value(d[k]) for k in _DIGEST_KEYS},
             "tables": {"breakdown": _unpack_table(d["breakdown"])} if d["breakdown"] is not None else {}}
            for d in packed["digests"]]


# compare's memory section of a pod (service/comparisons.py), built for the partial only: a
# store does not keep it (``Carried.memoised``).
MEMORY_DIGESTS: CarriedValue[list[dict[str, Any]]] = CarriedValue(MEMORY_DIGESTS_KEY, memory_digests)


def _kernel_reports(store: ProfileStore) -> KernelReports:
    from tbprof.analyses.ops import kernel_stats

    return kernel_stats.KERNEL_REPORTS.compute(store)


def _host_precision(store: ProfileStore) -> HostPrecision:
    from tbprof.analyses.ops import precision

    return precision.HOST_PRECISION.compute(store)


def _unpack_precision(d: dict[str, Any]) -> HostPrecision:
    from tbprof.analyses.ops.precision import HostPrecision

    return HostPrecision(**d)


# kernel_stats' and precision's values under their own memo keys, computed by their own code,
# whose modules are imported on first use (see the imports above).
KERNEL_REPORTS: CarriedValue[KernelReports] = CarriedValue(KERNEL_REPORTS_KEY, _kernel_reports)
HOST_PRECISION: CarriedValue[HostPrecision] = CarriedValue(HOST_PRECISION_KEY, _host_precision)


@dataclass(frozen=True)
class Carried:
    """One derived value a partial carries (``store/view.py``'s ``CarriedValue``: its memo key and
    how a store computes it) and its JSON form. ``memoised``: a store keeps the value it computed."""

    name: str
    value: CarriedValue[Any]
    pack: Callable[[Any], dict[str, Any]]
    unpack: Callable[[dict[str, Any]], Any]
    memoised: bool = True

    @property
    def key(self) -> Hashable:
        return self.value.key

    def of(self, store: ProfileStore) -> Any:
        return store.derive(self.value) if self.memoised else self.value.compute(store)


CARRIED: tuple[Carried, ...] = (
    Carried("steps", STEPS, _pack_steps, _unpack_steps),
    Carried("host_ops", op_metrics.HOST_OPS, _pack_db, _unpack_db),
    Carried("device_ops", op_metrics.DEVICE_OPS, _pack_db, _unpack_db),
    # The device ops without FLOPs and bytes: what ``tbprof summary`` reads, with no HLO cost analysis.
    Carried("device_op_times", op_metrics.DEVICE_OP_TIMES, _pack_db, _unpack_db),
    Carried("kernel_reports", KERNEL_REPORTS, _pack_kernels, _unpack_kernels),
    # ``tbprof summary``'s GPU fields: (has device activity, idle % per GPU, communication % per GPU).
    Carried("gpu_summary", gpu_shares.SUMMARY_VALUES,
            lambda v: {"active": bool(v[0]), "idle": list(v[1]), "comm": list(v[2])},
            lambda d: (bool(d["active"]), list(d["idle"]), list(d["comm"]))),
    # The overview's device compute precision (HLO element types, tensor shapes present).
    Carried("precision", HOST_PRECISION, dataclasses.asdict, _unpack_precision),
    Carried("memory_digests", MEMORY_DIGESTS, _pack_digests, _unpack_digests, memoised=False),
)


CARRIED_BY_NAME = {c.name: c for c in CARRIED}

# Carried values that another one held gives: by name, the name of that one and how. A partial
# holding the giver has them too (``HostPartial.parts``), so a worker asked for both computes
# and sends the giver alone (``build_partial``).
IMPLIED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "device_op_times": ("device_ops", op_metrics.times_only),
}
_IMPLIED_BY_KEY = {CARRIED_BY_NAME[name].key: (CARRIED_BY_NAME[giver].key, how)
                   for name, (giver, how) in IMPLIED.items()}

# What a partial may hold beyond its header: the carried values by name, and the run's tool
# list (``TOOL_LIST``). A request names the parts it reads (``Parts``); a worker computes only
# those, and a partial that lacks one is converted again when a request needs it. The server's
# tools ask for every part (``ALL_PARTS``: one partial serves every page); ``tbprof summary``
# only for what the headline reads (analyses/overview/headline.py ``PARTIAL_PARTS``), which is
# about half of a host's partial to compute (bench/measurements.md#services).
TOOL_LIST = "available_tools"
Parts: TypeAlias = frozenset[str]
ALL_PARTS: Parts = frozenset([*CARRIED_BY_NAME, TOOL_LIST])


# --- the stand-in store ------------------------------------------------------------------------

class PlaneInfo:
    """A plane without its events: what the all-hosts tools read of it. Its stats are unpacked
    on first use (a pod's pages read those of the device planes only), from their packed form
    or its JSON ``text`` (a batch frame's, analyses/partial_batches.py)."""

    __slots__ = ("_packed", "_stats", "_text", "n_events", "name")

    def __init__(self, name: str, n_events: int, plane_stats: dict[str, Any] | None = None,
                 packed: Any = None, text: str | None = None) -> None:
        self.name = name
        self.n_events = n_events
        self._stats = plane_stats
        self._packed = packed
        self._text = text

    @property
    def plane_stats(self) -> dict[str, Any]:
        if self._stats is None:
            if self._text is not None:
                try:
                    self._packed = json.loads(self._text)
                except ValueError:  # a frame's text, checked by the frame's CRC only
                    self._packed = {}
                self._text = None
            stats = unpack_value(self._packed)
            self._stats = stats if isinstance(stats, dict) else {}
        return self._stats


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
    summary: dict[str, Any]  # what ``tbprof summary`` reads of summarize_store (SUMMARY_KEYS)
    available_tools: list[str] | None  # tools with data for this host (the run's tool list); None: not listed
    memos: dict[Hashable, Any] = field(default_factory=dict)
    # Carried values not decoded yet (decoded on first use: ``tbprof summary`` of a pod reads
    # the steps of every host but the op tables of none, its batches' combined tables serving).
    lazy: dict[Hashable, Callable[[], Any]] = field(default_factory=dict)

    @property
    def n_events(self) -> int:
        return sum(p.n_events for p in self.planes)

    def parts(self) -> Parts:
        """The parts the partial has (its carried values, decoded or not, and the tool list)."""
        held = {c.name for c in CARRIED if c.key in self.memos or c.key in self.lazy}
        held |= {name for name, (giver, _) in IMPLIED.items() if giver in held}
        return frozenset(held | ({TOOL_LIST} if self.available_tools is not None else set()))

    def holds(self, parts: Parts) -> bool:
        return parts <= self.parts()

    def derive(self, value: CarriedValue[T]) -> T:
        """The carried value (``StoreView.derive``; the tools typed on ``StoreView`` ask only
        for ``CARRIED`` values, which ``tests/service/test_partials.py`` checks)."""
        carried: T = self.carried(value.key)
        return carried

    def carried(self, key: Hashable) -> Any:
        """The carried value of a memo key, decoded on first use. The blob's checksum was
        verified when it was decoded (``decode_partials``), so its texts are the encoder's."""
        try:
            return self.memos[key]
        except KeyError:
            decode = self.lazy.get(key)
            if decode is None:
                implied = _IMPLIED_BY_KEY.get(key)
                if implied is not None and (implied[0] in self.memos or implied[0] in self.lazy):
                    giver, how = implied
                    decode = lambda: how(self.carried(giver))  # noqa: E731
                else:
                    raise LookupError(f"the partial of host {self.host!r} does not carry {key!r}") from None
            value = self.memos[key] = decode()  # two threads decoding at once get equal values
            self.lazy.pop(key, None)
            return value


# What ``tbprof summary`` of a pod reads of each host's summarize_store (service/summary.py): the
# rest (every plane and line) is most of a host's header, and every host's header is decoded.
SUMMARY_KEYS = ("device_types", "device_count", "event_count", "span_ps")


def _summary(store: ProfileStore) -> dict[str, Any]:
    """The ``SUMMARY_KEYS`` of ``summarize_store(store)``."""
    types, count = device_counts(store)
    return {"span_ps": store.span_ps, "event_count": store.n_events, "device_types": types, "device_count": count}


def build_partial(store: ProfileStore, available_tools: Sequence[str] | None,
                  parts: Parts = ALL_PARTS) -> dict[str, Any]:
    """The partial of one store as ``encode_partials`` writes it: its header and the carried
    values of ``parts`` (computed, or taken from the store's memo); ``available_tools`` None
    when ``parts`` leaves the tool list out."""
    return {
        "host": store.host, "format": store.format, "source_path": store.source_path, "span_ps": int(store.span_ps),
        "hostnames": list(store.hostnames), "errors": list(store.errors), "warnings": list(store.warnings),
        "metadata": pack_value(store.metadata),
        "planes": [{"name": p.name, "n_events": int(p.n_events), "plane_stats": pack_value(dict(p.plane_stats))}
                   for p in store.planes],
        "summary": _summary(store),
        "available_tools": list(available_tools) if available_tools is not None else None,
        "carried": {c.name: c.pack(c.of(store)) for c in CARRIED
                    if c.name in parts and IMPLIED.get(c.name, ("",))[0] not in parts},
    }


# --- the binary form ---------------------------------------------------------------------------
#
# MAGIC, then a little-endian u32 version, u64 table length, u64 header length and the u32 CRC-32
# of everything after this prefix (4 zero bytes keep it 8-aligned), the table and
# the header (UTF-8 JSON), zero bytes up to a multiple of 8, then the data: the numeric arrays'
# bytes and the carried values' JSON texts, each 8-aligned. The table lists the arrays ([dtype,
# offset from the data start, item count]; apart, so that the header's arrays decode as it is
# parsed). The header holds ``hosts`` (one dict per host partial: its fields, and for each
# carried value the [offset, length] of its JSON text in the data, parsed only when a tool asks
# for it: a text inside the header would cost escaping and unescaping) and ``combined`` (values
# combined over the hosts, same form). In the JSON, ``{"__buf__": i}`` stands for array i. A
# file is never unpickled or evaluated: bad bytes raise ValueError. The checksum makes a damaged
# file (a disk error, a torn copy) fail here, when the server decides between partials and stores,
# and never later in a tool reading a carried value decoded on first use.

MAGIC = b"TBPP"
_PREFIX = struct.Struct("<4sIQQI4x")
_ALIGN = 8
_NUMERIC_KINDS = frozenset("biufc")  # bool, ints, floats, complex: dtypes that are bytes alone


class _Arrays:
    """Collects the numeric arrays of the values ``json.dumps`` meets (its ``default`` hook) and
    the carried values' texts: the data that follows the header."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.table: list[list[Any]] = []
        self.offset = 0

    def _add(self, data: bytes) -> int:
        at = self.offset
        pad = -len(data) % _ALIGN
        self.chunks.append(data + b"\0" * pad)
        self.offset += len(data) + pad
        return at

    def default(self, o: Any) -> Any:
        if isinstance(o, np.ndarray) and o.dtype.kind in _NUMERIC_KINDS:
            a = np.ascontiguousarray(o.reshape(-1))
            if a.dtype.byteorder == ">":  # stored little-endian whatever the writer's order
                a = a.astype(a.dtype.newbyteorder("<"))
            self.table.append([a.dtype.str, self._add(a.tobytes()), int(a.shape[0])])
            return {"__buf__": len(self.table) - 1}
        if isinstance(o, np.generic):
            return o.item()
        raise TypeError(f"a partial cannot hold a {type(o).__name__}")

    def dumps(self, value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), default=self.default)

    def text(self, value: Any) -> list[int]:
        """A value as a JSON text in the data: its [offset, length]."""
        data = self.dumps(value).encode()
        return [self._add(data), len(data)]


def encode_partials(hosts: Iterable[dict[str, Any]], combined: dict[str, dict[str, Any]] | None = None) -> bytes:
    """Host partials (``build_partial``) and values combined over them, as one binary blob."""
    arrays = _Arrays()
    header_hosts = [{**h, "carried": {k: arrays.text(v) for k, v in h["carried"].items()}} for h in hosts]
    header = {"hosts": header_hosts, "combined": {k: arrays.text(v) for k, v in (combined or {}).items()}}
    text = arrays.dumps(header).encode()
    table = json.dumps(arrays.table, separators=(",", ":")).encode()
    pad = -(_PREFIX.size + len(table) + len(text)) % _ALIGN
    body = [table, text, b"\0" * pad, *arrays.chunks]
    crc = 0
    for chunk in body:
        crc = zlib.crc32(chunk, crc)
    return b"".join([_PREFIX.pack(MAGIC, PARTIAL_VERSION, len(table), len(text), crc), *body])


@dataclass
class DecodedPartials:
    hosts: list[HostPartial]
    combined: dict[Hashable, Callable[[], Any]]  # by memo key, decoded on call


def decode_partials(blob: bytes, checked: bool = True) -> DecodedPartials:
    """``encode_partials``' blob as HostPartials; ValueError when it is not one of this version.
    ``checked=False`` skips the checksum, for a blob that never left memory (a worker's answer
    to the server): it guards against damage on disk. Every host of a pod passes here in the
    server, one after the other, so this does no work that a host's first use does not need."""
    if len(blob) < _PREFIX.size:
        raise ValueError("not a tbprof partial")
    magic, version, table_len, header_len, crc = _PREFIX.unpack_from(blob)
    if magic != MAGIC:
        raise ValueError("not a tbprof partial")
    if version != PARTIAL_VERSION:
        raise ValueError(f"partial version {version!r}, expected {PARTIAL_VERSION}")
    if checked and zlib.crc32(memoryview(blob)[_PREFIX.size:]) != crc:
        raise ValueError("damaged partial (checksum)")
    start = _PREFIX.size + table_len + header_len
    data_start = start + (-start % _ALIGN)
    if data_start > len(blob):
        raise ValueError("truncated partial")
    # The array table and the writable copy of the data are made on first use (a value decoded).
    state: dict[str, Any] = {}

    def array(i: int) -> np.ndarray:
        if "table" not in state:
            state["table"] = json.loads(blob[_PREFIX.size:_PREFIX.size + table_len])
        dtype_str, offset, count = state["table"][i]
        dtype = np.dtype(dtype_str)
        data = buffer()
        if dtype.kind not in _NUMERIC_KINDS or offset < 0 or count < 0 or offset + count * dtype.itemsize > len(data):
            raise ValueError(f"bad array {i} in a partial")
        return np.frombuffer(data, dtype=dtype, count=count, offset=offset)

    def buffer() -> bytearray:
        # One writable copy of the arrays' bytes: the arrays are views of it (tools may write in place).
        if "data" not in state:
            state["data"] = bytearray(memoryview(blob)[data_start:])
        data: bytearray = state["data"]
        return data

    def hook(d: dict[str, Any]) -> Any:
        return array(d["__buf__"]) if len(d) == 1 and "__buf__" in d else d

    data_len = len(blob) - data_start

    def later(span: list[int], unpack: Callable[[dict[str, Any]], Any]) -> Callable[[], Any]:
        offset, length = int(span[0]), int(span[1])
        if offset < 0 or length < 0 or offset + length > data_len:
            raise ValueError("bad text span in a partial")
        at = data_start + offset
        return lambda: unpack(json.loads(blob[at:at + length], object_hook=hook))

    header_bytes = blob[_PREFIX.size + table_len:start]
    # Arrays in the header itself are rare (a plane stat holding one): parse with the hook only then.
    header = json.loads(header_bytes, object_hook=hook) if b'"__buf__"' in header_bytes else json.loads(header_bytes)
    hosts = []
    for d in header["hosts"]:
        spans = d["carried"]
        hosts.append(HostPartial(
            host=d["host"], format=d["format"], source_path=d["source_path"], span_ps=int(d["span_ps"]),
            hostnames=list(d["hostnames"]), errors=list(d["errors"]), warnings=list(d["warnings"]),
            metadata=unpack_value(d["metadata"]),
            planes=[PlaneInfo(p["name"], int(p["n_events"]), packed=p["plane_stats"]) for p in d["planes"]],
            summary=d["summary"],
            available_tools=list(d["available_tools"]) if d["available_tools"] is not None else None,
            lazy={c.key: later(spans[c.name], c.unpack) for c in CARRIED if c.name in spans}))
    combined = {CARRIED_BY_NAME[name].key: later(span, CARRIED_BY_NAME[name].unpack)
                for name, span in header["combined"].items() if name in CARRIED_BY_NAME}
    return DecodedPartials(hosts, combined)


def partial_serves(blob: bytes, parts: Parts) -> bool:
    """Whether a blob is a host partial of this version whose checksum holds and which has
    ``parts`` (a worker checks a cached file before it sends it: the server does not check what
    workers send)."""
    try:
        return partial_from_bytes(blob).holds(parts)
    except (ValueError, KeyError, TypeError, IndexError):
        return False


def partial_from_bytes(blob: bytes, checked: bool = True) -> HostPartial:
    """The one host partial of a blob (a host's cache file); ValueError otherwise."""
    hosts = decode_partials(blob, checked).hosts
    if len(hosts) != 1:
        raise ValueError(f"a host partial holds one host, not {len(hosts)}")
    return hosts[0]


# Carried values that nearly every all-hosts answer reads of every host (the step table of the
# overview, input pipeline, pod viewer and ``tbprof summary``; the summary's GPU shares): the
# server decodes them as each worker's batch arrives (``decode_on_arrival``), while the other
# workers still convert, instead of all at once when the answer is combined.
ON_ARRIVAL = ("steps", "gpu_summary")


def decode_on_arrival(part: HostPartial) -> None:
    """Decodes the ``ON_ARRIVAL`` values of a host's partial now; one that cannot be decoded is
    left for the tool that asks for it (which then says why)."""
    for name in ON_ARRIVAL:
        try:
            part.carried(CARRIED_BY_NAME[name].key)
        except (LookupError, ValueError, TypeError):
            pass


# --- combining in a tree -----------------------------------------------------------------------

# Carried values the all-hosts tools only ever sum over all hosts (``op_metrics.hosts_op_metrics``):
# a batch of hosts sends them combined as well, so the server combines one per batch.
COMBINED = ("host_ops", "device_ops", "device_op_times")


def combine_partials(parts: Sequence[HostPartial]) -> dict[str, dict[str, Any]]:
    """The ``COMBINED`` values of consecutive hosts, combined (``encode_partials``' ``combined``):
    those every host carries, an ``IMPLIED`` one only where its giver is not combined."""
    out: dict[str, dict[str, Any]] = {}
    for name in COMBINED:
        if IMPLIED.get(name, ("",))[0] in out:
            continue
        if all(name in p.parts() for p in parts):
            c = CARRIED_BY_NAME[name]
            out[name] = c.pack(op_metrics.combine([p.carried(c.key) for p in parts]))
    return out


class PodPartials(list[HostPartial]):
    """The partials of a pod's hosts (in the request's order) and, for runs of consecutive hosts
    that a worker converted together, their op tables already combined (``segments``: start,
    end, lazily decoded values by memo key). ``op_metrics.hosts_op_metrics`` asks ``combined``
    before combining host by host."""

    def __init__(self, parts: Iterable[HostPartial],
                 segments: Sequence[tuple[int, int, dict[Hashable, Callable[[], Any]]]] = ()) -> None:
        super().__init__(parts)
        self.segments = [s for s in segments if s[1] - s[0] > 1]
        self._combined: dict[Hashable, Any] = {}

    def combined(self, key: Hashable) -> Any | None:
        """The value of ``key`` combined over every host (None: combine host by host)."""
        if not self.segments or key not in (op_metrics.HOST_KEY, op_metrics.DEVICE_KEY, op_metrics.DEVICE_TIMES_KEY):
            return None
        if key not in self._combined:
            starts = {s[0]: s for s in self.segments}
            pieces = []
            i = 0
            while i < len(self):
                seg = starts.get(i)
                implied = _IMPLIED_BY_KEY.get(key)
                if seg is not None and key in seg[2]:
                    pieces.append(seg[2][key]())
                    i = seg[1]
                elif seg is not None and implied is not None and implied[0] in seg[2]:
                    pieces.append(implied[1](seg[2][implied[0]]()))
                    i = seg[1]
                else:
                    pieces.append(self[i].carried(key))
                    i += 1
            self._combined[key] = op_metrics.combine(pieces)
        return self._combined[key]
