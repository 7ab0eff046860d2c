"""``tbprof export PATH --parquet DIR``: the SQL views as Parquet files for Spark, Dask, DuckDB
or Polars.

``DIR/events/host=<host>/events-<plane>-<part>.parquet`` (Hive partitioning by host:
``read_parquet('DIR/events/*/*.parquet', hive_partitioning=true)`` finds the column again) and
``DIR/<table>.parquet`` for each table the run has. A pod's hosts are converted first on the
executor (in parallel: the pool or Dask path), then written one plane at a time, in runs of
events small enough that every column of a run fits the memory budget beside DuckDB's share
(``PlaneColumns`` with ``rows``: each column built, cut to the run and dropped in turn, nothing
memoised), so no host or plane is ever held whole. DuckDB writes the files, from a connection
that may write only ``DIR``.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import TypedDict

from tbprof.errors import BadParameter
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.sql.columns import FRAME_COLUMNS, PlaneColumns, built_bytes
from tbprof.service.sql.engine import (
    connect,
    empty_events,
    host_strings,
    load_duckdb,
    plane_select,
    query_memory_bytes,
    register_views,
    reserved,
)
from tbprof.service.sql.tables import TABLE_SOURCES, source_of
from tbprof.store.memo import shared_budget
from tbprof.store.tables import Plane


class ExportedFile(TypedDict):
    path: str
    rows: int


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def host_dir_name(host: str) -> str:
    """``host=<host>`` with the host percent-encoded (a host name may hold ``/`` or ``=``)."""
    return "host=" + urllib.parse.quote(host, safe="")


# Every column of events: an export writes them all.
_ALL_COLUMNS = frozenset(c.name for c in FRAME_COLUMNS)
# The share of the memory budget one part's columns may take: DuckDB has its own
# (QUERY_MEMORY_SHARE), and the rest holds what building a column of the whole plane takes
# meanwhile (the plane's steps, its parent rows, one column before it is cut).
PART_SHARE = 0.25
# Events per Parquet row group (DuckDB's default is 122,880).
ROW_GROUP_EVENTS = 1 << 15
# The fewest events a part holds, however small the budget (a part is one file).
MIN_PART_EVENTS = 1 << 16


def part_events(plane: Plane, room_bytes: int) -> int:
    """Events of ``plane`` written per part: as many as fit ``room_bytes`` with every column."""
    per_event = -(-built_bytes(plane, _ALL_COLUMNS) // max(plane.n_events, 1))
    return max(MIN_PART_EVENTS, room_bytes // max(per_event, 1))


def _export_events(profiles: Profiles, run: Run, host: str, out_dir: Path, memory_bytes: int,
                   room_bytes: int) -> list[ExportedFile]:
    """One host's events under ``out_dir/events/host=<host>/`` (its earlier files replaced)."""
    store = profiles.event_store(run, host)
    folder = out_dir / "events" / host_dir_name(host)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("events*.parquet"):
        old.unlink()
    strings = host_strings(store)
    duckdb = load_duckdb()
    parts: list[tuple[int, slice]] = []
    for i, plane in enumerate(store.planes):
        step = part_events(plane, room_bytes)
        parts.extend((i, slice(lo, min(plane.n_events, lo + step))) for lo in range(0, plane.n_events, step))
    written: list[ExportedFile] = []
    for k, (i, rows) in enumerate(parts or [(-1, slice(0, 0))]):
        target = folder / f"events-{max(i, 0)}-{k}.parquet"
        con = connect(memory_bytes, writable_dir=str(out_dir))
        try:
            # One writer thread and small row groups: the Parquet writer buffers a row group per
            # thread, and an event's texts (trace_args, stacks) make a default one outgrow
            # DuckDB's share of the budget.
            con.execute("SET threads = 1")
            if i < 0:  # a host without events: the columns, no rows
                con.execute("CREATE VIEW events AS " + empty_events())
            else:
                con.register("f_0", PlaneColumns(store, i, strings, rows).frame(_ALL_COLUMNS))
                con.execute("CREATE VIEW events AS " + plane_select(store, host, i, "f_0", _ALL_COLUMNS))
            try:
                con.execute(f"COPY (SELECT * EXCLUDE (host) FROM events) TO {_literal(str(target))} "
                            f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_EVENTS})")
            except duckdb.OutOfMemoryException as e:
                raise BadParameter(f"writing {target.name} needs more than DuckDB's share of the memory budget "
                                   f"($TBPROF_MEMORY_BYTES): {e}") from e
        finally:
            con.close()
        written.append({"path": str(target), "rows": rows.stop - rows.start})
    return written


def export_parquet(profiles: Profiles, run: str, out_dir: Path, host: str | None = None) -> list[ExportedFile]:
    """Writes the run's views under ``out_dir`` (created; files already there are replaced)."""
    the_run = profiles.run(run)
    hosts = sorted(the_run.hosts) if host is None else [host]
    if host is not None and host not in the_run.hosts:
        raise BadParameter(f"unknown host {host!r}; hosts: {sorted(the_run.hosts)}")
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if len(hosts) > 1:
        profiles.prepare(the_run, hosts)
    written: list[ExportedFile] = []
    memory_bytes = query_memory_bytes()
    room = int(shared_budget().max_bytes * PART_SHARE)
    with reserved(memory_bytes):
        for h in hosts:
            written.extend(_export_events(profiles, the_run, h, out_dir, memory_bytes, room))
        for what in TABLE_SOURCES:
            if source_of(profiles, the_run, what) is None:
                continue
            con = connect(memory_bytes, writable_dir=str(out_dir))
            try:
                register_views(con, profiles, the_run, hosts, what)
                exists = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [what]).fetchone()
                if not exists or not exists[0]:
                    continue
                target = out_dir / f"{what}.parquet"
                con.execute(f"COPY (SELECT * FROM {what}) TO {_literal(str(target))} "
                            "(FORMAT parquet, COMPRESSION zstd)")
                rows = con.execute(f"SELECT count(*) FROM {what}").fetchone()
            finally:
                con.close()
            written.append({"path": str(target), "rows": int(rows[0]) if rows else 0})
    return written
