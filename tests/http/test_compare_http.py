"""The compare routes through the WSGI app: JSON, table sort/filter/paging, CSV, errors."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app

API = "/data/plugin/tbprof/"


@pytest.fixture(scope="module")
def client(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    return Client(create_app(profiles_root, cache_dir=tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def runs(client: Client) -> dict[str, str]:
    names = [e["run"] for e in client.get(API + "runs").get_json()["runs"]]
    return {n.split("/", 1)[0]: n for n in names}


def _get(client: Client, route: str, status: int = 200, **query: Any) -> Any:
    r = client.get(API + route, query_string=query)
    assert r.status_code == status, r.get_data(as_text=True)
    return r


def _col(table: dict[str, Any], name: str) -> list[Any]:
    i = [c["name"] for c in table["columns"]].index(name)
    return [row[i] for row in table["rows"]]


def test_compare_json_with_capped_tables(client: Client, runs: dict[str, str]) -> None:
    body = _get(client, "compare", base_run=runs["keras_cnn"], run=runs["custom_loop"], rows=5).get_json()
    assert body["schema_version"] == 1 and body["tool"] == "compare"
    assert body["baseline"]["run"] == runs["keras_cnn"] and body["candidate"]["hosts"] == ["vm"]
    assert body["verdict"]["kind"] == "faster"
    ops = body["tables"]["ops"]
    assert len(ops["rows"]) == 5 < ops["total_rows"]
    assert body["step_time"]["change"]["ci_high_percent"] < 0


def test_compare_table_sort_filter_and_page(client: Client, runs: dict[str, str]) -> None:
    q: dict[str, Any] = {"base_run": runs["keras_cnn"], "run": runs["custom_loop"], "table": "op_types"}
    full = _get(client, "compare_table", **q).get_json()
    assert full["table"] == "op_types"
    asc = _get(client, "compare_table", sort="delta_per_step_us", **q).get_json()
    values = [v for v in _col(asc, "delta_per_step_us") if v is not None]
    assert values == sorted(values) and len(values) == full["total_rows"]
    added = _get(client, "compare_table", **{"filter.status": "^added$", **q}).get_json()
    assert set(_col(added, "status")) == {"added"}
    assert added["total_rows"] == _col(full, "status").count("added")
    page = _get(client, "compare_table", offset=3, limit=4, **q).get_json()
    assert _col(page, "type") == _col(full, "type")[3:7] and page["offset"] == 3
    # The same through `compare` itself, as `data` does.
    body = _get(client, "compare", sort="delta_per_step_us", desc="1", **q).get_json()
    got = [v for v in _col(body["tables"]["op_types"], "delta_per_step_us") if v is not None]
    assert got == sorted(got, reverse=True)


def test_compare_csv(client: Client, runs: dict[str, str]) -> None:
    nccl: dict[str, Any] = {"filter.kernel_name": "^nccl"}
    r = _get(client, "compare_csv", base_run=runs["jax_2hosts"], base_host="worker1", run=runs["jax_2hosts"],
             host="worker0", table="kernels", **nccl)
    assert r.mimetype == "text/csv"
    disposition = r.headers["Content-Disposition"]
    assert "compare_" in disposition and "worker1_vs_" in disposition and disposition.endswith('_kernels.csv"')
    rows = list(csv.DictReader(io.StringIO(r.get_data(as_text=True))))
    assert rows and all(row["kernel_name"].startswith("nccl") for row in rows)
    assert {"base_total_duration_us", "cand_total_duration_us", "delta_per_step_us", "status"} <= set(rows[0])


@pytest.mark.parametrize(("query", "status", "message"), [
    ({"run": "@jax_mlp"}, 400, "base_run"),
    ({"base_run": "@jax_mlp"}, 400, "'run'"),
    ({"base_run": "nope", "run": "@jax_mlp"}, 404, "unknown run"),
    ({"base_run": "@jax_2hosts", "run": "@jax_mlp"}, 400, "several hosts"),
    ({"base_run": "@jax_2hosts", "base_host": "worker9", "run": "@jax_mlp"}, 404, "unknown host"),
    ({"base_run": "@jax_mlp", "run": "@jax_mlp", "steps": "x"}, 400, "step selection"),
    ({"base_run": "@jax_mlp", "run": "@jax_mlp", "confidence": "2"}, 400, "confidence"),
    ({"base_run": "@jax_mlp", "run": "@jax_mlp", "table": "nope"}, 404, "no table"),
    ({"base_run": "@jax_mlp", "run": "@jax_mlp", "table": "ops", "sort": "nope"}, 400, "unknown sort column"),
])
def test_compare_errors(client: Client, runs: dict[str, str], query: dict[str, str], status: int,
                        message: str) -> None:
    q = {k: (runs[v[1:]] if v.startswith("@") else v) for k, v in query.items()}
    route = "compare_table" if "table" in q else "compare"
    body = _get(client, route, status, **q).get_json()
    assert message in body["error"] and "Traceback" not in body["error"]


def test_compare_trace_diff_iterations(sample_profiles: Path, tmp_path: Path) -> None:
    """base_iterations / iterations choose the trace diff's ProfilerStep iterations (HTA's
    control_iteration / test_iteration); one the trace lacks, or a malformed list, is a 400."""
    import json
    import shutil

    shutil.copytree(sample_profiles / "torch_cnn", tmp_path / "logs" / "torch_cnn")
    client = Client(create_app(tmp_path / "logs", cache_dir=tmp_path / "cache"))
    golden_path = Path(__file__).resolve().parent.parent / "golden" / "hta" / "torch_cnn.json"
    first, second = json.loads(golden_path.read_text())["trace_diff"]["first_vs_second_iteration"]["iterations"]
    body = _get(client, "compare", base_run="torch_cnn", run="torch_cnn", base_iterations=str(first),
                iterations=f"{first},{second}").get_json()
    assert (body["trace_diff"]["baseline_iterations"], body["trace_diff"]["candidate_iterations"]) == \
        ([first], [first, second])
    for bad in ("999", "1;2"):
        r = _get(client, "compare", 400, base_run="torch_cnn", run="torch_cnn", iterations=bad)
        assert "iteration" in r.get_data(as_text=True)
