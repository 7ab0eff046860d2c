"""A/B of a cold ``tbprof summary --timings`` of one profile between source trees, alternating.

    python bench/summary_ab.py PATH --variant main=/work/main/plugin --variant now=plugin [--rounds 6]

Each run is a fresh process with a fresh HOME (an empty converted-profile cache), the variants
alternating round by round so that both see the same load on a shared machine. Per run: the
whole process's wall seconds, its CPU seconds (user + system, from ``wait4``: the detached child
that writes the cache after the answer is not the command's), and the phases ``--timings``
prints; then each variant's medians. The cache write of a run is waited for before the next
run starts (not timed). Both trees are byte-compiled first, as an installed package is.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PHASES = {"import + list": "list_s", "imports": "imports_s", "then converting": "converting_s",
          "analyses": "analyses_s", "summary total": "summary_s"}


def phases_of(stderr: str) -> dict[str, float]:
    line = next((x for x in stderr.splitlines() if x.startswith("tbprof timings")), "")
    out: dict[str, float] = {}
    for label, key in PHASES.items():
        m = re.search(rf"{re.escape(label)} ([0-9.]+)", line)
        if m:
            out[key] = float(m.group(1))
    return out


def wait_committed(home: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not list((home / ".cache" / "tbprof" / "stores").glob("*/meta.json")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no converted store appeared in {home}")
        time.sleep(0.02)


def run_once(plugin: Path, path: str, home: Path) -> dict[str, float]:
    drop = ("XDG_CACHE_HOME", "TBPROF_CACHE_DIR", "TBPROF_THREADS", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), PYTHONPATH=str(plugin))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tbprof.cli", "summary", "--timings", path], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(err[-2000:])
    wait_committed(home)
    return {"wall_s": wall_s, "cpu_s": usage.ru_utime + usage.ru_stime, **phases_of(err)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--variant", action="append", required=True, help="NAME=PLUGIN_DIR (the tree's plugin/)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    variants = [(name, Path(d).resolve()) for name, d in (v.split("=", 1) for v in args.variant)]
    for _, plugin in variants:
        compileall.compile_dir(str(plugin / "tbprof"), quiet=1)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for name, plugin in variants:
                home = Path(tmp) / f"{name}_{i}"
                home.mkdir()
                r = run_once(plugin, args.path, home)
                runs[name].append(r)
                print(f"round {i} {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()), flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    for name, rs in runs.items():
        keys = list(rs[0])
        print(f"{name} median of {len(rs)}: " + ", ".join(f"{k} {statistics.median(r[k] for r in rs):.3f}"
                                                          for k in keys)
              + f"; least wall {min(r['wall_s'] for r in rs):.3f}, least cpu {min(r['cpu_s'] for r in rs):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
