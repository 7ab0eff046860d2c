"""A cold one-host XSpace command, tree against tree: the conversion in process and the whole command.

    python bench/xspace_cold_bench.py --variant main=/work/main/plugin --variant now=plugin [--rounds 6]
                                      [--file PATH.xplane.pb] [--parts convert,summary,sql]

Every case runs in a fresh process, the variants alternating round by round (the order flipped every
other round), each tree byte-compiled first (an installed package is). Per variant, the medians over
the rounds of:

  - ``convert lazy`` / ``convert eager``: ``read_xspace`` of the file in a process that has imported
    the reader only (lazy: as ``tbprof sql`` converts; eager: as ``tbprof summary`` does): wall, the
    calling thread's CPU (``time.thread_time``) and the process's CPU over all threads;
  - ``summary`` / ``sql``: the whole cold ``tbprof summary FILE`` and ``tbprof sql FILE QUERY`` (new
    HOME and cache directory each run): wall and the process's CPU (user + system, ``wait4``). The
    store a command converted is written to the cache by a detached child after it answered: each
    run waits for it before the next starts.

The machine's load (``os.getloadavg``) is printed at the start and the end: on a shared machine
compare the variants of one run, CPU as well as wall.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "plugin"))

from tbprof.cli.huge_pages import free_pages_reported  # noqa: E402

DEFAULT_FILE = Path("/tmp/jl/jax_large/plugins/profile/2026_11_26_00_33_10/vm.xplane.pb")
QUERY = "SELECT name, count(*) AS n, sum(dur_ps) AS total_ps FROM events GROUP BY name ORDER BY total_ps DESC LIMIT 10"

_CONVERT_CHILD = r"""
import json, sys, time
from tbprof.readers import xplane
path, lazy = sys.argv[1], sys.argv[2] == "lazy"
t, c, p = time.perf_counter(), time.thread_time(), time.process_time()
store = xplane.read_xspace(path, lazy=lazy)
print(json.dumps({"wall_s": time.perf_counter() - t, "thread_s": time.thread_time() - c,
                  "cpu_s": time.process_time() - p, "events": sum(pl.n_events for pl in store.planes)}))
"""


def _env(plugin: Path, home: Path | None = None) -> dict[str, str]:
    drop = ("XDG_CACHE_HOME", "TBPROF_CACHE_DIR", "TBPROF_THREADS", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(plugin)
    env["OPENBLAS_NUM_THREADS"] = "1"  # as the tbprof command sets it (cli/main.py prepare_process)
    if "NUMPY_MADVISE_HUGEPAGE" not in env and free_pages_reported():  # and the size of numpy's pages
        env["NUMPY_MADVISE_HUGEPAGE"] = "0"
    if home is not None:
        env["HOME"] = str(home)
    return env


def _convert(plugin: Path, path: Path, mode: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _CONVERT_CHILD, str(path), mode], env=_env(plugin), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _wait_committed(home: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not list((home / ".cache" / "tbprof" / "stores").glob("*/meta.json")):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no converted store appeared in {home}")
        time.sleep(0.02)


def _command(plugin: Path, args: list[str], tmp: Path) -> dict[str, float]:
    """Wall and CPU (user + system) of one cold ``tbprof`` command."""
    home = Path(tempfile.mkdtemp(dir=tmp))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tbprof.cli", *args], env=_env(plugin, home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{args} failed: {err[-2000:]}")
    _wait_committed(home)
    shutil.rmtree(home, ignore_errors=True)
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", required=True, help="NAME=PLUGIN_DIR (the tree's plugin/)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--parts", default="convert,summary,sql")
    args = ap.parse_args()
    variants = {name: Path(d).resolve() for name, d in (v.split("=", 1) for v in args.variant)}
    parts = set(args.parts.split(","))
    for plugin in variants.values():
        compileall.compile_dir(str(plugin), quiet=1)
    cases: list[tuple[str, object]] = []
    if "convert" in parts:
        cases += [("convert lazy", lambda p: _convert(p, args.file, "lazy")),
                  ("convert eager", lambda p: _convert(p, args.file, "eager"))]
    tmp = Path(tempfile.mkdtemp(prefix="xspace_cold_"))
    if "summary" in parts:
        cases.append(("summary", lambda p: _command(p, ["summary", str(args.file)], tmp)))
    if "sql" in parts:
        cases.append(("sql", lambda p: _command(p, ["sql", str(args.file), QUERY, "--format", "json"], tmp)))
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    print(f"load at start {os.getloadavg()[0]:.2f}", flush=True)
    try:
        for r in range(args.rounds):
            order = list(variants.items())
            if r % 2:
                order.reverse()
            for case, fn in cases:
                for name, plugin in order:
                    runs.setdefault((case, name), []).append(fn(plugin))  # type: ignore[operator]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load at end {os.getloadavg()[0]:.2f}; {args.rounds} rounds; medians (min-max) in ms")
    for (case, name), got in runs.items():
        cols = []
        for key in ("wall_s", "thread_s", "cpu_s"):
            vals = [g[key] * 1e3 for g in got if key in g]
            if vals:
                med = statistics.median(vals)
                cols.append(f"{key.removesuffix('_s')} {med:6.1f} ({min(vals):.0f}-{max(vals):.0f})")
        print(f"  {case:14s} {name:8s} " + "  ".join(cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
