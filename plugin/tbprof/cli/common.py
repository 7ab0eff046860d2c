"""What every ``tbprof`` subcommand shares: exit codes, usage errors, finding the run to show.

``cli/main.py`` imports this module for every command, ``--help`` included, so it imports the
service layer (numpy, the readers, the analyses: most of a cold command's start, see
bench/measurements.md#serving) only inside the functions that need it.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tbprof.cache.profile_cache import ProfileCache
    from tbprof.service.executor import Executor
    from tbprof.service.logdir import Run, RunIndex
    from tbprof.service.profiles import Profiles

log = logging.getLogger("tbprof")

# The store cache of every Profiles a command opened: the stores it converted are written to
# the disk cache when the command has answered (``finish_writes``). Not a cache of its own: it
# keeps no Profiles (their results go with them) and is emptied after every command; the
# stores are in the byte budget (store/memo.py). Every executor the command made: closed then too.
_unwritten: list[ProfileCache] = []
_executors: list[Executor] = []

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_UNREADABLE = 2


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


# Whether ``pause_collector`` turned Python's cycle collector off (and ``resume_collector`` is
# to turn it on again); False where it was off already (a caller's own choice, left alone).
_collector_paused = False


def pause_collector() -> None:
    """Python's cycle collector off while a command imports: nearly every object an import
    makes lives until the process ends, so the collections its ~700-object threshold runs
    during the imports (numpy's, the service's, DuckDB's) free next to nothing and hold the
    GIL, which a conversion's thread may be waiting for (bench/measurements.md#cold-sql-command).
    ``resume_collector`` turns it on again once the imports are done, before the command makes
    garbage worth collecting (a large trace's conversion: collecting rarely there costs memory)."""
    global _collector_paused
    if gc.isenabled():
        gc.disable()
        _collector_paused = True


def resume_collector() -> None:
    """The collector on again after ``pause_collector`` (a no-op otherwise). What was imported
    meanwhile is frozen out of it (``gc.freeze``): a later full collection does not walk every
    module's objects again."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """A command's body with the collector paused until it calls ``resume_collector`` (after its
    imports); at the end the collector is on again and nothing is left frozen, for a caller that
    goes on (a test calling ``main``)."""
    pause_collector()
    try:
        yield
    finally:
        resume_collector()
        gc.unfreeze()


def executor_from(args: argparse.Namespace, start: bool = False) -> Executor:
    """The executor of ``--workers`` / ``--dask-scheduler`` (and their environment variables).

    ``start``: start the worker processes now (``serve``: ready by the first request). A
    one-shot command does not: its pool starts only for a pod big enough to pay for the start
    (``ProcessPool.min_pool_bytes``)."""
    from tbprof.service.executor import make_executor

    try:
        executor = make_executor(getattr(args, "workers", None), getattr(args, "dask_scheduler", None),
                                 getattr(args, "dask_security", None))
    except ValueError as e:
        raise CliError(str(e)) from None
    _executors.append(executor)
    if start:
        executor.start()
    return executor


def close_executors(wait: bool) -> None:
    """Ends the workers of the executors the command made (``wait``: each exits cleanly; else, in
    a process about to exit with its answer given, at once)."""
    while _executors:
        _executors.pop().close(wait=wait)


def terminal_progress(done: int, total: int) -> None:
    """A one-line progress bar on stderr, only on a terminal (pipes and CI logs stay clean)."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\rconverting hosts [{'#' * filled}{'.' * (width - filled)}] {done}/{total}{end}")
    sys.stderr.flush()


def start_listing(path: str) -> RunIndex:
    """Lists the runs of ``path`` on a thread (``RunIndex.runs``), so that the command imports
    the service and the analyses (``profiles_for``) while the logdir is walked: a walk waits on
    the file system, an import on the CPU. Pass the index to ``profiles_for``; the first
    ``runs()`` then waits for this listing instead of starting another."""
    from tbprof.fs import location
    from tbprof.service.logdir import RunIndex

    index = RunIndex(location(path))

    def walk() -> None:
        try:
            index.runs()
        except Exception:  # kept by the index: the caller's runs() raises it
            log.debug("tbprof: listing %s failed", path, exc_info=True)

    threading.Thread(target=walk, name="tbprof-list", daemon=True).start()
    return index


def profiles_for(path: str, cache_dir: str | None, executor: Executor | None = None,
                 index: RunIndex | None = None) -> Profiles:
    from tbprof.fs import location
    from tbprof.service.profiles import Profiles

    p = location(path)
    # A URL is not asked first: listing it is the check, and says why it fails (credentials,
    # a missing bucket) instead of "no such file".
    if isinstance(p, Path) and not p.exists():
        raise CliError(f"{path}: no such file or directory")
    profiles = Profiles(p, cache_dir=cache_dir or None, executor=executor, index=index)  # a folder or a URL
    profiles.progress = terminal_progress
    _unwritten.append(profiles.cache)
    return profiles


def finish_writes(detach: bool) -> None:
    """Writes the stores the command converted to the disk cache, for the next command: from
    a detached child process when this process is the ``tbprof`` command itself (``detach``),
    else in threads that the interpreter waits for at exit (``main`` called in a process
    that lives on, such as a test)."""
    while _unwritten:
        cache = _unwritten.pop()
        if detach:
            cache.persist_detached()
        else:
            cache.persist_pending()


def pick_run(profiles: Profiles, name: str | None) -> Run:
    """The run ``--run`` names; without it, the only run or the newest (said on stderr)."""
    from tbprof.service.selection import pick_run as pick

    return pick(profiles.index.runs(), name, where=str(profiles.logdir), several="newest", choose_with="--run",
                note=lambda message: print(f"tbprof: {message}", file=sys.stderr))


def process_age_s() -> float | None:
    """Wall seconds since this process started (Linux: its start time in clock ticks since boot,
    so to about 10 ms), for ``--timings``' first phase: the interpreter and the imports before
    the command runs. None where /proc does not say."""
    import os
    import time

    try:
        with open("/proc/self/stat", "rb") as f:
            # Fields after the command name (which may hold spaces, in parentheses); the 22nd is the start.
            fields = f.read().rsplit(b")", 1)[1].split()
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started_s)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def parse_option_args(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"--option {item!r}: expected NAME=VALUE")
        k, v = item.split("=", 1)
        out[k] = v
    return out


# How to ask the command line for less of an answer past what one answer may take: it prints
# whole tables, so the rows come from SQL, or the bound from a larger memory budget.
NARROW_CLI = ("select the rows you need with `tbprof sql` (a WHERE and a LIMIT), or raise "
              "$TBPROF_MEMORY_BYTES (an answer may take a quarter of it, at most 64 MB)")


def print_json(result: Any, narrow: str = NARROW_CLI) -> None:
    """A result as indented JSON on stdout: the encoder of every answer (``analyses/encode.py``)."""
    from tbprof.analyses.encode import to_json_bytes

    sys.stdout.write(to_json_bytes(result, indent=1, narrow=narrow).decode() + "\n")
