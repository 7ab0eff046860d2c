"""The routes the frontend's table widget uses: `table` (one table, queried) and the `rows=`
cap on `data`, on a real profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app


@pytest.fixture(scope="module")
def client(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    return Client(create_app(profiles_root, cache_dir=tmp_path_factory.mktemp("cache")))


def _run(client: Client, prefix: str) -> str:
    runs = json.loads(client.get("/runs").get_data())["runs"]
    return next(r["run"] for r in runs if r["run"].startswith(prefix))


def _get(client: Client, route: str, **params: str) -> tuple[int, Any]:
    resp = client.get(f"/{route}", query_string=params)
    return resp.status_code, json.loads(resp.get_data())


def test_rows_caps_every_table_but_keeps_the_total(client: Client) -> None:
    run = _run(client, "jax_mlp/")
    _, full = _get(client, "data", run=run, tool="profile_summary")
    _, capped = _get(client, "data", run=run, tool="profile_summary", rows="5")
    lines, capped_lines = full["tables"]["lines"], capped["tables"]["lines"]
    assert len(lines["rows"]) > 5  # jax_mlp has 41 lines in 6 planes (+ empty planes)
    assert capped_lines["rows"] == lines["rows"][:5]  # the first rows in default order
    assert capped_lines["total_rows"] == len(lines["rows"])
    assert capped["event_count"] == full["event_count"]  # only tables are capped
    _, none = _get(client, "data", run=run, tool="profile_summary", rows="0")
    assert none["tables"]["lines"]["rows"] == [] and none["tables"]["lines"]["total_rows"] == len(lines["rows"])


def test_table_route_sorts_filters_and_pages(client: Client) -> None:
    run = _run(client, "jax_2hosts/")
    _, full = _get(client, "data", run=run, host="__all__", tool="profile_summary")
    all_rows = full["tables"]["lines"]["rows"]
    names = [c["name"] for c in full["tables"]["lines"]["columns"]]
    plane, count = names.index("plane"), names.index("event_count")
    gpu = [r for r in all_rows if "GPU" in r[plane]]
    # Expected: the GPU rows by event count, largest first (stable for ties), second page of 2.
    expected = sorted(gpu, key=lambda r: -r[count])[2:4]
    status, body = _get(client, "table", run=run, host="__all__", tool="profile_summary", table="lines",
                        sort="event_count", desc="1", offset="2", limit="2", **{"filter.plane": "GPU"})
    assert status == 200
    assert body["table"] == "lines" and body["schema_version"] == 1
    assert body["rows"] == expected
    assert body["total_rows"] == len(gpu) and body["offset"] == 2


@pytest.mark.parametrize(("params", "status", "message"), [
    ({"table": "nope"}, 404, "has no table 'nope'"),
    ({"filter.plane": "("}, 400, "does not compile"),
    ({"sort": "nope"}, 400, "unknown sort column"),
    ({"limit": "0"}, 400, "out of range"),
])
def test_table_route_errors(client: Client, params: dict[str, str], status: int, message: str) -> None:
    run = _run(client, "jax_mlp/")
    code, body = _get(client, "table", run=run, tool="profile_summary", **{"table": "lines", **params})
    assert code == status and message in body["error"]


def test_settings_lists_every_tool(client: Client) -> None:
    _, body = _get(client, "settings")
    names = [t["name"] for t in body["tools"]]
    assert "profile_summary" in names
    assert all(t["title"] for t in body["tools"])
