"""The #18 tools through the WSGI app: listed per run kind, CSV of every table, and bad input as
4xx JSON ``{"error", "kind"}`` (never a 500)."""

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


def _run(client: Client, prefix: str) -> str:
    return next(e["run"] for e in client.get(API + "runs").get_json()["runs"] if e["run"].startswith(prefix))


def _tools(client: Client, run: str) -> list[str]:
    return [t["name"] for t in client.get(API + "tools", query_string={"run": run}).get_json()["tools"]]


def test_tools_listed_where_the_profile_has_the_data(client: Client) -> None:
    jax = _tools(client, _run(client, "jax_mlp/"))
    for tool in ("hlo_stats", "roofline_model", "memory_viewer", "graph_viewer", "smart_suggestion"):
        assert tool in jax
    # XProf's menu order: trace viewer, then the HLO tools.
    assert jax.index("trace_viewer") < jax.index("hlo_stats") < jax.index("roofline_model") \
        < jax.index("memory_viewer") < jax.index("graph_viewer")
    cpu = _tools(client, _run(client, "custom_loop/"))
    for tool in ("hlo_stats", "roofline_model", "memory_viewer", "graph_viewer", "inference_profile", "perf_counters"):
        assert tool not in cpu
    assert "inference_profile" not in jax and "megascale_stats" not in jax
    names = {t["name"]: t for t in client.get(API + "settings").get_json()["tools"]}
    assert "TPU only" in names["utilization_viewer"]["description"]


@pytest.mark.parametrize(("tool", "table"), [("hlo_stats", "hlo_ops"), ("roofline_model", "roofline"),
                                             ("memory_viewer", "buffers")])
def test_csv_of_every_table(client: Client, tool: str, table: str) -> None:
    run = _run(client, "jax_mlp/")
    full = client.get(API + "data", query_string={"run": run, "tool": tool}).get_json()["tables"][table]
    r = client.get(API + "csv", query_string={"run": run, "tool": tool, "table": table})
    assert r.status_code == 200
    rows = list(csv.reader(io.StringIO(r.get_data(as_text=True))))
    assert rows[0] == [c["name"] for c in full["columns"]]
    assert len(rows) - 1 == full["total_rows"]


@pytest.mark.parametrize(("prefix", "query", "status", "kind"), [
    ("jax_mlp/", {"tool": "memory_viewer", "module": "no_such(1)"}, 404, "not_found"),
    ("jax_mlp/", {"tool": "graph_viewer", "node_name": "no-such-op"}, 404, "not_found"),
    ("jax_mlp/", {"tool": "graph_viewer", "graph_width": "99"}, 400, "bad_request"),
    ("jax_mlp/", {"tool": "graph_viewer", "graph_width": "-1"}, 400, "bad_request"),
    ("jax_mlp/", {"tool": "graph_viewer", "format": "svg"}, 400, "bad_request"),
    ("jax_mlp/", {"tool": "inference_profile"}, 404, None),
    ("jax_mlp/", {"tool": "perf_counters"}, 404, None),
])
def test_bad_input_is_a_json_4xx(client: Client, prefix: str, query: dict[str, Any], status: int,
                                 kind: str | None) -> None:
    r = client.get(API + "data", query_string={"run": _run(client, prefix), **query})
    body = r.get_json()
    assert r.status_code == status, body
    assert set(body) >= {"error", "kind"} and "Traceback" not in body["error"]
    if kind is not None:
        assert body["kind"] == kind


def test_hlo_stats_on_a_cpu_run_explains_itself(client: Client) -> None:
    """As kernel_stats: asked anyway on a CPU run, an empty table and why (XProf: empty table)."""
    r = client.get(API + "data", query_string={"run": _run(client, "custom_loop/"), "tool": "hlo_stats"})
    body = r.get_json()
    assert r.status_code == 200
    assert body["op_count"] == 0 and body["tables"]["hlo_ops"]["total_rows"] == 0
    assert "no XLA device ops" in body["message"]
