#!/usr/bin/env python3
"""A pod host's worker CPU (issue #39): what one worker spends per host of ``tbprof summary`` of
a pod, in thread CPU time (``time.thread_time``: independent of the machine's load), split into
the worker's phases, over copies of jax_2hosts' hosts converted in one process (the first
``--warmup`` hosts excluded: imports and first-use costs).

    python bench/worker_cpu_bench.py [--hosts 54] [--warmup 4] [--batch 16] [--parts headline|all]

Phases, per host: ``convert`` (read and decode the file into a store), ``partial`` (the derived
values the request reads: ``service.partials.partial_dict``), ``encode`` (the partial's binary
form), ``frame`` (the batch's work: decoding the partials, combining the op tables, writing the
frame: ``analyses.partial_batches``); ``whole`` is ``executor.convert_batch`` end to end on other
copies (cache lookups and file writes included). ``--parts headline`` asks for what ``tbprof
summary`` reads (``HEADLINE_PARTS``), ``all`` for every part (the server's tools); a tbprof
without parts (an older build on ``PYTHONPATH``) computes every part either way. Prints
numbers; tests never assert timings.
"""

from __future__ import annotations

import argparse
import inspect
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
    args = ap.parse_args()

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


if __name__ == "__main__":
    main()
