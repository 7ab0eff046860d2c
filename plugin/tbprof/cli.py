"""``tbprof``: serve the app without TensorBoard, or print analyses as JSON/CSV.

    tbprof serve --logdir DIR [--host 127.0.0.1] [--port 6007] [--cache-dir D] [--no-capture]
    tbprof tools PATH
    tbprof show TOOL PATH [--run R] [--host H] [--format json|csv] [--table T] [--option k=v ...]
    tbprof csv TOOL PATH [--table T] ...          (same as show --format csv)
    tbprof summary PATH [--json]

PATH is a logdir, a session folder or one profile file. Exit codes: 0 ok, 1 usage or
unknown name, 2 unreadable profile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tbprof import __version__
from tbprof.analyses.table import Table, TableQuery
from tbprof.http import responses
from tbprof.logdir import Run
from tbprof.profiles import ALL_HOSTS, BadRequest, NotFound, Profiles
from tbprof.readers.errors import ProfileReadError

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_UNREADABLE = 2

# Subcommands added by later features: name -> (configure parser, run).
Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
EXTRA_COMMANDS: dict[str, Command] = {}
COMMAND_MODULES = ("tbprof.capture.cli", "tbprof.compare_cli")


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _profiles(path: str, cache_dir: str | None) -> Profiles:
    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file or directory")
    return Profiles(p, cache_dir=Path(cache_dir) if cache_dir else None)


def _pick_run(profiles: Profiles, name: str | None) -> Run:
    runs = profiles.runs()
    if not runs:
        raise CliError(f"{profiles.logdir}: no profiles found (looked for plugins/profile/<session>/*.xplane.pb "
                       "and the other supported formats)")
    if name is not None:
        if name not in runs:
            raise CliError(f"unknown run {name!r}; runs: {', '.join(sorted(runs))}")
        return runs[name]
    if len(runs) > 1:
        newest = max(runs.values(), key=lambda r: r.mtime)
        print(f"tbprof: {len(runs)} runs found; using the newest, {newest.name!r} (choose with --run)",
              file=sys.stderr)
        return newest
    return next(iter(runs.values()))


def _host_arg(run: Run, host: str | None, multi: bool) -> str | None:
    if host is None and len(run.hosts) > 1:
        return ALL_HOSTS if multi else sorted(run.hosts)[0]
    return host


def cmd_serve(args: argparse.Namespace) -> int:
    from werkzeug.serving import run_simple

    from tbprof.http.app import PLUGIN_PREFIX, create_app

    logdir = Path(args.logdir)
    if not logdir.is_dir():
        raise CliError(f"--logdir {args.logdir}: not a directory")
    no_capture = args.no_capture or os.environ.get("TBPROF_NO_CAPTURE") == "1"
    app = create_app(logdir, cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                     prefix=PLUGIN_PREFIX, capture_enabled=not no_capture)
    print(f"tbprof {__version__} serving {logdir.resolve()} at http://{args.host}:{args.port}/", flush=True)
    run_simple(args.host, args.port, app, threaded=True, use_reloader=False)
    return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    profiles = _profiles(args.path, args.cache_dir)
    runs = profiles.runs()
    if not runs:
        raise CliError(f"{args.path}: no profiles found")
    for run in sorted(runs.values(), key=lambda r: r.name):
        print(f"{run.name}\t{','.join(run.hosts)}\t{' '.join(profiles.tools(run))}")
    return EXIT_OK


def _parse_option_args(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"--option {item!r}: expected NAME=VALUE")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def compute_tool(path: str, tool_name: str, run_name: str | None, host: str | None,
                 options: dict[str, str], cache_dir: str | None = None) -> tuple[dict[str, Any], Run, list[str]]:
    profiles = _profiles(path, cache_dir)
    tool = profiles.tool(tool_name)
    run = _pick_run(profiles, run_name)
    hosts = profiles.hosts(run, _host_arg(run, host, tool.multi_host))
    result = profiles.compute(run, hosts, tool, options)
    profiles.cache.persist_pending()  # write the converted store for the next command
    return result, run, hosts


def cmd_show(args: argparse.Namespace) -> int:
    result, _, _ = compute_tool(args.path, args.tool, args.run, args.host, _parse_option_args(args.option),
                                args.cache_dir)
    if args.format == "csv":
        tables = {k: v for k, v in result.get("tables", {}).items() if isinstance(v, Table)}
        if not tables:
            raise CliError(f"tool {args.tool!r} has no tables for this profile")
        name = args.table or next(iter(tables))
        if name not in tables:
            raise CliError(f"tool {args.tool!r} has no table {name!r}; tables: {', '.join(tables)}")
        sys.stdout.write(responses.table_csv(tables[name], TableQuery()).decode())
    else:
        sys.stdout.write(json.dumps(json.loads(responses.to_json_bytes(result)), indent=1) + "\n")
    return EXIT_OK


def cmd_csv(args: argparse.Namespace) -> int:
    args.format = "csv"
    return cmd_show(args)


def cmd_summary(args: argparse.Namespace) -> int:
    """One stable, scriptable answer per profile; the step analyses extend it."""
    from tbprof.analyses.summary import summary

    profiles = _profiles(args.path, args.cache_dir)
    run = _pick_run(profiles, args.run)
    result = summary(profiles, run)
    profiles.cache.persist_pending()  # the CLI has no later request to warm up for
    if args.json:
        sys.stdout.write(json.dumps(json.loads(responses.to_json_bytes(result)), indent=1) + "\n")
    else:
        for key, value in result.items():
            if isinstance(value, list):
                print(f"{key}:")
                for item in value:
                    print(f"  {item}")
            else:
                print(f"{key}: {value}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tbprof", description="Fast TensorFlow/JAX/PyTorch profile analysis.")
    parser.add_argument("--version", action="version", version=f"tbprof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--cache-dir", default=None, help="converted-profile cache (default: $TBPROF_CACHE_DIR "
                                                         "or ~/.cache/tbprof)")

    p = sub.add_parser("serve", help="serve the tbprof app without TensorBoard")
    p.add_argument("--logdir", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=6007)
    p.add_argument("--no-capture", action="store_true", help="hide Capture Profile (no outgoing connections)")
    common(p)
    p.set_defaults(fn=cmd_serve)

    p = sub.add_parser("tools", help="list runs, hosts and the tools with data")
    p.add_argument("path")
    common(p)
    p.set_defaults(fn=cmd_tools)

    for name, fn, fmt in (("show", cmd_show, None), ("csv", cmd_csv, "csv")):
        p = sub.add_parser(name, help="print one tool's result" if name == "show" else "print one tool table as CSV")
        p.add_argument("tool")
        p.add_argument("path")
        p.add_argument("--run", default=None)
        p.add_argument("--host", default=None, help=f"a host, or {ALL_HOSTS} (default: all hosts when the tool "
                                                    "supports it, else the first)")
        if fmt is None:
            p.add_argument("--format", choices=("json", "csv"), default="json")
        p.add_argument("--table", default=None)
        p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
        common(p)
        p.set_defaults(fn=fn)

    p = sub.add_parser("summary", help="the headline numbers of a profile")
    p.add_argument("path")
    p.add_argument("--run", default=None)
    p.add_argument("--json", action="store_true")
    common(p)
    p.set_defaults(fn=cmd_summary)

    import importlib
    for module in COMMAND_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
                raise  # a missing feature module is fine; a broken import inside one is not
    for name, (configure, run_fn) in EXTRA_COMMANDS.items():
        p = sub.add_parser(name)
        configure(p)
        p.set_defaults(fn=run_fn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.fn(args))
    except CliError as e:
        print(f"tbprof: {e}", file=sys.stderr)
        return e.code
    except ProfileReadError as e:
        print(f"tbprof: {e}", file=sys.stderr)
        return EXIT_UNREADABLE
    except (NotFound, BadRequest, ValueError) as e:
        print(f"tbprof: {str(e).strip(chr(39))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    # Run the imported module's main: commands of COMMAND_MODULES register into ``tbprof.cli``,
    # which under ``python -m`` is a different module object than this ``__main__``.
    from tbprof.cli import main as _main

    sys.exit(_main())
