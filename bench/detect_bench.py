"""Discovering runs with the one detector: this tree against a baseline tree, in one run.

    python bench/detect_bench.py [--xspace 2000] [--pytorch 300] [--baseline /path/to/other/plugin] [--repeat 5]

Builds (in a temporary folder) ``--xspace`` XProf sessions, each a hard link to demo_logs'
custom_loop xplane, and ``--pytorch`` folders each holding a Kineto trace and a TF1 timeline
(hard links to demo_logs' torch_cnn and tf1_timeline files), then times ``discover`` in a child
per tree, alternating the trees twice: cold (the head memo emptied: every JSON file read) and
warm (the memo filled: names and stats only); medians of ``--repeat``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import statistics, sys, time
from pathlib import Path
from tbprof.readers import sniff
from tbprof.service.logdir import discover
root, repeat = Path(sys.argv[1]), int(sys.argv[2])
cold, warm = [], []
for _ in range(repeat):
    sniff._MEMO = sniff._Memo()
    t = time.perf_counter(); runs = discover(root); cold.append(time.perf_counter() - t)
for _ in range(repeat):
    t = time.perf_counter(); runs = discover(root); warm.append(time.perf_counter() - t)
print(f"{len(runs)} runs: cold {statistics.median(cold):.3f} s, warm {statistics.median(warm):.3f} s")
"""


def _build(root: Path, n_xspace: int, n_pytorch: int) -> None:
    demo = REPO / "demo_logs"
    xplane = next((demo / "custom_loop").rglob("*.xplane.pb"))
    kineto = next((demo / "torch_cnn").glob("*.pt.trace.json"))
    timeline = demo / "tf1_timeline" / "timeline-3.json"
    for i in range(n_xspace):
        folder = root / f"r{i}" / "plugins" / "profile" / "s"
        folder.mkdir(parents=True)
        os.link(xplane, folder / "vm.xplane.pb")
    for i in range(n_pytorch):
        folder = root / f"t{i}"
        folder.mkdir()
        os.link(kineto, folder / f"h{i}.pt.trace.json")
        os.link(timeline, folder / "timeline-1.json")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xspace", type=int, default=2000)
    ap.add_argument("--pytorch", type=int, default=300)
    ap.add_argument("--baseline", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    trees = {"this": REPO / "plugin", **({"baseline": args.baseline} if args.baseline else {})}
    with tempfile.TemporaryDirectory() as tmp:
        _build(Path(tmp), args.xspace, args.pytorch)
        for _ in range(2):
            for label, tree in trees.items():
                out = subprocess.run([sys.executable, "-c", _CHILD, tmp, str(args.repeat)], check=True, text=True,
                                     capture_output=True, env={**os.environ, "PYTHONPATH": str(tree)}).stdout
                print(f"{label}: {out.strip()}")


if __name__ == "__main__":
    main()
