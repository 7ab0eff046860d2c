"""Captures refused before any connection is made: bad input, capture turned off, no logdir.

None of these needs a profiler server: each request must be answered without dialling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import Client

from tbprof.capture import client as capture_client
from tbprof.capture.session import MAX_DURATION_MS
from tbprof.cli import main as cli
from tbprof.http.app import create_app


@pytest.fixture()
def no_dialling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a refused capture must not connect anywhere")
    monkeypatch.setattr(capture_client, "profile_once", refuse)


def _post(client: Client, body: Any, content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    r = client.post("/capture", data=data, content_type=content_type)
    return r.status_code, json.loads(r.get_data())


@pytest.mark.parametrize(("body", "message"), [
    ({"addresses": "localhost:6009/x"}, "no path"),
    ({"addresses": "http://localhost:6009"}, "only host:port or grpc://host:port"),
    ({}, "no address given"),
    ({"addresses": "localhost:6009", "duration_ms": 0}, "duration_ms must be positive, not 0"),
    ({"addresses": "localhost:6009", "duration_ms": -5}, "duration_ms must be positive, not -5"),
    ({"addresses": "localhost:6009", "duration_ms": MAX_DURATION_MS + 1},
     f"duration_ms={MAX_DURATION_MS + 1} is out of range [1, {MAX_DURATION_MS}]"),
    ({"addresses": "localhost:6009", "duration_ms": 1.5}, "duration_ms must be a whole number"),
    ({"addresses": "localhost:6009", "duration_ms": "1000"}, "duration_ms must be a whole number"),
    ({"addresses": "localhost:6009", "host_tracer_level": 4}, "host_tracer_level=4 is out of range [0, 3]"),
    ({"addresses": "localhost:6009", "device_tracer_level": True}, "device_tracer_level must be a whole number"),
    ({"addresses": "localhost:6009", "python_tracer_level": 2}, "python_tracer_level=2 is out of range [0, 1]"),
    ({"addresses": "localhost:6009", "delay_ms": -1}, "delay_ms=-1 is out of range"),
    ({"addresses": "localhost:6009", "retries": 11}, "retries=11 is out of range [0, 10]"),
    ({"addresses": "localhost:6009", "follow": "redirects"}, "unknown field(s) ['follow']"),
    ([1, 2], "must be a JSON object"),
    ("{not json", "must be a JSON object"),
])
def test_bad_requests(no_dialling: None, tmp_path: Path, body: Any, message: str) -> None:
    status, answer = _post(Client(create_app(tmp_path)), body)
    assert status == 400 and message in answer["error"], answer


def test_only_json_is_accepted(no_dialling: None, tmp_path: Path) -> None:
    """A cross-site form post (text/plain, urlencoded) cannot trigger connections."""
    client = Client(create_app(tmp_path))
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        status, answer = _post(client, '{"addresses": "localhost:6009"}', content_type)
        assert status == 415 and "application/json" in answer["error"]


def test_capture_turned_off(no_dialling: None, tmp_path: Path) -> None:
    client = Client(create_app(tmp_path, capture_enabled=False))
    assert client.get("/settings").get_json()["capture_enabled"] is False
    status, answer = _post(client, {"addresses": "localhost:6009"})
    assert status == 403 and answer["kind"] == "capture_disabled"
    assert "--no-capture" in answer["error"] and "TBPROF_NO_CAPTURE=1" in answer["error"]


def test_missing_logdir(no_dialling: None, tmp_path: Path) -> None:
    """TensorBoard without --logdir mounts the app on a path that does not exist: no folder
    may be created there."""
    missing = tmp_path / "missing"
    status, answer = _post(Client(create_app(missing)), {"addresses": "localhost:6009"})
    assert status == 400 and "is not a directory" in answer["error"]
    assert not missing.exists()


def test_logdir_holding_a_file_named_plugins(no_dialling: None, tmp_path: Path) -> None:
    (tmp_path / "plugins").write_text("not a folder")
    status, answer = _post(Client(create_app(tmp_path)), {"addresses": "localhost:6009"})
    assert status == 403 and "is a file" in answer["error"]


@pytest.mark.parametrize(("argv", "message"), [
    (["localhost"], "expected host:port"),
    (["localhost:6009", "--duration-ms", "0"], "duration_ms must be positive"),
    (["localhost:6009", "--duration-ms", str(MAX_DURATION_MS + 1)], "out of range"),
    (["localhost:6009", "--host-tracer-level", "9"], "host_tracer_level=9 is out of range"),
])
def test_cli_refusals(no_dialling: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                      message: str) -> None:
    code = cli.main(["capture", *argv, "--logdir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and message in err
