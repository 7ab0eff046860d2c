"""The SQL engine: a DuckDB connection per query over the run's views, locked down.

Safety (docs/sql.md "Safety"): one statement, and it must be a SELECT; the connection has no
file system, network or extensions (``enable_external_access=false``, no extension autoload or
autoinstall) and its settings are locked before the user's text runs, so a query reads the
views and nothing else; nothing is written (no temp directory). A query is stopped after
``timeout_s`` and held to a memory limit that is reserved in the process-wide memory budget while
it runs (values the LRU holds make room for it), and refused before it starts when the columns it
names would not fit the rest of the budget (``_check_columns_fit``); rows beyond ``max_rows`` are dropped and the
answer says ``truncated``. DuckDB's own message is what a bad query gets back (a BadParameter).
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NotRequired, TypedDict

import numpy as np

from tbprof.domain.hlo_text import TENSOR_SEPARATOR
from tbprof.errors import BadParameter, NoData, ProfileReadError, TbprofError
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, select_hosts
from tbprof.service.sql.columns import (
    BASE_COLUMNS,
    FRAME_COLUMNS,
    HOST_TEXT_COLUMNS,
    STAT_COLUMNS,
    PlaneColumns,
    built_bytes,
    category_of,
    device_name,
    listed_strings,
    text_table,
)
from tbprof.service.sql.tables import TABLE_SOURCES, concat_columns, host_table, source_of, table_columns
from tbprof.store.memo import Memo, estimate_bytes, shared_budget
from tbprof.store.tables import ProfileStore

# A query's text: long enough for any hand-written question, short enough that parsing it is cheap.
MAX_QUERY_CHARS = 100_000
# The memory a query may use: this share of the memory budget, at least MIN_QUERY_MEMORY_BYTES.
QUERY_MEMORY_SHARE = 0.25
MIN_QUERY_MEMORY_BYTES = 128 << 20
_UNLOADED = "tbprof: column not loaded"

_SQL_HINT = 'SQL needs DuckDB: pip install "tbprof[sql]"'


class SqlColumn(TypedDict):
    name: str
    type: str  # DuckDB type name


class SqlResult(TypedDict):
    columns: list[SqlColumn]
    rows: list[list[object]]  # JSON-safe values
    row_count: int  # rows returned
    truncated: bool  # more rows existed than max_rows
    elapsed_ms: float
    # Hosts of several whose files could not be read (left out of ``events``): [{"host", "error"}],
    # present only when there are some.
    host_errors: NotRequired[list[dict[str, str]]]


class SqlUnavailable(NoData):
    """DuckDB is not installed (``tbprof[sql]``)."""

    kind = "sql_unavailable"


def _duckdb() -> Any:
    """DuckDB's engine: the ``duckdb`` wheel's native module ``_duckdb``, which its ``duckdb``
    package re-exports. The connection API used here (``connect``, ``execute``, ``register`` of
    numpy columns, ``extract_statements``, ``fetchall``, ``interrupt`` and the exception classes)
    is the native module's own; the package adds a pure-Python relation API and its version
    string read through ``importlib.metadata``, about 60 ms of a cold ``tbprof sql`` that no query
    here uses (bench/measurements.md#cold-sql-command). Another wheel layout falls back to the
    package."""
    try:
        import _duckdb

        return _duckdb
    except ImportError:
        pass
    try:
        import duckdb
    except ImportError as e:
        raise SqlUnavailable(_SQL_HINT) from e
    return duckdb


def load_duckdb() -> Any:
    """DuckDB's engine module (``_duckdb``; SqlUnavailable without the ``sql`` extra)."""
    return _duckdb()


def load_engine(query: str | None = None) -> None:
    """Imports DuckDB and, given the query the caller runs next, opens that query's connection
    (``connect``'s settings, the text parsed, DuckDB's first statement and aggregate run:
    ``WARM_UP``), which the ``run_sql`` of the same text takes: a caller that converts a profile
    meanwhile (the CLI) does this work then, instead of after the conversion. A text that does not
    parse opens nothing (``run_sql`` gives its error)."""
    duckdb = _duckdb()
    if query is None:
        return
    memory_bytes = query_memory_bytes()
    con = connect(memory_bytes)
    try:
        _select_statement(con, duckdb, query)
        con.execute(WARM_UP).fetchall()
    except (TbprofError, duckdb.Error):
        con.close()
        return
    with _OPENED_LOCK:
        replaced = _OPENED[:]
        _OPENED[:] = [(query, memory_bytes, con)]
    for _, _, old in replaced:
        old.close()


# What ``load_engine`` runs on the connection it opens: a process's first statement, and its first
# aggregate, pay DuckDB's one-time start (bench/measurements.md#cold-sql-command), here beside the
# conversion instead of after it.
WARM_UP = "SELECT a, count(*), sum(b) FROM (VALUES (1, 2)) AS t(a, b) GROUP BY a"

# The connection ``load_engine`` opened ahead of its query (at most one): (text, memory limit, connection).
_OPENED: list[tuple[str, int, Any]] = []
_OPENED_LOCK = threading.Lock()


def _opened_connection(query: str, memory_bytes: int) -> Any | None:
    """The connection opened ahead for this query text and memory limit (taken: used once), or None."""
    with _OPENED_LOCK:
        if _OPENED and _OPENED[0][0] == query and _OPENED[0][1] == memory_bytes:
            return _OPENED.pop()[2]
    return None


# --- the events view ------------------------------------------------------------------------
# Columns the view computes from the frame's, and what each needs.
VIEW_COLUMNS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # name, DuckDB type, doc, frame columns it reads
    ("end_ps", "BIGINT", "end in ps since the profile's first event", ("start_ps", "dur_ps")),
    ("start_ns", "BIGINT", "start in ns since the profile's first event (XProf's start_ns)", ("start_ps",)),
    ("end_ns", "BIGINT", "start_ns plus the whole ns of the duration (XProf's end_ns)", ("start_ps", "dur_ps")),
    ("duration_ns", "DOUBLE", "duration in ns", ("dur_ps",)),
    ("self_time_ns", "BIGINT", "self time in ns (XProf's self_time_ns)", ("self_ps",)),
    ("kernel_name", "VARCHAR", "the event name (XProf's kernel_name: the raw event name)", ("name",)),
    ("stream_id", "BIGINT", "the line id on a device plane (XProf's stream_id)", ("line_id",)),
    ("thread_id", "BIGINT", "the line id on a host plane (XProf's thread_id)", ("line_id",)),
    ("thread_name", "VARCHAR", "the line name on a host plane (XProf's thread_name)", ("line_name",)),
    ("category", "VARCHAR", "XProf's category: 'host', 'device' (GPU) or the line name", ("line_name",)),
)
PLANE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("host", "VARCHAR", "the host (a PyTorch run's rank) the event was recorded on"),
    ("plane_index", "INTEGER", "index of the plane in the host's profile"),
    ("plane", "VARCHAR", "the plane (/device:GPU:0, /host:CPU, ...)"),
    ("device", "VARCHAR", "XProf's device name (gpu:0, cpu:0, TPU:0)"),
)


def events_columns() -> list[tuple[str, str, str]]:
    """Every column of ``events`` in order: (name, type, doc)."""
    return [*PLANE_COLUMNS, *[(c.name, c.sql_type, c.doc) for c in BASE_COLUMNS],
            *[(n, t, d) for n, t, d, _ in VIEW_COLUMNS], *[(c.name, c.sql_type, c.doc) for c in STAT_COLUMNS]]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# A select list that takes every column: ``SELECT *``, ``e.*``, ``, *``, ``DISTINCT *``.
_STAR = re.compile(r"(?:select|distinct|,|\.)\s*\*", re.IGNORECASE)


def _wanted_frame_columns(query: str | None) -> set[str]:
    """Frame columns a query may read: those it names (every one for a star, ``COLUMNS(``, a
    ``FROM``-first query without SELECT, or no query). A column not built reads as an error,
    never as NULL, and the query is then rerun with every column: see ``run_sql``."""
    all_names = {c.name for c in FRAME_COLUMNS}
    if query is None:
        return all_names
    lowered = query.lower()
    words = set(re.findall(r"[a-z_][a-z0-9_]*", lowered))
    if _STAR.search(query) or "columns(" in lowered or "select" not in words:
        return all_names
    wanted = all_names & words
    for name, _t, _d, needs in VIEW_COLUMNS:
        if name in words:
            wanted.update(needs)
    return wanted


def plane_select(store: ProfileStore, host: str, plane_index: int, frame_name: str, built: Collection[str],
                 strings_name: str | None = None) -> str:
    """One plane's SELECT of the ``events`` view: the frame's columns, its literals, what is computed.
    ``strings_name``: the host's ``listed_strings`` frame, where the frame's HOST_TEXT_COLUMNS hold string ids."""
    return events_select([plane_branch(store, host, plane_index, frame_name, built, strings_name)])


# One plane's part of ``events``: (column name, its expression) in ``events_columns`` order, and the FROM clause.
PlaneBranch = tuple[list[tuple[str, str]], str]


def plane_branch(store: ProfileStore, host: str, plane_index: int, frame_name: str, built: Collection[str],
                 strings_name: str | None = None) -> PlaneBranch:
    """One plane's columns of ``events`` as expressions over its frame (``plane_select``)."""
    plane = store.planes[plane_index]

    def col(name: str, sql_type: str) -> str:
        # A column the query does not name is not built: reading it anyway is an error, never NULL.
        # A text column of no string at all scans as DuckDB's NULL type: the cast keeps it VARCHAR.
        if name not in built:
            return _unloaded(name, sql_type)
        if name in HOST_TEXT_COLUMNS and strings_name is not None:
            return f"st.texts[ev.{name} + 1]::VARCHAR"  # 1-based; id -1 reads index 0, NULL
        return f"ev.{name}::VARCHAR" if sql_type == "VARCHAR" else f"ev.{name}"

    category = category_of(plane)
    on_device = plane.name.startswith("/device:")
    exprs = [("host", _literal(host)), ("plane_index", str(plane_index)), ("plane", _literal(plane.name)),
             ("device", _literal(device_name(plane.name)))]
    exprs += [(c.name, col(c.name, c.sql_type)) for c in BASE_COLUMNS]
    start, dur = col("start_ps", "BIGINT"), col("dur_ps", "BIGINT")
    line_id, line_name = col("line_id", "BIGINT"), col("line_name", "VARCHAR")
    kernel_name = f"{col('name', 'VARCHAR')}::VARCHAR"
    if plane.name.startswith("/device:TPU"):
        # XProf's kernel_name of a TPU module event carries its line's marker.
        kernel_name = (f"CASE WHEN {line_name}::VARCHAR = 'XLA Modules' THEN 'HLO Module:' || {kernel_name} "
                       f"ELSE {kernel_name} END")
    exprs += [
        ("end_ps", f"{start} + {dur}"),
        ("start_ns", f"({start} // 1000)"),
        ("end_ns", f"({start} // 1000 + {dur} // 1000)"),
        ("duration_ns", f"({dur} / 1000.0)"),
        ("self_time_ns", f"({col('self_ps', 'BIGINT')} // 1000)"),
        ("kernel_name", kernel_name),
        ("stream_id", line_id if on_device else "NULL::BIGINT"),
        ("thread_id", "NULL::BIGINT" if on_device else line_id),
        ("thread_name", "NULL::VARCHAR" if on_device else line_name + "::VARCHAR"),
        ("category", _literal(category) if category is not None else line_name + "::VARCHAR"),
    ]
    exprs += [(c.name, _stat_expr(col, c.name, c.sql_type)) for c in STAT_COLUMNS]
    listed = f", {strings_name} AS st" if strings_name is not None and HOST_TEXT_COLUMNS & set(built) else ""
    return exprs, f"{frame_name} AS ev{listed}"


def _unloaded(name: str, sql_type: str) -> str:
    return f"error('{_UNLOADED} {name}')::{sql_type}"


def events_select(branches: Sequence[PlaneBranch]) -> str:
    """The planes' SELECTs as one (``UNION ALL``). A column that reads a column not built, on any
    plane, is left out of the planes' SELECTs and is one error over their union instead: DuckDB binds
    every expression of every plane (for the view and again for each query), and on a query that
    names few columns the errors are most of them."""
    unloaded = {name for exprs, _ in branches for name, expr in exprs if _UNLOADED in expr}
    union = " UNION ALL ".join(
        "SELECT " + ", ".join(f'{expr} AS "{name}"' for name, expr in exprs if name not in unloaded) + " FROM " + source
        for exprs, source in branches)
    if not unloaded:
        return union

    def column(name: str, sql_type: str) -> str:
        return _unloaded(name, sql_type) if name in unloaded else f'"{name}"'

    outer = [f'{column(name, sql_type)} AS "{name}"' for name, sql_type, _ in events_columns()]
    return f"SELECT {', '.join(outer)} FROM ({union})"


def _stat_expr(col: Callable[[str, str], str], name: str, sql_type: str) -> str:
    if sql_type == "VARCHAR":
        return f"{col(name, sql_type)}::VARCHAR"
    if sql_type == "VARCHAR[]":  # shapes joined in the frame (service/sql/hlo_tensors.py)
        return f"string_split({col(name, 'VARCHAR')}::VARCHAR, {_literal(TENSOR_SEPARATOR)})"
    return col(name, sql_type)


def _table_select(source: str, columns: dict[str, np.ndarray]) -> str:
    """A tool table's SELECT: text columns (object arrays) typed VARCHAR even where they hold no
    string at all (no rows, or every value missing), which DuckDB would scan as its NULL type."""
    texts = [f'"{n.replace(chr(34), chr(34) * 2)}"' for n, values in columns.items() if values.dtype == object]
    replace = f" REPLACE ({', '.join(f'{q}::VARCHAR AS {q}' for q in texts)})" if texts else ""
    return f"SELECT *{replace} FROM {source}"


def empty_events() -> str:
    return "SELECT " + ", ".join(f"NULL::{t} AS {n}" for n, t, _ in events_columns()) + " WHERE false"


# --- a session: a connection with the run's views ------------------------------------------
def query_memory_bytes() -> int:
    return max(MIN_QUERY_MEMORY_BYTES, int(shared_budget().max_bytes * QUERY_MEMORY_SHARE))


_RESERVATIONS = Memo()
_QUERY_NUMBERS = itertools.count()  # one memo key per running query


@contextmanager
def reserved(size_bytes: int) -> Iterator[None]:
    """Holds ``size_bytes`` of the memory budget while a query runs (the LRU makes room)."""
    key = ("sql_query", next(_QUERY_NUMBERS))
    _RESERVATIONS.get(key, lambda: None, size=lambda _: size_bytes)
    try:
        yield
    finally:
        _RESERVATIONS.clear_key(key)


def _stores(profiles: Profiles, run: Run, hosts: Sequence[str],
            host_errors: list[dict[str, str]]) -> list[tuple[str, ProfileStore]]:
    """The hosts' event stores (a pod's converted on the executor first); unreadable hosts of
    several go to ``host_errors``. The columns of every host are read at once (one view), so the
    hosts' stores must fit the memory budget together: more is refused, naming the ways around."""
    if len(hosts) > 1:
        profiles.prepare(run, hosts)
    # The lazy reader's stores: a plane's stats are decoded when a column of the query reads them
    # (most queries name none; on jax_large the stats are most of the file).
    stores, errors = profiles.stores_tolerant(run, hosts, few_planes=True)
    host_errors.extend(errors)
    got = [(s.host, s) for s in stores if isinstance(s, ProfileStore)]
    if not got:
        raise NoData(f"run {run.name!r} is a {run.kind} run: it has no events to query")
    budget = shared_budget().max_bytes
    held = sum(s.nbytes for _, s in got)
    if len(got) > 1 and held > budget:
        raise BadParameter(
            f"the {len(got)} hosts' events take {held / 1e9:.1f} GB, more than the memory budget of "
            f"{budget / 1e9:.1f} GB ($TBPROF_MEMORY_BYTES) that one query over all of them would need; "
            "query fewer hosts (host=...), or write them as Parquet (tbprof export PATH --parquet DIR, one "
            "host at a time) and query the files")
    return got


def _check_columns_fit(stores: Sequence[tuple[str, ProfileStore]], built: Collection[str]) -> None:
    """Refuses a query whose columns would not fit the memory budget beside DuckDB's share: they
    are built whole (numpy arrays DuckDB scans in place) and held together while it runs."""
    budget = shared_budget().max_bytes
    room = int(budget * (1 - QUERY_MEMORY_SHARE))
    planes = [p for _, store in stores for p in store.planes if p.n_events]
    need = sum(built_bytes(p, built) for p in planes)
    if need > room:
        n_events = sum(p.n_events for p in planes)
        raise BadParameter(
            f"the columns this query reads take about {need / 1e6:,.0f} MB for {n_events:,} events, more than "
            f"the {room / 1e6:,.0f} MB the memory budget ($TBPROF_MEMORY_BYTES) leaves beside the query's own "
            f"share; name only the columns needed (* reads all {len(FRAME_COLUMNS)}, and trace_args is the "
            "largest), query one host (host=...), or write the run as Parquet (tbprof export PATH --parquet "
            "DIR) and query the files")


def _host_names(run: Run, host: str | None) -> list[str]:
    if host in (None, "", ALL_HOSTS):
        return sorted(run.hosts)
    return select_hosts(run, host)


def host_strings(store: ProfileStore) -> np.ndarray:
    """The host's string table (``text_table``): every text column indexes it."""
    return store.memo(("sql_strings",), lambda: text_table(store.strings.as_list()),
                      size=lambda table: estimate_bytes(table.tolist()))


def connect(memory_bytes: int, writable_dir: str | None = None) -> Any:
    """A DuckDB connection with no file system, network or extension access (``writable_dir``:
    the one folder an export may write; never given for a user's query)."""
    duckdb = _duckdb()
    config: dict[str, Any] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "threads": max(1, min(4, os.cpu_count() or 1)),
        "memory_limit": f"{memory_bytes // (1 << 20)}MiB",
        "temp_directory": "",
    }
    con = duckdb.connect(":memory:", config=config)
    if writable_dir is not None:
        con.execute("SET allowed_directories = $dirs", {"dirs": [writable_dir]})
    con.execute("SET enable_external_access = false")
    return con


def register_views(con: Any, profiles: Profiles, run: Run, hosts: Sequence[str], query: str | None,
                   all_columns: bool = False, tables: bool = True,
                   host_errors: list[dict[str, str]] | None = None) -> None:
    """Creates ``events`` over the hosts' planes and the tables the query names (all of them
    without a query), then locks the connection's settings."""
    words = set(re.findall(r"[a-z_][a-z0-9_]*", query.lower())) if query is not None else None
    built = {c.name for c in FRAME_COLUMNS} if all_columns else _wanted_frame_columns(query)
    errors = host_errors if host_errors is not None else []
    branches: list[PlaneBranch] = []
    if words is None or "events" in words:
        stores = _stores(profiles, run, hosts, errors)
        if query is not None:
            _check_columns_fit(stores, built)
        for k, (host, store) in enumerate(stores):
            strings = host_strings(store)
            listed = listed_strings(strings) if HOST_TEXT_COLUMNS & set(built) else None
            strings_name = f"s_{k}" if listed is not None else None
            if listed is not None:
                con.register(strings_name, listed)
            for i, plane in enumerate(store.planes):
                if plane.n_events == 0:
                    continue
                name = f"f_{len(branches)}"
                con.register(name, PlaneColumns(store, i, strings).frame(built, host_ids=listed is not None))
                branches.append(plane_branch(store, host, i, name, built, strings_name))
    con.execute("CREATE VIEW events AS " + (events_select(branches) if branches else empty_events()))
    for what in TABLE_SOURCES if tables else ():
        if words is not None and what not in words:
            continue
        source = source_of(profiles, run, what)
        if source is None:
            continue
        parts = []
        for host in hosts:
            try:
                table = host_table(profiles, run, host, source)
            except ProfileReadError as e:
                if len(hosts) == 1:
                    raise
                if all(h.get("host") != host for h in errors):
                    errors.append({"host": host, "error": str(e)})
                continue
            if table is not None:
                parts.append(table_columns(table, host))
        if parts:
            columns = concat_columns(parts) if len(parts) > 1 else parts[0]
            con.register(f"t_{what}", columns)
            con.execute(f"CREATE VIEW {what} AS {_table_select(f't_{what}', columns)}")
    con.execute("SET lock_configuration = true")


def _select_statement(con: Any, duckdb: Any, query: str) -> str:
    """The query if it is one SELECT. Parsed on the query's own connection: the module-level
    ``extract_statements`` of the ``duckdb`` package would start DuckDB's default database first."""
    if len(query) > MAX_QUERY_CHARS:
        raise BadParameter(f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are read")
    if not query.strip():
        raise BadParameter("the query is empty")
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as e:
        raise BadParameter(str(e)) from e
    if len(statements) != 1:
        raise BadParameter(f"one SQL statement is run at a time; this text holds {len(statements)}")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise BadParameter(f"only SELECT queries are run (read-only); this is a {statements[0].type.name} statement")
    return str(query)


# --- values ----------------------------------------------------------------------------------
def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def _type_name(duck_type: Any) -> str:
    text = str(duck_type)
    return "VARCHAR" if text.startswith("ENUM(") else text


def _execute(con: Any, duckdb: Any, query: str, max_rows: int,
             timeout_s: float) -> tuple[list[SqlColumn], list[Any], bool]:
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.start()
    try:
        cur = con.execute(query)
        columns: list[SqlColumn] = [{"name": str(d[0]), "type": _type_name(d[1])} for d in cur.description or []]
        rows = cur.fetchmany(max_rows + 1)
    except duckdb.InterruptException as e:
        raise BadParameter(f"the query was stopped after its time limit of {timeout_s:g} s") from e
    except duckdb.OutOfMemoryException as e:
        raise BadParameter(f"the query needs more than its memory limit: {e}") from e
    finally:
        timer.cancel()
        # Ended before the answer: a one-shot command forks its cache writer only when no other
        # thread is alive (cache/profile_cache.py ``_can_fork_writer``), and writes in-process otherwise.
        timer.join()
    return columns, rows, len(rows) > max_rows


def run_sql(profiles: Profiles, run: str, query: str, *, host: str | None = None,
            max_rows: int = 10_000, timeout_s: float = 30.0, phases: dict[str, float] | None = None) -> SqlResult:
    """One read-only SELECT over the run's views (every host, or ``host``). ``phases``, where
    given, gets the wall seconds of its parts: ``connect_s`` (a locked-down connection, the text
    parsed), ``views_s`` (the stores and the views over their columns), ``query_s`` (DuckDB's
    run and fetch, a rerun with every column included, closing the connection)."""
    began = time.perf_counter()
    duckdb = _duckdb()
    if max_rows < 0:
        raise BadParameter("max_rows must be 0 or more")
    if not timeout_s > 0:
        raise BadParameter("timeout_s must be more than 0")
    memory_bytes = query_memory_bytes()
    host_errors: list[dict[str, str]] = []
    con = _opened_connection(query, memory_bytes)
    if con is None:
        con = connect(memory_bytes)
    try:
        statement = _select_statement(con, duckdb, query)
        the_run = profiles.run(run)
        hosts = _host_names(the_run, host)
        connected = time.perf_counter()
        viewed = connected
        with reserved(memory_bytes):
            try:
                register_views(con, profiles, the_run, hosts, statement, host_errors=host_errors)
                viewed = time.perf_counter()
                columns, rows, truncated = _execute(con, duckdb, statement, max_rows, timeout_s)
            except duckdb.Error as e:
                if _UNLOADED not in str(e):
                    raise BadParameter(str(e)) from e
                # The query reached a column without naming it (a row as a struct, ...): all columns,
                # on a fresh connection (this one's views exist and its settings are locked).
                con.close()
                con = connect(memory_bytes)
                register_views(con, profiles, the_run, hosts, statement, all_columns=True)
                try:
                    columns, rows, truncated = _execute(con, duckdb, statement, max_rows, timeout_s)
                except duckdb.Error as e2:
                    raise BadParameter(str(e2)) from e2
    finally:
        con.close()
    if phases is not None:
        phases.update(connect_s=connected - began, views_s=viewed - connected, query_s=time.perf_counter() - viewed)
    kept = rows[:max_rows]
    result: SqlResult = {"columns": columns, "rows": [[_json_safe(v) for v in row] for row in kept],
                         "row_count": len(kept), "truncated": truncated,
                         "elapsed_ms": (time.perf_counter() - began) * 1e3}
    if host_errors:
        result["host_errors"] = host_errors
    return result


def sql_tables(profiles: Profiles, run: str) -> list[dict[str, Any]]:
    """The run's views and their columns: ``[{"name", "columns": [SqlColumn...], "doc"?}]``."""
    the_run = profiles.run(run)
    out: list[dict[str, Any]] = [{"name": "events", "columns": [
        {"name": n, "type": t, "doc": d} for n, t, d in events_columns()]}]
    duckdb = _duckdb()
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    try:
        for what in TABLE_SOURCES:
            source = source_of(profiles, the_run, what)
            if source is None:
                continue
            try:
                table = host_table(profiles, the_run, sorted(the_run.hosts)[0], source)
            except TbprofError:
                continue
            if table is None:
                continue
            columns = table_columns(table, "h")
            con.register("t", columns)
            cols: list[SqlColumn] = [{"name": str(r[0]), "type": _type_name(r[1])}
                                     for r in con.execute("DESCRIBE " + _table_select("t", columns)).fetchall()]
            con.unregister("t")
            out.append({"name": what, "columns": cols, "source": f"{source[0]}:{source[1]}"})
    finally:
        con.close()
    return out
