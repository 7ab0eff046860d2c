"""Store build benchmark on jax_large, side by side with XProf 2.24.2 in one run.

    python bench/store_bench.py [--xprof-python /opt/xprof-venv/bin/python] [--skip-xprof]

Prints, each measured in a fresh process on the same unpacked file:
  - tbprof cold store build (empty converted-profile cache), wall time and peak RSS;
  - tbprof reopen from the disk cache in a new process;
  - tbprof first run on a new machine: a fresh HOME (nothing is compiled at run time, so it
    equals the cold build; kept to show it);
  - XProf's cold overview_page conversion (fresh copy of the file, so no XProf cache) and peak RSS;
and the ratios the foundation issue targets: cold build <= 0.25 x XProf cold overview,
reopen <= 0.3 s, peak RSS <= 0.5 x XProf's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "profiles"

# Runs in the child: time only what a server does for a cold request (import + convert).
_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from pathlib import Path
from tbprof.readers import xplane
from tbprof.cache.profile_cache import ProfileCache
t1 = time.perf_counter()
cache = ProfileCache(Path(sys.argv[2]))
store = cache.get(Path(sys.argv[1]), xplane.read_xspace)
t2 = time.perf_counter()
cache.flush()  # the disk write runs in the background of a server; wait so the reopen can use it
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "total_s": t2 - t0, "events": store.n_events,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def unpack_jax_large(dest: Path) -> Path:
    with tarfile.open(SHARED / "jax_large.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return next(dest.rglob("vm.xplane.pb"))


def tbprof_child(xplane: Path, cache_dir: Path, home: Path | None = None) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(home)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(xplane), str(cache_dir)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def xprof_cold(xprof_python: str, xplane: Path, tool: str) -> dict[str, float]:
    """XProf on a fresh copy of the file, so it finds no cache of its own."""
    with tempfile.TemporaryDirectory() as d:
        session = Path(d) / "plugins" / "profile" / "s"
        session.mkdir(parents=True)
        copy = session / xplane.name
        shutil.copy(xplane, copy)
        out = subprocess.run([xprof_python, str(REPO / "bench" / "xprof_runner.py"), tool, str(copy)],
                             check=True, capture_output=True, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    return {"seconds": float(res["seconds"][0]), "peak_rss_bytes": float(res["peak_rss_bytes"])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        xplane = unpack_jax_large(Path(tmp) / "data")
        print(f"file: {xplane.name} {xplane.stat().st_size / 1e6:.1f} MB")
        colds, reopens = [], []
        for i in range(args.repeat):
            cache = Path(tmp) / f"cache{i}"
            colds.append(tbprof_child(xplane, cache))
            reopens.append(tbprof_child(xplane, cache))
        cold = min(colds, key=lambda r: r["total_s"])
        reopen = min(reopens, key=lambda r: r["total_s"])
        first = tbprof_child(xplane, Path(tmp) / "cache_first", home=Path(tmp) / "home_fresh")
        print(f"tbprof cold store build : {cold['total_s']:.2f} s (import {cold['import_s']:.2f} s + build "
              f"{cold['build_s']:.2f} s), {cold['events']} events, peak RSS {cold['peak_rss_bytes'] / 1e9:.2f} GB")
        print(f"tbprof reopen from disk : {reopen['build_s']:.3f} s (+ import {reopen['import_s']:.2f} s)")
        print(f"tbprof first run on a new machine (fresh HOME): {first['total_s']:.2f} s")
        if args.skip_xprof:
            return 0
        xp = xprof_cold(args.xprof_python, xplane, "overview_page")
        print(f"XProf 2.24.2 cold overview_page: {xp['seconds']:.2f} s, peak RSS {xp['peak_rss_bytes'] / 1e9:.2f} GB")
        print(f"ratio cold build / XProf cold overview : {cold['total_s'] / xp['seconds']:.3f}  (target <= 0.25)")
        print(f"reopen from disk cache                 : {reopen['build_s']:.3f} s (target <= 0.3 s)")
        print(f"ratio peak RSS / XProf peak RSS        : {cold['peak_rss_bytes'] / xp['peak_rss_bytes']:.3f}  "
              "(target <= 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
