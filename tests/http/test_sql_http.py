"""``POST sql`` / ``GET sql_tables`` through the WSGI app and inside a real TensorBoard: answers,
DuckDB's message as a 400, size and type refusals, and the Host/Origin rules of every POST."""

from __future__ import annotations

import http.client
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tbprof.http.routes.sql import MAX_BODY_BYTES, MAX_ROWS
from tests import servers

API = "/data/plugin/tbprof/"
RUN = "torch_ddp"
LOCAL = {"Host": "localhost:6006"}


@pytest.fixture(scope="module")
def client(sample_profiles: Path, tmp_path_factory: pytest.TempPathFactory) -> Client:
    root = tmp_path_factory.mktemp("logs")
    shutil.copytree(sample_profiles / "torch_ddp", root / "torch_ddp")
    return Client(create_app(root, cache_dir=tmp_path_factory.mktemp("cache")))


def _post(client: Client, body: Any, headers: dict[str, str] | None = None,
          content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    r = client.post(API + "sql", data=data, content_type=content_type, headers={**LOCAL, **(headers or {})})
    return r.status_code, r.get_json()


def test_a_query_answers_rows_with_types(client: Client) -> None:
    status, body = _post(client, {"run": RUN, "query": "SELECT host, count(*) AS n FROM events GROUP BY host "
                                                        "ORDER BY host"})
    assert status == 200, body
    assert body["columns"] == [{"name": "host", "type": "VARCHAR"}, {"name": "n", "type": "BIGINT"}]
    assert body["row_count"] == 2 and body["truncated"] is False and body["schema_version"]
    status, one = _post(client, {"run": RUN, "query": "SELECT DISTINCT host FROM events",
                                 "host": body["rows"][0][0]})
    assert status == 200 and one["rows"] == [[body["rows"][0][0]]]


def test_row_cap(client: Client) -> None:
    status, body = _post(client, {"run": RUN, "query": "SELECT name FROM events", "max_rows": 5})
    assert status == 200 and body["row_count"] == 5 and body["truncated"] is True
    for bad in (-1, MAX_ROWS + 1, "5", True, 1.5):
        status, body = _post(client, {"run": RUN, "query": "SELECT 1", "max_rows": bad})
        assert status == 400 and "max_rows" in body["error"]


@pytest.mark.parametrize(("query", "needle"), [
    ("SELECT nope FROM events", "nope"),
    ("SELECT * FROM read_csv('/etc/passwd')", "disabled by configuration"),
    ("COPY (SELECT 1) TO '/tmp/tbprof_sql_http.csv'", "only SELECT"),
    ("SET enable_external_access = true", "only SELECT"),
    ("INSTALL httpfs", "only SELECT"),
    ("ATTACH '/tmp/tbprof_sql_http.db'", "only SELECT"),
])
def test_bad_queries_are_400_with_duckdbs_message(client: Client, query: str, needle: str) -> None:
    status, body = _post(client, {"run": RUN, "query": query})
    assert status == 400 and body["kind"] == "bad_request" and needle.lower() in body["error"].lower(), body
    assert not Path("/tmp/tbprof_sql_http.csv").exists() and not Path("/tmp/tbprof_sql_http.db").exists()


def test_refusals_of_the_request_itself(client: Client) -> None:
    assert _post(client, {"run": "nope", "query": "SELECT 1"})[0] == 404
    assert _post(client, {"query": "SELECT 1"})[0] == 400
    assert _post(client, {"run": RUN, "query": "SELECT 1", "extra": 1})[0] == 400
    assert _post(client, "[1]")[0] == 400
    assert _post(client, "{not json")[0] == 400
    assert _post(client, {"run": RUN, "query": "SELECT 1"}, content_type="text/plain")[0] == 415
    huge = json.dumps({"run": RUN, "query": "SELECT 1 --" + "x" * (10 << 20)})  # a 10 MB query
    status, body = _post(client, huge)
    assert status == 413 and str(MAX_BODY_BYTES) in body["error"]
    # GET is no way in: the text never travels in a URL.
    assert client.get(API + "sql", query_string={"run": RUN, "query": "SELECT 1"}, headers=LOCAL).status_code == 405


@pytest.mark.parametrize(("headers", "status", "kind"), [
    ({"Origin": "http://localhost:6006"}, 200, None),
    ({"Origin": "http://evil.example"}, 403, "forbidden_origin"),
    ({"Origin": "null"}, 403, "forbidden_origin"),
    ({"Host": "rebind.attacker.example:6006"}, 403, "forbidden_host"),
])
def test_host_and_origin_rules(client: Client, headers: dict[str, str], status: int, kind: str | None) -> None:
    got, body = _post(client, {"run": RUN, "query": "SELECT 1"}, headers=headers)
    assert got == status, body
    if kind is not None:
        assert body["kind"] == kind


def test_tables_route(client: Client) -> None:
    r = client.get(API + "sql_tables", query_string={"run": RUN}, headers=LOCAL)
    assert r.status_code == 200
    names = [t["name"] for t in r.get_json()["tables"]]
    assert names[0] == "events" and {"steps", "ops", "kernels", "memory"} <= set(names)
    assert client.get(API + "sql_tables", query_string={"run": "nope"}, headers=LOCAL).status_code == 404
    assert client.get(API + "sql_tables", headers=LOCAL).status_code == 400


def test_inside_tensorboard(profiles_root: Path, tmp_path: Path) -> None:
    with servers.tensorboard(profiles_root, tmp_path / "cache", tmp_path / "tb.log") as tb:
        port = int(tb.base_url.rsplit(":", 1)[1])

        def post(headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                body = json.dumps({"run": run, "query": "SELECT count(*) AS n FROM events"})
                conn.request("POST", API + "sql", body=body,
                             headers={"Content-Type": "application/json", **headers})
                r = conn.getresponse()
                return r.status, json.loads(r.read())
            finally:
                conn.close()

        runs = json.loads(tb.get("runs")[2])["runs"]
        run = next(r["run"] for r in runs if r["run"].startswith("jax_mlp"))
        status, body = post({"Origin": f"http://127.0.0.1:{port}"})
        assert status == 200 and body["rows"][0][0] > 0, body
        assert post({"Origin": "http://evil.example"})[0] == 403
        assert post({"Host": "rebind.attacker.example"})[0] == 403
