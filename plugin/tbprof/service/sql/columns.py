"""The ``events`` view's columns of one plane: numpy views of the store where they exist, the
rest derived once per plane and kept in the store's memo (so in the memory budget).

A plane's columns are a dict of numpy arrays, which DuckDB scans in place; pandas is not
imported (its import takes longer than the query it would serve). A name, line or text stat is an
object array indexed from the host's string table by the store's int32 ids: one reference an
event to a string the table already holds (none is made per event), and a missing id (-1) picks
the table's trailing None (where the host's table is small, the view reads those of the host's
strings by id instead: ``listed_strings``). A stat that may be missing is a numpy masked array
(DuckDB: NULL).
A column is built only when a query names it (``EventColumn.name`` appears in its text, or the
query says ``*``): a derived column costs 1-9 bytes an event, and most queries name few.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tbprof.domain import event_tree
from tbprof.domain.event_columns import RowStats
from tbprof.domain.planes import PlaneKind, plane_kind
from tbprof.store.tables import (
    Plane,
    ProfileStore,
)

if TYPE_CHECKING:  # step, tf_op and trace_args columns import their modules when a query names them
    from tbprof.service.sql.trace_args import TraceArgs


@dataclass(frozen=True)
class EventColumn:
    """One column of ``events`` as a plane frame holds it (the view adds host, device and
    the columns computed from these)."""

    name: str
    sql_type: str  # the DuckDB type a user sees
    doc: str
    stats: tuple[str, ...] = ()  # the stat names it reads, first found wins
    # "int" | "float" | "text" for stat columns; "json" (trace_args), "tensors" (from the HLO protos)
    kind: str = "int"


# Stat columns: XProf's Events DB name where the meaning is the same (docs/sql.md maps them).
STAT_COLUMNS: tuple[EventColumn, ...] = (
    EventColumn("correlation_id", "BIGINT", "launch correlation id (host launch <-> device kernel)",
                ("correlation_id", "correlation")),
    EventColumn("external_id", "BIGINT", "PyTorch's External id (operator <-> runtime call)", ("External id",)),
    EventColumn("flow", "BIGINT", "flow id linking producer and consumer events", ("flow", "flow_id")),
    EventColumn("group_id", "BIGINT", "XSpace group (step) id", ("group_id",)),
    EventColumn("hlo_op", "VARCHAR", "XLA HLO op", ("hlo_op",), "text"),
    EventColumn("hlo_module", "VARCHAR", "XLA HLO module", ("hlo_module",), "text"),
    EventColumn("tf_op", "VARCHAR", "framework op, 'name:type' as recorded", ("tf_op",), "text"),
    EventColumn("kernel_details", "VARCHAR", "GPU kernel launch configuration as XSpace records it",
                ("kernel_details",), "text"),
    EventColumn("grid", "VARCHAR", "kernel grid dimensions (PyTorch traces)", ("grid",), "text"),
    EventColumn("block", "VARCHAR", "kernel block dimensions (PyTorch traces)", ("block",), "text"),
    EventColumn("registers_per_thread", "BIGINT", "kernel registers per thread (PyTorch traces)",
                ("registers per thread",)),
    EventColumn("shared_memory_bytes", "BIGINT", "kernel shared memory in bytes (PyTorch traces)",
                ("shared memory",)),
    EventColumn("occupancy_pct", "DOUBLE", "estimated achieved occupancy in percent (PyTorch traces)",
                ("est. achieved occupancy %",), "float"),
    EventColumn("stream", "BIGINT", "CUDA stream (PyTorch traces)", ("stream",)),
    EventColumn("input_dims", "VARCHAR", "input shapes as recorded (PyTorch record_shapes)", ("Input Dims",), "text"),
    EventColumn("input_types", "VARCHAR", "input dtypes as recorded (PyTorch record_shapes)", ("Input type",), "text"),
    EventColumn("input_tensors", "VARCHAR[]", "XLA op's operand shapes, from the profile's HLO (XProf's input_tensors)",
                kind="tensors"),
    EventColumn("output_tensors", "VARCHAR[]", "XLA op's result shape, from the profile's HLO (XProf's output_tensors)",
                kind="tensors"),
    EventColumn("flops", "BIGINT", "FLOPs the profiler recorded", ("flops",)),
    EventColumn("memory_accessed", "BIGINT", "bytes accessed the profiler recorded", ("bytes_accessed",)),
    EventColumn("bytes", "BIGINT", "bytes of a memory or copy event (PyTorch traces)", ("Bytes", "bytes")),
    EventColumn("cat", "VARCHAR", "the Chrome-trace category (PyTorch: kernel, cpu_op, ...)", ("cat",), "text"),
    EventColumn("source_line", "VARCHAR", "source location the profiler recorded (XSpace source, PyTorch Source)",
                ("source", "Source"), "text"),
    EventColumn("call_stack", "VARCHAR", "call stack as recorded (PyTorch with_stack, XSpace source_stack)",
                ("Call stack", "source_stack"), "text"),
    EventColumn("trace_args", "VARCHAR", "every other stat of the event as a JSON object (XProf's trace_args)",
                kind="json"),
)

# Columns read from the event table itself (or derived from its structure).
BASE_COLUMNS: tuple[EventColumn, ...] = (
    EventColumn("event_id", "INTEGER", "row of the event in its plane (with host and plane_index: its identity)"),
    EventColumn("line_id", "BIGINT", "XLine id: the thread id (host) or stream id (device)"),
    EventColumn("line_name", "VARCHAR", "the line's display name (thread or stream)"),
    EventColumn("name", "VARCHAR", "the event name (kernel, op, TraceMe, ...)"),
    EventColumn("start_ps", "BIGINT", "start in ps since the profile's first event (exact)"),
    EventColumn("dur_ps", "BIGINT", "duration in ps (exact)"),
    EventColumn("self_ps", "BIGINT", "duration less the direct children's on the same line, in ps"),
    EventColumn("depth", "SMALLINT", "nesting depth on its line (0: outermost)"),
    EventColumn("step", "VARCHAR", "XProf's step: the event's group ('train 3') on XSpace, else the name of "
                "the overview step it belongs to"),
    EventColumn("step_num", "BIGINT", "number of the overview step the event belongs to (NULL outside them)"),
    EventColumn("tf_op_name", "VARCHAR", "framework op name (from tf_op)"),
    EventColumn("tf_op_type", "VARCHAR", "framework op type (from tf_op)"),
)

FRAME_COLUMNS: tuple[EventColumn, ...] = BASE_COLUMNS + STAT_COLUMNS
_BY_NAME = {c.name: c for c in FRAME_COLUMNS}
# Text columns whose values are strings of the host's string table (``PlaneColumns.host_ids``).
HOST_TEXT_COLUMNS = frozenset({"name", "hlo_op", *(c.name for c in STAT_COLUMNS if c.kind == "text")})


# Bytes a built column holds per event: an object array's reference (text), int64 or float64
# and a mask byte (a stat that may be missing), int32 or int64 (ids, self time); 0 for the
# store's own arrays, read in place.
_IN_PLACE = frozenset(("start_ps", "dur_ps", "depth"))
_BYTES_PER_EVENT = {"event_id": 4, "line_id": 8, "self_ps": 8, "step_num": 9}
_KIND_BYTES_PER_EVENT = {"int": 9, "float": 9, "text": 8, "tensors": 8, "json": 8}
# trace_args' texts per stat row of the plane ("key": value and its separator, and the share of
# its event's string header), rounded up from what the PyTorch benchmark trace's take
# (bench/measurements.md#sql).
TRACE_ARGS_BYTES_PER_STAT = 28


def built_bytes(plane: Plane, names: Collection[str]) -> int:
    """Memory the columns ``names`` of ``plane`` take once built (whether built yet or not): the
    query that reads them holds them all at once."""
    total = 0
    for name in names:
        if name in _IN_PLACE:
            continue
        spec = _BY_NAME[name]
        per_event = _BYTES_PER_EVENT.get(name, _KIND_BYTES_PER_EVENT.get(spec.kind, 8))
        total += per_event * plane.n_events
        if spec.kind == "json":
            total += TRACE_ARGS_BYTES_PER_STAT * (len(plane.stats) + len(plane.meta_stats))
    return total


# A host string table of at most this many strings is given to DuckDB once per query as one list
# (``listed_strings``), and the HOST_TEXT_COLUMNS as int32 ids into it (``name``: the store's own
# array): no object array of a reference per event to build, and DuckDB scans int32 (outside the
# GIL) instead of Python strings. DuckDB's lookup costs more per row the longer the list (its
# cross product hands each chunk of rows the list anew), so a longer table (a long PyTorch trace's:
# hundreds of thousands of names and values) keeps object arrays (bench/measurements.md#sql).
MAX_LISTED_STRINGS = 1 << 12


def listed_strings(strings: np.ndarray) -> dict[str, np.ndarray] | None:
    """The host's string table (``text_table``) as a one-row frame of one list column
    ``texts``, or None when it has more than MAX_LISTED_STRINGS strings."""
    if strings.shape[0] - 1 > MAX_LISTED_STRINGS:
        return None
    row = np.empty(1, dtype=object)
    row[0] = strings[:-1].tolist()
    return {"texts": row}


def text_table(texts: list[str]) -> np.ndarray:
    """``texts`` as an object array with a trailing None, so that code -1 reads as NULL."""
    table = np.empty(len(texts) + 1, dtype=object)
    table[:-1] = texts
    return table


def _texts_of(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    return table[codes]


def _masked_int(values: np.ndarray, has: np.ndarray) -> Any:
    return np.ma.masked_array(values.astype(np.int64, copy=False), mask=~has)


def _masked_float(values: np.ndarray, has: np.ndarray) -> Any:
    return np.ma.masked_array(values.astype(np.float64, copy=False), mask=~has)


class PlaneColumns:
    """Builds (and memoises in the store's memo) the columns of one plane; with ``rows``, those of
    a run of its events only (``frame``), memoising nothing: an export writes a plane larger than
    the memory budget allows whole in such chunks, each column built, cut and dropped in turn."""

    def __init__(self, store: ProfileStore, plane_index: int, strings: np.ndarray,
                 rows: slice | None = None) -> None:
        self.store = store
        self.plane_index = plane_index
        self.plane: Plane = store.planes[plane_index]
        self.strings = strings  # the host's string table, ``text_table``
        self.rows = rows  # a step-1 slice of the plane's events

    def _host_texts(self, what: str, codes: Callable[[], np.ndarray]) -> np.ndarray:
        return self._memo(what, lambda: _texts_of(codes(), self.strings))

    def _memo(self, what: str, compute: Callable[[], Any]) -> Any:
        if self.rows is not None:
            return compute()
        return self.store.memo(("sql_column", self.plane_index, what), compute)

    def column(self, name: str) -> Any:
        plane = self.plane
        n = plane.n_events
        if name == "start_ps":
            return np.asarray(plane.start_ps)
        if name == "dur_ps":
            return np.asarray(plane.dur_ps)
        if name == "depth":
            return np.asarray(plane.depth)
        if name == "name":
            return self._host_texts("name", lambda: np.asarray(plane.name_id))
        if name == "event_id":
            return self._memo("event_id", lambda: np.arange(n, dtype=np.int32))
        if name == "line_id":
            return self._memo("line_id", lambda: np.asarray(plane.line_ids, dtype=np.int64)[plane.line_idx])
        if name == "line_name":
            return self._line_names()
        if name == "self_ps":
            return self._memo("self_ps", self._self_ps)
        if name == "step_num":
            return self._memo("step_num", self._step_nums)
        if name == "step":
            return self._step_names()
        if name == "hlo_op":
            return self._host_texts("hlo_op", self._hlo_op)
        if name in ("tf_op_name", "tf_op_type"):
            return self._tf_op(name)
        if name == "trace_args":
            return self._memo("trace_args", self._trace_args).texts
        spec = _BY_NAME[name]
        if spec.kind == "tensors":
            return self._memo(name, lambda: self._tensors(name))
        return self._memo(name, lambda: self._stat(spec))

    def _line_names(self) -> Any:
        plane = self.plane

        def compute() -> np.ndarray:
            names = [d or n for n, d in zip(plane.line_names, plane.line_display_names, strict=False)]
            if not names:
                return np.full(plane.n_events, None, dtype=object)
            return _texts_of(np.asarray(plane.line_idx), text_table(names))
        return self._memo("line_name", compute)

    def _self_ps(self) -> np.ndarray:
        """Children's time subtracted on nested lines; on a GPU, events of a stream do not call
        each other (overlaps there are a CUDA graph's timing), so self time is the duration (as
        XProf's Events DB has it)."""
        plane = self.plane
        if plane.name.startswith("/device:GPU"):
            return np.asarray(plane.dur_ps)
        return event_tree.self_time_ps(plane, event_tree.parent_rows(plane))

    def _hlo_op(self) -> np.ndarray:
        """The hlo_op stat, else on an ``XLA Ops`` line (TPU) the op's display name, as XProf reads it."""
        plane = self.plane
        sid = self.store.stat_id("hlo_op")
        ids = plane.dense_str_ids(sid) if sid >= 0 else np.full(plane.n_events, -1, dtype=np.int32)
        ops_lines = [i for i, (n, d) in enumerate(zip(plane.line_names, plane.line_display_names, strict=False))
                     if "XLA Ops" in (n, d)]
        for line in ops_lines:
            rows = plane.line_rows(line)
            display = np.asarray(plane.meta_display_name_id)[np.asarray(plane.meta_idx[rows])]
            missing = ids[rows] < 0
            ids[rows] = np.where(missing & (display > 0), display, ids[rows])
        return ids.astype(np.int32)

    def _step_names(self) -> Any:
        def compute() -> tuple[np.ndarray, list[str]]:
            n = self.plane.n_events
            if self.store.format == "xspace":
                from tbprof.domain.event_groups import event_groups

                groups = event_groups(self.store)
                if self.plane_index < len(groups.group_of) and groups.n_groups:
                    names, inverse = np.unique(np.asarray(groups.group_names, dtype=object), return_inverse=True)
                    group = np.asarray(groups.group_of[self.plane_index])
                    codes = np.where(group >= 0, inverse.reshape(-1)[np.clip(group, 0, None)], -1).astype(np.int32)
                    return codes, [str(x) for x in names.tolist()]
                return np.full(n, -1, dtype=np.int32), []
            from tbprof.analyses.steps.assignment import steps_of

            steps = steps_of(self.store)
            if steps.n_steps == 0 or self.plane_index >= len(steps.planes):
                return np.full(n, -1, dtype=np.int32), []
            names, inverse = np.unique(np.asarray(steps.names, dtype=object), return_inverse=True)
            idx = steps.event_step(self.plane_index)
            codes = np.where(idx >= 0, inverse.reshape(-1)[np.clip(idx, 0, None)], -1).astype(np.int32)
            return codes, [str(x) for x in names.tolist()]

        def texts() -> np.ndarray:
            codes, names = compute()
            return _texts_of(codes, text_table(names))
        return self._memo("step", texts)

    def _step_nums(self) -> Any:
        from tbprof.analyses.steps.assignment import steps_of

        steps = steps_of(self.store)
        n = self.plane.n_events
        if steps.n_steps == 0 or not steps.planes or self.plane_index >= len(steps.planes):
            return _masked_int(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool))
        idx = steps.event_step(self.plane_index)
        has = idx >= 0
        return _masked_int(np.where(has, steps.step_nums[np.clip(idx, 0, None)], 0), has)

    def host_ids(self, name: str) -> np.ndarray:
        """The int32 ids into the host's string table of a ``HOST_TEXT_COLUMNS`` column (-1:
        none): the store's own array for ``name``, else derived once and memoised (4 bytes an event)."""
        if name == "name":
            return np.asarray(self.plane.name_id)
        if name == "hlo_op":
            return self._memo("hlo_op_ids", self._hlo_op)
        return self._memo(f"{name}_ids", lambda: self._text_stat_ids(_BY_NAME[name]))

    def _text_stat_ids(self, spec: EventColumn) -> np.ndarray:
        ids = np.full(self.plane.n_events, -1, dtype=np.int32)
        for s in reversed([s for s in spec.stats if self.store.stat_id(s) >= 0]):  # the first name listed wins
            got = self.plane.dense_str_ids(self.store.stat_id(s))
            ids = np.where(got >= 0, got, ids).astype(np.int32)
        return ids

    def _stat(self, spec: EventColumn) -> Any:
        plane = self.plane
        n = plane.n_events
        found = [s for s in spec.stats if self.store.stat_id(s) >= 0]
        if spec.kind == "text":
            return _texts_of(self._text_stat_ids(spec), self.strings)
        if not found:
            empty = np.zeros(n, dtype=bool)
            if spec.kind == "float":
                return _masked_float(np.zeros(n), empty)
            return _masked_int(np.zeros(n, np.int64), empty)
        stats = RowStats(self.store, plane, np.arange(n, dtype=np.int64), found)
        has = np.zeros(n, dtype=bool)
        values = np.zeros(n, dtype=np.float64 if spec.kind == "float" else np.int64)
        for s in reversed(found):
            s_has = stats.has(s)
            values = np.where(s_has, stats.float(s) if spec.kind == "float" else stats.int(s), values)
            has |= s_has
        return _masked_float(values, has) if spec.kind == "float" else _masked_int(values, has)

    def _trace_args(self) -> TraceArgs:
        """Each event's stats that no other column holds, as JSON text (service/sql/trace_args.py)."""
        from tbprof.service.sql.trace_args import trace_args_texts

        named = {self.store.stat_id(s) for c in STAT_COLUMNS for s in c.stats} - {-1}
        return trace_args_texts(self.plane, self.strings, named)

    def _tensors(self, name: str) -> np.ndarray:
        """input_tensors / output_tensors: the shapes joined by ``TENSOR_SEPARATOR`` (the view
        splits them); NULL but for XLA ops of an XSpace profile with HLO protos."""
        codes = np.full(self.plane.n_events, -1, dtype=np.int32)
        if self.store.format != "xspace":
            return _texts_of(codes, text_table([]))
        # Imported here: the op tools' modules are for the queries that name these columns, and
        # the cold path of every other query would pay their import.
        from tbprof.service.sql.hlo_tensors import op_tensors

        found = op_tensors(self.store)
        entry = found.planes.get(self.plane_index)
        if entry is not None:
            rows, inputs, outputs = entry
            codes[rows] = inputs if name == "input_tensors" else outputs
        return _texts_of(codes, text_table(found.texts))

    def _tf_op(self, name: str) -> Any:
        def compute() -> tuple[np.ndarray, np.ndarray, list[str]]:
            from tbprof.domain.tf_op import parse_tf_op

            sid = self.store.stat_id("tf_op")
            ids = self.plane.dense_str_ids(sid) if sid >= 0 else np.full(self.plane.n_events, -1, np.int32)
            unique, inverse = np.unique(ids, return_inverse=True)
            texts: list[str] = []
            name_code = np.full(unique.shape[0], -1, dtype=np.int32)
            type_code = np.full(unique.shape[0], -1, dtype=np.int32)
            index: dict[str, int] = {}
            for k, i in enumerate(unique.tolist()):
                if i < 0:
                    continue
                op = parse_tf_op(self.store.strings[i])
                for out, text in ((name_code, op.name), (type_code, op.type)):
                    if text:
                        out[k] = index.setdefault(text, len(index))
            texts = list(index)
            inverse = inverse.reshape(-1)
            return name_code[inverse], type_code[inverse], texts

        def texts() -> np.ndarray:
            name_codes, type_codes, parts = self._memo("tf_op_parts", compute)
            return _texts_of(name_codes if name == "tf_op_name" else type_codes, text_table(parts))
        return self._memo(name, texts)

    def frame(self, wanted: Collection[str], host_ids: bool = False) -> dict[str, Any]:
        """The wanted frame columns (in FRAME_COLUMNS order), as DuckDB registers them.
        ``host_ids``: the ``HOST_TEXT_COLUMNS`` as int32 ids into the host's string table (the
        view looks the texts up in its ``listed_strings``), not as object arrays."""
        names = [c.name for c in FRAME_COLUMNS if c.name in wanted] or ["event_id"]
        if self.rows is not None:
            return {name: self._chunk(name) for name in names}
        return {name: self.host_ids(name) if host_ids and name in HOST_TEXT_COLUMNS else self.column(name)
                for name in names}

    def _chunk(self, name: str) -> Any:
        """Column ``name`` of the events ``rows``: a copy, so that the plane's whole column goes."""
        assert self.rows is not None
        if name == "trace_args":
            from tbprof.service.sql.trace_args import trace_args_texts

            named = {self.store.stat_id(s) for c in STAT_COLUMNS for s in c.stats} - {-1}
            return trace_args_texts(self.plane, self.strings, named, self.rows).texts
        whole = self.column(name)
        return whole[self.rows] if name in _IN_PLACE else whole[self.rows].copy()


def device_name(plane_name: str) -> str:
    """XProf's Events DB ``device``: ``gpu:0`` for ``/device:GPU:0``, ``cpu:0`` for the host,
    ``TPU:0`` for ``/device:TPU:0``; other planes keep their name."""
    if plane_name.startswith("/device:GPU:"):
        return "gpu:" + plane_name.removeprefix("/device:GPU:")
    if plane_name == "/host:CPU":
        return "cpu:0"
    if plane_name.startswith("/device:"):
        return plane_name.removeprefix("/device:")
    return plane_name


def category_of(plane: Plane) -> str | None:
    """XProf's Events DB ``category`` of a plane's events where it is per plane: ``host`` on the
    host, ``device`` on a GPU; None where it is the line name (TPU and other planes)."""
    kind = plane_kind(plane)
    if kind is PlaneKind.HOST:
        return "host"
    if kind is PlaneKind.DEVICE and plane.name.startswith("/device:GPU"):
        return "device"
    return None
