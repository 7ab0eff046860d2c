"""The columnar profile store: planes, lines, events and stats as numpy columns.

A ``ProfileStore`` holds one host's profile (one ``*.xplane.pb`` or one Chrome trace).
Each ``Plane`` (a device or the host) keeps its events as struct-of-arrays, sorted by
(line, start_ps, -dur_ps) so that the events of line ``i`` are rows
``line_offsets[i]:line_offsets[i + 1]`` and parents precede their children.
Stats live in long tables (owner row, stat name id, kind, value) sorted by owner.

Times are picoseconds relative to ``ProfileStore.origin_ps`` (the earliest event of the
profile), so int64 covers 106 days of trace and float64 conversions stay exact far below
the 2^53 ps (2.5 hours) a trace would need to lose picoseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from tbprof._core.kernels import bucket_gather
from tbprof._core.wire import default_threads
from tbprof.store.memo import Memo, PrivateMemo
from tbprof.store.strings import StringTable

# Stat value kinds (``StatTable.kind``); mirrors _core/wire.pyx.
KIND_NONE = 0
KIND_DOUBLE = 1
KIND_UINT64 = 2
KIND_INT64 = 3
KIND_STR = 4  # value = string id
KIND_BYTES = 5  # value = index into Plane.blobs
KIND_REF = 6  # value = string id of the referenced stat metadata name

T = TypeVar("T")
V_co = TypeVar("V_co", covariant=True)


class Derivable(Protocol[V_co]):
    """What ``ProfileStore.derive`` reads of a ``Derived`` (store/derived.py), matched
    structurally so that the store does not import the module that types values on it."""

    @property
    def key(self) -> Hashable: ...

    @property
    def compute(self) -> Callable[[ProfileStore], V_co]: ...


@dataclass
class StatTable:
    """Long table of stats. ``owner`` is an event row (or a metadata row), sorted ascending."""

    owner: np.ndarray  # int32
    stat_id: np.ndarray  # int32, string id of the stat name
    kind: np.ndarray  # int8
    value: np.ndarray  # int64 bit pattern; float64 for KIND_DOUBLE via .view

    @staticmethod
    def empty() -> StatTable:
        return StatTable(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int8),
                         np.zeros(0, np.int64))

    def __len__(self) -> int:
        return int(self.owner.shape[0])

    def rows_of(self, owner: int) -> slice:
        lo = int(np.searchsorted(self.owner, owner, side="left"))
        hi = int(np.searchsorted(self.owner, owner, side="right"))
        return slice(lo, hi)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.owner, self.stat_id, self.kind, self.value))


@dataclass
class StatColumn:
    """One stat over all events of a plane: ``rows`` (event rows that carry it) and values."""

    rows: np.ndarray  # int64 event rows, ascending
    kind: np.ndarray  # int8
    value: np.ndarray  # int64 bit pattern

    def as_float(self) -> np.ndarray:
        out = self.value.astype(np.float64)
        is_double = self.kind == KIND_DOUBLE
        if is_double.any():
            out[is_double] = self.value[is_double].view(np.float64)
        return out

    def as_int(self) -> np.ndarray:
        out = self.value.copy()
        is_double = self.kind == KIND_DOUBLE
        if is_double.any():
            out[is_double] = self.value[is_double].view(np.float64).astype(np.int64)
        return out

    def sparse_int(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) of the events that have the stat, one value per event: what
        ``dense_int`` holds at those rows (an event with the stat twice keeps the last),
        without a column over every event of the plane."""
        rows, values = self.rows, self.as_int()
        if rows.shape[0] > 1:
            last = np.append(rows[1:] != rows[:-1], True)
            if not last.all():
                rows, values = rows[last], values[last]
        return rows, values

    def dense_int(self, n_events: int, missing: int = -1) -> np.ndarray:
        out = np.full(n_events, missing, dtype=np.int64)
        out[self.rows] = self.as_int()
        return out

    def dense_float(self, n_events: int) -> np.ndarray:
        out = np.full(n_events, np.nan)
        out[self.rows] = self.as_float()
        return out

    def dense_str(self, n_events: int) -> np.ndarray:
        """String ids per event (-1 where the event has no such string stat)."""
        out = np.full(n_events, -1, dtype=np.int32)
        is_text = (self.kind == KIND_STR) | (self.kind == KIND_REF)
        out[self.rows[is_text]] = self.value[is_text]
        return out


@dataclass
class Plane:
    """One XPlane: a device (``/device:GPU:0``) or the host (``/host:CPU``)."""

    index: int
    id: int
    name: str
    # Lines (threads, streams, "Steps", "XLA Ops", ...).
    line_ids: np.ndarray  # int64
    line_names: list[str]
    line_display_names: list[str]
    line_timestamp_ns: np.ndarray  # int64
    line_offsets: np.ndarray  # int64, n_lines + 1
    # Events.
    start_ps: np.ndarray  # int64, relative to ProfileStore.origin_ps
    dur_ps: np.ndarray  # int64
    meta_idx: np.ndarray  # int32 row into the metadata table
    name_id: np.ndarray  # int32 string id of the event name
    depth: np.ndarray  # int16 nesting depth within its line
    line_idx: np.ndarray  # int32
    stats: StatTable
    # Event metadata.
    meta_ids: np.ndarray  # int64 XEventMetadata.id, ascending
    meta_name_id: np.ndarray  # int32
    meta_display_name_id: np.ndarray  # int32
    meta_stats: StatTable  # owner = metadata row
    # Plane-level stats by name (device model, clock rate, core count, ...).
    plane_stats: dict[str, Any] = field(default_factory=dict)
    blobs: list[bytes] = field(default_factory=list)  # values of KIND_BYTES stats
    _columns: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)

    @property
    def n_events(self) -> int:
        return int(self.start_ps.shape[0])

    # --- stats decoded on first use (readers/xplane.py ``read_xspace(lazy=True)``) ---------------
    def defer_stats(self, load: Callable[[Plane], None], estimate_bytes: int) -> None:
        """From now on ``stats`` is decoded by ``load(self)`` when first read; until then the
        plane counts ``estimate_bytes`` for them (``nbytes``: what the memory budget holds)."""
        self.__dict__.pop("stats", None)
        self.__dict__["_load_stats"] = load
        self.__dict__["_stats_estimate_bytes"] = estimate_bytes

    @property
    def stats_loaded(self) -> bool:
        return "stats" in self.__dict__

    def set_stats(self, stats: StatTable) -> None:
        self.__dict__["stats"] = stats
        self.__dict__.pop("_load_stats", None)

    def __getattr__(self, name: str) -> Any:
        # Reached only for an attribute the instance lacks: the stats of a plane read lazily.
        if name == "stats":
            load = self.__dict__.get("_load_stats")
            if load is not None:
                load(self)
                return self.__dict__["stats"]
        raise AttributeError(f"'Plane' object has no attribute {name!r}")

    @property
    def n_lines(self) -> int:
        return int(self.line_ids.shape[0])

    def time_range_ps(self) -> tuple[int, int] | None:
        """(first start, last end) of the plane's events; None without events.

        In slices: ``(start_ps + dur_ps).max()`` would allocate a temporary as long as the plane
        (tens of MB on a large host plane), and on a VM its first touch costs more than the sum
        (bench/measurements.md#store-build).
        """
        key = ("time_range", 0)
        cached = self._columns.get(key)
        if cached is None:
            if self.n_events == 0:
                return None
            step = 1 << 16
            last = max(int((self.start_ps[i:i + step] + self.dur_ps[i:i + step]).max())
                       for i in range(0, self.n_events, step))
            cached = (int(self.start_ps.min()), last)
            self._columns[key] = cached
        first_ps, last_ps = cached
        return int(first_ps), int(last_ps)

    def line_rows(self, line: int) -> slice:
        return slice(int(self.line_offsets[line]), int(self.line_offsets[line + 1]))

    def line_index(self, name: str) -> int:
        """Index of the first line called ``name`` (or with that display name), else -1."""
        for i, (n, d) in enumerate(zip(self.line_names, self.line_display_names, strict=False)):
            if n == name or d == name:
                return i
        return -1

    def stat_column(self, stat_id: int) -> StatColumn:
        """The stat ``stat_id`` of every event that has it (event stats only)."""
        key = ("event", stat_id)
        cached = self._columns.get(key)
        if cached is None:
            mask = self.stats.stat_id == stat_id
            rows = self.stats.owner[mask].astype(np.int64)
            cached = StatColumn(rows, self.stats.kind[mask], self.stats.value[mask])
            self._columns[key] = cached
        return cached

    def prefetch_stat_columns(self, stat_ids: list[int]) -> None:
        """Builds ``stat_column`` for several stats in one pass over the stat table.

        Each ``stat_column`` call scans every stat of the plane (millions on jax_large:
        bench/measurements.md#plane-stats); an analysis that needs ten stats asks for them together
        instead. A large table is gathered in ranges on several threads (``default_threads``).
        """
        want = sorted({i for i in stat_ids if i >= 0 and ("event", i) not in self._columns})
        if not want:
            return
        ids = self.stats.stat_id
        lut = np.full(max(int(ids.max()) if len(ids) else 0, want[-1]) + 1, -1, dtype=np.int32)
        lut[want] = np.arange(len(want), dtype=np.int32)
        owner, kind, value, bounds = bucket_gather(np.asarray(ids), lut, len(want), np.asarray(self.stats.owner),
                                                    np.asarray(self.stats.kind), np.asarray(self.stats.value),
                                                    threads=default_threads())
        for k, sid in enumerate(want):
            sl = slice(int(bounds[k]), int(bounds[k + 1]))
            self._columns[("event", sid)] = StatColumn(owner[sl], kind[sl], value[sl])

    def meta_stat_column(self, stat_id: int) -> StatColumn:
        key = ("meta", stat_id)
        cached = self._columns.get(key)
        if cached is None:
            mask = self.meta_stats.stat_id == stat_id
            rows = self.meta_stats.owner[mask].astype(np.int64)
            cached = StatColumn(rows, self.meta_stats.kind[mask], self.meta_stats.value[mask])
            self._columns[key] = cached
        return cached

    def dense_str_ids(self, stat_id: int) -> np.ndarray:
        """String ids of the text stat ``stat_id`` per event (its own value, else its metadata's;
        -1 where neither has one), as ``event_stat(...).dense_str`` gives them, without building
        the merged column where no event has a value of its own (a Chrome trace's "cat": on
        millions of events that column and its sort would cost ~40 bytes an event)."""
        if stat_id < 0:
            return np.full(self.n_events, -1, dtype=np.int32)
        if self.stat_column(stat_id).rows.shape[0]:
            return self.event_stat(stat_id).dense_str(self.n_events)
        meta = self.meta_stat_column(stat_id)
        per_meta = np.full(self.meta_ids.shape[0], -1, dtype=np.int32)
        is_text = (meta.kind == KIND_STR) | (meta.kind == KIND_REF)
        per_meta[meta.rows[is_text]] = meta.value[is_text]
        return per_meta[self.meta_idx]

    def str_stat_in(self, stat_id: int, str_ids: np.ndarray) -> np.ndarray:
        """Whether each event's text stat ``stat_id`` (as ``dense_str_ids`` gives it) is one of
        ``str_ids``. Where no event has a value of its own (a Chrome trace's "cat"), tested once
        per metadata row: a category mask of millions of events is then one gather of booleans."""
        if stat_id < 0 or self.stat_column(stat_id).rows.shape[0]:
            return np.isin(self.dense_str_ids(stat_id), str_ids)
        meta = self.meta_stat_column(stat_id)
        per_meta = np.full(self.meta_ids.shape[0], -1, dtype=np.int32)
        is_text = (meta.kind == KIND_STR) | (meta.kind == KIND_REF)
        per_meta[meta.rows[is_text]] = meta.value[is_text]
        return np.isin(per_meta, str_ids)[self.meta_idx]

    def event_stat(self, stat_id: int) -> StatColumn:
        """The stat of each event, falling back to its metadata's stat (as XProf reads them).

        Profilers put per-call values (correlation_id, bytes) on events and per-op values
        (tf_op, hlo_op, kernel_details) often on the shared metadata; analyses must see both.
        """
        key = ("merged", stat_id)
        cached = self._columns.get(key)
        if cached is not None:
            return cached
        own = self.stat_column(stat_id)
        meta = self.meta_stat_column(stat_id)
        if len(meta.rows) == 0:
            merged = own
        else:
            # Map metadata rows to the events that use them and lack their own value.
            meta_has = np.full(len(self.meta_ids), -1, dtype=np.int64)
            meta_has[meta.rows] = np.arange(len(meta.rows))
            pick = meta_has[self.meta_idx]
            has_own = np.zeros(self.n_events, dtype=bool)
            has_own[own.rows] = True
            inherit = np.nonzero((pick >= 0) & ~has_own)[0]
            rows = np.concatenate([own.rows, inherit])
            kind = np.concatenate([own.kind, meta.kind[pick[inherit]]])
            value = np.concatenate([own.value, meta.value[pick[inherit]]])
            order = np.argsort(rows, kind="stable")
            merged = StatColumn(rows[order], kind[order], value[order])
        self._columns[key] = merged
        return merged

    @property
    def nbytes(self) -> int:
        arrays = (self.line_ids, self.line_timestamp_ns, self.line_offsets, self.start_ps,
                  self.dur_ps, self.meta_idx, self.name_id, self.depth, self.line_idx,
                  self.meta_ids, self.meta_name_id, self.meta_display_name_id)
        # (A plane whose stats are not decoded yet counts their estimate: asking would decode them.)
        stats_bytes = self.__dict__["stats"].nbytes if self.stats_loaded else self.__dict__["_stats_estimate_bytes"]
        # Bytes-valued stats (HLO protos, tens of MB each in some profiles) and plane stats are held too.
        blob_bytes = sum(_BYTES_OVERHEAD + len(b) for b in self.blobs)
        plane_stat_bytes = sum(_BYTES_OVERHEAD + len(v) for v in self.plane_stats.values()
                               if isinstance(v, (bytes, str)))
        return sum(a.nbytes for a in arrays) + stats_bytes + self.meta_stats.nbytes + blob_bytes + plane_stat_bytes


_BYTES_OVERHEAD = 33  # a bytes object's header (sys.getsizeof(b""))


@dataclass
class ProfileStore:
    """One host's profile, decoded once and shared by every analysis."""

    source_path: str
    host: str
    format: str  # "xspace" | "chrome_trace" | ...
    strings: StringTable
    planes: list[Plane]
    origin_ps: int  # absolute time (ps since the profiler's epoch) of start_ps == 0
    span_ps: int  # end of the last event, relative to origin_ps
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Profile-level facts a reader found outside the events, JSON-able (Kineto's
    # ``deviceProperties`` and ``distributedInfo``, ...).
    metadata: dict[str, Any] = field(default_factory=dict)
    # Values analyses derived from the store that the disk cache keeps with it, so a reopened
    # store need not derive them again: name -> {"arrays": {field: array}, "json": value}
    # (written by the layer that knows them: service/profiles.py ``persist_derived``).
    derived: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    _memo: Memo | PrivateMemo = field(default_factory=Memo, repr=False)
    # Set once the service has started this store's background warm-ups (service/profiles.py).
    warm_started: bool = field(default=False, repr=False, compare=False)

    @property
    def n_events(self) -> int:
        return sum(p.n_events for p in self.planes)

    @property
    def nbytes(self) -> int:
        derived = sum(int(a.nbytes) for d in self.derived.values() for a in d.get("arrays", {}).values())
        return sum(p.nbytes for p in self.planes) + self.strings.nbytes + derived

    def plane(self, name: str) -> Plane | None:
        for p in self.planes:
            if p.name == name:
                return p
        return None

    def planes_with_prefix(self, prefix: str) -> list[Plane]:
        return [p for p in self.planes if p.name.startswith(prefix)]

    def stat_id(self, name: str) -> int:
        """String id of a stat name (-1 when absent: then no event carries that stat)."""
        return self.strings.id(name)

    def skip_memo_sizes(self) -> None:
        """For a store that lives for one computation and is then dropped (a worker building a
        host's partial): its derived values are not sized for the memory budget (walking them
        is a sizeable share of building a partial: bench/measurements.md#serving); they are
        freed with the store."""
        if isinstance(self._memo, Memo):
            self._memo.estimate = False

    def keep_memo_private(self) -> None:
        """For a store that lives for one computation and is then dropped with its values (a
        worker's, while it builds the host's partial, service/executor.py): they are held by
        the store alone (``PrivateMemo``), outside the shared budget and its bookkeeping. Where
        a value was asked for already, ``skip_memo_sizes``."""
        if isinstance(self._memo, Memo) and not self._memo.used():
            self._memo = PrivateMemo()
        else:
            self.skip_memo_sizes()

    def memo(self, key: Any, compute: Callable[[], T], size: Callable[[T], int] | None = None) -> T:
        """Computes a derived value once per store (step assignment, op links, ...), single
        flight (see ``store/memo.py``). ``size``: its bytes, when the estimate (a walk over
        the value) would count memory another cache already holds."""
        return self._memo.get(key, compute) if size is None else self._memo.get(key, compute, size)

    def has_derived(self, value: Derivable[Any]) -> bool:
        """Whether ``value`` is derived and held already (a value cheaper to take from it)."""
        return self._memo.contains(value.key)

    def derive(self, value: Derivable[T]) -> T:
        """A derived value of this store (``store/derived.py``), computed once (``memo``)."""
        return self.memo(value.key, lambda: value.compute(self))
