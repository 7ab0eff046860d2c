"""A cold one-shot command, two or more source trees alternating: wall and CPU of the whole process.

    python bench/cold_start_bench.py --variant main=/work/main/plugin --variant now=plugin \\
        --rounds 6 [--profile /tmp/jl/jax_large] [--command sql|summary] [--timings] \\
        [--rest-s 1] [--variant-env now:NAME=VALUE]

Each run is a fresh ``python -m tbprof.cli`` process with ``PYTHONPATH`` at the variant's tree, a
fresh ``HOME`` and cache dir (nothing converted before), so every run converts the profile; the
variants take turns within a round so that the machine's load falls on each alike; ``--variant-env``
sets an environment variable for one variant's runs (two variants of one tree that differ only in
it: ``--variant huge=plugin --variant-env huge:NUMPY_MADVISE_HUGEPAGE=1 --variant small=plugin``).
``--rest-s``: seconds between runs (the detached cache writer of the last one is done by then; on a
VM that reports free pages to its host, what the last run freed is handed back after ~2 s). Wall is
measured around the process, CPU is its user + system time (``os.wait4``: the process and what it
waited for, not the detached cache writer it leaves behind). Both trees should be byte-compiled
first (``python -m compileall -q plugin``): the environment may set ``PYTHONDONTWRITEBYTECODE``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "SELECT name, count(*) AS n, sum(dur_ps) AS total_ps FROM events GROUP BY name ORDER BY total_ps DESC LIMIT 10"


def one_run(plugin_dir: str, profile: str, command: str, timings: bool, extra_env: dict[str, str],
            rest_s: float) -> dict[str, object]:
    home = tempfile.mkdtemp(prefix="tbprof_cold_")
    try:
        env = {**os.environ, "PYTHONPATH": plugin_dir, "HOME": home, "TBPROF_CACHE_DIR": str(Path(home) / "cache"),
               **extra_env}
        argv = [sys.executable, "-m", "tbprof.cli"]
        if command == "sql":
            argv += ["sql", profile, QUERY, "--format", "json"] + (["--timings"] if timings else [])
        else:
            argv += ["summary", profile, "--json"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = proc.communicate()
        wall_s = time.perf_counter() - t0
        # communicate() reaped it; its rusage is the children's total growth.
        ru = _children_rusage_delta()
        if proc.returncode != 0:
            raise SystemExit(f"{plugin_dir}: exit {proc.returncode}: {err.decode()[-2000:]}")
        answer = json.loads(out)
        return {"wall_s": wall_s, "cpu_s": ru, "answer": answer.get("rows", answer.get("headline")),
                "timings": err.decode().strip().splitlines()[-1] if timings else ""}
    finally:
        time.sleep(rest_s)  # the detached cache writer (~125 MB for jax_large) is done before the next run
        shutil.rmtree(home, ignore_errors=True)


_last_children = [0.0]


def _children_rusage_delta() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = ru.ru_utime + ru.ru_stime
    delta, _last_children[0] = total - _last_children[0], total
    return delta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", required=True, metavar="NAME=PLUGIN_DIR")
    ap.add_argument("--profile", default="/tmp/jl/jax_large")
    ap.add_argument("--command", choices=("sql", "summary"), default="sql")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--timings", action="store_true", help="print each sql run's --timings line")
    ap.add_argument("--rest-s", type=float, default=1.0, help="seconds between runs (default 1)")
    ap.add_argument("--variant-env", action="append", default=[], metavar="NAME:VAR=VALUE",
                    help="an environment variable for one variant's runs")
    args = ap.parse_args()
    variants = [v.split("=", 1) for v in args.variant]
    envs: dict[str, dict[str, str]] = {name: {} for name, _ in variants}
    for item in args.variant_env:
        name, _, assignment = item.partition(":")
        var, _, value = assignment.partition("=")
        envs[name][var] = value
    _children_rusage_delta()
    results: dict[str, list[dict[str, object]]] = {name: [] for name, _ in variants}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        for name, tree in order:
            res = one_run(str(Path(tree).resolve()), args.profile, args.command, args.timings, envs[name], args.rest_s)
            results[name].append(res)
            print(f"round {r} {name}: wall {res['wall_s']:.3f} s, cpu {res['cpu_s']:.3f} s"
                  + (f"  [{res['timings']}]" if res["timings"] else ""), flush=True)
        loads.append(os.getloadavg()[0])
    answers = {json.dumps(res["answer"]) for runs in results.values() for res in runs}
    print(f"load (1 min) {min(loads):.2f}-{max(loads):.2f}; same answer every run: {len(answers) == 1}")
    for name, runs in results.items():
        walls = sorted(float(x["wall_s"]) for x in runs)  # type: ignore[arg-type]
        cpus = sorted(float(x["cpu_s"]) for x in runs)  # type: ignore[arg-type]
        print(f"{name}: wall median {statistics.median(walls):.3f} s (min {walls[0]:.3f}, max {walls[-1]:.3f}), "
              f"cpu median {statistics.median(cpus):.3f} s")


if __name__ == "__main__":
    main()
