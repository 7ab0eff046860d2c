"""``tbprof mcp`` and ``tbprof install-skill``: the agent commands (``cli/main.py`` names this module).

    tbprof mcp LOGDIR [--cache-dir D]      the MCP server over stdio
    tbprof install-skill DIR               writes DIR/tbprof/SKILL.md and its references
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure_mcp(p: argparse.ArgumentParser) -> None:
    p.add_argument("logdir", help="the logdir (or session folder, or profile file) whose runs the tools answer")


def cmd_mcp(args: argparse.Namespace) -> int:
    from tbprof.agent.answers import Agent
    from tbprof.agent.server import serve
    from tbprof.fs import location
    from tbprof.service.executor import make_executor
    from tbprof.service.profiles import Profiles

    where = location(args.logdir)
    if isinstance(where, Path) and not where.exists():
        print(f"tbprof: {args.logdir}: no such file or directory", file=sys.stderr)
        return 1
    try:
        executor = make_executor(getattr(args, "workers", None), getattr(args, "dask_scheduler", None),
                                 getattr(args, "dask_security", None))
    except ValueError as e:
        print(f"tbprof: {e}", file=sys.stderr)
        return 1
    try:
        serve(Agent(Profiles(where, cache_dir=args.cache_dir or None, executor=executor)))
    finally:
        executor.close(wait=True)
    return 0


def configure_install_skill(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="the skills folder of the agent (e.g. .claude/skills); the skill goes to DIR/tbprof/")
    p.add_argument("--force", action="store_true", help="overwrite an existing skill")


def cmd_install_skill(args: argparse.Namespace) -> int:
    from tbprof.agent.skill import install

    try:
        written = install(Path(args.dir), force=args.force)
    except FileExistsError as e:
        print(f"tbprof: {e} exists; add --force to overwrite it", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


COMMANDS = {"mcp": (configure_mcp, cmd_mcp), "install-skill": (configure_install_skill, cmd_install_skill)}
