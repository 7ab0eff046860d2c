"""The production HTTP server of ``tbprof serve``: waitress (pinned in setup.py).

werkzeug's development server started a thread per connection and never timed out a silent
one: idle connections beyond the common ``ulimit -n 1024`` stopped it answering (issue #25;
bench/idle_connections.py). waitress reads and writes every socket on one event loop (poll(), so more than
1,024 descriptors work) and runs the app on a fixed pool of threads; an idle connection costs
a descriptor and a few KB, never a thread. TensorBoard's own server is not touched: inside
TensorBoard the plugin is served by TensorBoard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


def serve(app: WsgiApp, host: str, port: int, limits: ServerLimits = ServerLimits()) -> None:
    """Serves ``app`` until interrupted."""
    import waitress

    settings = waitress_settings(limits, raise_fd_limit())
    waitress.serve(app, host=host, port=port, _quiet=True, **settings)
