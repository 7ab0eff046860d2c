"""Listing a logdir of many runs: the walk before #25 (``os.walk``, under the request) against the
incremental walk, the ``GET runs`` answers, and what other requests wait meanwhile, in one run.

    python bench/logdir_bench.py [--runs 20000] [--logdir DIR] [--baseline /work/main/plugin]

Builds (once, in ``--logdir``, default a temporary folder) ``runs`` sessions, each a hard link to
demo_logs' custom_loop profile, then prints: the first walk and a re-walk with and without the
folder cache (ratio new/old); ``GET runs`` whole, a page of 50, ``refresh=1``, what the page
asks since #25 (a page of 200, the last page, a name search ``q``, one run by ``run=``); and the latency
of ``GET runs?offset=0&limit=50`` from another thread while the listing is stale and being
redone (median and max over ~50 requests). With ``--baseline`` (a tbprof source tree from before
#25, e.g. main's ``plugin/``), the same server-side measure runs in a child on each tree: the
whole list once stale, and 10 small requests from another thread meanwhile; ratios this/baseline.
No anchor: XProf's run listing needs a TensorBoard.

Measured (2 shared cores, load average ~16 from other work; 20,000 custom_loop runs): the whole
list (its first request, which waits for the first walk) 20.0 s and 18.3 MB; what the page asks
since the paged picker: a page of 200 0.11 s and 0.18 MB, the last page 0.09 s, a search
(``q=run1``, page of 200) 0.11 s, a search matching one run 0.04 s, one run by ``run=`` < 5 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _build(root: Path, n: int) -> None:
    src = next((REPO / "demo_logs" / "custom_loop").rglob("*.xplane.pb"))
    for i in range(n):
        folder = root / f"run{i:05d}" / "plugins" / "profile" / "2026_01_01_00_00_00"
        if not folder.exists():
            folder.mkdir(parents=True)
            os.link(src, folder / "vm.xplane.pb")


# Runs on either tree (only routes and parameters both have): the whole list when stale, and
# small requests (a page of 50; a tree without paging answers it whole) from another thread.
_ROUTES = r"""
import json, statistics, sys, tempfile, threading, time
from werkzeug.test import Client
from tbprof.http.app import create_app
app = create_app(sys.argv[1], cache_dir=tempfile.mkdtemp())
c = Client(app)
c.get("/data/plugin/tbprof/runs")
time.sleep(2.1)  # the listing is stale now
t = time.perf_counter(); c.get("/data/plugin/tbprof/runs"); stale = time.perf_counter() - t
waits = []
def small():
    c2 = Client(app)
    for _ in range(10):
        t = time.perf_counter(); c2.get("/data/plugin/tbprof/runs?offset=0&limit=50")
        waits.append(time.perf_counter() - t); time.sleep(0.3)
th = threading.Thread(target=small); th.start(); th.join()
print(json.dumps({"stale_whole_s": stale, "small_median_s": statistics.median(waits), "small_max_s": max(waits)}))
"""


def _routes(tree: Path, logdir: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _ROUTES, str(logdir)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(tree)})
    return json.loads(out.stdout)


def _timed(fn: object) -> float:
    t = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20_000)
    ap.add_argument("--logdir", type=Path, default=None)
    ap.add_argument("--baseline", type=Path, default=None)
    args = ap.parse_args()
    from werkzeug.test import Client

    from tbprof.http.app import create_app
    from tbprof.service.logdir import FolderCache, discover

    with tempfile.TemporaryDirectory() as tmp:
        root = args.logdir or Path(tmp) / "logdir"
        _build(root, args.runs)
        old = _timed(lambda: discover(root))
        cache = FolderCache()
        first = _timed(lambda: discover(root, cache))
        again = _timed(lambda: discover(root, cache))
        print(f"walk of {args.runs} runs: os.walk {old:.2f} s; incremental first {first:.2f} s, "
              f"again {again:.2f} s (again/os.walk {again / old:.2f})")
        client = Client(create_app(root, cache_dir=Path(tmp) / "cache"))
        last = f"run{args.runs - 1:05d}/2026_01_01_00_00_00"
        for label, query in (("whole", {}), ("page of 50", {"offset": "0", "limit": "50"}),
                             ("refresh=1 page", {"refresh": "1", "offset": "0", "limit": "50"}),
                             # What the page asks (frontend RUN_PAGE): a page, a search, one run.
                             ("page of 200", {"offset": "0", "limit": "200"}),
                             ("last page of 200", {"offset": str(max(0, args.runs - 200)), "limit": "200"}),
                             ("search q=run1 page of 200", {"q": "run1", "offset": "0", "limit": "200"}),
                             ("search q matching 1 run", {"q": last.split("/")[0], "offset": "0", "limit": "200"}),
                             ("one run (run=)", {"run": last})):
            t = time.perf_counter()
            r = client.get("/data/plugin/tbprof/runs", query_string=query)
            print(f"GET runs {label}: {time.perf_counter() - t:.2f} s, {len(r.data) / 1e6:.2f} MB")
        waits: list[float] = []
        stop = time.monotonic() + 10

        def other() -> None:
            c = Client(client.application)
            while time.monotonic() < stop and len(waits) < 50:
                waits.append(_timed(lambda: c.get("/data/plugin/tbprof/runs",
                                                  query_string={"offset": "0", "limit": "50"})))
                time.sleep(0.1)

        worker = threading.Thread(target=other)
        worker.start()
        worker.join()
        print(f"other requests while listings are redone: median {statistics.median(waits) * 1e3:.0f} ms, "
              f"max {max(waits) * 1e3:.0f} ms over {len(waits)} (before #25: median 2.1 s behind the walk)")
        if args.baseline is not None:
            base = _routes(args.baseline, root)
            this = _routes(REPO / "plugin", root)
            for k in ("stale_whole_s", "small_median_s", "small_max_s"):
                print(f"{k}: this {this[k]:.2f} s, baseline {base[k]:.2f} s, ratio {this[k] / base[k]:.3f}")


if __name__ == "__main__":
    main()
