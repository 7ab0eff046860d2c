"""``tbprof tools | show | csv``: which tools a profile has, and one tool's result as JSON or CSV."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tbprof.analyses.encode import table_csv
from tbprof.analyses.table import TableQuery
from tbprof.cli.common import (
    EXIT_OK,
    NARROW_CLI,
    CliError,
    executor_from,
    parse_option_args,
    pick_run,
    print_json,
    profiles_for,
)
from tbprof.service.logdir import Run
from tbprof.service.selection import ALL_HOSTS, default_host, pick_table, select_hosts

if TYPE_CHECKING:
    from tbprof.service.executor import Executor


def configure_tools(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")


def cmd_tools(args: argparse.Namespace) -> int:
    profiles = profiles_for(args.path, args.cache_dir, executor_from(args))
    runs = profiles.index.runs()
    if not runs:
        raise CliError(f"{args.path}: no profiles found")
    for run in sorted(runs.values(), key=lambda r: r.name):
        print(f"{run.name}\t{','.join(run.hosts)}\t{' '.join(profiles.tools(run))}")
    return EXIT_OK


def compute_tool(path: str, tool_name: str, run_name: str | None, host: str | None,
                 options: dict[str, str], cache_dir: str | None = None,
                 executor: Executor | None = None) -> tuple[dict[str, Any], Run, list[str]]:
    profiles = profiles_for(path, cache_dir, executor)
    # The tool first: how its run converts depends on it (a tool that reads few planes converts
    # lazily, Tool.few_planes), so there is no conversion to overlap with the imports here.
    tool = profiles.tool(tool_name)
    run = pick_run(profiles, run_name)
    hosts = select_hosts(run, default_host(run, host, tool.multi_host_for(run.traits)))
    result = profiles.compute(run, hosts, tool, options)
    return result, run, hosts


def _configure(p: argparse.ArgumentParser, with_format: bool) -> None:
    p.add_argument("tool")
    p.add_argument("path")
    p.add_argument("--run", default=None)
    p.add_argument("--host", default=None, help=f"a host, or {ALL_HOSTS} (default: all hosts when the tool "
                                                "supports it, else the first)")
    if with_format:
        p.add_argument("--format", choices=("json", "csv"), default="json")
    p.add_argument("--table", default=None)
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")


def configure_show(p: argparse.ArgumentParser) -> None:
    _configure(p, with_format=True)


def configure_csv(p: argparse.ArgumentParser) -> None:
    _configure(p, with_format=False)


def cmd_show(args: argparse.Namespace) -> int:
    result, _, _ = compute_tool(args.path, args.tool, args.run, args.host, parse_option_args(args.option),
                                args.cache_dir, executor_from(args))
    if args.format == "csv":
        _, table = pick_table(result, args.table, f"tool {args.tool!r}")
        sys.stdout.write(table_csv(table, TableQuery(), narrow=NARROW_CLI).decode())
    else:
        print_json(result)
    return EXIT_OK


def cmd_csv(args: argparse.Namespace) -> int:
    args.format = "csv"
    return cmd_show(args)


COMMANDS = {"tools": (configure_tools, cmd_tools), "show": (configure_show, cmd_show),
            "csv": (configure_csv, cmd_csv)}
