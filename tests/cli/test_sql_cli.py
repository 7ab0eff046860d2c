"""``tbprof sql`` and ``tbprof export --parquet`` on real profiles."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tbprof
from tbprof.cli import main as cli
from tbprof.cli.sql import format_table
from tests.conftest import SAMPLE_PROFILES

QUERY = "SELECT host, count(*) AS n, sum(dur_ps) AS total_ps FROM events GROUP BY host ORDER BY host"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_sql_in_every_format(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    path = str(SAMPLE_PROFILES / "torch_ddp")
    code, out, _ = _run(capsys, "sql", path, QUERY, "--format", "json", "--cache-dir", str(cache_dir))
    assert code == 0
    body = json.loads(out)
    assert [c["name"] for c in body["columns"]] == ["host", "n", "total_ps"] and body["row_count"] == 2
    code, out, _ = _run(capsys, "sql", path, QUERY, "--format", "csv", "--cache-dir", str(cache_dir))
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["host", "n", "total_ps"] and [[r[0], int(r[1]), int(r[2])] for r in rows[1:]] == body["rows"]
    code, out, _ = _run(capsys, "sql", path, QUERY, "--cache-dir", str(cache_dir))
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["host", "n", "total_ps"] and len(lines) == 2 + 2
    assert lines[2].split() == [str(v) for v in body["rows"][0]]


def test_sql_refusals_exit_1(capsys: pytest.CaptureFixture[str], cache_dir: Path, tmp_path: Path) -> None:
    path = str(SAMPLE_PROFILES / "jax_mlp")
    target = tmp_path / "x.csv"
    code, _, err = _run(capsys, "sql", path, f"COPY (SELECT 1) TO '{target}'", "--cache-dir", str(cache_dir))
    assert code == 1 and "only SELECT" in err and not target.exists()
    code, _, err = _run(capsys, "sql", path, "SELECT nope FROM events", "--cache-dir", str(cache_dir))
    assert code == 1 and "nope" in err


def test_sql_truncation_is_said(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    code, out, err = _run(capsys, "sql", str(SAMPLE_PROFILES / "jax_mlp"), "SELECT name FROM events",
                          "--max-rows", "3", "--format", "csv", "--cache-dir", str(cache_dir))
    assert code == 0 and len(out.splitlines()) == 1 + 3 and "first 3 rows" in err


def test_sql_imports_without_the_collector_and_queries_with_it(capsys: pytest.CaptureFixture[str], cache_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's imports (up to DuckDB's, ``load_engine``) run with Python's cycle collector
    off; the query runs with it on (a large trace's conversion goes on beside it); a caller that
    goes on finds it on and nothing frozen, after an answer and after an error."""
    import gc

    import tbprof.service.sql as sql_layer

    seen: dict[str, bool] = {}
    load_engine, run_sql = sql_layer.load_engine, sql_layer.run_sql

    def load_engine_seen(*a: object, **k: object) -> object:
        seen["imports"] = gc.isenabled()
        return load_engine(*a, **k)  # type: ignore[arg-type]

    def run_sql_seen(*a: object, **k: object) -> object:
        seen["query"] = gc.isenabled()
        return run_sql(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(sql_layer, "load_engine", load_engine_seen)
    monkeypatch.setattr(sql_layer, "run_sql", run_sql_seen)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    code, out, _ = _run(capsys, "sql", str(SAMPLE_PROFILES / "jax_mlp"), QUERY, "--format", "json",
                        "--cache-dir", str(cache_dir))
    assert code == 0 and json.loads(out)["row_count"] == 1
    assert seen == {"imports": False, "query": True}
    assert gc.isenabled() and gc.get_freeze_count() == 0
    code, _, _ = _run(capsys, "sql", str(SAMPLE_PROFILES / "jax_mlp"), "SELECT nope FROM events",
                      "--cache-dir", str(cache_dir))
    assert code == 1 and gc.isenabled() and gc.get_freeze_count() == 0


def test_format_table_aligns_and_shows_null() -> None:
    # Both columns 4 wide ("NULL", "22.5"), two spaces apart; the numeric one right-aligned, header too.
    text = format_table(["a", "bb"], [["x", 1], [None, 22.5]])
    assert text.splitlines() == ["a       bb", "----  ----", "x        1", "NULL  22.5"]


def test_a_list_column_prints_as_json_text(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    """input_tensors (VARCHAR[]) in CSV and in the terminal table is the list's JSON text, as the
    Query page shows it, and the same list as the JSON answer's."""
    path = str(SAMPLE_PROFILES / "jax_mlp")
    query = "SELECT DISTINCT input_tensors FROM events WHERE len(input_tensors) > 1 ORDER BY ALL LIMIT 3"
    code, out, _ = _run(capsys, "sql", path, query, "--format", "json", "--cache-dir", str(cache_dir))
    lists = [r[0] for r in json.loads(out)["rows"]]
    assert code == 0 and lists and all(isinstance(v, list) and len(v) > 1 for v in lists)
    code, out, _ = _run(capsys, "sql", path, query, "--format", "csv", "--cache-dir", str(cache_dir))
    assert [json.loads(r[0]) for r in list(csv.reader(io.StringIO(out)))[1:]] == lists
    code, out, _ = _run(capsys, "sql", path, query, "--cache-dir", str(cache_dir))
    assert [json.loads(line.strip()) for line in out.splitlines()[2:]] == lists


def test_export_parquet_round_trips(capsys: pytest.CaptureFixture[str], cache_dir: Path, tmp_path: Path) -> None:
    import duckdb

    path = str(SAMPLE_PROFILES / "torch_ddp")
    out_dir = tmp_path / "out"
    code, out, _ = _run(capsys, "export", path, "--parquet", str(out_dir), "--cache-dir", str(cache_dir))
    assert code == 0
    written = dict(line.split("\t") for line in out.splitlines())
    assert {Path(p).name for p in written} >= {"steps.parquet", "kernels.parquet"}
    assert any(Path(p).name.startswith("events-") and Path(p).parent.name.startswith("host=") for p in written)
    code, out, _ = _run(capsys, "sql", path, QUERY, "--format", "json", "--cache-dir", str(cache_dir))
    expected = json.loads(out)["rows"]
    glob = str(out_dir / "events" / "*" / "*.parquet").replace("'", "''")
    con = duckdb.connect()
    got = con.execute(f"SELECT host, count(*), sum(dur_ps) FROM read_parquet('{glob}', hive_partitioning = true) "
                      "GROUP BY host ORDER BY host").fetchall()
    assert [list(r) for r in got] == expected
    kernels = con.execute(f"SELECT count(*) FROM read_parquet('{out_dir / 'kernels.parquet'}')").fetchone()
    code, out, _ = _run(capsys, "sql", path, "SELECT count(*) FROM kernels", "--format", "json",
                        "--cache-dir", str(cache_dir))
    assert kernels is not None and [kernels[0]] == json.loads(out)["rows"][0]


def test_sql_answers_without_importing_pandas_or_duckdbs_python_layer(cache_dir: Path) -> None:
    """The CLI (like the server) scans numpy arrays: pandas is not imported for a query of the
    events and a table (its import took longer than the query), nor the ``duckdb`` package's
    Python layer over the engine's native module (its relation API and version lookup)."""
    code = ("import sys\nfrom tbprof.cli.main import main\nrc = main(sys.argv[1:])\n"
            "print('imported:', sorted(m for m in ('pandas', 'duckdb', '_duckdb') if m in sys.modules))\n"
            "sys.exit(rc)")
    query = "SELECT (SELECT count(*) FROM kernels) AS kernels, count(*) AS events, min(name) FROM events"
    env = {**os.environ, "PYTHONPATH": str(Path(tbprof.__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", code, "sql", str(SAMPLE_PROFILES / "torch_ddp"), query,
                           "--format", "json", "--cache-dir", str(cache_dir)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    body, _, last = done.stdout.rstrip().rpartition("\n")
    assert json.loads(body)["rows"][0][1] > 0
    assert last == "imported: ['_duckdb']"


# Columns whose modules a query imports only when it names them (service/sql/columns.py).
_COLUMN_MODULES = {"step_num": "tbprof.analyses.steps.assignment", "tf_op_name": "tbprof.domain.tf_op",
                   "trace_args": "tbprof.service.sql.trace_args"}


@pytest.mark.parametrize("named", [(), tuple(_COLUMN_MODULES)], ids=["name-and-duration", "step_num-tf_op-trace_args"])
def test_sql_imports_the_modules_of_the_columns_it_names(cache_dir: Path, named: tuple[str, ...]) -> None:
    """A cold query pays no import for a column it does not name (on the command's path beside the
    conversion); naming the column imports its module, so the module names here are the real ones."""
    picked = "".join(f", count({c})" for c in named)
    query = f"SELECT name, count(*) AS n, sum(dur_ps) AS total_ps{picked} FROM events GROUP BY name"
    code = ("import sys\nfrom tbprof.cli.main import main\nrc = main(sys.argv[1:])\n"
            f"print(sorted(m for m in {sorted(_COLUMN_MODULES.values())!r} if m in sys.modules))\nsys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(Path(tbprof.__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", code, "sql", str(SAMPLE_PROFILES / "jax_mlp"), query,
                           "--format", "json", "--cache-dir", str(cache_dir)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    body, _, last = done.stdout.rstrip().rpartition("\n")
    assert json.loads(body)["row_count"] > 0
    assert last == repr(sorted(_COLUMN_MODULES[c] for c in named))


def test_sql_timings_name_every_phase(capsys: pytest.CaptureFixture[str], cache_dir: Path) -> None:
    """``--timings`` prints one line on stderr with a number for each phase, the answer unchanged."""
    path = str(SAMPLE_PROFILES / "jax_mlp")
    code, plain, _ = _run(capsys, "sql", path, QUERY, "--format", "json", "--cache-dir", str(cache_dir))
    code, out, err = _run(capsys, "sql", path, QUERY, "--format", "json", "--cache-dir", str(cache_dir), "--timings")
    assert code == 0
    assert {k: v for k, v in json.loads(out).items() if k != "elapsed_ms"} == {
        k: v for k, v in json.loads(plain).items() if k != "elapsed_ms"}
    (line,) = [x for x in err.splitlines() if x.startswith("tbprof timings (s): ")]
    phases = dict(part.rsplit(" ", 1) for part in line.removeprefix("tbprof timings (s): ").split(", "))
    assert list(phases) == ["start + imports", "list", "DuckDB import + connect", "then converting", "connect",
                            "views", "query", "answer", "command total"]
    seconds = {k: float(v) for k, v in phases.items() if v != "?"}
    assert all(s >= 0 for s in seconds.values())
    # The command's phases add up to its total (each printed to the ms).
    parts = [seconds[k] for k in ("list", "DuckDB import + connect", "then converting", "answer")]
    run_sql_s = sum(seconds[k] for k in ("connect", "views", "query"))
    assert sum(parts) + run_sql_s == pytest.approx(seconds["command total"], abs=0.01)


# Modules of the service's other work (tools, tfprof runs, tables, the disk cache's event grouping),
# the SQL layer itself and protobuf's messages (the reader parses with them only after the read
# and the scan): none is needed to start converting one file for ``tbprof sql``.
_NOT_BEFORE_CONVERTING = ("tbprof.analyses.tool", "tbprof.service.tools", "tbprof.store.tfprof",
                          "tbprof.analyses.table", "tbprof.domain.event_groups", "tbprof.service.sql",
                          "tbprof.protos.xplane_pb2")


def test_sql_starts_converting_before_importing_what_it_does_not_need(cache_dir: Path) -> None:
    """The conversion's thread starts as soon as the run is listed and its reader imported: the
    modules above load (where they do) beside the conversion, not before it; protobuf's messages
    are loaded once it is done."""
    assert all(importlib.util.find_spec(m) is not None for m in _NOT_BEFORE_CONVERTING)  # real names
    code = ("import sys\nfrom tbprof.service.background import BackgroundLoads\nseen = []\n"
            "real = BackgroundLoads.start\n"
            "def start(self, *a, **k):\n"
            f"    seen.append(sorted(m for m in {_NOT_BEFORE_CONVERTING!r} if m in sys.modules))\n"
            "    return real(self, *a, **k)\n"
            "BackgroundLoads.start = start\n"
            "from tbprof.cli.main import main\nrc = main(sys.argv[1:])\n"
            "seen.append('tbprof.protos.xplane_pb2' in sys.modules)\nprint(seen)\nsys.exit(rc)")
    env = {**os.environ, "PYTHONPATH": str(Path(tbprof.__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", code, "sql", str(SAMPLE_PROFILES / "jax_mlp"),
                           "SELECT name, count(*) AS n FROM events GROUP BY name", "--format", "json",
                           "--cache-dir", str(cache_dir)], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    body, _, last = done.stdout.rstrip().rpartition("\n")
    assert json.loads(body)["row_count"] > 0
    assert last == "[[], True]"
