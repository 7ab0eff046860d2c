"""``tbprof summary``: the headline numbers of a profile, as text or JSON."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.cli.common import (
    EXIT_OK,
    collector_paused,
    executor_from,
    pick_run,
    print_json,
    profiles_for,
    resume_collector,
    start_listing,
)

if TYPE_CHECKING:
    from tbprof.service.logdir import Run

# The longest a pod's command holds its imports back for its workers' first batches.
HAND_OUT_WAIT_S = 1.0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("path")
    p.add_argument("--run", default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--timings", action="store_true",
                   help="print where the time went, phase by phase, as one line on stderr")


def run(args: argparse.Namespace) -> int:
    """The command. Its imports (the service and the analyses: objects that live until it exits)
    run with the garbage collector off, then are frozen out of it: the collections it ran during
    them freed next to nothing, ~8 ms of a 256-host pod's command and ~25 ms at 1024 hosts (one
    a full walk of every imported object; bench/measurements.md#services). Restored for a
    caller that goes on (a test calling ``main``)."""
    with collector_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    executor = executor_from(args)
    # A pod's workers start now, importing what the headline's parts need while this process
    # imports and lists (a small pod's don't); forked before the listing's thread starts (a fork
    # copies only the calling thread).
    workers_started = executor.start_early(args.path, HEADLINE_PARTS)
    tune_heap = getattr(args, "process_ends", False) and not workers_started
    if tune_heap:
        from tbprof.cache.memory_guard import share_heaps

        share_heaps(1)  # before the listing's thread: the conversion's threads share this thread's heap
    forked = time.perf_counter()
    index = start_listing(args.path)
    profiles = profiles_for(args.path, args.cache_dir, executor, index)  # imports while the logdir is listed
    run = pick_run(profiles, args.run)
    listed = time.perf_counter()
    if tune_heap and _one_xspace_file_in_memory(run):
        from tbprof.cache.memory_guard import large_blocks_in_heap

        large_blocks_in_heap()  # its conversion's freed blocks then serve the analyses
    # A pod's workers compute only what the headline reads of each host.
    loading = profiles.load_in_background(run, list(run.hosts), parts=HEADLINE_PARTS, parser_here=True)
    # A pod's workers get their batches from the loading thread (the hosts' lookup, their
    # tasks), often once they are ready already: this thread's imports below would take turns
    # with it on the GIL and delay the batches, so they wait until the batches are out (this
    # thread has nothing else to do until the first answers arrive).
    executor.wait_handed_out(loading.is_alive, HAND_OUT_WAIT_S)
    # Imported while the stores convert (see load_in_background): the analyses behind the summary.
    from tbprof.service.summary import of_hosts

    if workers_started:
        # And numpy.ma, which numpy (2.x) imports on np.unique's first call (the step table's,
        # after the last batch: ~10-25 ms), while this process waits for its workers (not while
        # it converts a small pod itself: the import would hold the lock the conversion needs).
        import numpy.ma  # noqa: F401

    resume_collector()
    imported = time.perf_counter()
    # The stores (a pod's partials) are ready here; the summary then derives, it does not wait.
    loading.join()
    executor.release()  # a pod's workers leave while the summary derives, not after it
    loaded = time.perf_counter()
    views = profiles.views(run, list(run.hosts), parts=HEADLINE_PARTS)
    viewed = time.perf_counter()
    result = of_hosts(run, views.hosts, views.host_errors)
    summarised = time.perf_counter()
    if args.json:
        print_json(result)
    else:
        for key, value in result.items():
            if isinstance(value, list):
                print(f"{key}:")
                for item in value:
                    print(f"  {item}")
            else:
                print(f"{key}: {value}")
    if args.timings:
        sys.stdout.flush()
        after_list = {"imports_s": imported - listed, "load_s": loaded - imported, "analyses_s": summarised - loaded,
                      "start_s": forked - started}
        # Forked workers: when the last was ready and the first batch handed out, since the start.
        for name, at in (("ready_at_s", getattr(executor, "ready_at", None)),
                         ("handed_at_s", getattr(executor, "handed_at", None))):
            if at is not None:
                after_list[name] = at - started
        # A pod summarised from its partials: the headline over them is the combine phase.
        combined = {"combine_s": summarised - viewed} if views.partials else {}
        print(timings_line(listed - started, summarised - listed, time.perf_counter() - summarised,
                           profiles.conversion.phase_seconds | combined | after_list,
                           profiles.conversion.partial_seconds), file=sys.stderr)
    return EXIT_OK


def _one_xspace_file_in_memory(run: Run) -> bool:
    """Whether the run is one local XSpace host that converts in memory now (not one that streams
    into the disk cache: its memory is budgeted, and handed back as it goes)."""
    from tbprof.cache.memory_guard import check_fits
    from tbprof.errors import ProfileReadError

    paths = list(run.hosts.values())
    if len(paths) != 1 or run.kind != "xspace" or not isinstance(paths[0], Path):
        return False
    try:
        check_fits(paths[0])
    except ProfileReadError:
        return False
    return True


def timings_line(list_s: float, summary_s: float, answer_s: float, phases: dict[str, float],
                 summed: dict[str, float]) -> str:
    """``--timings``: the wall seconds of each phase in this process (import and list, of which
    starting a pod's workers: importing numpy and forking them; pool start and dispatch; waiting
    for the workers; decoding what they sent; combining), and what the workers spent, summed over
    hosts (so the serial part shows against the parallel one).

    The summary total splits into the analyses' imports (while the stores convert on a thread),
    the wait for the conversion beyond them (a pod's: for its partials), and the analyses once
    the stores are there: on one host the last two are the serial part. Workers forked from the
    command say when the last of them was ready and when the first batch was handed out (the
    later of the two is where the conversion could start: the workers' preload or the
    command's listing and lookup is the critical path). ``serial`` is the
    command's wall time but the wait for the workers (what more cores cannot shorten; the
    imports run during the wait, so they count only where they outlast it)."""
    def f(x: Any) -> str:
        return f"{float(x):.3f}"

    worker = ", ".join(f"{name.removesuffix('_s')} {f(summed[name])}"
                       for name in ("load_s", "convert_s", "partial_s", "encode_s", "write_s", "combine_s", "cpu_s")
                       if summed.get(name))
    forked = (f"; last worker ready at {f(phases['ready_at_s'])}, first batch handed out at "
              f"{f(phases['handed_at_s'])} after the start" if "ready_at_s" in phases and "handed_at_s" in phases
              else "")
    return (f"tbprof timings (s): import + list {f(list_s)} (starting workers {f(phases.get('start_s', 0))}{forked}), "
            f"lookup {f(phases.get('lookup_s', 0))}, "
            f"tasks {f(phases.get('tasks_s', 0))}, pool start + dispatch {f(phases.get('dispatch_s', 0))}, "
            f"waiting for workers {f(phases.get('wait_s', 0))}, decode {f(phases.get('keep_s', 0))}, "
            f"combine {f(phases.get('combine_s', 0))}, summary total {f(summary_s)} (imports "
            f"{f(phases.get('imports_s', 0))}, then converting {f(phases.get('load_s', 0))}, analyses "
            f"{f(phases.get('analyses_s', 0))}), answer {f(answer_s)}, "
            f"serial (all but waiting for workers) {f(list_s + summary_s + answer_s - phases.get('wait_s', 0))}"
            + (f"; summed over hosts: {worker}" if worker else ""))


COMMANDS = {"summary": (configure, run)}
