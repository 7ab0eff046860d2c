"""``tbprof serve``: the tbprof app without TensorBoard."""

from __future__ import annotations

import argparse
import os
import signal
from types import FrameType

from tbprof import __version__
from tbprof.cli.common import EXIT_OK, CliError, executor_from


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--logdir", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6007)
    p.add_argument("--no-capture", action="store_true", help="hide Capture Profile (no outgoing connections)")
    p.add_argument("--enable-capture", action="store_true",
                   help="allow Capture Profile on a non-loopback --host (off there by default: anyone who "
                        "reaches the server could make this machine open connections)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a host name the server may be reached under besides localhost (repeatable); "
                        "other Host headers are refused (DNS-rebinding protection)")
    p.add_argument("--threads", type=int, default=8,
                   help="requests handled at once (more wait for a thread; idle connections need none)")
    p.add_argument("--connection-limit", type=int, default=None, metavar="N",
                   help="open connections at most (default: what the descriptor limit allows, up to 10000)")
    p.add_argument("--idle-timeout", type=int, default=60, metavar="S",
                   help="close a connection that moves no bytes for S seconds between requests")
    p.add_argument("--write-timeout", type=float, default=None, metavar="S",
                   help="close a connection whose response does not drain for S seconds (a client that "
                        "stops reading), freeing its thread (default: $TBPROF_WRITE_TIMEOUT_S, else 60)")


def run(args: argparse.Namespace) -> int:
    from tbprof.fs import UrlPath, location
    from tbprof.http.app import PLUGIN_PREFIX, create_app
    from tbprof.http.server import ServerLimits, header_timeout_from_env, serve, write_timeout_from_env
    from tbprof.service.logdir import runs_for_path

    if args.threads < 1 or (args.connection_limit is not None and args.connection_limit < 1) or args.idle_timeout < 1:
        raise CliError("--threads, --connection-limit and --idle-timeout must be at least 1")
    try:
        write_timeout_s = args.write_timeout if args.write_timeout is not None else write_timeout_from_env()
    except ValueError as e:
        raise CliError(str(e)) from None
    if not 0 < write_timeout_s <= 86_400:
        raise CliError(f"--write-timeout {args.write_timeout}: must be in (0, 86400] seconds")
    try:
        header_timeout_s = header_timeout_from_env()
    except ValueError as e:
        raise CliError(str(e)) from None
    logdir = location(args.logdir)
    if isinstance(logdir, UrlPath):
        runs_for_path(logdir)  # lists once now: bad credentials or a missing bucket fail here, clearly
    elif not logdir.is_dir():
        raise CliError(f"--logdir {args.logdir}: not a directory")
    no_capture = args.no_capture or os.environ.get("TBPROF_NO_CAPTURE") == "1"
    executor = executor_from(args, start=True)
    app = create_app(logdir, cache_dir=args.cache_dir or None,
                     prefix=PLUGIN_PREFIX, capture_enabled=not no_capture, executor=executor, bind_host=args.host,
                     allowed_hosts=args.allowed_host, enable_capture=args.enable_capture, standalone_headers=True)
    if not no_capture and not app.ctx.capture_enabled:
        print(f"tbprof: Capture Profile is off because --host {args.host} is reachable from other machines; "
              "pass --enable-capture to allow it", flush=True)
    stop_on_sigterm()
    print(f"tbprof {__version__} serving {logdir.resolve()} at http://{args.host}:{args.port}/", flush=True)
    serve(app, args.host, args.port, ServerLimits(threads=args.threads, connection_limit=args.connection_limit,
                                                  idle_timeout_s=args.idle_timeout,
                                                  write_timeout_s=write_timeout_s,
                                                  header_timeout_s=header_timeout_s))
    return EXIT_OK


def stop_on_sigterm() -> None:
    """SIGTERM (a service manager, ``kill``) stops the server as Ctrl-C does: waitress ends its
    loop on KeyboardInterrupt and the command's cleanup (cli/main.py) ends the pool's workers,
    after which its fork server and resource tracker exit. SIGTERM's default, an exit on the spot,
    left all of them running. Installed after the pool has started, so no worker inherits it."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


COMMANDS = {"serve": (configure, run)}
