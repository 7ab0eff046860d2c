"""The wire TypedDicts (http/schemas.py, each tool's result type) hold for real answers on every sample
profile, and frontend/src/data/schema.gen.ts is what scripts/gen_ts_schemas.py makes of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.analyses.results.compare import CompareResult
from tbprof.http.app import create_app
from tbprof.http.schemas import (
    ErrorBody,
    ProgressResponse,
    RunsResponse,
    SettingsResponse,
    TableResponse,
    ToolsResponse,
)
from tbprof.service.tools import result_types
from tests.conftest import SAMPLE_PROFILES
from tests.helpers import conforms, load_script


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Client:
    return Client(create_app(SAMPLE_PROFILES, cache_dir=tmp_path_factory.mktemp("cache")))


def _json(client: Client, route: str, status: int = 200, **args: str) -> Any:
    r = client.get("/" + route, query_string=args)
    assert r.status_code == status, r.get_data(as_text=True)[:300]
    return r.get_json()


def test_generated_typescript_is_fresh() -> None:
    gen = load_script("gen_ts_schemas")
    assert gen.OUT.read_text() == gen.render(), "run python scripts/gen_ts_schemas.py and commit the result"


def test_every_answer_of_every_run_has_its_wire_shape(client: Client) -> None:
    runs = _json(client, "runs")
    assert conforms(runs, RunsResponse) == []
    assert conforms(_json(client, "settings"), SettingsResponse) == []
    checked = set()
    for run in runs["runs"]:
        tools = _json(client, "tools", run=run["run"])
        assert conforms(tools, ToolsResponse) == []
        assert conforms(_json(client, "progress", run=run["run"]), ProgressResponse) == []
        host = "__all__" if len(run["hosts"]) > 1 else run["hosts"][0]
        for tool in tools["tools"]:
            name = tool["name"]
            one_host = host if tool["multi_host"] else run["hosts"][0]
            result = _json(client, "data", run=run["run"], host=one_host, tool=name, rows="3")
            assert conforms(result, result_types()[name]) == [], (run["run"], name)
            checked.add(name)
            for table in result.get("tables", {}):
                body = _json(client, "table", run=run["run"], host=one_host, tool=name, table=table, rows="2")
                assert conforms(body, TableResponse) == [], (run["run"], name, table)
    # Every tool the sample runs list; module_view and inference_profile need profiles of
    # tests/data (tests/analyses/test_result_types.py runs every tool on a real profile).
    assert set(result_types()) - {"module_view", "inference_profile"} <= checked


def test_the_compare_routes_have_their_wire_shape(client: Client) -> None:
    """compare's answer (whole, memoised, and with capped tables) and its tables' pages."""
    runs = {r["run"].split("/")[0]: r["run"] for r in _json(client, "runs")["runs"]}
    pair = {"base_run": runs["keras_cnn"], "run": runs["custom_loop"]}
    for extra in ({}, {"rows": "3"}):
        result = _json(client, "compare", 200, **pair, **extra)
        assert conforms(result, CompareResult) == [], extra
    for table in result["tables"]:
        body = _json(client, "compare_table", 200, **pair, table=table, rows="2")
        assert conforms(body, TableResponse) == [], table


@pytest.mark.parametrize("route,args,status,kind", [
    ("data", {"run": "no such run", "tool": "overview_page"}, 404, "not_found"),
    ("data", {"tool": "overview_page"}, 400, "bad_request"),
    ("nope", {}, 404, "not_found"),
])
def test_errors_have_their_wire_shape(client: Client, route: str, args: dict[str, str], status: int,
                                      kind: str) -> None:
    body = _json(client, route, status, **args)
    assert conforms(body, ErrorBody) == [] and body["kind"] == kind


def test_unreadable_profile_error_names_the_file(tmp_path: Path) -> None:
    session = tmp_path / "run" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    (session / "bad.xplane.pb").write_bytes(b"\xff" * 16)
    client = Client(create_app(tmp_path, cache_dir=tmp_path / "cache"))
    body = _json(client, "data", 422, run="run/s1", tool="overview_page")
    assert conforms(body, ErrorBody) == [] and body["kind"] == "unreadable_profile"
    assert body["file"].endswith("bad.xplane.pb") and body["reason"]
