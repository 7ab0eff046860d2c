"""The test servers' start (tests/servers.py): a port taken between free_port() and the
server's bind is not a failed test, the server starts again on another port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests import servers


def test_a_taken_port_starts_the_server_on_another(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   sample_profiles: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = int(taken.getsockname()[1])
        real_free_port = servers.free_port
        offered: list[int] = []

        def free_port_taken_first() -> int:
            # The first port offered is bound by someone else by the time the server binds it.
            port = taken_port if not offered else real_free_port()
            offered.append(port)
            return port

        monkeypatch.setattr(servers, "free_port", free_port_taken_first)
        with servers.tbprof_serve(sample_profiles / "keras_cnn", tmp_path / "cache", tmp_path / "serve.log") as s:
            assert offered[0] == taken_port and len(offered) == 2
            assert s.base_url.endswith(f":{offered[1]}")
            status, settings = s.get_json("settings")
            assert status == 200 and "version" in settings
