"""``tbprof export PATH --parquet DIR``: the SQL views as Parquet files for Spark, Dask, DuckDB
or Polars.

``DIR/events/host=<host>/events.parquet`` (Hive partitioning by host: ``read_parquet('DIR/events/*/*.parquet',
hive_partitioning=true)`` finds the column again) and ``DIR/<table>.parquet`` for each table the run
has. A pod's hosts are converted first on the executor (in parallel: the pool or Dask path), then
written one host at a time, so only one host's columns are in memory at once (and the budget can
drop the stores already written). DuckDB writes the files, from a connection that may write
only ``DIR``.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import TypedDict

from tbprof.errors import BadParameter
from tbprof.service.profiles import Profiles
from tbprof.service.sql.engine import connect, query_memory_bytes, register_views, reserved
from tbprof.service.sql.tables import TABLE_SOURCES, source_of


class ExportedFile(TypedDict):
    path: str
    rows: int


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def host_dir_name(host: str) -> str:
    """``host=<host>`` with the host percent-encoded (a host name may hold ``/`` or ``=``)."""
    return "host=" + urllib.parse.quote(host, safe="")


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
    with reserved(memory_bytes):
        for h in hosts:
            target = out_dir / "events" / host_dir_name(h) / "events.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            con = connect(memory_bytes, writable_dir=str(out_dir))
            try:
                register_views(con, profiles, the_run, [h], None, all_columns=True, tables=False)
                con.execute(f"COPY (SELECT * EXCLUDE (host) FROM events) TO {_literal(str(target))} "
                            "(FORMAT parquet, COMPRESSION zstd)")
                rows = con.execute("SELECT count(*) FROM events").fetchone()
            finally:
                con.close()
            written.append({"path": str(target), "rows": int(rows[0]) if rows else 0})
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
