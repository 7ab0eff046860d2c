"""Peak memory of reading XSpace files with many distinct names or text values, against the
memory guard's estimates and XProf 2.24.2's peak on the same file, in one run.

    python bench/names_memory_bench.py [--events 1000000] [--skip-xprof]
        [--xprof-python /opt/xprof-venv/bin/python]

Two crafted files (built from the proto schema, in a temporary folder): ``names``, every event
with its own event metadata entry (name); ``texts``, every event with one distinct string stat.
For each, in fresh processes: tbprof's in-memory read (``read_xspace``) and streamed conversion
(``stream_xspace``, budget unlimited), as growth of peak RSS (VmHWM); the guard's size-only estimate
(``size x memory_factor``, all the guard had before #25) and its estimate from the scanner's
counts (file + scanner columns + ``build_need_bytes``); XProf's ``overview_page`` conversion
peak RSS (bench/xprof_runner.py). Ratios: peak / count estimate (<= 1: honest), tbprof / XProf.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO / "plugin"), "TBPROF_CONVERT_MEMORY_BYTES": str(1 << 40)}

_READ = r"""
import json, sys
from pathlib import Path
import numpy as np
from tbprof._core import wire
from tbprof.readers import xplane
from tbprof.cache.memory_guard import memory_factor
path = Path(sys.argv[1])
def hwm():  # this process's peak RSS in bytes (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
r0 = hwm()
if sys.argv[2] == "stream":
    import tempfile
    from tbprof.readers.xplane_stream import stream_xspace
    from tbprof.cache.disk_cache import DiskCache
    stream_xspace(path, DiskCache(Path(tempfile.mkdtemp()) / "c"), "k", 1 << 40)
    print(json.dumps({"peak_bytes": hwm() - r0}))
    raise SystemExit
xplane.read_xspace(path)
peak = hwm() - r0
data = np.fromfile(path, dtype=np.uint8)
sc = wire.scan(data)
columns = sum(a.nbytes for a in (sc.spans, sc.lines, sc.ev_line, sc.ev_meta, sc.ev_start, sc.ev_dur, sc.st_owner,
                                 sc.st_meta, sc.st_kind, sc.st_value, sc.texts))
size = path.stat().st_size
print(json.dumps({"peak_bytes": peak, "size_estimate": size * memory_factor(path),
                  "count_estimate": size + columns + xplane.build_need_bytes(sc, data)}))
"""


def _names(n: int) -> bytes:
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name=b"/host:CPU")
    for i in range(1, n + 1):
        entry = plane.event_metadata[i]
        entry.id, entry.name = i, b"op_%09d_distinct" % i
    line = plane.lines.add(id=1, name=b"thread", timestamp_ns=1)
    for i in range(1, n + 1):
        line.events.add(metadata_id=i, offset_ps=i, duration_ps=1)
    return space.SerializeToString()


def _texts(n: int) -> bytes:
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name=b"/host:CPU")
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, b"op"
    plane.stat_metadata[1].id, plane.stat_metadata[1].name = 1, b"note"
    line = plane.lines.add(id=1, name=b"thread", timestamp_ns=1)
    for i in range(1, n + 1):
        line.events.add(metadata_id=1, offset_ps=i, duration_ps=1).stats.add(
            metadata_id=1, str_value=b"v%09d_distinct" % i)
    return space.SerializeToString()


def _run(code: str, *args: str) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=ENV)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--xprof-python", default="/opt/xprof-venv/bin/python")
    ap.add_argument("--skip-xprof", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "plugin"))
    print(f"{'file':<7} {'MB':>6} {'read MB':>8} {'stream MB':>10} {'size est MB':>12} {'count est MB':>13} "
          f"{'read/count':>11} {'XProf MB':>9} {'read/XProf':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in (("names", _names), ("texts", _texts)):
            session = Path(tmp) / name / "plugins" / "profile" / "2026_01_01_00_00_00"
            session.mkdir(parents=True)
            path = session / "vm.xplane.pb"
            path.write_bytes(build(args.events))
            r = _run(_READ, str(path), "read")
            s = _run(_READ, str(path), "stream")
            xprof = None
            if not args.skip_xprof:
                out = subprocess.run([args.xprof_python, str(REPO / "bench" / "xprof_runner.py"), "overview_page",
                                      str(path), "--isolate", "--quiet"], capture_output=True, text=True)
                if out.returncode == 0:
                    xprof = json.loads(out.stdout.strip().splitlines()[-1]).get("peak_rss_bytes")
            x = f"{xprof / 1e6:>9.0f} {r['peak_bytes'] / xprof:>11.2f}" if xprof else f"{'-':>9} {'-':>11}"
            print(f"{name:<7} {path.stat().st_size / 1e6:>6.1f} {r['peak_bytes'] / 1e6:>8.0f} "
                  f"{s['peak_bytes'] / 1e6:>10.0f} "
                  f"{r['size_estimate'] / 1e6:>12.0f} {r['count_estimate'] / 1e6:>13.0f} "
                  f"{r['peak_bytes'] / r['count_estimate']:>11.2f} {x}")


if __name__ == "__main__":
    main()
