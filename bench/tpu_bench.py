"""TPU tools on XProf's public Cloud TPU v6e inference profile, side by side with XProf 2.24.2.

    python bench/tpu_bench.py [--xprof-python /opt/xprof-venv/bin/python] [--skip-xprof] [--repeat 3]

For each tool, on the same file (demo_logs/tpu_inference, 0.86 MB, four TPU cores):
  - tbprof cold: a fresh process imports tbprof, converts the xplane (no converted-profile cache)
    and computes the tool (``Tool.compute``, no HTTP encoding);
  - XProf cold: bench/xprof_runner.py's conversion of the same tool on a fresh copy of the file
    (so no XProf cache), in-process time only (XProf's import not counted);
and the ratio tbprof / XProf. Each number is the best of --repeat runs (the machine is shared).
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
XPLANE = next((REPO / "demo_logs" / "tpu_inference").rglob("*.xplane.pb"))
TOOLS = ("overview_page", "framework_op_stats", "op_profile", "hlo_stats", "roofline_model")

# Child: argv = xplane, tool. Prints {"import_s", "convert_s", "tool_s"}.
_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools
tool = tools.get(sys.argv[2])
t1 = time.perf_counter()
store = read_xspace(sys.argv[1])
t2 = time.perf_counter()
tool.compute([store], tool.parse_options({}))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "convert_s": t2 - t1, "tool_s": t3 - t2}))
"""


def tbprof_cold(tool: str, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _CHILD, str(XPLANE), tool], check=True, capture_output=True,
                             text=True, cwd=REPO)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return min(runs, key=lambda r: r["convert_s"] + r["tool_s"])


def xprof_cold(python: str, tool: str, repeat: int) -> float | None:
    out = subprocess.run([python, str(REPO / "bench" / "xprof_runner.py"), tool, str(XPLANE), "--repeat", str(repeat),
                          "--mode", "cold", "--quiet"], capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        return None
    return float(min(json.loads(out.stdout.strip().splitlines()[-1])["seconds"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--skip-xprof", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"file: {XPLANE.relative_to(REPO)} ({XPLANE.stat().st_size / 1e6:.2f} MB)")
    print(f"{'tool':22s} {'tbprof convert+tool':>20s} {'(import)':>9s} {'XProf cold':>11s} {'ratio':>7s}")
    for tool in TOOLS:
        ours = tbprof_cold(tool, args.repeat)
        ours_s = ours["convert_s"] + ours["tool_s"]
        theirs = None if args.skip_xprof else xprof_cold(args.xprof_python, tool, args.repeat)
        ratio = f"{ours_s / theirs:7.2f}" if theirs else "      -"
        xprof_ms = f"{theirs * 1e3:9.1f}ms" if theirs else "          -"
        print(f"{tool:22s} {ours_s * 1e3:18.1f}ms {ours['import_s'] * 1e3:7.0f}ms {xprof_ms} {ratio}")


if __name__ == "__main__":
    main()
