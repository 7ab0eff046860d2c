#!/usr/bin/env python3
"""A pod host's worker CPU (issue #39): what one worker spends per host of ``tbprof summary`` of
a pod, in thread CPU time (``time.thread_time``: independent of the machine's load), split into
the worker's phases, over copies of jax_2hosts' hosts converted in one process (the first
``--warmup`` hosts excluded: imports and first-use costs).

    python bench/worker_cpu_bench.py [--hosts 54] [--warmup 4] [--batch 16] [--parts headline|all]
    python bench/worker_cpu_bench.py --cold [--hosts 24] [--repeat 5] [--unshared]
    python bench/worker_cpu_bench.py --fork 16 [--repeat 5]

Phases, per host: ``convert`` (read and decode the file into a store), ``partial`` (the derived
values the request reads: ``service.partials.partial_dict``), ``encode`` (the partial's binary
form), ``frame`` (the batch's work: decoding the partials, combining the op tables, writing the
frame: ``analyses.partial_batches``); ``whole`` is ``executor.convert_batch`` end to end on other
copies (cache lookups and file writes included). ``--parts headline`` asks for what ``tbprof
summary`` reads (``HEADLINE_PARTS``), ``all`` for every part (the server's tools); a tbprof
without parts (an older build on ``PYTHONPATH``) computes every part either way.

``--cold``: a worker's first hosts against its later ones. A pool worker is forked as a
command forks its pod's workers (``ProcessPool._start_forked``: numpy imported, then the
worker's preload), and converts the pod's hosts one ``convert_batch`` of one host at a time,
each timed in the worker's thread CPU; ``--repeat`` fresh workers, the median of each position.
The pod is copies of two hosts, so from the third host on the HLO programs are the ones
already decoded (``domain/hlo_map._shared_program``), as in a pod whose hosts run the same
programs; ``--unshared`` forgets the decoded programs before each host, as in a pod whose
hosts' HLO protos differ (jax_2hosts' two real hosts share 7 of their 26). Prints numbers;
tests never assert timings.

``--fork W``: the command's side of starting W workers (``ProcessPool._start_forked`` after
numpy is imported: the forks, in wall time), each of ``--repeat`` pools a fresh process; the
workers preload for ``--parts`` (headline: as ``tbprof summary`` forks them).
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from make_pod import make_pod  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=54, help="hosts timed per measurement, warm-up included")
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16, help="hosts per convert_batch (a worker's batch)")
    ap.add_argument("--parts", choices=("headline", "all"), default="headline")
    ap.add_argument("--cold", action="store_true", help="a freshly forked worker's first hosts against its later ones")
    ap.add_argument("--repeat", type=int, default=5, help="--cold: fresh workers timed")
    ap.add_argument("--unshared", action="store_true", help="--cold: no HLO program shared between hosts")
    ap.add_argument("--fork", type=int, default=0, metavar="W", help="time forking W workers from a command")
    args = ap.parse_args()
    if args.fork:
        import statistics

        runs = [_fork_ms(args.fork, args.parts) for _ in range(args.repeat)]
        print(f"{args.fork} workers, wall ms (median of {args.repeat} fresh processes): forking "
              f"{statistics.median(r[0] for r in runs):.1f}, until all preloaded "
              f"{statistics.median(r[1] for r in runs):.1f}")
        return
    if args.cold:
        cold(args.hosts if args.hosts != ap.get_default("hosts") else 24, args.repeat, args.unshared)
        return

    import tbprof
    from tbprof.analyses.partial_batches import decoded, encode_batch
    from tbprof.readers.kinds import KINDS
    from tbprof.service import partials as service_partials
    from tbprof.service.executor import HostTask, convert_batch

    try:
        from tbprof.analyses.partial_formats import HEADLINE_PARTS
    except ImportError:  # a build before parts: it computes every part
        HEADLINE_PARTS = None
    has_parts = "parts" in inspect.signature(service_partials.partial_dict).parameters
    parts = HEADLINE_PARTS if args.parts == "headline" and has_parts else None
    print(f"tbprof at {Path(tbprof.__file__).parent}; parts: {sorted(parts) if parts else 'all'}")

    tmp = Path(tempfile.mkdtemp(prefix="tbprof-worker-cpu-"))
    try:
        files = sorted(make_pod(tmp / "pod", 2 * args.hosts).iterdir())
        kind = KINDS["xspace"]
        phases = {"convert": 0.0, "partial": 0.0, "encode": 0.0, "frame": 0.0}
        timed = 0
        batch_results: list[dict[str, Any]] = []
        for i, f in enumerate(files[:args.hosts]):
            t0 = time.thread_time()
            store = kind.reader(f)
            # As the worker (service/executor.py convert_host); an older build only skips sizes.
            getattr(store, "keep_memo_private", store.skip_memo_sizes)()
            t1 = time.thread_time()
            fields = (service_partials.partial_dict(store, parts) if has_parts
                      else service_partials.partial_dict(store))
            t2 = time.thread_time()
            assert fields is not None
            blob = service_partials.encode_partial(fields)
            t3 = time.thread_time()
            batch_results.append({"host": f.stem, "key": f.stem, "cached": False, "stored": False,
                                  "partial": blob, "fields": fields, "timings": {}})
            frame_s = 0.0
            if len(batch_results) == args.batch or i == args.hosts - 1:
                t4 = time.thread_time()
                from tbprof.analyses.partials import combine_partials, encode_partials

                got = decoded(batch_results)
                combined = encode_partials([], combine_partials([p for p in got if p is not None]))
                encode_batch(batch_results, got, combined, [r["host"] for r in batch_results], {})
                frame_s = time.thread_time() - t4
                batch_results = []
            if i >= args.warmup:
                timed += 1
                for name, s in (("convert", t1 - t0), ("partial", t2 - t1), ("encode", t3 - t2), ("frame", frame_s)):
                    phases[name] += s
        cache = tmp / "cache"
        tasks = [HostTask(f.stem, str(f), "xspace", str(cache), f.stat().st_size, f.stat().st_mtime_ns,
                          write_store=False, **({"parts": parts} if has_parts else {}))
                 for f in files[args.hosts:]]
        convert_batch(tasks[:args.warmup])
        t0 = time.thread_time()
        for i in range(args.warmup, len(tasks), args.batch):
            convert_batch(tasks[i:i + args.batch])
        whole = (time.thread_time() - t0) / (len(tasks) - args.warmup)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_host = {k: v / max(timed, 1) * 1e3 for k, v in phases.items()}
    print(f"thread CPU per host, ms ({timed} hosts): " + ", ".join(f"{k} {v:.2f}" for k, v in per_host.items())
          + f", sum {sum(per_host.values()):.2f}; whole convert_batch {whole * 1e3:.2f}")


def _fork_ms(workers: int, parts: str) -> tuple[float, float]:
    """Wall ms of ``_start_forked`` for ``workers`` workers in a fresh process, and until every
    worker has preloaded and answered. ``parts``: the workers preload for the headline's parts
    (as ``tbprof summary`` forks them) where this tbprof's ``_start_forked`` takes parts."""
    import subprocess

    code = f"""
import inspect, time, numpy
from tbprof.analyses.partial_formats import HEADLINE_PARTS
from tbprof.service.executor import ProcessPool
pool = ProcessPool({workers})
takes_parts = "parts" in inspect.signature(pool._start_forked).parameters
started = time.perf_counter()
pool._start_forked(*([HEADLINE_PARTS] if takes_parts and {parts == "headline"!r} else []))
forked = time.perf_counter()
pool.wait_ready()
print((forked - started) * 1e3, (time.perf_counter() - started) * 1e3)
pool.close()
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1")).stdout.split()
    return float(out[0]), float(out[1])


def _thread_cpu_per_host(tasks: list[Any], unshared: bool) -> list[float]:
    """In a pool worker: each task converted as a batch of one, its thread CPU in ms."""
    from tbprof.domain import hlo_map
    from tbprof.service.executor import convert_batch

    out = []
    for task in tasks:
        if unshared:
            hlo_map._PROGRAMS.clear()
        started = time.thread_time()
        convert_batch([task])
        out.append((time.thread_time() - started) * 1e3)
    return out


def _timed_job(tasks: list[Any], unshared: bool, _job: bytes) -> bytes:
    """A forked worker's job here: ``_thread_cpu_per_host`` of the tasks, as JSON."""
    import json

    return json.dumps(_thread_cpu_per_host(tasks, unshared)).encode()


def cold(hosts: int, repeat: int, unshared: bool) -> None:
    import functools
    import json
    import statistics

    from tbprof.analyses.partial_formats import HEADLINE_PARTS
    from tbprof.service.executor import HostTask, _preload_worker
    from tbprof.service.forked_workers import ForkedWorkers

    tmp = Path(tempfile.mkdtemp(prefix="tbprof-worker-cold-"))
    try:
        files = sorted(make_pod(tmp / "pod", hosts).iterdir())
        runs = []
        for i in range(repeat):
            tasks = [HostTask(f.stem, str(f), "xspace", str(tmp / f"cache{i}"), f.stat().st_size,
                              f.stat().st_mtime_ns, write_store=False, parts=HEADLINE_PARTS) for f in files]
            # As a command forks its workers (ProcessPool._start_forked): numpy imported, then
            # the preload for the headline's parts; the work here is this bench's.
            import numpy  # noqa: F401

            work = functools.partial(_timed_job, tasks, unshared)
            worker = ForkedWorkers(1, work, functools.partial(_preload_worker, HEADLINE_PARTS))
            try:
                worker.wait_ready()
                ((_, answer),) = list(worker.run([b""]))
                assert isinstance(answer, bytearray), answer
                runs.append(json.loads(answer))
            finally:
                worker.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_position = [statistics.median(r[k] for r in runs) for k in range(hosts)]
    later = statistics.median(per_position[4:]) if hosts > 4 else float("nan")
    print(f"thread CPU per host in a fresh forked worker{' (no program shared)' if unshared else ''}, ms "
          f"(median of {repeat} workers): "
          + " ".join(f"{x:.1f}" for x in per_position))
    print(f"first {per_position[0]:.2f}, second {per_position[1]:.2f}, hosts 3-4 "
          f"{statistics.mean(per_position[2:4]):.2f}, later (median) {later:.2f}; first two hosts' extra "
          f"{per_position[0] + per_position[1] - 2 * later:.2f} ms; mean of all {statistics.mean(per_position):.2f}")


if __name__ == "__main__":
    main()
