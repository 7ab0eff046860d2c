"""HTA's counters and trace diff: tbprof vs HTA 0.5.0 on demo_logs/torch_ddp (2 ranks), one run.

    python bench/hta_more_bench.py [--repeat 5] [--profile torch_ddp]

Both run in this process on the same trace files, after their imports:
  - queue length + memory bandwidth: HTA ``TraceAnalysis(trace_dir)`` (parses every rank; no
    cache, so every run is cold) + ``get_queue_length_summary`` + ``get_memory_bw_summary`` (their
    series included) vs tbprof cold (read the traces into stores + ``gpu_counters``) and warm
    (stores in memory, memo cleared: ``gpu_counters`` only);
  - trace diff: HTA ``TraceDiff.compare_traces`` of two ``LabeledTrace`` (first vs second
    iteration of the profile) vs tbprof cold (read + ``op_summary`` x2 + ``diff``) and warm.
HTA's call-graph analyses (frequent kernel sequences) and torch-tb-profiler need another Python
(tests/golden/make_hta_callgraph_goldens.py, make_tb_profiler_goldens.py): not timed here.
Prints milliseconds (first run, median of the rest) and the ratio anchor / tbprof.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _times(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(1e3 * (time.perf_counter() - t))
    return out[0], statistics.median(out[1:] or out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", default="torch_ddp")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    from hta.trace_diff import LabeledTrace, TraceDiff

    from tbprof.analyses.gpu import counters, trace_diff
    from tbprof.readers.chrome_trace import read_chrome_trace

    trace_dir = REPO / "demo_logs" / args.profile
    paths = sorted(trace_dir.glob("*.pt.trace.json"))

    def hta_counters() -> None:
        a = TraceAnalysis(trace_dir=str(trace_dir))
        ranks = sorted(a.t.get_ranks())
        a.get_queue_length_summary(ranks=ranks)
        a.get_memory_bw_summary(ranks=ranks)

    def tbprof_counters_cold() -> None:
        counters.compute([read_chrome_trace(p) for p in paths], {})

    stores = [read_chrome_trace(p) for p in paths]

    def tbprof_counters_warm() -> None:
        for s in stores:
            s._memo.clear()
        counters.compute(stores, {})

    control = LabeledTrace(label="c", trace_dir=str(trace_dir))
    first, second = control.iterations()[:2]

    def hta_diff() -> None:
        c = LabeledTrace(label="c", trace_dir=str(trace_dir))
        t = LabeledTrace(label="t", trace_dir=str(trace_dir))
        TraceDiff.compare_traces(c, t, control_iteration=first, test_iteration=second)

    def tbprof_diff_cold() -> None:
        s = read_chrome_trace(paths[0])
        trace_diff.diff(trace_diff.op_summary(s, first), trace_diff.op_summary(s, second))

    def tbprof_diff_warm() -> None:
        stores[0]._memo.clear()
        trace_diff.diff(trace_diff.op_summary(stores[0], first), trace_diff.op_summary(stores[0], second))

    rows = [("queue length + memory bandwidth", hta_counters, tbprof_counters_cold, tbprof_counters_warm),
            ("trace diff (iteration vs iteration)", hta_diff, tbprof_diff_cold, tbprof_diff_warm)]
    print(f"profile: demo_logs/{args.profile}, {args.repeat} runs each (first / median ms)")
    for label, anchor, cold, warm in rows:
        a_first, a_med = _times(anchor, args.repeat)
        c_first, c_med = _times(cold, args.repeat)
        w_first, w_med = _times(warm, args.repeat)
        print(f"{label}")
        print(f"  HTA 0.5.0                 {a_first:8.1f} / {a_med:8.1f}")
        print(f"  tbprof cold (read + run)  {c_first:8.1f} / {c_med:8.1f}   HTA / tbprof = {a_med / c_med:6.1f}x")
        print(f"  tbprof warm (run)         {w_first:8.1f} / {w_med:8.1f}   HTA / tbprof = {a_med / w_med:6.1f}x")


if __name__ == "__main__":
    main()
