"""What the bounded disk cache (#25) costs: reopening an entry (a shared flock, columns opened
without following links under the entry's folder, against ``np.load`` by path as before), and
trimming after a write (one small ``source.json`` read per entry), in one run.

    python bench/disk_cache_bench.py [--profile keras_cnn] [--entries 200] [--repeat 20]

The profile comes from demo_logs (jax_large: pass ``--file PATH``). Reopen times are the median
of ``--repeat`` loads of the same entry in this process (the page cache warm, as a server's
reopen is); trim is timed over a cache of ``--entries`` copies of the entry under other keys.
No anchor: XProf has no disk cache of converted profiles (it re-converts, or reads its
``op_stats`` file).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def _np_load_by_path(entry: Path) -> int:
    """The reads of the loader before #25 (``np.load(path, mmap_mode="r")`` of every column)."""
    meta = json.loads((entry / "meta.json").read_bytes())
    n = 0
    for f in sorted(entry.glob("*.npy")):
        n += np.load(f, mmap_mode="r", allow_pickle=False).shape[0]
    return n + len(meta["planes"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="keras_cnn")
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("--entries", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    from tbprof.cache.disk_cache import DiskCache
    from tbprof.readers import xplane

    path = args.file or next((REPO / "demo_logs" / args.profile).rglob("*.xplane.pb"))
    with tempfile.TemporaryDirectory() as tmp:
        disk = DiskCache(Path(tmp) / "cache", max_bytes=1 << 50)
        disk.save("k" * 32, xplane.read_xspace(path))
        entry = disk.entry_path("k" * 32)
        new, old = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            store = disk.load("k" * 32)
            new.append(time.perf_counter() - t)
            del store
            t = time.perf_counter()
            _np_load_by_path(entry)
            old.append(time.perf_counter() - t)
        print(f"{path.name} ({path.stat().st_size / 1e6:.1f} MB): reopen {statistics.median(new) * 1e3:.1f} ms "
              f"(load), column reads by path as before {statistics.median(old) * 1e3:.1f} ms "
              f"(ratio {statistics.median(new) / statistics.median(old):.2f}; the load also builds the store)")
        for i in range(args.entries):
            shutil.copytree(entry, disk.entry_path(f"{i:032x}"))
        t = time.perf_counter()
        found = disk.entries()
        scan = time.perf_counter() - t
        disk.max_bytes = sum(size for _, _, size, _ in found)  # fits: the trim scans and removes nothing
        t = time.perf_counter()
        disk.trim()
        print(f"trim over {len(found)} entries: {(time.perf_counter() - t) * 1e3:.1f} ms "
              f"(listing them {scan * 1e3:.1f} ms), after each write")


if __name__ == "__main__":
    main()
