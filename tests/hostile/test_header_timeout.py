"""Half-sent requests do not hold the server's connection slots (issue #34, low; third pass).

With the descriptor limit at 1,024, 1,100 connections that sent part of a request's headers and
then waited held every connection slot for the idle timeout, and a normal request waited. A
request whose headers have not arrived within the header timeout is dropped (Apache's
``mod_reqtimeout`` model), and at the connection limit the oldest half-sent request is dropped
first, so a normal request is answered while the half-sent ones keep coming.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Iterator

import pytest

from tests.hostile.profiles import copy_runs
from tests.hostile.test_web_server import COMMON_SOFT_FD_LIMIT, _raise_fd_limit
from tests.servers import Server, tbprof_serve

HALF_SENT = 1100
HEADER_TIMEOUT_S = 3
# The server raises its soft descriptor limit to the hard one, so the slots are capped by the flag:
# the limit a server under a hard limit of 1,024 gets (``connection_limit_for``).
CONNECTION_LIMIT = 768


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    assert _raise_fd_limit() >= HALF_SENT + 200
    root = tmp_path_factory.mktemp("half_sent")
    copy_runs(root / "logs", "torch_cnn")
    with tbprof_serve(root / "logs", root / "cache", root / "server.log", soft_fd_limit=COMMON_SOFT_FD_LIMIT,
                      extra_args=("--connection-limit", str(CONNECTION_LIMIT)),
                      extra_env={"TBPROF_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S)}) as s:
        yield s


def _address(server: Server) -> tuple[str, int]:
    url = urllib.parse.urlsplit(server.base_url)
    return url.hostname or "127.0.0.1", url.port or 80


def _half_sent(server: Server) -> socket.socket:
    sock = socket.create_connection(_address(server), timeout=10)
    sock.sendall(b"GET /data/plugin/tbprof/runs HTTP/1.1\r\nHost: " + urllib.parse.urlsplit(
        server.base_url).netloc.encode() + b"\r\nX-Wait: ")
    return sock


def _closed_by_server(sock: socket.socket, wait_s: float) -> bool:
    sock.settimeout(wait_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_half_sent_request_is_dropped_after_the_header_timeout(served: Server) -> None:
    sock = _half_sent(served)
    try:
        # Dropped well before the 60 s idle timeout (the server checks once a second).
        assert _closed_by_server(sock, HEADER_TIMEOUT_S + 10)
    finally:
        sock.close()


def test_a_normal_request_is_answered_past_1100_half_sent_ones(served: Server) -> None:
    socks: list[socket.socket] = []
    try:
        for _ in range(HALF_SENT):
            try:
                socks.append(_half_sent(served))
            except OSError:  # the backlog is full: the server is not accepting now
                break
        # Answered (past the connection limit, half-sent requests are dropped oldest first to make
        # room) before the client gives up, long before the 60 s idle timeout would free a slot.
        status, _, body = served.get("runs", timeout_s=HEADER_TIMEOUT_S * 4)
        assert status == 200, body[:300]
    finally:
        for s in socks:
            s.close()
    assert "Traceback" not in served.log(), served.log()[-3000:]
