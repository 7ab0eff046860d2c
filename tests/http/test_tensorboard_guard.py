"""The Host/Origin guard and the capture switch inside a real TensorBoard (issue #15 items 4, 5)."""

from __future__ import annotations

import http.client
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import servers

pytestmark = pytest.mark.slow


def _get(server: servers.Server, route: str, host: str | None = None) -> tuple[int, dict[str, Any]]:
    port = int(server.base_url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", "/data/plugin/tbprof/" + route, headers={"Host": host} if host else {})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def test_tensorboard_guards_tbprof_routes(profiles_root: Path, tmp_path: Path) -> None:
    with servers.tensorboard(profiles_root, tmp_path / "cache", tmp_path / "tb.log",
                             extra_args=("--tbprof_allowed_host", "devbox.corp")) as tb:
        status, body = _get(tb, "runs", host="rebind.attacker.example")
        assert status == 403 and body["kind"] == "forbidden_host"
        assert _get(tb, "runs", host="devbox.corp:6006")[0] == 200
        status, body = _get(tb, "settings")
        assert status == 200 and body["capture_enabled"] is True  # loopback: capture stays on


@pytest.mark.parametrize(("extra", "capture"), [((), False), (("--tbprof_enable_capture",), True)])
def test_tensorboard_bind_all_turns_capture_off(profiles_root: Path, tmp_path: Path, extra: tuple[str, ...],
                                                capture: bool) -> None:
    def cmd(port: int) -> list[str]:
        return [sys.executable, "-m", "tensorboard.main", "--logdir", str(profiles_root), "--port", str(port),
                "--bind_all", "--load_fast", "false", *extra]

    with servers._run(cmd, "/data/plugins_listing", tmp_path / "cache", tmp_path / "tb.log", timeout_s=120) as tb:
        status, body = _get(tb, "settings")
        assert status == 200 and body["capture_enabled"] is capture
        # Exposed without a name list: any Host is answered (the server is reachable under any name).
        assert _get(tb, "runs", host="tb.example.org")[0] == 200
