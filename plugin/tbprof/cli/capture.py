"""``tbprof capture ADDR[,ADDR] --logdir DIR [...]``: Capture Profile from a shell.

Exit codes: 0 every address captured, 1 bad arguments or refused before connecting,
3 at least one address failed (each failure is explained on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tbprof.capture.addresses import AddressError, parse_addresses
from tbprof.capture.session import (
    LEVEL_RANGES,
    MAX_DELAY_MS,
    MAX_DURATION_MS,
    MAX_RETRIES,
    CaptureRefused,
    capture,
    options_from,
    report_json,
    run_for_session,
)
from tbprof.cli.common import EXIT_OK, CliError, print_json
from tbprof.service.logdir import discover

EXIT_CAPTURE_FAILED = 3


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Ask running TensorFlow/JAX profiler servers (tf.profiler.experimental.server.start(PORT), "
                     "jax.profiler.start_server(PORT)) to trace; each writes "
                     "<logdir>/plugins/profile/<session>/<host>.xplane.pb.")
    p.add_argument("addresses", help="host:port or grpc://host:port, comma-separated")
    p.add_argument("--logdir", required=True, help="where the new session goes (must be writable)")
    p.add_argument("--duration-ms", type=int, default=1000, help=f"how long to trace (1..{MAX_DURATION_MS})")
    for name, (lo, hi) in LEVEL_RANGES.items():
        default = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 0}[name]
        p.add_argument("--" + name.replace("_", "-"), type=int, default=default, help=f"{lo}..{hi}")
    p.add_argument("--delay-ms", type=int, default=0, help=f"start tracing after this delay (0..{MAX_DELAY_MS})")
    p.add_argument("--retries", type=int, default=3,
                   help=f"extra attempts when a server is unavailable or returns no events (0..{MAX_RETRIES})")
    p.add_argument("--json", action="store_true", help="print the per-address report as JSON")


def run(args: argparse.Namespace) -> int:
    try:
        addresses = parse_addresses(args.addresses)
        options = options_from({k: getattr(args, k) for k in (
            "duration_ms", "host_tracer_level", "device_tracer_level", "python_tracer_level", "delay_ms",
            "retries")})
        report = capture(Path(args.logdir), addresses, options)
    except (AddressError, CaptureRefused) as e:
        raise CliError(str(e)) from None
    if report.any_ok:
        report.run = run_for_session(discover(Path(report.logdir)), report.session_dir)
    if args.json:
        print_json(report_json(report))
    for r in report.results:
        if r.ok:
            print(f"{r.address}: {r.message}", file=sys.stderr if args.json else sys.stdout)
        else:
            print(f"tbprof: {r.address}: {r.message}", file=sys.stderr)
    if report.any_ok and not args.json:
        print(f"run: {report.run or report.session}")
    return EXIT_OK if report.ok else EXIT_CAPTURE_FAILED


COMMANDS = {"capture": (configure, run)}
