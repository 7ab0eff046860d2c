"""An FSDP2 run (tests/kineto_llm.py: two ranks, FSDP2's collective names) through the app."""

from __future__ import annotations

from pathlib import Path

from werkzeug.test import Client

from tbprof.http.app import create_app
from tests import kineto_llm as fx


def test_fsdp2_run_serves_the_collectives_and_stragglers_pages(tmp_path: Path) -> None:
    """Through the app: the run lists both tools, and Stragglers' waiting column has a number per
    rank (the "–" of a run whose collectives were not recognised)."""
    fx.write_run(tmp_path / "logs" / "fsdp2")
    client = Client(create_app(tmp_path / "logs", cache_dir=tmp_path / "cache"))
    runs = {e["run"]: e for e in client.get("/data/plugin/tbprof/runs").get_json()["runs"]}
    assert {"collectives", "stragglers"} <= set(runs["fsdp2"]["tools"])
    r = client.get("/data/plugin/tbprof/data", query_string={"run": "fsdp2", "tool": "stragglers", "host": "__all__"})
    assert r.status_code == 200, r.get_data(as_text=True)
    table = r.get_json()["tables"]["ranks"]
    col = [c["name"] for c in table["columns"]].index("synchronizing_us")
    assert all(row[col] is not None for row in table["rows"]) and len(table["rows"]) == 2
