#!/usr/bin/env python3
"""The cost of CSV neutralisation (issue #25): ``table_csv`` (text cells prefixed against
spreadsheet formulas, CR-holding fields quoted) against Python's csv.writer as it was used
before, on the same tables of the demo profiles, in one run.

    python bench/csv_bench.py [--repeat 200]

Prints ms per export and the ratio. No anchor: neither XProf nor HTA exports CSV this way.
Measured (2 shared cores, other work running; two runs of --repeat 200/500): torch_ddp
framework_op_stats (109 rows) csv.writer 1.25-1.55 ms, table_csv 1.22-1.43 ms (x0.92-0.97);
jax_mlp framework_op_stats (12 rows) 0.15-0.22 ms vs 0.18-0.20 ms (x0.90-1.22); torch_cnn
kernel_stats (54 rows) 0.99-1.24 ms vs 0.21-0.51 ms (x0.22-0.41). No cost; the bytes are equal
where no cell starts a formula or holds a CR.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))

from tbprof.analyses.encode import table_csv  # noqa: E402
from tbprof.analyses.table import Table, TableQuery, apply_query  # noqa: E402
from tbprof.service.api import open as open_profile  # noqa: E402

CASES = (("torch_ddp", "framework_op_stats", "ops"), ("jax_mlp", "framework_op_stats", "ops"),
         ("torch_cnn", "kernel_stats", None))


def csv_writer(table: Table) -> bytes:
    index, _ = apply_query(table, TableQuery())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    for row in table.rows(index):
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue().encode()


def per_call_ms(fn: object, table: Table, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn(table)  # type: ignore[operator]
    return (time.perf_counter() - start) / repeat * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    for run, tool, name in CASES:
        tables = open_profile(str(REPO / "demo_logs" / run)).tool(tool)["tables"]
        table = tables[name] if name else next(iter(tables.values()))
        before = per_call_ms(csv_writer, table, args.repeat)
        after = per_call_ms(table_csv, table, args.repeat)
        same = csv_writer(table) == table_csv(table)
        print(f"{run} {tool} ({table.n_rows} rows): csv.writer {before:.2f} ms, table_csv {after:.2f} ms, "
              f"x{after / before:.2f}, same bytes: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
