"""Capture is not a port scanner (issue #25, docs/capture.md): a closed port, a silent
(filtered) one, another gRPC service and a server answering with an error all read the same,
after the same minimum delay, with no timing and no gRPC status name; and a server that is not
on this machine is not sent our absolute logdir path.

Real servers on loopback: a listening socket that never speaks (what a filtering firewall
looks like to a client: the connection never becomes usable), gRPC servers of another service,
and a gRPC server recording what a Profile call carries.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from tbprof.capture import session
from tbprof.capture.addresses import parse_address
from tbprof.capture.client import CaptureOptions
from tbprof.protos import profiler_service_pb2
from tests.servers import free_port

CONNECT_TIMEOUT_S = 1.0
RETRIES = 2
FLOOR_S = session.failure_floor_s(RETRIES, CONNECT_TIMEOUT_S)  # 1 + 0.5 + 1 s
STATUS_NAMES = (*(c.name for c in grpc.StatusCode), "CONNECT_TIMEOUT", "EMPTY_TRACE")


@contextmanager
def _silent_listener() -> Iterator[int]:
    """Accepts TCP and never answers (the HTTP/2 handshake never completes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        held: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            s.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(s.accept()[0])
                except OSError:
                    pass

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        try:
            yield int(s.getsockname()[1])
        finally:
            stop.set()
            t.join()
            for c in held:
                c.close()


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, behaviour: Callable[[bytes, grpc.ServicerContext], bytes]) -> None:
        self.behaviour = behaviour

    def service(self, call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return grpc.unary_unary_rpc_method_handler(self.behaviour)


@contextmanager
def _grpc_server(behaviour: Callable[[bytes, grpc.ServicerContext], bytes] | None,
                 bind: str = "127.0.0.1") -> Iterator[int]:
    """A real gRPC server: with no handler every method is UNIMPLEMENTED (another service)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    if behaviour is not None:
        server.add_generic_rpc_handlers((_Handler(behaviour),))
    port = server.add_insecure_port(f"{bind}:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(0)


def _abort(code: grpc.StatusCode) -> Callable[[bytes, grpc.ServicerContext], bytes]:
    def behaviour(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(code, f"{code.name} from another service")
        raise AssertionError("abort raises")
    return behaviour


def _capture(tmp_path: Path, address: str) -> tuple[dict[str, Any], float]:
    logdir = tmp_path / "logs"
    logdir.mkdir(exist_ok=True)
    started = time.monotonic()
    report = session.capture(logdir, [parse_address(address)],
                             CaptureOptions(duration_ms=100, retries=RETRIES), connect_timeout_s=CONNECT_TIMEOUT_S)
    elapsed_s = time.monotonic() - started
    (result,) = session.report_json(report)["results"]
    return result, elapsed_s


def test_every_failure_reads_alike(tmp_path: Path) -> None:
    answers: dict[str, tuple[dict[str, Any], float]] = {}
    answers["closed"] = _capture(tmp_path, f"127.0.0.1:{free_port()}")
    with _silent_listener() as port:
        answers["silent"] = _capture(tmp_path, f"127.0.0.1:{port}")
    with _grpc_server(None) as port:
        answers["unimplemented"] = _capture(tmp_path, f"127.0.0.1:{port}")
    with _grpc_server(_abort(grpc.StatusCode.UNAUTHENTICATED)) as port:
        answers["unauthenticated"] = _capture(tmp_path, f"127.0.0.1:{port}")
    with _grpc_server(_abort(grpc.StatusCode.PERMISSION_DENIED)) as port:
        answers["permission_denied"] = _capture(tmp_path, f"127.0.0.1:{port}")

    def shape(result: dict[str, Any]) -> dict[str, Any]:
        # Everything but the address itself (and the file name made from it).
        text = json.dumps(result).replace(result["address"], "ADDR").replace(result["host"], "HOST")
        out = json.loads(text)
        assert out.pop("path").endswith("/HOST.xplane.pb")  # in this capture's own session
        return out

    shapes = {name: shape(r) for name, (r, _) in answers.items()}
    first = shapes["closed"]
    for name, s in shapes.items():
        assert s == first, (name, s, first)
    assert first["kind"] == "could_not_connect" and first["ok"] is False
    assert first["attempts"] == 1 + RETRIES
    assert "elapsed_s" not in first
    for name, (result, elapsed_s) in answers.items():
        text = json.dumps(result)
        assert not any(code in text for code in STATUS_NAMES), (name, text)
        # The same minimum delay: a refused port (fast) and a silent one (the connect timeout)
        # both answer after the floor, not before; none much later.
        assert FLOOR_S - 0.05 <= elapsed_s <= FLOOR_S + 2.0, (name, elapsed_s)


def _recording_profiler(seen: list[profiler_service_pb2.ProfileRequest]) -> Callable[[bytes, grpc.ServicerContext],
                                                                                       bytes]:
    def behaviour(request: bytes, context: grpc.ServicerContext) -> bytes:
        seen.append(profiler_service_pb2.ProfileRequest.FromString(request))
        return profiler_service_pb2.ProfileResponse(empty_trace=True).SerializeToString()
    return behaviour


def _first_request(tmp_path: Path, address: str, seen: list[profiler_service_pb2.ProfileRequest]) -> \
        profiler_service_pb2.ProfileRequest:
    logdir = tmp_path / "logs"
    logdir.mkdir(exist_ok=True)
    session.capture(logdir, [parse_address(address)], CaptureOptions(duration_ms=100, retries=0),
                    connect_timeout_s=CONNECT_TIMEOUT_S)
    assert seen
    return seen[0]


def test_a_server_elsewhere_gets_no_logdir_path(tmp_path: Path) -> None:
    """The request names only what the profiler needs: a server on this machine gets the root
    it writes to; one reached by another name gets ``plugins/profile`` (relative to its own
    working directory), never our absolute path."""
    logdir = (tmp_path / "logs").resolve()
    seen: list[profiler_service_pb2.ProfileRequest] = []
    with _grpc_server(_recording_profiler(seen), bind="0.0.0.0") as port:
        local = _first_request(tmp_path, f"127.0.0.1:{port}", seen)
        assert local.repository_root == str(logdir / "plugins" / "profile")
        seen.clear()
        # This machine by a name that is not a loopback literal: treated as another machine.
        elsewhere = _first_request(tmp_path, f"{socket.gethostname()}:{port}", seen)
    assert elsewhere.repository_root == "plugins/profile"
    wire = elsewhere.SerializeToString()
    assert str(logdir).encode() not in wire and str(tmp_path).encode() not in wire
    assert elsewhere.opts.repository_path == ""
    assert list(elsewhere.tools) == ["xplane.pb"] and elsewhere.session_id and elsewhere.host_name


@pytest.mark.parametrize(("address", "loopback"), [
    ("localhost:6009", True), ("127.0.0.1:6009", True), ("127.1.2.3:6009", True), ("[::1]:6009", True),
    ("10.0.0.5:6009", False), ("[fe80::1]:6009", False), ("worker1:6009", False),
    ("localhost.example.com:6009", False),
])
def test_which_addresses_are_this_machine(address: str, loopback: bool) -> None:
    assert parse_address(address).loopback is loopback

