"""Fresh memory in a new process: numpy's transparent huge pages against small pages.

    python bench/fresh_pages_bench.py [--mb 64] [--rounds 6] [--rest-s 3]

Each run is a new Python process that imports numpy with ``NUMPY_MADVISE_HUGEPAGE`` set to 1 or
0, makes one array of ``--mb`` MB and writes every byte of it once (what a conversion does to its
columns), timing the write; the two settings take turns, ``--rest-s`` seconds apart. On a VM whose
balloon device reports free pages to its host (``cli/huge_pages.py``), free 2 MB blocks go back to
the host about 2 s after they are freed, so a rest longer than that shows what a command meets
after the machine was idle; a rest of 0 shows memory freed moments before. Prints each setting's
median and range, and whether this machine reports free pages (the ``tbprof`` command's choice).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "plugin"))

from tbprof.cli.huge_pages import free_pages_reported

CHILD = r"""
import sys, time
import numpy as np
a = np.empty(int(sys.argv[1]) << 20, dtype=np.uint8)
t = time.perf_counter()
a[:] = 1
print((time.perf_counter() - t) * 1000)
"""


def one_run(mb: int, huge: bool) -> float:
    env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "1" if huge else "0"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(mb)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--rest-s", type=float, default=3.0)
    args = ap.parse_args()
    runs: dict[bool, list[float]] = {True: [], False: []}
    for r in range(args.rounds):
        for huge in ((True, False) if r % 2 == 0 else (False, True)):
            time.sleep(args.rest_s)
            runs[huge].append(one_run(args.mb, huge))
    print(f"{args.mb} MB written once in a new process, {args.rest_s:g} s after the last run; "
          f"free pages reported to the host: {free_pages_reported()}")
    for huge, label in ((True, "huge pages "), (False, "small pages")):
        ms = sorted(runs[huge])
        print(f"  {label}: median {statistics.median(ms):.1f} ms ({ms[0]:.1f}-{ms[-1]:.1f}); runs "
              + ", ".join(f"{x:.1f}" for x in runs[huge]))


if __name__ == "__main__":
    main()
