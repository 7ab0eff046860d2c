"""``tbprof``: serve the app without TensorBoard, print analyses as JSON/CSV, capture, compare.

    tbprof serve --logdir DIR [--host 127.0.0.1] [--port 6007] [--cache-dir D] [--no-capture]
    tbprof tools PATH
    tbprof show TOOL PATH [--run R] [--host H] [--format json|csv] [--table T] [--option k=v ...]
    tbprof csv TOOL PATH [--table T] ...          (same as show --format csv)
    tbprof summary PATH [--json]
    tbprof capture ADDR[,ADDR] --logdir DIR ...
    tbprof compare BASELINE CANDIDATE [--json]
    tbprof check BASELINE CANDIDATE --max-regression 5%
    tbprof mcp LOGDIR                      (the MCP server for coding agents, over stdio)
    tbprof install-skill DIR

PATH is a logdir, a session folder or one profile file. Exit codes: 0 ok, 1 usage or
unknown name, 2 unreadable profile (3 and 4: ``check``'s verdicts; 3: ``capture`` failed).

Only the chosen command's module is imported (``tbprof --help`` imports none), so a command
starts without loading numpy, the analyses or werkzeug before it needs them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from collections.abc import Callable, Sequence

from tbprof import __version__
from tbprof.cli.common import (
    EXIT_OK,
    EXIT_UNREADABLE,
    EXIT_USAGE,
    CliError,
    close_executors,
    finish_writes,
    pause_collector,
    resume_collector,
)
from tbprof.cli.huge_pages import choose_page_size
from tbprof.errors import NotFound, ProfileReadError

# The one table from errors to exit codes (first matching row wins): an unreadable profile is
# 2; every other answer that is not a result (unknown name, bad parameter, unsafe cache dir,
# a ValueError of argument checking) is a usage error. CliError carries its own code.
EXIT_CODES: tuple[tuple[type[Exception], int], ...] = (
    (ProfileReadError, EXIT_UNREADABLE),
    (NotFound, EXIT_USAGE),  # NoData too
    (ValueError, EXIT_USAGE),  # BadParameter, UnsafeCacheDir
)

# Every subcommand: name -> (module defining it in its COMMANDS, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("tbprof.cli.serve", "serve the tbprof app without TensorBoard"),
    "tools": ("tbprof.cli.show", "list runs, hosts and the tools with data"),
    "show": ("tbprof.cli.show", "print one tool's result"),
    "csv": ("tbprof.cli.show", "print one tool table as CSV"),
    "summary": ("tbprof.cli.summary", "the headline numbers of a profile"),
    "capture": ("tbprof.cli.capture", "profile a running TF/JAX program through its profiler server"),
    "compare": ("tbprof.cli.compare", "two profiles side by side, with a verdict"),
    "check": ("tbprof.cli.compare", "CI gate: fail when the candidate regresses beyond a bound"),
    "sql": ("tbprof.cli.sql", "one SQL SELECT over every host's events and the tables (docs/sql.md)"),
    "export": ("tbprof.cli.sql", "write the SQL views as Parquet files (--parquet DIR)"),
    "mcp": ("tbprof.agent.commands", "serve a logdir's analyses to coding agents over MCP (stdio)"),
    "install-skill": ("tbprof.agent.commands", "write the tbprof skill (SKILL.md) for coding agents"),
}

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


def _command(name: str) -> tuple[Configure, Run]:
    module = importlib.import_module(COMMANDS[name][0])
    commands: dict[str, tuple[Configure, Run]] = module.COMMANDS
    return commands[name]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s arguments are configured (None: every command's)."""
    parser = argparse.ArgumentParser(prog="tbprof", description="Fast TensorFlow/JAX/PyTorch profile analysis.")
    parser.add_argument("--version", action="version", version=f"tbprof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            configure, run = _command(name)
            configure(p)
            if "--cache-dir" not in p._option_string_actions:  # compare/capture word their own
                p.add_argument("--cache-dir", default=None,
                               help="converted-profile cache (default: $TBPROF_CACHE_DIR or ~/.cache/tbprof)")
            if name != "capture":
                p.add_argument("--workers", type=int, default=None,
                               help="processes converting a pod's hosts in parallel (default: $TBPROF_WORKERS or the "
                                    "number of cores; 1 = in this process)")
                p.add_argument("--dask-scheduler", default=None, metavar="ADDRESS",
                               help="convert hosts on this Dask cluster instead (default: $TBPROF_DASK_SCHEDULER); "
                                    "its workers must reach the same --cache-dir")
                p.add_argument("--dask-security", default=None, metavar="PATH|ca-file=CA,cert=CERT[,key=KEY]",
                               help="TLS certificates for a tls:// --dask-scheduler: a Dask YAML configuration "
                                    "file (distributed.comm.tls) or the files inline (default: "
                                    "$TBPROF_DASK_SECURITY); docs/remote.md")
            p.set_defaults(fn=run)
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


# Commands that only read profiles and print: once they have answered, nothing is left to clean
# up that the kernel does not (no files of their own, no servers, no child processes).
_READ_ONLY = frozenset({"summary", "show", "csv", "tools", "compare", "check", "sql"})


# numpy's BLAS starts a thread per core when it is imported, unless told otherwise: on a
# many-core machine that slows the import of every process (the command and each worker), and
# 64 workers would hold 64 threads each. tbprof's analyses do no large matrix products.
# Set for this process and its workers only where the user has not set them.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def prepare_process() -> None:
    """What the ``tbprof`` command sets for its process and its workers before anything imports
    numpy: one BLAS thread, and the size of the pages numpy asks for (cli/huge_pages.py)."""
    for name in BLAS_THREAD_VARS:
        os.environ.setdefault(name, "1")
    choose_page_size()


def entry() -> None:
    """The ``tbprof`` command (console script and ``python -m tbprof.cli``): the process ends
    after the answer, so the disk-cache writes go to a detached child (``finish_writes``).

    A read-only command then leaves with ``os._exit``: tearing down the interpreter (collecting the
    objects of a converted profile, module by module) takes a noticeable time after a large profile
    (bench/measurements.md#serving), all of it after the user has the answer. Only when no thread
    but daemons and no child process is alive (those would be cut off), and no pool left named
    semaphores behind.
    """
    prepare_process()
    # The command's module and what it imports (numpy, for most) with the collector off, until
    # ``main`` has its arguments (cli/common.py ``pause_collector``).
    pause_collector()
    code = main(detach_writes=True)
    if _chosen(sys.argv[1:]) in _READ_ONLY and not _still_running():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # a reader that went away (`| head`) is no error of ours
                pass
        os._exit(code)
    sys.exit(code)


def _still_running() -> bool:
    """Whether something would be cut off by ``os._exit``: a thread that is not a daemon (the
    interpreter would wait for it: a cache write, a pool's thread), a child process, or the
    named semaphores of a fork-server pool (only an orderly exit unlinks them; else the resource
    tracker warns on stderr). A pool forked from this process and closed has none of these."""
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return True
    executor = sys.modules.get("tbprof.service.executor")
    if executor is not None and executor.orderly_exit_needed():
        return True
    mp = sys.modules.get("multiprocessing")
    return mp is not None and bool(mp.active_children())


def exit_code(error: Exception) -> int:
    """The exit code of an error (``EXIT_CODES``'s first matching row)."""
    return next(code for cls, code in EXIT_CODES if isinstance(error, cls))


def main(argv: Sequence[str] | None = None, detach_writes: bool = False) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _chosen(argv)
    parser = build_parser(command) if command is not None else build_parser("")
    args = parser.parse_args(argv)
    resume_collector()  # (after entry's pause: the command's own imports pause it again where they are many)
    # The ``tbprof`` command: its process ends with this command (a test calling ``main`` goes on).
    args.process_ends = detach_writes
    try:
        return int(args.fn(args))
    except CliError as e:
        print(f"tbprof: {e}", file=sys.stderr)
        return e.code
    except BrokenPipeError:
        return EXIT_OK
    except tuple(cls for cls, _ in EXIT_CODES) as e:
        print(f"tbprof: {e}", file=sys.stderr)
        return exit_code(e)
    finally:
        # What was converted before an error is still worth keeping for the next command.
        finish_writes(detach_writes)
        close_executors(wait=not detach_writes)
