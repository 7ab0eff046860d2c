"""Object storage for tests: moto's standalone S3 server over HTTP, started by the tests.

The server runs in a thread of the test process on a free loopback port; s3fs (inside the
test process and inside every ``tbprof serve`` / TensorBoard subprocess) reaches it through the
standard ``AWS_ENDPOINT_URL`` variable, as a user's own endpoint would be configured.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class S3:
    endpoint: str
    env: dict[str, str]  # the variables a subprocess needs to reach the server
    fs: object  # an s3fs.S3FileSystem on it


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per S3 request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": endpoint}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        import s3fs

        fs = s3fs.S3FileSystem(skip_instance_cache=True)
        yield S3(endpoint, env, fs)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(scope="session")
def s3_logdir(s3: S3, profiles_root: Path) -> str:
    """``s3://tbprof-logs/logs``: the small real XSpace profiles uploaded to the moto server."""
    fs = s3.fs
    fs.mkdir("tbprof-logs")  # type: ignore[attr-defined]
    fs.put(str(profiles_root) + "/", "tbprof-logs/logs/", recursive=True)  # type: ignore[attr-defined]
    return "s3://tbprof-logs/logs"
