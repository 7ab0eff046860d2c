"""The tbprof WSGI app, identical inside TensorBoard and in ``tbprof serve``.

Routes are relative (``runs``, ``data``, ...); TensorBoard mounts them under
``/data/plugin/tbprof/`` and the standalone server serves them at the same paths.
Handlers only parse arguments, call ``Profiles`` and encode; errors follow docs/api.md (errors):
the domain errors map to statuses in ``http/errors.py`` (unknown run/host/tool 404, bad parameter
400, unreadable profile 422), never a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.wrappers import Request, Response

from tbprof.errors import TbprofError
from tbprof.fs import Location
from tbprof.http import responses
from tbprof.http.context import AppContext
from tbprof.http.errors import HttpRefused, error_fields
from tbprof.http.guard import Guard
from tbprof.http.urls import URL_MAP
from tbprof.service.executor import Executor
from tbprof.service.profiles import Profiles
from tbprof.store.memo import Memo

log = logging.getLogger("tbprof")

PLUGIN_PREFIX = "/data/plugin/tbprof"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

Handler = Callable[[AppContext, Request], Response]

# What `tbprof serve` adds to every answer. Profile text is data, but should a
# name ever reach the page as markup, the browser still runs no inline or foreign script:
# scripts only from this server's files ('self': index.js, its chunks, boot.js), no eval.
# Styles may be inline (the bundle injects its CSS as a <style>, ECharts styles its tooltip
# elements). Framing: only by pages of this origin (frame-ancestors; X-Frame-Options for
# browsers without CSP level 2). Inside TensorBoard these are not sent: TensorBoard sends its
# own, and a TensorBoard embedded in a notebook frames this plugin from another origin.
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'self'",
))
STANDALONE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "SAMEORIGIN",
    "Referrer-Policy": "no-referrer",
}


class TbprofApp:
    """WSGI callable. ``prefix`` is stripped from paths (the standalone server uses it)."""

    def __init__(self, ctx: AppContext, prefix: str = "", standalone_headers: bool = False) -> None:
        self.ctx = ctx
        self.prefix = prefix.rstrip("/")
        self.extra_headers = dict(STANDALONE_HEADERS) if standalone_headers else {}
        self.urls = URL_MAP.bind("localhost")

    def route_path(self, request: Request) -> str:
        path = request.path
        for prefix in (self.prefix, PLUGIN_PREFIX):
            if prefix and path.startswith(prefix + "/"):
                return path[len(prefix) + 1:]
            if prefix and path == prefix:
                return ""
        return path.lstrip("/")

    def dispatch(self, request: Request) -> Response:
        path = self.route_path(request)
        refusal = self.ctx.guard.check(request.method, request.headers.get("Host"), request.headers.get("Origin"),
                                       request.scheme)
        if refusal is not None:
            return responses.error_response(request, refusal.kind, refusal.message)
        try:
            try:
                handler, _ = self.urls.match("/" + path, method=request.method)
            except NotFound:
                return static_file(request, path)
            return cast(Handler, handler)(self.ctx, request)
        except TbprofError as e:
            return responses.error_response(request, e.kind, str(e), **error_fields(e))
        except HttpRefused as e:
            return responses.error_response(request, e.kind, str(e))
        except MethodNotAllowed as e:
            allowed = ", ".join(sorted(e.valid_methods or ()))
            message = f"{path} takes {allowed}, not {request.method}"
            return responses.error_response(request, "method_not_allowed", message)
        except HTTPException as e:
            return responses.error_response(request, "http", e.description or e.name, status=e.code or None)
        except Exception as e:  # a bug: say so without a traceback, keep serving
            log.exception("tbprof: internal error on %s", request.full_path)
            return responses.error_response(request, "internal", f"internal error: {type(e).__name__}")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        response = self.dispatch(request)
        # The answer is computed and encoded: now the deferred background work may start.
        self.ctx.profiles.after_request()
        # TensorBoard's security validator requires it (and it is right: no MIME sniffing).
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers.update(self.extra_headers)
        return response(environ, start_response)


_MIME = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml",
         ".woff2": "font/woff2", ".json": "application/json", ".map": "application/json", ".png": "image/png"}


def static_file(request: Request, path: str) -> Response:
    """Files of the built frontend; nothing outside ``static/`` is ever served."""
    if path in ("", "index.html"):
        path = "index.html"
    root = STATIC_DIR.resolve()
    missing = responses.error_response(request, "not_found", f"no such route or file: {path[:200]!r}")
    try:
        # A NUL (`index.html%00.js`) raises ValueError and a 5,000-character name OSError
        # (ENAMETOOLONG): neither names a file here.
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            return missing
        stat = target.stat()
        body = target.read_bytes()
    except (OSError, ValueError):
        return missing
    mime = _MIME.get(target.suffix, "application/octet-stream")
    # Hashed asset names can be cached forever; entry files must revalidate.
    immutable = "/assets/" in f"/{path}"
    headers = {"Cache-Control": "public, max-age=31536000, immutable" if immutable else "no-cache"}
    # The bundle is the same bytes for every client: compressed once, not per request
    # (gzipping the chart chunk is slow on a busy machine: bench/measurements.md#serving).
    return responses.send(request, body, mime, headers=headers,
                          gzipped=lambda: _gzipped(str(target), stat.st_mtime_ns, body))


# Gzipped static files, in the process-wide byte budget (store/memo.py) with everything cached.
_GZIPPED = Memo()


def _gzipped(path: str, mtime_ns: int, body: bytes) -> bytes:
    """A static file gzipped; the key includes mtime and size so a rebuilt file is recompressed."""
    return _GZIPPED.get(("static_gzip", path, mtime_ns, len(body)),
                        lambda: responses.gzip_bytes(body, responses.STATIC_GZIP_LEVEL), size=len)


def create_app(logdir: Location | str, cache_dir: Path | str | None = None, prefix: str = "",
               capture_enabled: bool = True, executor: Executor | None = None, bind_host: str = "localhost",
               allowed_hosts: Sequence[str] = (), enable_capture: bool = False,
               standalone_headers: bool = False) -> TbprofApp:
    """The WSGI app of a server listening on ``bind_host``; ``executor`` converts a pod's hosts
    (None: in this process).

    Capture needs ``capture_enabled`` and, when the server is reachable from other machines
    (a non-loopback ``bind_host``), also ``enable_capture``: otherwise anyone on the network
    could make this machine open connections. ``standalone_headers``: send the
    Content-Security-Policy and frame policy of ``tbprof serve`` (STANDALONE_HEADERS).
    """
    guard = Guard.for_bind(bind_host, allowed_hosts)
    capture_on = capture_enabled and (guard.loopback or enable_capture)
    ctx = AppContext(Profiles(logdir, cache_dir=cache_dir, executor=executor), capture_enabled=capture_on,
                     guard=guard)
    return TbprofApp(ctx, prefix=prefix, standalone_headers=standalone_headers)
