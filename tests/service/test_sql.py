"""SQL over a run (service/sql): parity with XProf 2.24.2's Events DB and with tbprof's own pages,
the views' shape, limits and safety. Goldens: tests/golden/make_sql_goldens.py (XProf's own
``xspace_to_parquet`` + its Events view queried with DuckDB)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tbprof.domain.planes import HOST_PLANE
from tbprof.errors import BadParameter, NotFound
from tbprof.readers import xplane
from tbprof.service import api
from tbprof.service.sql import MAX_QUERY_CHARS, run_sql, sql_tables
from tbprof.service.sql import columns as sql_columns
from tbprof.service.sql import engine as sql_engine
from tbprof.service.sql import export as sql_export
from tbprof.service.sql.columns import FRAME_COLUMNS, TRACE_ARGS_BYTES_PER_STAT, PlaneColumns, built_bytes
from tbprof.service.sql.columns import listed_strings as sql_listed_strings
from tbprof.service.sql.tables import host_table, source_of
from tbprof.store.tables import ProfileStore
from tests.conftest import SAMPLE_PROFILES

GOLDENS = sorted((Path(__file__).resolve().parent.parent / "golden" / "sql").glob("*.json"))


def _open(name: str, tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    root = tmp_path_factory.mktemp(name)
    shutil.copytree(SAMPLE_PROFILES / name, root / name)
    return api.open(root / name, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def torch_ddp(tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    return _open("torch_ddp", tmp_path_factory)


@pytest.fixture(scope="module")
def jax_mlp(tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    return _open("jax_mlp", tmp_path_factory)


def _golden_cases() -> list[tuple[Path, str]]:
    return [(path, name) for path in GOLDENS for name in json.loads(path.read_text())["queries"]]


def test_goldens_cover_every_demo_xspace_file() -> None:
    files = {str(p.relative_to(SAMPLE_PROFILES.parent)) for p in SAMPLE_PROFILES.rglob("*.xplane.pb")}
    assert {json.loads(g.read_text())["file"] for g in GOLDENS} == files


@pytest.mark.parametrize(("golden", "query"), _golden_cases(), ids=lambda v: v.stem if isinstance(v, Path) else v)
def test_events_agree_with_xprof_events_db(golden: Path, query: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The same SQL text over tbprof's events answers exactly what XProf's Events DB answered:
    counts per device and category, total and self time per kernel and per HLO op, step spans."""
    g = json.loads(golden.read_text())
    profile = _open(g["profile"], tmp_path_factory)
    expected = g["queries"][query]
    got = run_sql(profile.profiles, profile.run.name, expected["sql"], host=g["host"], max_rows=100_000)
    assert [c["name"] for c in got["columns"]] == expected["columns"]
    assert got["rows"] == expected["rows"]
    assert not got["truncated"]


def test_pytorch_kernel_time_per_rank_equals_kernel_stats(torch_ddp: api.Profile) -> None:
    for host in torch_ddp.hosts:
        table = torch_ddp.tool("kernel_stats", host=host)["tables"]["kernels"]
        expected: dict[str, float] = {}
        for name, us in zip(table.data["kernel_name"], table.data["total_duration_us"], strict=True):
            expected[name] = expected.get(name, 0.0) + float(us)
        frame = torch_ddp.sql("SELECT name, sum(dur_ps) / 1e6 AS total_us FROM events "
                              f"WHERE host = '{host}' AND cat = 'kernel' GROUP BY name")
        got = dict(zip(frame["name"], frame["total_us"], strict=True))
        assert set(got) == set(expected)
        for name, us in expected.items():
            assert got[name] == pytest.approx(us, rel=1e-12, abs=1e-9)


def test_pytorch_step_spans_equal_the_overview_steps(torch_ddp: api.Profile) -> None:
    """Each overview step is its host's ``ProfilerStep#N`` span: the join of the steps table to
    the events finds one event per step, of the step's time."""
    rows = run_sql(torch_ddp.profiles, torch_ddp.run.name,
                   "SELECT s.host, s.step_num, s.step_time_ms, e.dur_ps / 1e9 AS event_ms FROM steps s "
                   "JOIN events e ON e.host = s.host AND e.device = 'cpu:0' AND e.name = 'ProfilerStep#' || s.step_num "
                   "ORDER BY s.host, s.step_num")["rows"]
    steps = sum(len(torch_ddp.tool("overview_page", host=h)["tables"]["steps"].data["step_num"])
                for h in torch_ddp.hosts)
    assert len(rows) == steps > 0
    for _host, _num, step_ms, event_ms in rows:
        assert event_ms == pytest.approx(step_ms, rel=1e-12)


def test_events_of_every_host_at_once(torch_ddp: api.Profile) -> None:
    per_host = {h: torch_ddp.profiles.event_store(torch_ddp.run, h).n_events for h in torch_ddp.hosts}
    rows = run_sql(torch_ddp.profiles, torch_ddp.run.name,
                   "SELECT host, count(*) FROM events GROUP BY host ORDER BY host")["rows"]
    assert rows == [[h, per_host[h]] for h in sorted(per_host)]
    one = run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT DISTINCT host FROM events",
                  host=torch_ddp.hosts[1])["rows"]
    assert one == [[torch_ddp.hosts[1]]]
    with pytest.raises(NotFound):
        run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT 1", host="nope")


def test_times_are_exact_and_consistent(jax_mlp: api.Profile) -> None:
    """XSpace times are whole ns: ps columns are 1000x the ns ones; end = start + duration."""
    rows = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                   "SELECT count(*) FILTER (WHERE start_ps <> start_ns * 1000), "
                   "count(*) FILTER (WHERE end_ps <> start_ps + dur_ps), "
                   "count(*) FILTER (WHERE self_ps > dur_ps OR self_ps < 0), count(*) FROM events")["rows"]
    assert rows[0][:3] == [0, 0, 0] and int(str(rows[0][3])) > 0


def test_row_cap_says_truncated(jax_mlp: api.Profile) -> None:
    total = int(str(run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT count(*) FROM events")["rows"][0][0]))
    capped = run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT name FROM events", max_rows=7)
    assert capped["row_count"] == 7 and len(capped["rows"]) == 7 and capped["truncated"]
    whole = run_sql(jax_mlp.profiles, jax_mlp.run.name, f"SELECT name FROM events LIMIT {total}", max_rows=total)
    assert whole["row_count"] == total and not whole["truncated"]


def test_a_row_read_as_a_whole_loads_every_column(jax_mlp: api.Profile) -> None:
    """Columns a query does not name are not built; one that reaches them anyway (a row as a
    struct) gets them all, never NULLs in their place."""
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                  "SELECT e FROM events e WHERE e.kernel_details IS NOT NULL LIMIT 1")
    row = got["rows"][0][0]
    assert isinstance(row, dict)
    assert row["kernel_details"] and row["hlo_op"] is not None and row["dur_ps"] > 0


def test_values_are_json_safe(jax_mlp: api.Profile) -> None:
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                  "SELECT 'nan'::DOUBLE AS a, 1.5::DECIMAL(4, 2) AS b, DATE '2026-01-02' AS c, "
                  "'\\x01'::BLOB AS d, [1, 2] AS e, {'k': 'inf'::DOUBLE} AS f")
    assert got["rows"] == [[None, 1.5, "2026-01-02", "01", [1, 2], {"k": None}]]
    json.dumps(got, allow_nan=False)


def test_tables_list_the_views_and_columns(torch_ddp: api.Profile, jax_mlp: api.Profile) -> None:
    torch_tables = {t["name"]: t for t in sql_tables(torch_ddp.profiles, torch_ddp.run.name)}
    assert {"events", "steps", "ops", "kernels", "memory"} <= set(torch_tables) and "hlo_ops" not in torch_tables
    assert "hlo_ops" in {t["name"] for t in sql_tables(jax_mlp.profiles, jax_mlp.run.name)}
    described = run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT * FROM events LIMIT 0")["columns"]
    assert [c["name"] for c in described] == [c["name"] for c in torch_tables["events"]["columns"]]
    assert [c["type"] for c in described] == [c["type"] for c in torch_tables["events"]["columns"]]
    kernels = run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT * FROM kernels LIMIT 0")["columns"]
    assert kernels == torch_tables["kernels"]["columns"]


# --- safety ---------------------------------------------------------------------------------
REFUSED = [
    ("COPY (SELECT 1) TO '{tmp}/out.csv'", "only SELECT"),
    ("SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
    ("SELECT * FROM read_text('/etc/passwd')", "disabled by configuration"),
    ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "disabled by configuration"),
    ("SELECT * FROM glob('/etc/*')", "disabled by configuration"),
    ("ATTACH '{tmp}/x.db'", "only SELECT"),
    ("INSTALL httpfs", "only SELECT"),
    ("LOAD httpfs", "only SELECT"),
    ("SET enable_external_access = true", "only SELECT"),
    ("PRAGMA enable_profiling", "only SELECT"),
    ("CREATE TABLE t AS SELECT 1", "only SELECT"),
    ("SELECT 1; COPY (SELECT 1) TO '{tmp}/out.csv'", "one SQL statement"),
    ("SELECT * FROM sniff_csv('/etc/passwd')", "disabled by configuration"),
    ("SELEKT 1", "syntax error"),
    ("SELECT nope FROM events", "nope"),
    ("", "empty"),
]


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_refused_with_a_clear_message_and_nothing_written(query: str, message: str, jax_mlp: api.Profile,
                                                          tmp_path: Path) -> None:
    with pytest.raises(BadParameter) as e:
        run_sql(jax_mlp.profiles, jax_mlp.run.name, query.format(tmp=tmp_path))
    assert message.lower() in str(e.value).lower()
    assert list(tmp_path.iterdir()) == []


def test_settings_are_locked_inside_a_select(jax_mlp: api.Profile) -> None:
    # A SELECT cannot reach the settings either (set_config is no function; current_setting reads only).
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                  "SELECT current_setting('enable_external_access'), current_setting('lock_configuration')")
    assert got["rows"] == [[False, True]]


def test_a_connection_opened_ahead_serves_its_own_text_once(jax_mlp: api.Profile,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``load_engine(query)`` opens the connection while the caller converts; ``run_sql`` of the
    same text takes it (once, locked down as any), another text or a refused one gets none."""
    opened: list[duckdb.DuckDBPyConnection] = []
    real_connect = sql_engine.connect

    def connect(memory_bytes: int, writable_dir: str | None = None) -> duckdb.DuckDBPyConnection:
        opened.append(real_connect(memory_bytes, writable_dir))
        return opened[-1]

    monkeypatch.setattr(sql_engine, "connect", connect)
    query = "SELECT count(*) AS n, current_setting('lock_configuration') AS locked FROM events"
    sql_engine.load_engine(query)
    assert len(opened) == 1
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name, query)
    assert len(opened) == 1 and got["rows"][0][1] is True
    again = run_sql(jax_mlp.profiles, jax_mlp.run.name, query)  # taken: a second run opens its own
    assert len(opened) == 2 and again["rows"] == got["rows"]
    sql_engine.load_engine(query)
    run_sql(jax_mlp.profiles, jax_mlp.run.name, query + " WHERE dur_ps > 0")  # another text
    assert len(opened) == 4
    sql_engine.load_engine("DROP TABLE events")  # refused: nothing kept open
    assert len(opened) == 5
    assert sql_engine._opened_connection("DROP TABLE events", sql_engine.query_memory_bytes()) is None
    with pytest.raises(BadParameter, match="only SELECT"):
        run_sql(jax_mlp.profiles, jax_mlp.run.name, "DROP TABLE events")
    leftover = sql_engine._opened_connection(query, sql_engine.query_memory_bytes())  # the one not taken
    assert leftover is opened[2]
    leftover.close()


def test_columns_not_built_are_one_error_each_of_the_same_type(jax_mlp: api.Profile) -> None:
    """A query that names few columns gets a view of the same columns and types as one that reads
    them all, and each column it does not build is a single error over the union of the planes
    (DuckDB binds every expression of every plane: one error per plane would be most of them)."""
    run = jax_mlp.run
    hosts = sorted(run.hosts)

    class Recording:  # the statements register_views runs, as it wrote them
        def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
            self.con, self.statements = con, list[str]()

        def register(self, name: str, frame: object) -> None:
            self.con.register(name, frame)

        def execute(self, statement: str) -> duckdb.DuckDBPyConnection:
            self.statements.append(statement)
            return self.con.execute(statement)

    def view(query: str | None) -> tuple[list[tuple[str, str]], str]:
        con = sql_engine.connect(sql_engine.query_memory_bytes())
        try:
            recording = Recording(con)
            sql_engine.register_views(recording, jax_mlp.profiles, run, hosts, query)
            described = [(str(r[0]), str(r[1])) for r in con.execute("DESCRIBE events").fetchall()]
            return described, next(s for s in recording.statements if s.startswith("CREATE VIEW events"))
        finally:
            con.close()

    every, every_sql = view(None)
    few, few_sql = view("SELECT name, sum(dur_ps) FROM events GROUP BY name")
    assert few == every and [n for n, _ in every] == [n for n, _, _ in sql_engine.events_columns()]
    assert sql_engine._UNLOADED not in every_sql
    planes = sum(1 for s in jax_mlp.profiles.stores_tolerant(run, hosts, few_planes=True)[0]
                 if isinstance(s, ProfileStore) for p in s.planes if p.n_events)
    assert planes > 1 and few_sql.count(" UNION ALL ") == planes - 1
    # The frame columns of the view other than the two the query names are not built; the columns
    # computed from name and dur_ps alone (kernel_name, duration_ns) are.
    unloaded = [n for n, _ in every if f"{sql_engine._UNLOADED} {n}'" in few_sql]
    view_names = {n for n, _ in every}
    assert {c.name for c in FRAME_COLUMNS} & view_names - {"name", "dur_ps"} <= set(unloaded)
    assert not {"name", "dur_ps", "kernel_name", "duration_ns"} & set(unloaded)
    assert few_sql.count("error(") == len(unloaded)


def test_a_long_query_text_is_refused_before_parsing(jax_mlp: api.Profile) -> None:
    huge = "SELECT 1 " + "-" * (10 << 20)  # 10 MB
    with pytest.raises(BadParameter, match=f"at most {MAX_QUERY_CHARS:,}"):
        run_sql(jax_mlp.profiles, jax_mlp.run.name, huge)


def test_a_cross_join_is_stopped_by_the_time_limit(jax_mlp: api.Profile) -> None:
    with pytest.raises(BadParameter, match=r"time limit of 0\.5 s"):
        run_sql(jax_mlp.profiles, jax_mlp.run.name,
                "SELECT count(*) FROM events a, events b, events c WHERE a.dur_ps + b.dur_ps > c.dur_ps",
                timeout_s=0.5)


def test_memory_limit_stops_a_query(jax_mlp: api.Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_engine, "query_memory_bytes", lambda: 32 << 20)
    with pytest.raises(BadParameter, match="memory"):
        run_sql(jax_mlp.profiles, jax_mlp.run.name,
                "SELECT a.name, b.name, a.start_ps FROM events a, events b ORDER BY 3, 1, 2", timeout_s=60)


def test_the_query_memory_is_reserved_in_the_budget(jax_mlp: api.Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = sql_engine._execute

    def spy(*args: object, **kwargs: object) -> object:
        budget = sql_engine.shared_budget()
        seen.append(sum(1 for _owner, key in budget.keys() if isinstance(key, tuple) and key[:1] == ("sql_query",)))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sql_engine, "_execute", spy)
    run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT 1")
    budget = sql_engine.shared_budget()
    assert seen == [1]
    assert not any(isinstance(key, tuple) and key[:1] == ("sql_query",) for _o, key in budget.keys())


def test_profile_sql_returns_a_dataframe(torch_ddp: api.Profile) -> None:
    frame = torch_ddp.sql("SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host")
    assert list(frame.columns) == ["host", "n"] and list(frame["host"]) == sorted(torch_ddp.hosts)
    with pytest.raises(BadParameter, match="more than 3 rows"):
        torch_ddp.sql("SELECT name FROM events", max_rows=3)


@pytest.mark.parametrize(("query", "every"), [
    ("SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name", False),
    ("SELECT dur_ps * 2 FROM events", False),
    ("SELECT * FROM events", True),
    ("SELECT e.* FROM events e", True),
    ("SELECT DISTINCT * FROM events", True),
    ("SELECT host, * EXCLUDE (host) FROM events", True),
    ("SELECT COLUMNS('.*_ps') FROM events", True),
    ("FROM events", True),
])
def test_columns_built_for_a_query(query: str, every: bool) -> None:
    """Only the columns a query names are built; a star (not count(*) or a product) builds all."""
    wanted = sql_engine._wanted_frame_columns(query)
    assert (wanted == {c.name for c in sql_engine.FRAME_COLUMNS}) is every
    if not every:
        assert "dur_ps" in wanted and "hlo_op" not in wanted


@pytest.fixture(scope="module")
def two_hosts_one_broken(tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    root = tmp_path_factory.mktemp("broken_pod")
    shutil.copytree(SAMPLE_PROFILES / "jax_2hosts", root / "jax_2hosts")
    for f in (root / "jax_2hosts").rglob("worker1.*"):
        f.write_bytes(bytes(range(256)) * 8)  # not a profile any more
    return api.open(root / "jax_2hosts", cache_dir=tmp_path_factory.mktemp("cache"))


def test_an_unreadable_host_is_named_not_hidden(two_hosts_one_broken: api.Profile) -> None:
    p = two_hosts_one_broken
    got = run_sql(p.profiles, p.run.name, "SELECT DISTINCT host FROM events")
    assert got["rows"] == [["worker0"]]
    assert [e["host"] for e in got.get("host_errors", [])] == ["worker1"]


def test_hosts_beyond_the_memory_budget_are_refused(torch_ddp: api.Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = [torch_ddp.profiles.event_store(torch_ddp.run, h).nbytes for h in torch_ddp.hosts]

    class Small:
        max_bytes = sum(sizes) - 1  # one byte short of the two hosts' columns

    monkeypatch.setattr(sql_engine, "shared_budget", Small)
    with pytest.raises(BadParameter, match="--parquet"):
        run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT count(*) FROM events")
    one = run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT count(*) FROM events", host=torch_ddp.hosts[0])
    assert one["rows"][0][0] == torch_ddp.profiles.event_store(torch_ddp.run, torch_ddp.hosts[0]).n_events


def test_a_query_whose_columns_pass_the_memory_budget_is_refused(torch_ddp: api.Profile,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns are built whole and held while DuckDB scans them: a query whose columns would not fit
    beside DuckDB's share of the budget is refused with the ways around, before any is built; one
    naming fewer columns runs."""
    planes = [p for h in torch_ddp.hosts for p in torch_ddp.profiles.event_store(torch_ddp.run, h).planes
              if p.n_events]
    every = sum(built_bytes(p, [c.name for c in FRAME_COLUMNS]) for p in planes)
    names = sum(built_bytes(p, ["name"]) for p in planes)
    # Trace_args holds a text per stat row: part of every (a star), absent from names.
    assert every > names + sum(TRACE_ARGS_BYTES_PER_STAT * len(p.stats) for p in planes)

    class Small:
        max_bytes = int(every / (1 - sql_engine.QUERY_MEMORY_SHARE)) - 1  # room one byte short of every column

    monkeypatch.setattr(sql_engine, "shared_budget", Small)
    built: list[str] = []
    monkeypatch.setattr(PlaneColumns, "column", lambda self, name: built.append(name))
    with pytest.raises(BadParameter, match="trace_args is the largest"):
        run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT * FROM events LIMIT 1")
    assert built == []
    monkeypatch.undo()
    monkeypatch.setattr(sql_engine, "shared_budget", Small)
    got = run_sql(torch_ddp.profiles, torch_ddp.run.name, "SELECT count(DISTINCT name) FROM events")
    distinct = got["rows"][0][0]
    assert isinstance(distinct, int) and distinct > 0


def test_a_query_decodes_the_stats_of_the_planes_it_reads_only(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores are read lazily: a group-by over names leaves the host plane's stats undecoded (on
    jax_large they are most of the file); a query naming trace_args decodes them."""
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)  # jax_mlp is below the 8 MiB from which files read lazily
    shutil.copytree(SAMPLE_PROFILES / "jax_mlp", tmp_path / "jax_mlp")
    p = api.open(tmp_path / "jax_mlp", cache_dir=tmp_path / "cache")
    got = run_sql(p.profiles, p.run.name, "SELECT name, count(*) AS n FROM events GROUP BY name")
    assert got["row_count"] > 0
    store = p.profiles.event_store(p.run, p.hosts[0])
    host_plane = store.plane(HOST_PLANE)
    assert host_plane is not None and not host_plane.stats_loaded
    run_sql(p.profiles, p.run.name, "SELECT count(trace_args) FROM events WHERE device = 'cpu:0'")
    assert host_plane.stats_loaded


def test_export_writes_a_plane_in_parts_that_fit_the_budget(torch_ddp: api.Profile, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a budget smaller than a plane's columns the export writes the plane in parts of
    events, each built alone; read back, the parts are every event with every column, as the
    events view answers them."""
    planes = [p for h in torch_ddp.hosts for p in torch_ddp.profiles.event_store(torch_ddp.run, h).planes]
    biggest = max(planes, key=lambda p: p.n_events)
    every = built_bytes(biggest, [c.name for c in FRAME_COLUMNS])

    class Small:
        max_bytes = int(every / 4 / sql_export.PART_SHARE)  # a quarter of the plane per part

    monkeypatch.setattr(sql_export, "shared_budget", Small)
    monkeypatch.setattr(sql_export, "MIN_PART_EVENTS", 1)
    assert sql_export.part_events(biggest, int(Small.max_bytes * sql_export.PART_SHARE)) < biggest.n_events // 3
    written = sql_export.export_parquet(torch_ddp.profiles, torch_ddp.run.name, tmp_path / "out")
    parts = [w for w in written if Path(w["path"]).parent.name.startswith("host=")]
    assert len(parts) > len([p for p in planes if p.n_events]) + 3  # the biggest plane in 4 or more
    monkeypatch.undo()
    columns = "host, plane_index, event_id, name, dur_ps, self_ps, step_num, correlation_id, trace_args"
    expected = run_sql(torch_ddp.profiles, torch_ddp.run.name, f"SELECT {columns} FROM events ORDER BY ALL",
                       max_rows=10**7)
    assert sum(w["rows"] for w in parts) == expected["row_count"]
    con = duckdb.connect()
    glob = str(tmp_path / "out" / "events" / "*" / "*.parquet").replace("'", "''")
    got = con.execute(f"SELECT {columns} FROM read_parquet('{glob}', hive_partitioning = true) ORDER BY ALL").fetchall()
    assert [list(r) for r in got] == expected["rows"]


def test_tables_of_an_unreadable_host_are_left_out_and_named(two_hosts_one_broken: api.Profile) -> None:
    p = two_hosts_one_broken
    got = run_sql(p.profiles, p.run.name, "SELECT DISTINCT host FROM steps")
    assert got["rows"] == [["worker0"]]
    assert [e["host"] for e in got.get("host_errors", [])] == ["worker1"]


def test_text_sorts_and_compares_as_text(jax_mlp: api.Profile) -> None:
    """A text column orders by its characters (not by where the string sits in the profile's
    string table) and compares with a literal as text."""
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT DISTINCT name FROM events ORDER BY name",
                  max_rows=100_000)
    names = [str(r[0]) for r in got["rows"]]
    assert len(names) > 1 and names == sorted(names)
    pivot = names[len(names) // 2]
    below = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                    f"SELECT count(DISTINCT name) FROM events WHERE name < '{pivot.replace(chr(39), chr(39) * 2)}'")
    assert below["rows"] == [[len(names) // 2]]


@pytest.mark.parametrize("run_name", ["jax_mlp", "torch_ddp"])
def test_names_from_the_listed_strings_equal_the_object_column(run_name: str, request: pytest.FixtureRequest,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A host's small string table goes to DuckDB as one list and its text columns as ids into it
    (``name``: the store's own array, no copy); the answers are those of the object columns a
    larger table keeps, on every text column of the host's strings."""
    profile: api.Profile = request.getfixturevalue(run_name)
    stores = profile.profiles.stores_tolerant(profile.run, sorted(profile.run.hosts), few_planes=True)[0]
    assert all(isinstance(s, ProfileStore) for s in stores)
    store = stores[0]
    assert isinstance(store, ProfileStore)
    strings = sql_engine.host_strings(store)
    plane = max(range(len(store.planes)), key=lambda i: store.planes[i].n_events)
    frame = PlaneColumns(store, plane, strings).frame({"name", "dur_ps"}, host_ids=True)
    assert np.shares_memory(frame["name"], store.planes[plane].name_id)
    texts = ", ".join(sorted(sql_columns.HOST_TEXT_COLUMNS))
    queries = [f"SELECT host, plane_index, event_id, kernel_name, {texts} FROM events ORDER BY ALL",
               "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name ORDER BY ALL",
               "SELECT count(*) FROM events WHERE name LIKE '%a%' OR name IS NULL"]
    listed = [run_sql(profile.profiles, profile.run.name, q, max_rows=10**7)["rows"] for q in queries]
    assert sql_listed_strings(strings) is not None
    monkeypatch.setattr(sql_columns, "MAX_LISTED_STRINGS", 0)
    assert sql_listed_strings(strings) is None
    objects = [run_sql(profile.profiles, profile.run.name, q, max_rows=10**7)["rows"] for q in queries]
    assert listed == objects
    assert len(listed[0]) == sum(p.n_events for s in stores if isinstance(s, ProfileStore) for p in s.planes) > 0
    names = {r[4 + sorted(sql_columns.HOST_TEXT_COLUMNS).index("name")] for r in listed[0]}
    assert None not in names and names <= set(strings[:-1].tolist())


def test_text_columns_of_an_empty_table_are_varchar(tmp_path_factory: pytest.TempPathFactory) -> None:
    """tpu_inference's overview has no steps: the empty table's text columns are still VARCHAR
    (the tool's str columns and the host), in the answer and in the listing."""
    profile = _open("tpu_inference", tmp_path_factory)
    run = profile.profiles.run(profile.run.name)
    source = source_of(profile.profiles, run, "steps")
    assert source is not None
    table = host_table(profile.profiles, run, sorted(run.hosts)[0], source)
    assert table is not None and table.n_rows == 0
    texts = {c.name for c in table.columns if c.kind == "str"} | {"host"}
    got = run_sql(profile.profiles, profile.run.name, "SELECT * FROM steps")
    assert got["rows"] == [] and {c["name"]: c["type"] for c in got["columns"] if c["name"] in texts} == dict.fromkeys(
        texts, "VARCHAR")
    listed = next(t for t in sql_tables(profile.profiles, profile.run.name) if t["name"] == "steps")
    assert {c["name"]: c["type"] for c in listed["columns"] if c["name"] in texts} == dict.fromkeys(texts, "VARCHAR")


# What the SQL layer (service/sql/) asks of DuckDB: module names and connection methods.
_ENGINE_NAMES = ("connect", "Error", "InterruptException", "OutOfMemoryException", "StatementType")
_CONNECTION_METHODS = ("execute", "register", "unregister", "extract_statements", "interrupt", "close",
                       "fetchall", "fetchmany", "fetchone", "description")


def test_the_sql_layer_names_only_what_it_is_checked_for() -> None:
    """The lists above are what the SQL layer's source uses, so that the test below checks all of it."""
    source = "\n".join(p.read_text() for p in Path(sql_engine.__file__).parent.glob("*.py"))

    assert set(re.findall(r"\bduckdb\.([A-Za-z_]+)", source)) <= set(_ENGINE_NAMES)
    assert set(re.findall(r"\bcon\.([a-z_]+)\(", source)) <= set(_CONNECTION_METHODS)
    assert set(re.findall(r"\.(fetch[a-z]*|description|interrupt)\b", source)) <= set(_CONNECTION_METHODS)


def test_the_engine_module_is_what_the_duckdb_package_exports() -> None:
    """The SQL layer imports DuckDB's native module, not the package's Python layer over it
    (``engine._duckdb`` says why): every name it uses is the very object ``duckdb`` exports, and
    a connection has every method it calls in a process where the package was never imported."""
    engine = sql_engine.load_duckdb()
    assert engine.__name__ == "_duckdb"
    assert all(getattr(engine, name) is getattr(duckdb, name) for name in _ENGINE_NAMES)
    code = ("import sys, _duckdb\ncon = _duckdb.connect(':memory:')\n"
            f"print([m for m in {_CONNECTION_METHODS!r} if not hasattr(con, m)], 'duckdb' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[] False"
