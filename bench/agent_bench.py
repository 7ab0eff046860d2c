"""The analyses of XProf's agent CLI: tbprof's command vs ``xprof SUBCOMMAND`` on the same file.

    python bench/agent_bench.py [--profile jax_mlp] [--xprof /opt/xprof-venv/bin/xprof] [--repeat 3]

Each side is a fresh process on a fresh copy of the profile (no cache of either: XProf's CLI with
``--bypass_cache=True`` and its converted files gone with the copy, tbprof with an empty
``--cache-dir``), so both pay for reading the file: what an agent's first question costs. Prints
seconds (median of ``--repeat``) and the ratio XProf / tbprof. Timed assertions do not belong in
tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAIRS = (("get_device_time_attribution", "device_time_attribution"),
         ("analyze_async_overlap", "collective_overlap"),
         ("get_kpi_metrics", "kpi_metrics"),
         ("check_host_boundness", "host_boundness"),
         ("get_peak_allocations", "peak_allocations"))


# Both sides with their bytecode compiled, as an installed package has it (XProf's wheel is
# installed; a source checkout run with PYTHONDONTWRITEBYTECODE compiles every module each time).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _seconds(argv: list[str], cwd: str) -> float:
    began = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", default="jax_mlp")
    parser.add_argument("--xprof", default="/opt/xprof-venv/bin/xprof")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = REPO / "demo_logs" / args.profile
    xplane = next(source.rglob("*.xplane.pb"))
    session, host = xplane.parent.name, xplane.name.removesuffix(".xplane.pb")
    print(f"{args.profile} ({xplane.stat().st_size / 2**20:.1f} MiB), median of {args.repeat}, fresh process and copy")
    print(f"{'xprof subcommand':30}{'xprof s':>9}{'tbprof tool':>26}{'tbprof s':>10}{'ratio':>8}")
    # tbprof writes its disk cache from a detached child after answering: the caches live apart
    # from the copies and go when every child is done.
    caches = Path(tempfile.mkdtemp(prefix="agent_bench_caches_"))
    try:
        for sub, tool in PAIRS:
            xs, ts = [], []
            for k in range(args.repeat + 1):  # the first: bytecode compiled, not counted
                with tempfile.TemporaryDirectory() as tmp:
                    logdir = Path(tmp) / args.profile
                    shutil.copytree(source, logdir)
                    xs.append(_seconds([args.xprof, sub, f"--session_id={session}", f"--logdir={logdir}",
                                        f"--host={host}", "--bypass_cache=True"], tmp))
                    ts.append(_seconds([sys.executable, "-m", "tbprof.cli", "show", tool, str(logdir),
                                        "--host", host, "--cache-dir", str(caches / f"{tool}_{k}")], tmp))
            x, t = statistics.median(xs[1:]), statistics.median(ts[1:])
            print(f"{sub:30}{x:9.2f}{tool:>26}{t:10.2f}{x / t:8.1f}")
    finally:
        time.sleep(5)
        shutil.rmtree(caches, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
