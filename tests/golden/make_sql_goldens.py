#!/usr/bin/env python3
"""Write XProf 2.24.2 Events DB goldens for tbprof's SQL parity tests (tests/service/test_sql_parity.py).

HOW TO REGENERATE
-----------------
With a Python that has PyPI ``xprof==2.24.2`` (it brings DuckDB; never the system Python)::

    python3 -m venv /opt/xprof-venv && /opt/xprof-venv/bin/pip install xprof==2.24.2
    /opt/xprof-venv/bin/python tests/golden/make_sql_goldens.py

For every XSpace file of the demo profiles (each host of jax_2hosts on its own: XProf's Events
DB takes one file), the script runs XProf's own Events DB conversion (``xspace_to_parquet``, what
``xprof create_events_db`` runs) into a temporary folder, then each query of ``QUERIES`` over its
``Events`` view as ``xprof query_events_db`` does (DuckDB over the Parquet file), and writes the
rows to ``tests/golden/sql/<profile>__<host>.json``. The queries use only columns both have;
the tests run the same text through tbprof's ``run_sql``.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import tempfile

import duckdb
from xprof.convert.events_db.python import pywrap_events_db_c_api as events_db

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROFILES = ("keras_cnn", "custom_loop", "jax_mlp", "jax_2hosts", "tpu_inference")
XPROF_VERSION = "2.24.2"

# name -> SQL over Events (XProf's names; tbprof's events view answers the same names).
# Lines XProf's Events DB leaves out (tbprof's events keeps every line: docs/differences.md).
SKIPPED = "category NOT IN ('Async XLA Ops', 'XLA TraceMe')"
# Starts are compared from the file's first event: XProf counts ns from another origin.
FIRST = f"(SELECT min(start_ns) FROM Events WHERE {SKIPPED})"

# name -> SQL over Events (XProf's names; tbprof's events view answers the same names).
QUERIES = {
    "count_by_device_category": (
        f"SELECT device, category, count(*) AS n FROM Events WHERE {SKIPPED} "
        "GROUP BY device, category ORDER BY device, category"),
    "time_by_kernel_name": (
        "SELECT device, kernel_name, count(*) AS n, sum(end_ns - start_ns) AS total_ns, sum(self_time_ns) AS self_ns "
        f"FROM Events WHERE category <> 'host' AND {SKIPPED} GROUP BY device, kernel_name "
        "ORDER BY device, kernel_name"),
    "time_by_hlo_op": (
        "SELECT device, hlo_op, count(*) AS n, sum(end_ns - start_ns) AS total_ns, sum(self_time_ns) AS self_ns "
        f"FROM Events WHERE hlo_op IS NOT NULL AND category <> 'host' AND {SKIPPED} "
        "GROUP BY device, hlo_op ORDER BY device, hlo_op"),
    # Device events only: on the host XProf puts every event under a grouped root in its step,
    # tbprof only those the grouping links; and XProf leaves host-to-device and peer copies out of
    # the steps, tbprof keeps them in the step that launched them (docs/differences.md).
    "step_spans": (
        f"SELECT device, step, min(start_ns) - {FIRST} AS first_start_ns, max(end_ns) - min(start_ns) AS span_ns, "
        f"count(*) AS n FROM Events WHERE step IS NOT NULL AND category <> 'host' AND {SKIPPED} "
        "AND kernel_name NOT IN ('MemcpyH2D', 'MemcpyP2P') "
        "GROUP BY device, step ORDER BY device, first_start_ns, step"),
    # The operand and result shapes XProf reads from the HLO protos, per op.
    "tensors_by_hlo_op": (
        "SELECT device, hlo_op, input_tensors, output_tensors, count(*) AS n FROM Events "
        f"WHERE output_tensors IS NOT NULL AND {SKIPPED} GROUP BY ALL ORDER BY ALL"),
    "first_start": (
        f"SELECT device, min(start_ns) - {FIRST} AS first_start_ns FROM Events WHERE {SKIPPED} "
        "GROUP BY device ORDER BY device"),
}


def _convert(xplane: pathlib.Path, out: pathlib.Path) -> None:
    events_db.xspace_to_parquet(
        input_path=xplane, output_path=out,
        options=events_db.ParquetExportOptions(compression_type=events_db.ArrowCompressionType.ZSTD,
                                               compression_level=3))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for profile in PROFILES:
            pattern = str(REPO / "demo_logs" / profile / "**/plugins/profile/*/*.xplane.pb")
            for path in sorted(glob.glob(pattern, recursive=True)):
                xplane = pathlib.Path(path)
                host = xplane.name.removesuffix(".xplane.pb")
                parquet = pathlib.Path(tmp) / f"{profile}__{host}.parquet"
                _convert(xplane, parquet)
                con = duckdb.connect(":memory:")
                quoted = str(parquet).replace("'", "''")
                con.execute(f"CREATE VIEW Events AS SELECT * FROM read_parquet('{quoted}')")
                answers = {}
                for name, sql in QUERIES.items():
                    cur = con.execute(sql)
                    cols = [d[0] for d in cur.description]
                    answers[name] = {"sql": sql, "columns": cols, "rows": [list(r) for r in cur.fetchall()]}
                con.close()
                target = HERE / "sql" / f"{profile}__{host}.json"
                target.write_text(json.dumps({
                    "xprof_version": XPROF_VERSION, "profile": profile, "host": host,
                    "file": os.path.relpath(xplane, REPO), "queries": answers}, indent=1) + "\n")
                print(target)


if __name__ == "__main__":
    main()
