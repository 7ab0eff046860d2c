"""waitress's own answers and request framing in ``tbprof serve`` (issue #34, low).

* The answers waitress writes itself, before the app sees a request (400 bad request, 413 body
  too large, 431 headers too large, 501 transfer coding), carry the headers of every answer:
  ``X-Content-Type-Options: nosniff``, the Content-Security-Policy and ``X-Frame-Options``.
* A request with both Content-Length and Transfer-Encoding is answered and its connection closed
  (RFC 9112 section 6.1): a request pipelined behind it on that connection is never answered.
"""

from __future__ import annotations

import socket
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tbprof.http.server import MAX_REQUEST_BODY_BYTES
from tests.hostile.profiles import copy_runs
from tests.servers import Server, tbprof_serve

API_PATH = "/data/plugin/tbprof/"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("waitress")
    copy_runs(root / "logs", "torch_cnn")
    with tbprof_serve(root / "logs", root / "cache", root / "server.log") as s:
        yield s


def _exchange(server: Server, raw: bytes, wait_s: float = 5.0) -> tuple[bytes, bool]:
    """Sends ``raw`` on one connection; (every byte the server sent, whether it closed the connection
    within ``wait_s``)."""
    url = urllib.parse.urlsplit(server.base_url)
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=wait_s) as sock:
        sock.sendall(raw)
        got = b""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return got, False
            except ConnectionResetError:  # closed with bytes of ours unread: a reset after the answer
                return got, True
            if not chunk:
                return got, True
            got += chunk
        return got, False


def _head(response: bytes) -> tuple[int, dict[str, str]]:
    head = response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in head[1:])}
    return int(head[0].split()[1]), headers


def _host(server: Server) -> bytes:
    return urllib.parse.urlsplit(server.base_url).netloc.encode()


def _requests(server: Server) -> dict[int, bytes]:
    host = _host(server)
    return {
        400: b"GET /\x00 HTTP/1.1\r\nHost: " + host + b"\r\nContent-Length: x\r\n\r\n",
        413: (b"POST " + API_PATH.encode() + b"capture HTTP/1.1\r\nHost: " + host + b"\r\nContent-Length: "
              + str(MAX_REQUEST_BODY_BYTES + 1).encode() + b"\r\n\r\n"),
        431: b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nX-Big: " + b"a" * (300 << 10) + b"\r\n\r\n",
        501: b"POST / HTTP/1.1\r\nHost: " + host + b"\r\nTransfer-Encoding: gzip\r\n\r\n",
    }


@pytest.mark.parametrize("status", [400, 413, 431, 501])
def test_waitress_answers_carry_the_security_headers(served: Server, status: int) -> None:
    got, _ = _exchange(served, _requests(served)[status])
    code, headers = _head(got)
    assert code == status, got[:300]
    assert headers.get("x-content-type-options") == "nosniff", headers
    assert "default-src 'self'" in headers.get("content-security-policy", ""), headers
    assert headers.get("x-frame-options") == "SAMEORIGIN", headers


def test_content_length_with_transfer_encoding_closes_the_connection(served: Server) -> None:
    host = _host(served)
    smuggled = b"GET " + API_PATH.encode() + b"runs HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"
    first = (b"POST " + API_PATH.encode() + b"runs HTTP/1.1\r\nHost: " + host
             + b"\r\nContent-Length: " + str(5 + len(smuggled)).encode()
             + b"\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    got, closed = _exchange(served, first + smuggled)
    assert got.startswith(b"HTTP/1.1 "), got[:300]
    assert closed, "the connection stayed open after an ambiguously framed request"
    assert got.count(b"HTTP/1.1 ") == 1, got  # the pipelined GET was not answered
    _, headers = _head(got)
    assert headers.get("connection", "").lower() == "close", headers
    # The same pipelined pair with one framing: both answered (the close is for the ambiguity only).
    plain = (b"GET " + API_PATH.encode() + b"runs HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    got, _ = _exchange(served, plain + plain, wait_s=3.0)
    assert got.count(b"HTTP/1.1 200") == 2, got[:300]


def test_server_log_has_no_traceback(served: Server, tmp_path: Path) -> None:
    assert "Traceback" not in served.log(), served.log()[-3000:]
