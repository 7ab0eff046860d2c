"""PyTorch benchmark: tbprof's overview and GPU breakdown vs HTA on demo_logs/torch_ddp (2 ranks).

    python bench/torch_bench.py [--repeat 5] [--profile torch_ddp]

Both run in this process on the same trace files, after their imports:
  - HTA 0.5.0: ``TraceAnalysis(trace_dir=...)`` (parses every rank; HTA has no cache, so every
    run is cold) + ``get_temporal_breakdown()``;
  - tbprof cold: a new ``Profiles`` with an empty cache folder -> ``overview_page`` over all
    ranks (reads and converts both traces, finds steps, op metrics), then ``gpu_breakdown``
    (HTA's five analyses, temporal breakdown included) on the stores now in memory;
  - tbprof disk cache: a new ``Profiles`` on the cache folder the cold run filled (a restarted
    server or a new notebook) -> ``overview_page``;
  - tbprof warm: the stores in memory, the tool memo cleared -> ``overview_page`` and
    ``gpu_breakdown`` computed again (a page opened on a loaded run).
Prints milliseconds (first run, median of the rest) and the ratio HTA / tbprof. HTA prints its
own log lines to stderr. Timed assertions do not belong in tests.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, select_hosts

REPO = Path(__file__).resolve().parent.parent


def _times(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(first run ms, median of the later runs ms)."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(1e3 * (time.perf_counter() - t))
    return out[0], statistics.median(out[1:] or out)


def _compute(profiles: Profiles, tool: str) -> dict[str, Any]:
    run = next(iter(profiles.index.runs().values()))
    return profiles.compute(run, select_hosts(run, ALL_HOSTS), profiles.tool(tool), {})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", default="torch_ddp", help="a PyTorch folder of demo_logs/")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        trace_dir = Path(tmp) / args.profile
        shutil.copytree(REPO / "demo_logs" / args.profile, trace_dir)
        logdir = Path(tmp) / "logdir"
        shutil.copytree(trace_dir, logdir / args.profile)

        def hta() -> None:
            TraceAnalysis(trace_dir=str(trace_dir)).get_temporal_breakdown(visualize=False)

        def cold() -> None:
            _compute(Profiles(logdir, cache_dir=Path(tempfile.mkdtemp(dir=tmp))), "overview_page")

        def cold_with_breakdown() -> None:
            p = Profiles(logdir, cache_dir=Path(tempfile.mkdtemp(dir=tmp)))
            _compute(p, "overview_page")
            _compute(p, "gpu_breakdown")

        # numba's on-disk JIT cache and the imports settle once, outside the timings; this run
        # also fills the disk cache the "disk cache" rows read (writing it is not timed).
        disk_cache = Path(tempfile.mkdtemp(dir=tmp))
        filler = Profiles(logdir, cache_dir=disk_cache)
        _compute(filler, "overview_page")
        filler.cache.persist_pending()
        hta_first, hta_med = _times(hta, args.repeat)
        cold_first, cold_med = _times(cold, args.repeat)
        both_first, both_med = _times(cold_with_breakdown, args.repeat)
        disk_first, disk_med = _times(lambda: _compute(Profiles(logdir, cache_dir=disk_cache), "overview_page"),
                                      args.repeat)
        warm = Profiles(logdir, cache_dir=disk_cache)
        _compute(warm, "overview_page")

        def warm_pages() -> None:
            warm._memo.clear()  # stores stay in memory; the analyses run again
            _compute(warm, "overview_page")
            _compute(warm, "gpu_breakdown")

        warm_first, warm_med = _times(warm_pages, args.repeat)

    print(f"profile: demo_logs/{args.profile}, {args.repeat} runs each (first / median ms)")
    print(f"HTA TraceAnalysis load + temporal breakdown   {hta_first:8.1f} / {hta_med:8.1f}")
    rows = (("tbprof overview, cold (convert + analyse)", cold_first, cold_med),
            ("tbprof overview + gpu_breakdown, cold", both_first, both_med),
            ("tbprof overview, from the disk cache", disk_first, disk_med),
            ("tbprof overview + gpu_breakdown, warm", warm_first, warm_med))
    for label, first, med in rows:
        print(f"{label:<45} {first:8.1f} / {med:8.1f}   HTA / tbprof = {hta_med / med:6.1f}x")


if __name__ == "__main__":
    main()
