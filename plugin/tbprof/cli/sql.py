"""``tbprof sql PATH "SELECT ..."`` and ``tbprof export PATH --parquet DIR``: SQL over a run
(docs/sql.md) and its views as Parquet files."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tbprof.cli.common import (
    EXIT_OK,
    collector_paused,
    executor_from,
    pick_run,
    print_json,
    process_age_s,
    profiles_for,
    resume_collector,
)
from tbprof.domain.answer_size import NARROW_SQL

# A column of the terminal table shows at most this many characters (the JSON and CSV keep all).
MAX_CELL_CHARS = 60


def configure_sql(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("query", help='one SELECT over events, steps, ops, kernels, memory, hlo_ops (docs/sql.md); '
                                 '"-" reads it from stdin')
    p.add_argument("--run", default=None)
    p.add_argument("--host", default=None, help="one host's events only (default: every host)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--max-rows", type=int, default=10_000, help="rows printed at most (default 10000)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds the query may run (default 300)")
    p.add_argument("--timings", action="store_true",
                   help="print where the time went, phase by phase, as one line on stderr")


def _scalar(value: Any) -> Any:
    """A list or struct value (``input_tensors``, ``json_keys(...)``) as its JSON text, as the
    Query page shows it; other values as they are."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value


def _cell(value: Any) -> str:
    text = "NULL" if value is None else (f"{value:.6g}" if isinstance(value, float) else str(value))
    text = text.replace("\n", " ").replace("\r", " ").replace("\t", " ")
    return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS - 1] + "…"


def format_table(names: list[str], rows: list[list[Any]]) -> str:
    """Rows as aligned text columns (numbers right-aligned), for a terminal."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) and bool(rows)
               for i in range(len(names))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True))

    out = [line(names), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in cells)
    return "\n".join(s.rstrip() for s in out) + "\n"


def cmd_sql(args: argparse.Namespace) -> int:
    # The service's, the SQL layer's and DuckDB's imports with the collector off (~65 collections
    # that freed nothing, while the conversion's thread waited for the GIL), on again for the query.
    with collector_paused():
        return _sql(args)


def _sql(args: argparse.Namespace) -> int:
    marks = {"start": time.perf_counter()}
    age_s = process_age_s() if args.timings else None
    query = sys.stdin.read() if args.query == "-" else args.query
    profiles = profiles_for(args.path, args.cache_dir, executor_from(args))
    run = pick_run(profiles, args.run)
    marks["listed"] = time.perf_counter()
    # Conversion (a background thread) overlaps the import of DuckDB and the opening of the query's
    # connection, as `summary`'s overlaps its imports; lazily, as run_sql reads the stores (a query
    # decodes the stats of the planes whose stat columns it names).
    loading = profiles.load_in_background(run, [args.host] if args.host in run.hosts else sorted(run.hosts),
                                          few_planes=True)
    from tbprof.service.sql import load_engine, run_sql

    if args.format != "table":  # the answer's encoder (it imports the analyses' tables), not after the query
        import tbprof.analyses.encode  # noqa: F401

    load_engine(query)
    resume_collector()
    marks["imported"] = time.perf_counter()
    loading.join()
    marks["loaded"] = time.perf_counter()
    phases: dict[str, float] = {}
    result = run_sql(profiles, run.name, query, host=args.host, max_rows=max(args.max_rows, 0), timeout_s=args.timeout,
                     phases=phases)
    marks["queried"] = time.perf_counter()
    _print_result(run.name, result, args.format)
    if args.timings:
        sys.stdout.flush()
        marks["printed"] = time.perf_counter()
        print(timings_line(marks, phases, age_s), file=sys.stderr)
    return _done(result, args.format)


def _print_result(run_name: str, result: Any, fmt: str) -> None:
    if fmt == "json":
        print_json({"run": run_name, **result}, narrow=NARROW_SQL)
        return
    names = [c["name"] for c in result["columns"]]
    rows = [[_scalar(v) for v in row] for row in result["rows"]]
    if fmt == "csv":
        from tbprof.analyses.encode import rows_csv

        sys.stdout.write(rows_csv(names, rows, narrow=NARROW_SQL).decode())
    else:
        sys.stdout.write(format_table(names, rows))


def timings_line(marks: dict[str, float], phases: dict[str, float], age_s: float | None) -> str:
    """``--timings``: the wall seconds of each phase of ``tbprof sql``: the interpreter and the
    imports before the command (from the process's start, to about 10 ms; "?" where /proc does
    not say), listing the run, importing the file's reader (where it converts) and then DuckDB and
    the SQL layer and opening the query's connection (while the stores convert on a thread), the
    wait for the conversion beyond that, then ``run_sql``'s parts (the connection where not opened
    ahead, the views over the stores, DuckDB's query) and printing the answer."""
    def f(x: float) -> str:
        return f"{x:.3f}"

    return (f"tbprof timings (s): start + imports {f(age_s) if age_s is not None else '?'}, "
            f"list {f(marks['listed'] - marks['start'])}, "
            f"DuckDB import + connect {f(marks['imported'] - marks['listed'])}, "
            f"then converting {f(marks['loaded'] - marks['imported'])}, "
            f"connect {f(phases.get('connect_s', 0.0))}, views {f(phases.get('views_s', 0.0))}, "
            f"query {f(phases.get('query_s', 0.0))}, answer {f(marks['printed'] - marks['queried'])}, "
            f"command total {f(marks['printed'] - marks['start'])}")


def _done(result: Any, fmt: str) -> int:
    if result["truncated"] and fmt != "json":
        print(f"tbprof: only the first {result['row_count']:,} rows are printed (--max-rows)", file=sys.stderr)
    return EXIT_OK


def configure_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("--parquet", required=True, metavar="DIR",
                   help="write events (partitioned by host) and the tables as Parquet files into DIR")
    p.add_argument("--run", default=None)
    p.add_argument("--host", default=None, help="one host only (default: every host)")


def cmd_export(args: argparse.Namespace) -> int:
    from tbprof.service.sql.export import export_parquet

    profiles = profiles_for(args.path, args.cache_dir, executor_from(args))
    run = pick_run(profiles, args.run)
    for written in export_parquet(profiles, run.name, Path(args.parquet), host=args.host):
        print(f"{written['path']}\t{written['rows']} rows")
    return EXIT_OK


COMMANDS = {"sql": (configure_sql, cmd_sql), "export": (configure_export, cmd_export)}
