"""Real servers: TensorBoard loading the installed plugin, and `tbprof serve`, over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import servers

pytestmark = pytest.mark.slow


def _check_routes(server: servers.Server, root: Path) -> None:
    status, body = server.get_json("runs")
    assert status == 200
    names = {e["run"] for e in body["runs"]}
    assert any(n.startswith("custom_loop/") for n in names)
    run = next(n for n in names if n.startswith("custom_loop/"))
    status, data = server.get_json(f"data?run={run}&tool=profile_summary")
    assert status == 200 and data["schema_version"] == 1
    assert data["event_count"] > 0
    status, err = server.get_json("data?run=..%2F..%2Fetc&tool=profile_summary")
    assert status == 404 and "unknown run" in err["error"]
    status, headers, _ = server.get("index.js")
    assert status == 200 and "javascript" in headers["Content-Type"]
    status, _, csv_body = server.get(f"csv?run={run}&tool=profile_summary&table=lines")
    assert status == 200 and csv_body.startswith(b"host,plane,line,event_count")


def test_tensorboard_serves_the_plugin(profiles_root: Path, tmp_path: Path) -> None:
    with servers.tensorboard(profiles_root, tmp_path / "cache", tmp_path / "tb.log") as tb:
        # TensorBoard lists the plugin as an ES-module (iframed) plugin.
        import urllib.request
        with urllib.request.urlopen(tb.base_url + "/data/plugins_listing", timeout=60) as r:
            listing = json.loads(r.read())
        assert listing["tbprof"]["enabled"] is True
        assert listing["tbprof"]["loading_mechanism"]["type"] == "IFRAME"
        assert listing["tbprof"]["loading_mechanism"]["module_path"].endswith("/index.js")
        _check_routes(tb, profiles_root)
        assert "Traceback" not in tb.log()


def test_standalone_server(profiles_root: Path, tmp_path: Path) -> None:
    with servers.tbprof_serve(profiles_root, tmp_path / "cache", tmp_path / "serve.log") as srv:
        _check_routes(srv, profiles_root)
        import urllib.request
        with urllib.request.urlopen(srv.base_url + "/", timeout=30) as r:
            assert b"<script" in r.read()
