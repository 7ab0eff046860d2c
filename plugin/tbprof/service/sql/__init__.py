"""SQL over a run: DuckDB on tbprof's columns, read in place, every host at once.

``run_sql(profiles, run, query)`` answers one read-only SELECT over the run's views
(``events`` of every host and plane, and the tables the pages compute: ``steps``, ``ops``,
``kernels``, ``memory``, ``hlo_ops``); ``sql_tables`` lists them with their columns. The CLI
(``tbprof sql``), the HTTP route, the Query page, ``Profile.sql`` and the MCP server all call
these two. docs/sql.md describes the views and the safety rules (engine.py enforces them).
"""

from tbprof.service.sql.engine import MAX_QUERY_CHARS, SqlColumn, SqlResult, load_engine, run_sql, sql_tables
from tbprof.service.sql.tables import TABLE_SOURCES

__all__ = ["MAX_QUERY_CHARS", "TABLE_SOURCES", "SqlColumn", "SqlResult", "load_engine", "run_sql", "sql_tables"]
