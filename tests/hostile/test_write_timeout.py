"""A write timeout for ``tbprof serve`` (issue #25): clients that ask for a big answer and never
read it must not hold the server's threads.

waitress blocks a task thread while more than its high watermark of output waits for the
client and the connection has another request queued (HTTP pipelining; also an app that writes
its answer in pieces), and closes only connections without a request in progress: without a
write timeout, ``threads`` clients that pipeline two requests for a big answer and never read
stalled the server for good. The server here runs with 2 threads,
``$TBPROF_WRITE_TIMEOUT_S`` = WRITE_TIMEOUT_S and scaled-down buffers (small_buffers_serve.py),
so the ~1 MB trace window of a demo profile blocks a thread as a >20 MiB answer does by default.
"""

from __future__ import annotations

import math
import os
import select
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.profiles import copy_runs
from tests.servers import PLUGIN_SRC, Server, tbprof_serve

pytestmark = pytest.mark.slow

THREADS = 2
STUCK_CLIENTS = THREADS + 2  # more than the threads: some wait in the queue, then block too
WRITE_TIMEOUT_S = 4.0
# The event loop checks each connection at least once a second (waitress's
# asyncore_loop_timeout); a busy 2-core machine gets a few seconds of slack.
LOOP_TICK_S = 1.0
SLACK_S = 10.0
RUN = "keras_cnn/train/2026_11_26_00_33_56"
BIG = f"/data/plugin/tbprof/trace?run={RUN}&width_px=65536&format=json"
SMALL_RECEIVE_BUFFER_BYTES = 4096


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("write_timeout")
    copy_runs(root / "logs", "keras_cnn")
    launcher = (str(Path(__file__).with_name("small_buffers_serve.py")),)
    with tbprof_serve(root / "logs", root / "cache", root / "server.log", extra_args=("--threads", str(THREADS)),
                      extra_env={"TBPROF_WRITE_TIMEOUT_S": str(WRITE_TIMEOUT_S)}, launcher=launcher) as s:
        yield s


def _send(sock: socket.socket, server: Server, *paths: str) -> None:
    """GET requests in one write (pipelined: waitress queues them all on the connection)."""
    port = urllib.parse.urlsplit(server.base_url).port
    last = len(paths) - 1
    requests = [f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + ("Connection: close\r\n" if i == last else "")
                + "\r\n" for i, path in enumerate(paths)]
    sock.sendall("".join(requests).encode())


def _read_to_eof(sock: socket.socket, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_clients_that_never_read_do_not_stall_the_server(served: Server) -> None:
    status, _, whole = served.get(BIG.removeprefix("/data/plugin/tbprof/"))  # converts; the window is memoised
    assert status == 200
    assert len(whole) > 8 * (64 << 10)  # far beyond the scaled-down buffers: a task must block

    stuck = []
    for _ in range(STUCK_CLIENTS):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RECEIVE_BUFFER_BYTES)
        sock.connect(("127.0.0.1", urllib.parse.urlsplit(served.base_url).port or 80))
        _send(sock, served, BIG, BIG)
        stuck.append(sock)
    started = time.monotonic()
    normal = socket.create_connection(("127.0.0.1", urllib.parse.urlsplit(served.base_url).port or 80))
    try:
        _send(normal, served, "/data/plugin/tbprof/settings")
        # Every thread is blocked on a client that does not read: no answer before the timeout.
        readable, _, _ = select.select([normal], [], [], WRITE_TIMEOUT_S / 2)
        assert not readable, "answered while every thread should be blocked: the test shows nothing"
        # The timeout closes the blocked connections in rounds of THREADS (the queued stuck
        # requests block the freed threads once more); then the normal request is served.
        rounds = math.ceil(STUCK_CLIENTS / THREADS)
        bound_s = rounds * (WRITE_TIMEOUT_S + LOOP_TICK_S) + SLACK_S
        answer = _read_to_eof(normal, bound_s)
        elapsed_s = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert WRITE_TIMEOUT_S <= elapsed_s <= bound_s
    finally:
        normal.close()

    # Every stuck connection was closed by the server (a reset: the unsent bytes are dropped,
    # not kept for a client that does not read): reading ends, without the whole answer.
    try:
        for sock in stuck:
            try:
                got = _read_to_eof(sock, bound_s)
            except ConnectionResetError:
                continue
            assert len(got) < len(whole), "a stuck connection got its whole answer"
    finally:
        for sock in stuck:
            sock.close()

    # And the server goes on serving.
    assert served.get("settings", timeout_s=10)[0] == 200
    assert "Traceback" not in served.log(), served.log()[-2000:]


def test_a_client_that_reads_late_gets_the_whole_answer(served: Server) -> None:
    """The timeout counts from the output's last progress: a client that starts reading within
    it (here after half of it) is served in full."""
    status, _, whole = served.get(BIG.removeprefix("/data/plugin/tbprof/"))
    assert status == 200
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RECEIVE_BUFFER_BYTES)
    try:
        sock.connect(("127.0.0.1", urllib.parse.urlsplit(served.base_url).port or 80))
        _send(sock, served, BIG)
        time.sleep(WRITE_TIMEOUT_S / 2)
        got = _read_to_eof(sock, 60)
    finally:
        sock.close()
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    assert got.split(b"\r\n\r\n", 1)[1] == whole


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "1e309", "soon"])
def test_serve_refuses_a_bad_write_timeout(tmp_path: Path, bad: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "TBPROF_WRITE_TIMEOUT_S": bad}
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(tmp_path), "--port", "1"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1, (bad, proc.stderr)
    assert "TBPROF_WRITE_TIMEOUT_S" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "tbprof.cli", "serve", "--logdir", str(tmp_path), "--port", "1",
                           "--write-timeout", bad], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode in (1, 2), (bad, proc.stderr)  # 2: argparse refuses a non-number
    assert "--write-timeout" in proc.stderr, proc.stderr
