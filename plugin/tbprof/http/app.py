"""The tbprof WSGI app, identical inside TensorBoard and in ``tbprof serve``.

Routes are relative (``runs``, ``data``, ...); TensorBoard mounts them under
``/data/plugin/tbprof/`` and the standalone server serves them at the same paths.
Handlers only parse arguments, call ``Profiles`` and encode; errors follow DESIGN.md:
unknown run/host/tool 404, bad parameter 400, unreadable profile 422, never a traceback.
"""

from __future__ import annotations

import functools
import gzip
import importlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Request, Response

from tbprof.analyses.registry import OptionError
from tbprof.analyses.table import QueryError
from tbprof.http import responses
from tbprof.profiles import BadRequest, NotFound, Profiles
from tbprof.readers.errors import ProfileReadError

log = logging.getLogger("tbprof")

PLUGIN_PREFIX = "/data/plugin/tbprof"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

Handler = Callable[["AppContext", Request], Response]
ROUTES: dict[str, tuple[str, Handler]] = {}  # path -> (method, handler)

# Modules that register routes of later features; missing ones are skipped.
ROUTE_MODULES = ("tbprof.http.core_routes", "tbprof.timeline.routes", "tbprof.capture.routes",
                 "tbprof.http.tfprof_routes", "tbprof.http.compare_routes")


def route(path: str, method: str = "GET") -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        ROUTES[path] = (method, fn)
        return fn
    return wrap


@dataclass
class AppContext:
    profiles: Profiles
    capture_enabled: bool = True
    settings: dict[str, Any] = field(default_factory=dict)


class TbprofApp:
    """WSGI callable. ``prefix`` is stripped from paths (the standalone server uses it)."""

    def __init__(self, ctx: AppContext, prefix: str = "") -> None:
        self.ctx = ctx
        self.prefix = prefix.rstrip("/")
        for name in ROUTE_MODULES:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as e:
                # Skip a missing feature module (or its missing package), not a broken import inside it.
                if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
                    raise

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
        entry = ROUTES.get(path)
        try:
            if entry is None:
                return static_file(request, path)
            method, handler = entry
            if request.method not in (method, "HEAD") and not (method == "GET" and request.method == "HEAD"):
                return responses.error_response(request, 405, f"{path} takes {method}, not {request.method}")
            return handler(self.ctx, request)
        except NotFound as e:
            return responses.error_response(request, 404, str(e).strip("'\""))
        except (BadRequest, OptionError, QueryError) as e:
            return responses.error_response(request, 400, str(e))
        except ProfileReadError as e:
            return responses.error_response(request, 422, str(e), file=e.path, reason=e.reason)
        except HTTPException as e:
            return responses.error_response(request, e.code or 500, e.description or e.name)
        except Exception as e:  # a bug: say so without a traceback, keep serving
            log.exception("tbprof: internal error on %s", request.full_path)
            return responses.error_response(request, 500, f"internal error: {type(e).__name__}: {e}")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        response = self.dispatch(request)
        # The answer is computed and encoded: now the deferred background work may start.
        self.ctx.profiles.after_request()
        # TensorBoard's security validator requires it (and it is right: no MIME sniffing).
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response(environ, start_response)


_MIME = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml",
         ".woff2": "font/woff2", ".json": "application/json", ".map": "application/json", ".png": "image/png"}


def static_file(request: Request, path: str) -> Response:
    """Files of the built frontend; nothing outside ``static/`` is ever served."""
    if path in ("", "index.html"):
        path = "index.html"
    root = STATIC_DIR.resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return responses.error_response(request, 404, f"no such route or file: {path}")
    mime = _MIME.get(target.suffix, "application/octet-stream")
    # Hashed asset names can be cached forever; entry files must revalidate.
    immutable = "/assets/" in f"/{path}"
    headers = {"Cache-Control": "public, max-age=31536000, immutable" if immutable else "no-cache"}
    stat = target.stat()
    if stat.st_size >= responses.GZIP_MIN_BYTES and "gzip" in request.headers.get("Accept-Encoding", ""):
        # The bundle is the same bytes for every client: compress it once, not per request
        # (the chart chunk takes 60-250 ms to gzip on a busy 2-core machine).
        headers.update({"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        return Response(_gzipped(str(target), stat.st_mtime_ns, stat.st_size), mimetype=mime, headers=headers)
    return responses.finish(request, target.read_bytes(), mime, headers=headers)


@functools.lru_cache(maxsize=32)
def _gzipped(path: str, mtime_ns: int, size: int) -> bytes:
    """A static file gzipped; the key includes mtime and size so a rebuilt file is recompressed."""
    return gzip.compress(Path(path).read_bytes(), compresslevel=9, mtime=0)


def create_app(logdir: Path, cache_dir: Path | None = None, prefix: str = "",
               capture_enabled: bool = True) -> TbprofApp:
    ctx = AppContext(Profiles(logdir, cache_dir=cache_dir), capture_enabled=capture_enabled)
    return TbprofApp(ctx, prefix=prefix)
