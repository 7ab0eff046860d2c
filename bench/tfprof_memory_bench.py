"""Peak memory of tfprof views on crafted and real ProfileProto files, against the memory guard's estimate.

    python bench/tfprof_memory_bench.py [--size-bytes 120000]

Each case runs in a fresh process: read the file, build all four views (``max_depth`` large
enough to show every row), and print the growth of its peak RSS (VmHWM), the guard's estimate
(``size x memory_factor`` for the parse plus ``views_need_bytes`` from the file's counts) and
their ratio (peak / estimate: at most 1 when the estimate is honest; a peak of 0 stayed below the
imports' own). Cases: the real
``demo_logs/tf1_timeline/profile.pb``; a node name of ``size/2`` name scopes (``a/a/...``);
a call stack of ``size/8`` frames in one short file; ``size/12`` graph nodes with short names;
a 100 KB file name over 200 frames. No anchor: TensorFlow's tfprof is not installed here, and
the question is our memory against our own estimate. Before the fix (#25) the scope case of
120 KB needed 3.6 GB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_CHILD = r"""
import json, sys
from pathlib import Path
from tbprof.readers.tfprof import read_tfprof
from tbprof.analyses.tfprof import tfprof_views
from tbprof.cache.memory_guard import memory_factor
from tbprof.store.tfprof import views_need_bytes
path = Path(sys.argv[1])
def hwm():  # this process's peak RSS in bytes (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
r0 = hwm()
p = read_tfprof(path)
for view in ("scope", "graph", "op", "code"):
    tfprof_views.compute([p], {"view": view, "max_depth": 1_000_000})
r1 = hwm()
scopes = sum(n.count("/") for n in p.names)
frames = sum(len(t) for t in p.traces)
need = views_need_bytes(p.n_nodes, scopes, frames) + path.stat().st_size * memory_factor(path)
print(json.dumps({"peak_bytes": r1 - r0, "estimate_bytes": need}))
"""


def _cases(size: int) -> dict[str, bytes]:
    from tests.tfprof_data import deep_scope_pb, long_file_pb

    from tbprof.protos import tfprof_log_pb2

    wide = tfprof_log_pb2.ProfileProto()
    for i in range(size // 12):
        node = wide.nodes[i]
        node.name, node.id = str(i).encode(), i
    return {"real profile.pb": (REPO / "demo_logs" / "tf1_timeline" / "profile.pb").read_bytes(),
            "deep name scopes": deep_scope_pb(size),
            "many frames": long_file_pb(4, size // 8),
            "many nodes": wide.SerializeToString(),
            "100 KB file name": long_file_pb(100_000, 200)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-bytes", type=int, default=120_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'case':<20} {'file':>10} {'peak MB':>9} {'estimate MB':>12} {'peak/estimate':>14}")
        for name, data in _cases(args.size_bytes).items():
            path = Path(tmp) / "profile.pb"
            path.write_bytes(data)
            out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True,
                                 check=True, env={"PYTHONPATH": str(REPO / "plugin"), "PATH": "/usr/bin:/bin",
                                                  "TBPROF_CONVERT_MEMORY_BYTES": str(1 << 40)})
            r = json.loads(out.stdout)
            print(f"{name:<20} {len(data):>10} {r['peak_bytes'] / 1e6:>9.1f} {r['estimate_bytes'] / 1e6:>12.1f} "
                  f"{r['peak_bytes'] / r['estimate_bytes']:>14.2f}")


if __name__ == "__main__":
    main()
