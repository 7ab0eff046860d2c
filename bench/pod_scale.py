#!/usr/bin/env python3
"""Pod scaling (issue #28): ``tbprof summary`` of pods of N hosts with W local workers, whole
process, cold converted-profile cache, printed as a table (hosts x workers) with the speed-ups.

    python bench/pod_scale.py [--hosts 16 64 256 1024] [--workers 1 2 4 16 32 64]
                              [--variant LABEL=PYTHONPATH ...] [--repeat N] [--xprof-python PY]

Pods are byte copies of jax_2hosts' two real hosts (bench/make_pod.py, or ``--source`` files).
Worker counts default to 1, 2, 4, ... up to the cores this process may use. Each ``--variant``
runs a tbprof found on that PYTHONPATH (e.g. the main branch's wheel and this branch's, installed
side by side) in the same run, so their numbers compare; the first variant is the reference of
the ratios. Without ``--variant`` it runs this checkout. ``--timings`` adds each run's phase line
(``tbprof summary --timings``) where the variant has it, and a table of the serial part (all but
waiting for workers: what more cores do not shorten). With ``--xprof-python``, XProf's
all-hosts overview_page (bench/xprof_runner.py, cold) on the smallest pod is the anchor line.
Prints numbers and ratios; tests never assert timings.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from make_pod import DEFAULT_SOURCES, make_pod  # noqa: E402


def default_workers() -> list[int]:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    out, w = [], 1
    while w < cores:
        out.append(w)
        w *= 2 if w < 4 else 4 if w < 16 else 2
    return [*out, cores]


def run_summary(pythonpath: str, pod: Path, workers: int, timings: bool) -> tuple[float | None, str]:
    """Seconds of one ``tbprof summary`` process (None if it failed) and its timings line."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    with tempfile.TemporaryDirectory() as cache:
        env["TBPROF_CACHE_DIR"] = cache
        cmd = [sys.executable, "-m", "tbprof.cli", "summary", str(pod), "--workers", str(workers), "--json"]
        started = time.perf_counter()
        proc = subprocess.run(cmd + (["--timings"] if timings else []), env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            sys.stderr.write(f"failed ({pythonpath}, {pod.name}, {workers} workers): {proc.stderr[-500:]}\n")
            return None, ""
    line = next((x for x in proc.stderr.splitlines() if x.startswith("tbprof timings")), "")
    return seconds, line


def serial_s(line: str) -> float | None:
    """What a ``--timings`` line says the command spent but waiting for workers: import + list,
    the summary's total and the answer, less the wait (the same sum for every build's line)."""
    found = dict(re.findall(r"(import \+ list|waiting for workers|summary total|answer) ([0-9.]+)", line))
    if len(found) < 4:
        return None
    return (float(found["import + list"]) + float(found["summary total"]) + float(found["answer"])
            - float(found["waiting for workers"]))


def supports_timings(pythonpath: str) -> bool:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    out = subprocess.run([sys.executable, "-m", "tbprof.cli", "summary", "--help"], env=env, capture_output=True,
                         text=True).stdout
    return "--timings" in out


def xprof_overview_s(xprof_python: str, files: list[Path]) -> float | None:
    import json

    proc = subprocess.run([xprof_python, str(REPO / "bench" / "xprof_runner.py"), "overview_page",
                           *map(str, files), "--mode", "cold", "--quiet"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"XProf failed: {proc.stderr[-500:]}\n")
        return None
    return float(min(json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--workers", type=int, nargs="+", default=None)
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=PYTHONPATH")
    ap.add_argument("--source", type=Path, action="append", default=None, help="host files (default: jax_2hosts')")
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell, the best kept (alternating variants)")
    ap.add_argument("--timings", action="store_true", help="print each run's phase line")
    ap.add_argument("--xprof-python", default=None, help="XProf's Python: its all-hosts overview as the anchor")
    ap.add_argument("--tmp", type=Path, default=None, help="where the pods are written (default: a temp dir)")
    ap.add_argument("--warmup-workers", type=int, default=None,
                    help="workers of the untimed first run of each pod (default: the most of --workers)")
    args = ap.parse_args()
    variants = [tuple(v.split("=", 1)) for v in args.variant] or [("this", str(REPO / "plugin"))]
    workers = args.workers or default_workers()
    with_timings = {label: args.timings and supports_timings(path) for label, path in variants}
    print(f"cores {len(os.sched_getaffinity(0))}; variants: " + ", ".join(f"{a} ({b})" for a, b in variants))
    table: dict[tuple[str, int, int], float | None] = {}
    serial: dict[tuple[str, int, int], float] = {}
    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        for n in args.hosts:
            pod = Path(d) / f"pod{n}"
            folder = make_pod(pod, n, args.source or DEFAULT_SOURCES)
            for _label, path in variants:  # untimed: files in the page cache, compiled code warm
                run_summary(path, pod, args.warmup_workers or max(workers), False)
            if args.xprof_python and n == min(args.hosts):
                xp = xprof_overview_s(args.xprof_python, sorted(folder.glob("*.xplane.pb")))
                if xp is not None:
                    print(f"XProf all-hosts overview_page, {n} hosts, cold: {xp:.2f} s")
            for w in workers:
                for _ in range(args.repeat):
                    for label, path in variants:
                        s, line = run_summary(path, pod, w, with_timings[label])
                        best = table.get((label, n, w))
                        if s is not None and (best is None or s < best):
                            table[(label, n, w)] = s
                        if line:
                            print(f"  [{label} {n} hosts, {w} workers] {s:.2f} s  {line}")
                            spent = serial_s(line)
                            if spent is not None:
                                serial[(label, n, w)] = min(spent, serial.get((label, n, w), spent))
            shutil_rm(pod)
    print()
    print("tbprof summary, whole process, cold cache (s); best of", args.repeat)
    print("| variant | hosts | " + " | ".join(f"{w} w" for w in workers) + " | 1->16 | 16->max |")
    print("|---|---|" + "---|" * len(workers) + "---|---|")
    for label, _ in variants:
        for n in args.hosts:
            cells = [table.get((label, n, w)) for w in workers]
            row = [f"{c:.2f}" if c is not None else "-" for c in cells]
            t1, t16, tmax = table.get((label, n, 1)), table.get((label, n, 16)), table.get((label, n, max(workers)))
            s1 = f"{t1 / t16:.1f}x" if t1 and t16 else "-"
            s2 = f"{t16 / tmax:.1f}x" if t16 and tmax and max(workers) > 16 else "-"
            print(f"| {label} | {n} | " + " | ".join(row) + f" | {s1} | {s2} |")
    if serial:
        print()
        print("serial part (s): all but waiting for workers, from --timings; the least of the runs")
        for label, _ in variants:
            for n in args.hosts:
                cells = [serial.get((label, n, w)) for w in workers]
                print(f"| {label} | {n} | " + " | ".join(f"{c:.2f}" if c is not None else "-" for c in cells) + " |")
    if len(variants) > 1:
        ref = variants[0][0]
        print()
        print(f"ratio to {ref} (time / {ref}'s time; < 1 is faster)")
        for label, _ in variants[1:]:
            for n in args.hosts:
                cells = []
                for w in workers:
                    a, b = table.get((ref, n, w)), table.get((label, n, w))
                    cells.append(f"{b / a:.2f}" if a and b else "-")
                print(f"| {label} | {n} | " + " | ".join(cells) + " |")
    return 0


def shutil_rm(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
