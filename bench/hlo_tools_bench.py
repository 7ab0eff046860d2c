"""XProf's newer tools (#18) on jax_large, side by side with XProf 2.24.2 in one run.

    python bench/hlo_tools_bench.py [--xprof-python /opt/xprof-venv/bin/python] [--skip-xprof] [--repeat 3]

Same method as bench/ops_bench.py (whose child process and helpers it reuses): per tool, in
fresh processes through the WSGI app, the warm-store first request (target <= 50 ms), the
memoised request, and the cold request (store build + tool) against XProf's cold conversion of
the same tool on a fresh copy of the file. XProf's memory_viewer and graph_viewer need a module
and an op chosen in its UI and smart_suggestion reads its own cache: only hlo_stats and
roofline_model have an XProf cold number.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ops_bench import child, unpack, xprof_cold

TOOLS = ("hlo_stats", "roofline_model", "memory_viewer", "graph_viewer", "smart_suggestion")
XPROF_TOOLS = ("hlo_stats", "roofline_model")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tools", default=",".join(TOOLS))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hlo_bench_") as tmp:
        root = Path(tmp)
        logdir = unpack("jax_large", root / "large")
        small = unpack("jax_mlp", root / "small")
        xplane = next(logdir.rglob("vm.xplane.pb"))
        for tool in args.tools.split(","):
            cold, first, memo, settled = [], [], [], []
            for i in range(args.repeat):
                cache = root / f"cache_{tool}_{i}"
                cold.append(child(logdir, cache, tool, small, "cold")["cold_s"])
                warm = child(logdir, cache, tool, small, "warm")
                first.append(warm["first_s"])
                memo.append(warm["memo_s"])
                settled.append(warm["settled_s"])
            xprof = None
            if not args.skip_xprof and tool in XPROF_TOOLS:
                xprof = min(xprof_cold(args.xprof_python, tool, xplane) for _ in range(args.repeat))
            rows.append((tool, min(first), min(memo), min(cold), xprof))
            print(f"{tool}: warm first {min(first) * 1e3:.1f} ms (settled {min(settled) * 1e3:.1f} ms), "
                  f"memoised {min(memo) * 1e3:.2f} ms, "
                  f"cold {min(cold):.2f} s" + (f", XProf cold {xprof:.2f} s" if xprof else ""), flush=True)
    print()
    print(f"{'tool':<18} {'warm first ms':>14} {'memo ms':>8} {'cold s':>7} {'XProf s':>8} {'cold ratio':>10}")
    for tool, first_s, memo_s, cold_s, xprof_s in rows:
        ratio = f"{cold_s / xprof_s:.3f}" if xprof_s else "-"
        xp = f"{xprof_s:.2f}" if xprof_s else "-"
        print(f"{tool:<18} {first_s * 1e3:>14.1f} {memo_s * 1e3:>8.2f} {cold_s:>7.2f} {xp:>8} {ratio:>10}")
    print("targets: warm first <= 50 ms (issue #18)")


if __name__ == "__main__":
    main()
