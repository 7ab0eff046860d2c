"""Capture into an ``s3://`` logdir (moto's S3 server): the real TensorFlow profiler server writes
the file itself, and this TensorFlow build cannot write ``s3://`` (no tensorflow-io), so the
answer must say that the server could not write to that URL, not report success."""

from __future__ import annotations

import json

import pytest
from werkzeug.test import Client

from tbprof.http.app import create_app
from tests.capture.profiler_servers import ProfilerServer
from tests.remote.conftest import S3, s3  # noqa: F401  (the moto server fixture)

pytestmark = pytest.mark.slow


def test_capture_into_a_bucket_the_server_cannot_write(tf_server: ProfilerServer, s3: S3,  # noqa: F811
                                                        tmp_path: object) -> None:
    s3.fs.mkdir("capture-bucket")  # type: ignore[attr-defined]
    client = Client(create_app("s3://capture-bucket/logs", cache_dir=str(tmp_path) + "/cache"))
    r = client.post("/capture", json={"addresses": tf_server.address, "duration_ms": 200, "retries": 0})
    body = json.loads(r.get_data())
    assert r.status_code == 502, body
    result = body["results"][0]
    # The server's own error reads like every other failure (docs/capture.md), with the hint
    # that it writes the URL itself.
    assert result["kind"] in ("remote_write", "could_not_connect")
    assert "s3://capture-bucket/logs/plugins/profile/" in result["message"]
    assert "write" in result["message"]
    assert not s3.fs.exists("capture-bucket/logs")  # type: ignore[attr-defined]
