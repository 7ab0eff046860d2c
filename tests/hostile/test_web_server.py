"""``tbprof serve`` on its production server (issue #25): waitress with a bounded thread pool,
a connection limit and an idle timeout, and the page's security headers.

The load test is bounded (2,000 idle connections, 20 clients x 10 requests, loopback only);
bench/idle_connections.py prints its latencies against werkzeug's development server.
"""

from __future__ import annotations

import html.parser
import http.client
import resource
import select
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.profiles import copy_runs
from tests.servers import Server, tbprof_serve, tensorboard

IDLE_CONNECTIONS = 2000
ACTIVE_CLIENTS = 20
REQUESTS_PER_CLIENT = 10
# Descriptors the test process needs: the idle sockets, the clients' sockets, pytest's own.
FDS_NEEDED = IDLE_CONNECTIONS + ACTIVE_CLIENTS + 200


def _raise_fd_limit() -> int:
    """The soft descriptor limit raised to the hard one (inherited by the server process)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, FDS_NEEDED * 2)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# The common default soft limit (issue #25: werkzeug's server stopped answering at 1,100 idle
# connections under it): the server process starts under it.
COMMON_SOFT_FD_LIMIT = 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("web")
    copy_runs(root / "logs", "torch_cnn")
    with tbprof_serve(root / "logs", root / "cache", root / "server.log",
                      soft_fd_limit=COMMON_SOFT_FD_LIMIT) as s:
        yield s


def _request(server: Server, path: str, timeout_s: float = 60) -> tuple[int, dict[str, str], bytes]:
    url = urllib.parse.urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=timeout_s)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


class _Scripts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True
        for name, _ in attrs:
            assert not name.startswith("on"), f"inline event handler {name} on <{tag}>"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def _directives(csp: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in csp.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_page_headers_and_no_inline_script(served: Server) -> None:
    status, headers, body = _request(served, "/")
    assert status == 200
    csp = _directives(headers["content-security-policy"])
    # Scripts only from this server, no inline script, no eval; framed only by this origin.
    assert csp["script-src"] == ["'self'"], csp
    assert csp["object-src"] == ["'none'"] and csp["frame-ancestors"] == ["'self'"]
    assert headers["x-frame-options"] == "SAMEORIGIN"
    assert headers["x-content-type-options"] == "nosniff"
    parser = _Scripts()
    parser.feed(body.decode())
    assert parser.scripts and all(s.get("src") for s in parser.scripts), parser.scripts
    assert parser.inline == []
    # The page's scripts come from this server under that policy.
    for script in parser.scripts:
        src = script["src"] or ""
        assert src.startswith("/"), src
        status, headers, _ = _request(served, src)
        assert status == 200 and headers["content-type"].startswith("text/javascript")
    for route in ("/data/plugin/tbprof/runs", "/data/plugin/tbprof/no_such_route"):
        _, headers, _ = _request(served, route)
        assert "content-security-policy" in headers and headers["x-content-type-options"] == "nosniff", route


def test_served_by_waitress_with_the_same_guards(served: Server) -> None:
    _, headers, _ = _request(served, "/data/plugin/tbprof/settings")
    assert headers.get("server") == "tbprof"
    url = urllib.parse.urlsplit(served.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        conn.request("GET", "/data/plugin/tbprof/runs", headers={"Host": "evil.example"})
        assert conn.getresponse().status == 403
    finally:
        conn.close()


def test_idle_connection_is_closed(tmp_path: Path) -> None:
    """A client that connects and sends nothing is dropped after --idle-timeout (3 s here,
    checked every 1 s): it holds no thread, and not forever a descriptor."""
    copy_runs(tmp_path / "logs", "torch_cnn")
    with tbprof_serve(tmp_path / "logs", tmp_path / "cache", tmp_path / "server.log",
                      extra_args=("--idle-timeout", "3")) as server:
        url = urllib.parse.urlsplit(server.base_url)
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 0), timeout=30) as s:
            start = time.monotonic()
            assert s.recv(1) == b""  # closed by the server
            assert 2 < time.monotonic() - start < 20


def test_active_clients_answered_beside_2000_idle_connections(served: Server) -> None:
    fd_limit = _raise_fd_limit()
    assert fd_limit >= FDS_NEEDED, f"ulimit -n {fd_limit}: this test needs {FDS_NEEDED} descriptors"
    url = urllib.parse.urlsplit(served.base_url)
    address = (url.hostname or "127.0.0.1", url.port or 0)
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            idle.append(socket.create_connection(address, timeout=30))
        results: list[tuple[int, float]] = []
        errors: list[BaseException] = []
        lock = threading.Lock()
        routes = ("/data/plugin/tbprof/runs", "/data/plugin/tbprof/settings",
                  "/data/plugin/tbprof/data?run=torch_cnn&tool=framework_op_stats&rows=20")

        def client(k: int) -> None:
            try:
                for i in range(REQUESTS_PER_CLIENT):
                    start = time.monotonic()
                    status, _, _ = _request(served, routes[(k + i) % len(routes)], timeout_s=60)
                    with lock:
                        results.append((status, time.monotonic() - start))
            except BaseException as e:  # reported below: a client that got no answer
                with lock:
                    errors.append(e)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(ACTIVE_CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors[:3]
        assert len(results) == ACTIVE_CLIENTS * REQUESTS_PER_CLIENT
        assert all(status == 200 for status, _ in results), sorted({s for s, _ in results})
        # The idle connections were held open the whole time (the idle timeout is 60 s): none
        # reads as closed, and the last one opened is served when it finally asks.
        poller = select.poll()
        for s in idle:
            poller.register(s, select.POLLIN | select.POLLHUP)
        assert poller.poll(0) == []
        idle[-1].sendall(b"GET /data/plugin/tbprof/settings HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert idle[-1].recv(12) == b"HTTP/1.1 200"
        p95_s = sorted(d for _, d in results)[int(0.95 * len(results))]
        print(f"\n{ACTIVE_CLIENTS} clients beside {IDLE_CONNECTIONS} idle connections: p95 {p95_s * 1e3:.0f} ms")
    finally:
        for s in idle:
            s.close()
    assert served.process.poll() is None


def test_tensorboard_plugin_gets_no_standalone_frame_policy(tmp_path: Path) -> None:
    """Inside TensorBoard the plugin is framed by TensorBoard (and TensorBoard may itself be
    framed by a notebook of another origin): tbprof adds no frame-ancestors there."""
    copy_runs(tmp_path / "logs", "torch_cnn")
    with tensorboard(tmp_path / "logs", tmp_path / "cache", tmp_path / "tb.log") as tb:
        status, headers, _ = tb.get("runs")
        assert status == 200
        csp = headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'self'" not in csp
        assert headers.get("X-Frame-Options") is None
        assert headers.get("X-Content-Type-Options") == "nosniff"
