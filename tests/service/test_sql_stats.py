"""The ``events`` columns read from stats without a column of their own (service/sql/columns.py):
``trace_args`` holds every other stat of an event exactly as the store has it, is built only for a
query that names it, and ``call_stack``/``input_dims`` are the raw trace's args."""

from __future__ import annotations

import json
import math
import shutil
from collections import Counter
from typing import Any

import numpy as np
import pytest

from tbprof.service import api
from tbprof.service.sql import run_sql, trace_args
from tbprof.service.sql.columns import STAT_COLUMNS, PlaneColumns, text_table
from tbprof.service.sql.trace_args import TraceArgs, trace_args_texts
from tbprof.store.tables import KIND_BYTES, KIND_DOUBLE, KIND_NONE, KIND_REF, KIND_STR, KIND_UINT64, ProfileStore
from tests.conftest import REPO, SAMPLE_PROFILES

KINETO_WITH_STACK = REPO / "tests" / "data" / "kineto_with_stack"


def _open_dir(src: Any, name: str, tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    root = tmp_path_factory.mktemp(name)
    shutil.copytree(src, root / name)
    return api.open(root / name, cache_dir=tmp_path_factory.mktemp("cache"))


# jax_mlp: a stat named twice on one event; tpu_inference: metadata stats under the events' own,
# and bytes values; torch_cnn: a PyTorch trace's args.
@pytest.fixture(scope="module", params=["jax_mlp", "torch_cnn", "tpu_inference"])
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    return _open_dir(SAMPLE_PROFILES / request.param, request.param, tmp_path_factory)


def _value(store: ProfileStore, blobs: list[bytes], kind: int, bits: int) -> Any:
    """One stat value as the store's kinds define it (store/tables.py)."""
    if kind == KIND_DOUBLE:
        number = float(np.array([bits], dtype=np.int64).view(np.float64)[0])
        return number if math.isfinite(number) else None
    if kind == KIND_UINT64:
        return int(np.array([bits], dtype=np.int64).view(np.uint64)[0])
    if kind in (KIND_STR, KIND_REF):
        return store.strings[bits]
    if kind == KIND_BYTES:
        return blobs[bits].hex()
    if kind == KIND_NONE:
        return None
    return bits


def _expected_args(store: ProfileStore, plane_index: int, row: int) -> dict[str, Any] | None:
    """The event's stats read one by one from the store: its metadata's, then its own (which win),
    less those another column holds."""
    plane = store.planes[plane_index]
    named = {s for c in STAT_COLUMNS for s in c.stats}
    out: dict[str, Any] = {}
    for table, owner in ((plane.meta_stats, int(plane.meta_idx[row])), (plane.stats, row)):
        for i in range(*table.rows_of(owner).indices(len(table))):
            name = store.strings[int(table.stat_id[i])]
            if name not in named:
                out[name] = _value(store, plane.blobs, int(table.kind[i]), int(table.value[i]))
    return out or None


def test_trace_args_are_the_events_other_stats(demo: api.Profile) -> None:
    host = sorted(demo.run.hosts)[0]
    store = demo.profiles.store(demo.run, host)
    assert isinstance(store, ProfileStore)
    got = run_sql(demo.profiles, demo.run.name,
                  f"SELECT plane_index, event_id, trace_args FROM events WHERE host = '{host}'", max_rows=10**7)
    assert got["row_count"] == sum(p.n_events for p in store.planes)
    with_args = 0
    for plane_index, event_id, text in got["rows"]:
        assert isinstance(plane_index, int) and isinstance(event_id, int)
        expected = _expected_args(store, plane_index, event_id)
        # The text is what json.dumps writes of the event's stats as a dict collects them.
        assert text == (json.dumps(expected, ensure_ascii=False) if expected is not None else None), \
            (plane_index, event_id)
        with_args += expected is not None
    assert with_args > 0


def test_trace_args_do_not_depend_on_the_chunk_size(demo: api.Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects are cut at owner boundaries whatever the chunk of rows made into text at once."""
    host = sorted(demo.run.hosts)[0]
    store = demo.profiles.store(demo.run, host)
    assert isinstance(store, ProfileStore)
    named = {store.stat_id(s) for c in STAT_COLUMNS for s in c.stats} - {-1}
    strings = text_table(store.strings.as_list())
    whole = [trace_args_texts(p, strings, named).texts.tolist() for p in store.planes]
    for rows in (1, 7, 64):
        monkeypatch.setattr(trace_args, "CHUNK_ROWS", rows)
        assert [trace_args_texts(p, strings, named).texts.tolist() for p in store.planes] == whole, rows


def test_trace_args_read_with_duckdb_json(demo: api.Profile) -> None:
    """A stat of trace_args read with DuckDB's JSON operator is the stat the store holds."""
    got = run_sql(demo.profiles, demo.run.name,
                  "SELECT json_keys(trace_args) FROM events WHERE trace_args IS NOT NULL LIMIT 1")
    keys = got["rows"][0][0]
    assert isinstance(keys, list)
    key = keys[0]
    rows = run_sql(demo.profiles, demo.run.name,
                   f"SELECT trace_args->>'{key}', json_extract_string(trace_args, '$.\"{key}\"') FROM events "
                   f"WHERE trace_args->>'{key}' IS NOT NULL LIMIT 50")["rows"]
    assert rows and all(a == b for a, b in rows)


def test_trace_args_is_built_only_when_named(jax_mlp: api.Profile, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = PlaneColumns._trace_args

    def counting(self: PlaneColumns) -> TraceArgs:
        built.append(self.plane_index)
        return original(self)

    monkeypatch.setattr(PlaneColumns, "_trace_args", counting)
    run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT name, count(*), sum(dur_ps) FROM events GROUP BY name")
    assert built == []
    run_sql(jax_mlp.profiles, jax_mlp.run.name, "SELECT count(trace_args) FROM events")
    assert built


@pytest.fixture(scope="module")
def jax_mlp(tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    return _open_dir(SAMPLE_PROFILES / "jax_mlp", "jax_mlp_built", tmp_path_factory)


@pytest.fixture(scope="module")
def with_stack(tmp_path_factory: pytest.TempPathFactory) -> api.Profile:
    return _open_dir(KINETO_WITH_STACK, "kineto_with_stack", tmp_path_factory)


def _raw_args(key: str) -> Counter[tuple[str, str]]:
    """(name, args[key]) of every event of the raw trace that has the arg."""
    trace = json.loads((KINETO_WITH_STACK / "cpu.pt.trace.json").read_text())
    out: Counter[tuple[str, str]] = Counter()
    for event in trace["traceEvents"]:
        value = event.get("args", {}).get(key)
        if value is not None:
            out[(event["name"], value if isinstance(value, str) else json.dumps(value))] += 1
    return out


@pytest.mark.parametrize(("column", "arg"), [("call_stack", "Call stack"), ("input_dims", "Input Dims")])
def test_text_columns_are_the_raw_args(column: str, arg: str, with_stack: api.Profile) -> None:
    rows = run_sql(with_stack.profiles, with_stack.run.name,
                   f"SELECT name, {column} FROM events WHERE {column} IS NOT NULL")["rows"]
    expected = _raw_args(arg)
    assert expected
    got = Counter((name, value) for name, value in rows)
    if arg == "Input Dims":  # the reader keeps a list arg as its JSON text; compare parsed
        got = Counter((n, json.dumps(json.loads(str(v)))) for (n, v), k in got.items() for _ in range(k))
    assert got == expected


def test_no_stack_column_where_the_profile_has_none(jax_mlp: api.Profile) -> None:
    got = run_sql(jax_mlp.profiles, jax_mlp.run.name,
                  "SELECT count(call_stack), count(source_line), count(*) FROM events")["rows"][0]
    assert got[0] == 0 and got[1] == 0 and isinstance(got[2], int) and got[2] > 0


@pytest.mark.parametrize("widest", [3, 40])  # the windowed pass, and the sort past _WINDOW_ROWS rows
def test_one_per_name_keeps_what_a_dict_keeps(widest: int) -> None:
    """An owner's repeated stat name keeps its first row's place and its last row's value, as
    ``dict`` assignment in row order does."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, widest + 1, 400)
    owner = np.repeat(np.arange(sizes.shape[0]), sizes).astype(np.int32)
    stat_id = rng.integers(0, 5, owner.shape[0]).astype(np.int32)
    expected_kept: list[int] = []
    expected_source: list[int] = []
    for o in np.unique(owner).tolist():
        place: dict[int, int] = {}
        value: dict[int, int] = {}
        for row in np.flatnonzero(owner == o).tolist():
            place.setdefault(int(stat_id[row]), row)
            value[int(stat_id[row])] = row
        for name, row in place.items():
            expected_kept.append(row)
            expected_source.append(value[name])
    order = np.argsort(expected_kept)
    kept, source = trace_args._one_per_name(owner, stat_id)
    assert kept.tolist() == np.asarray(expected_kept)[order].tolist()
    assert source.tolist() == np.asarray(expected_source)[order].tolist()
