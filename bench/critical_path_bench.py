"""Critical path: tbprof vs HTA 0.5.0 on demo_logs/torch_ddp (or --profile), one run.

    python bench/critical_path_bench.py --hta-python /tmp/hta2/bin/python [--repeat 5]

HTA's ``critical_path_analysis`` needs pandas < 3, so it runs in the Python that
tests/golden/make_hta_critical_path_goldens.py documents (``--hta-python`` or $HTA_PYTHON), in a
child process started by this run, timed there after its imports; tbprof runs in this process on
the same trace files. Both analyse every ``ProfilerStep`` instance of rank 0 (HTA with
``HTA_DISABLE_NS_ROUNDING=1``, as the goldens):
  - HTA: ``TraceAnalysis(trace_dir)`` (parses every rank; no cache, every run cold) + one
    ``critical_path_analysis`` per instance;
  - tbprof cold: read the traces into stores + ``critical_path`` per instance;
  - tbprof warm: stores in memory, memo cleared: ``critical_path`` per instance.
Prints milliseconds (first run, median of the rest) and the ratio HTA / tbprof.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

_HTA_CHILD = r"""
import json, logging, statistics, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
trace_dir, repeat = sys.argv[1], int(sys.argv[2])
out = []
for _ in range(repeat):
    t = time.perf_counter()
    a = TraceAnalysis(trace_dir=trace_dir)
    sym = a.t.symbol_table.get_sym_table()
    df = a.t.get_trace(0)
    n = int(((df.stream == -1) & df.name.map(lambda x: "ProfilerStep" in sym[x])
             & df.cat.map(lambda c: sym[c] != "gpu_user_annotation")).sum())
    for i in range(n):
        a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=i)
    out.append(1e3 * (time.perf_counter() - t))
print(json.dumps({"first_ms": out[0], "median_ms": statistics.median(out[1:] or out), "instances": n}))
"""


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
    ap.add_argument("--hta-python", default=os.environ.get("HTA_PYTHON", ""))
    args = ap.parse_args()
    if not args.hta_python:
        raise SystemExit("pass --hta-python (a Python with holistictraceanalysis==0.5.0 and pandas<3)")
    from tbprof.analyses.gpu import critical_path
    from tbprof.readers.chrome_trace import read_chrome_trace

    trace_dir = REPO / "demo_logs" / args.profile
    paths = sorted(trace_dir.glob("*.pt.trace.json"))
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    child = subprocess.run([args.hta_python, "-c", _HTA_CHILD, str(trace_dir), str(args.repeat)], env=env,
                           capture_output=True, text=True, check=True)
    hta = json.loads(child.stdout.strip().splitlines()[-1])

    def run_all(stores: list[Any]) -> None:
        for i in range(hta["instances"]):
            critical_path.compute(stores, {"rank": 0, "instance": i})

    def cold() -> None:
        run_all([read_chrome_trace(p) for p in paths])

    stores = [read_chrome_trace(p) for p in paths]

    def warm() -> None:
        for s in stores:
            s._memo.clear()
        run_all(stores)

    c_first, c_med = _times(cold, args.repeat)
    w_first, w_med = _times(warm, args.repeat)
    print(f"{args.profile}: rank 0, {hta['instances']} ProfilerStep instances, repeat {args.repeat}")
    print(f"  HTA 0.5.0        first {hta['first_ms']:8.1f} ms  median {hta['median_ms']:8.1f} ms")
    for label, first, med in (("tbprof cold", c_first, c_med), ("tbprof warm", w_first, w_med)):
        ratio = hta["median_ms"] / med
        print(f"  {label:16} first {first:8.1f} ms  median {med:8.1f} ms  ratio HTA/tbprof {ratio:6.1f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
