"""The production HTTP server of ``tbprof serve``: waitress (pinned in setup.py).

werkzeug's development server starts a thread per connection and never times out a silent
one: idle connections beyond the common ``ulimit -n 1024`` stop it answering
(bench/idle_connections.py). waitress reads and writes every socket on one event loop (poll(), so more than
1,024 descriptors work) and runs the app on a fixed pool of threads; an idle connection costs
a descriptor and a few KB, never a thread. TensorBoard's own server is not touched: inside
TensorBoard the plugin is served by TensorBoard.

waitress has no write timeout. A task thread waits while more than ``outbuf_high_watermark``
(16 MiB: a trace-viewer window, the CSV of a big table) of output is pending and the
connection has another request queued (HTTP pipelining) or the app writes in pieces, and the
maintenance closes only connections with no request in progress: a few clients that pipeline
requests for a big answer and never read held every thread forever. (A lone request's answer
is buffered whole, a temporary file past 1 MiB, and its thread is free.)
``WriteTimeoutChannel`` closes a connection whose pending output moved less than
WRITE_PROGRESS_BYTES in ``write_timeout_s``, which wakes a waiting thread (waitress then ends the task as for a client
that went away) and drops the buffer.

A client that sends part of a request's headers and then waits held a connection slot for the
whole idle timeout: a thousand of them filled the connection limit and a normal request waited.
As Apache's ``mod_reqtimeout``, a request whose headers have not all arrived within
``header_timeout_s`` of its first byte is dropped, and at the connection limit the oldest such
half-sent request is dropped first, so the server keeps accepting.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.task import ErrorTask

from tbprof.http.app import STANDALONE_HEADERS

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

# Descriptors kept free for what the app opens while serving: profile files, the disk cache's
# memory-mapped columns, worker pipes, capture's gRPC channel.
RESERVED_FDS = 256
# An upper bound on open connections however many descriptors the system allows.
MAX_CONNECTIONS = 10_000
# The largest request body any route reads (capture's JSON body is capped at 64 KiB by its
# route): waitress answers 413 before buffering more.
MAX_REQUEST_BODY_BYTES = 1 << 20

# A connection with pending output must move at least this many bytes per ``write_timeout_s``
# to count as reading: a client that drips a few bytes now and then cannot hold a thread.
WRITE_PROGRESS_BYTES = 64 << 10
WRITE_TIMEOUT_ENV = "TBPROF_WRITE_TIMEOUT_S"
DEFAULT_WRITE_TIMEOUT_S = 60.0
# Apache's mod_reqtimeout gives headers 20 s (more with a minimum rate); a browser sends them at once.
HEADER_TIMEOUT_ENV = "TBPROF_HEADER_TIMEOUT_S"
DEFAULT_HEADER_TIMEOUT_S = 20.0

log = logging.getLogger("tbprof")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class ServerLimits:
    threads: int = 8
    """Requests handled at once; further requests wait for a thread (their sockets stay open)."""
    connection_limit: int | None = None
    """Open connections at most (None: from the descriptor limit, see connection_limit_for)."""
    idle_timeout_s: int = 60
    """A connection with no request in progress and no bytes moved for this long is closed:
    the read timeout for a client that connects and sends nothing, or stops reading."""
    write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S
    """A connection whose pending output moves less than WRITE_PROGRESS_BYTES in this long is
    closed, even with a request in progress (its thread is freed): the write timeout."""
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    """A request whose headers have not all arrived this long after its first byte is dropped."""


def write_timeout_from_env(environ: dict[str, str] | None = None) -> float:
    """``$TBPROF_WRITE_TIMEOUT_S`` (seconds, > 0), else DEFAULT_WRITE_TIMEOUT_S."""
    return _seconds_from_env(WRITE_TIMEOUT_ENV, DEFAULT_WRITE_TIMEOUT_S, environ)


def header_timeout_from_env(environ: dict[str, str] | None = None) -> float:
    """``$TBPROF_HEADER_TIMEOUT_S`` (seconds, > 0), else DEFAULT_HEADER_TIMEOUT_S."""
    return _seconds_from_env(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S, environ)


def _seconds_from_env(name: str, default: float, environ: dict[str, str] | None) -> float:
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"${name}={raw!r} is not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise ValueError(f"${name}={raw!r} must be in (0, 86400] seconds")
    return value


class FramingParser(HTTPRequestParser):
    """waitress's request parser; a request with both Content-Length and Transfer-Encoding is
    answered and its connection closed (RFC 9112 section 6.1): the two framings may disagree
    between this server and a proxy in front of it, so a request pipelined behind it on the same
    connection is not trusted (request smuggling)."""

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)
        # waitress takes Transfer-Encoding out of the headers (``chunked``: it framed the body).
        if self.chunked and "CONTENT_LENGTH" in self.headers:
            self.headers["CONNECTION"] = "close"
            self.connection_close = True


class HeadedErrorTask(ErrorTask):
    """waitress's own answers (400 bad request, 413 body too large, 431 headers too large, 501
    transfer coding) with the headers every answer of the app carries: no MIME sniffing, the
    Content-Security-Policy and the frame policy."""

    def execute(self) -> None:
        self.response_headers.append(("X-Content-Type-Options", "nosniff"))
        self.response_headers.extend(STANDALONE_HEADERS.items())
        super().execute()


class WriteTimeoutChannel(HTTPChannel):
    """waitress's channel with a write timeout (see the module's docstring).

    ``_write_progress_at`` is when the pending output last moved WRITE_PROGRESS_BYTES (or
    became pending). The event loop asks every channel ``writable()`` on each pass (at least
    once a second: ``asyncore_loop_timeout``), so the check lives there; the close is
    waitress's own ``handle_close``, which notifies a task waiting for the output to drain
    (the task then ends as for a client that went away).
    """

    write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    parser_class = FramingParser
    error_task_class = HeadedErrorTask

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._write_progress_at = time.monotonic()
        self._write_progress_bytes = 0
        self._write_timed_out = False
        self._headers_of: object = None  # the request whose headers are awaited
        self.headers_awaited_since: float | None = None  # when its first byte came
        super().__init__(*args, **kwargs)

    def received(self, data: bytes) -> bool:
        done: bool = super().received(data)
        request = self.request
        if request is None or request.headers_finished:
            self._headers_of, self.headers_awaited_since = None, None
        elif request is not self._headers_of:
            self._headers_of, self.headers_awaited_since = request, time.monotonic()
        return done

    def readable(self) -> bool:
        since = self.headers_awaited_since
        if since is not None and not self._write_timed_out and time.monotonic() - since > self.header_timeout_s:
            self.drop(f"its request's headers did not arrive in {self.header_timeout_s:g} s")
            return False
        return bool(super().readable())

    def drop(self, why: str) -> None:
        """Closes the connection now, as a reset (see ``writable``)."""
        self._write_timed_out = True
        self.headers_awaited_since = None
        log.info("tbprof: closing a connection from %s: %s", self.addr, why)
        self.will_close = True
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.socket.shutdown(socket.SHUT_RDWR)
        except OSError:  # the client went already: the loop closes it anyway
            pass

    def write_soon(self, data: Any) -> int:
        # Called by the task thread. Output that starts pending starts its clock (set before
        # the bytes count, so the event loop never sees pending output with an old time).
        if not self.total_outbufs_len:
            self._write_progress_at = time.monotonic()
            self._write_progress_bytes = 0
        sent: int = super().write_soon(data)
        return sent

    def _flush_some(self, do_close: bool = True) -> bool:
        before = self.total_outbufs_len
        sent: bool = super()._flush_some(do_close=do_close)
        moved = before - self.total_outbufs_len
        if moved > 0:
            self._write_progress_bytes += moved
            if self._write_progress_bytes >= WRITE_PROGRESS_BYTES or not self.total_outbufs_len:
                self._write_progress_at = time.monotonic()
                self._write_progress_bytes = 0
        return sent

    def writable(self) -> bool:
        if (self.total_outbufs_len and not self._write_timed_out
                and time.monotonic() - self._write_progress_at > self.write_timeout_s):
            # will_close alone is acted on only when the socket polls writable, which a full
            # send buffer never does. A shut-down socket polls POLLHUP at once: the loop then
            # closes it through waitress's handle_close; linger 0 makes that close a reset, so
            # the kernel drops the unsent bytes instead of keeping them for a client that
            # does not read.
            self.drop(f"its output did not drain for {self.write_timeout_s:g} s")
        return bool(super().writable())


def channel_class_for(write_timeout_s: float,
                      header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S) -> type[WriteTimeoutChannel]:
    return type("WriteTimeoutChannel", (WriteTimeoutChannel,),
                {"write_timeout_s": write_timeout_s, "header_timeout_s": header_timeout_s})


def _make_room_first(listener: Any) -> None:
    """At the connection limit, the listener drops the connection whose request headers have been
    awaited longest (a half-sent request) before it would stop accepting."""
    readable = listener.readable

    def make_room() -> bool:
        if listener.accepting and len(listener._map) >= listener.adj.connection_limit:
            waiting = [ch for ch in list(listener._map.values())
                       if isinstance(ch, WriteTimeoutChannel) and ch.headers_awaited_since is not None]
            if waiting:
                min(waiting, key=lambda ch: ch.headers_awaited_since or 0.0).drop(
                    "the connection limit is reached and its request's headers are the oldest awaited")
        return bool(readable())

    listener.readable = make_room


def raise_fd_limit() -> int:
    """Raises the soft descriptor limit to the hard one (as servers do) and returns it
    (Windows has no such limit: there, a default)."""
    if resource is None:
        return 8192
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 65_536)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 65_536


def connection_limit_for(fd_limit: int) -> int:
    """Connections the server accepts: what the descriptor limit leaves after RESERVED_FDS.

    Beyond it, waitress stops accepting (new connections wait in the kernel's backlog) instead
    of failing the app's own file opens with EMFILE.
    """
    return max(16, min(MAX_CONNECTIONS, fd_limit - RESERVED_FDS))


def waitress_settings(limits: ServerLimits, fd_limit: int) -> dict[str, Any]:
    return {
        "threads": limits.threads,
        "connection_limit": limits.connection_limit or connection_limit_for(fd_limit),
        "channel_timeout": limits.idle_timeout_s,
        "cleanup_interval": max(1, min(30, limits.idle_timeout_s // 2)),
        "asyncore_use_poll": True,  # select() cannot watch descriptors above 1,023
        "backlog": 2048,
        "max_request_body_size": MAX_REQUEST_BODY_BYTES,
        "expose_tracebacks": False,
        "ident": "tbprof",
    }


def serve(app: WsgiApp, host: str, port: int, limits: ServerLimits | None = None) -> None:
    """Serves ``app`` until interrupted."""
    server = create_server(app, host, port, limits or ServerLimits())
    server.run()


def create_server(app: WsgiApp, host: str, port: int, limits: ServerLimits) -> Any:
    """waitress's server (one listener per address ``host`` resolves to), its connections
    WriteTimeoutChannels."""
    import waitress
    from waitress.server import BaseWSGIServer

    listeners: dict[int, Any] = {}
    server = waitress.create_server(app, map=listeners, host=host, port=port,
                                    **waitress_settings(limits, raise_fd_limit()))
    channel_class = channel_class_for(limits.write_timeout_s, limits.header_timeout_s)
    for listener in [server, *listeners.values()]:
        if isinstance(listener, BaseWSGIServer):
            listener.channel_class = channel_class
            _make_room_first(listener)
    return server
