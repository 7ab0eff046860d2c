"""Time and peak memory of tbprof on the crafted files of issue #34 (the fourth hostile pass),
each in a fresh process, with the answer or refusal each gets.

    python bench/hostile_bench.py [--scale 1]

Cases (files built in a temporary folder; ``--scale`` multiplies their sizes):

* ``long_name_search`` / ``long_name_sequences``: jax_mlp's XSpace with all 1,350 GPU events named
  by one 1 MiB name; a 1,000-match ``trace_search`` page and ``kernel_sequences`` (answer bytes).
* ``empty_events_gzip``: a gzip of 10 M ``{}`` events read in memory under a 300 MB limit.
* ``distinct_names_stream``: a Chrome trace of 1 M distinct names streamed with a 64 MB budget.
* ``one_long_unit``: one 64 MB event, read in windows of 256 KiB (so one unit spans 256 windows).
* ``gzip_members``: one real gzip member followed by 2 MB of empty members.
* ``odd_json``: a 5,000-digit ``pid`` (the answer: a refusal naming the field).
* ``many_planes_descriptors``: an XSpace of 1,150 one-event planes reopened from the disk cache
  (descriptors the store keeps).

Peak memory is the process' VmHWM growth over its state after imports.
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

_PRELUDE = r"""
import json, os, sys, time
sys.path.insert(0, REPO)
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0
from tbprof.errors import TbprofError
from tbprof.readers.chrome_trace import chrome_trace_from_bytes, read_chrome_trace
from werkzeug.test import Client
from tbprof.http.app import create_app
base = hwm()
t0 = time.perf_counter()
out = {}
"""

_CASES = {
    "long_name_search": r"""
from tests.hostile.profiles import one_name_gpu_xspace
from pathlib import Path
root = Path(WORK)
one_name_gpu_xspace(root / "logs/long/plugins/profile/s/vm.xplane.pb", b"k" * int(SCALE * (1 << 20)))
c = Client(create_app(root / "logs", cache_dir=root / "cache"))
c.get("/data/plugin/tbprof/data", query_string={"run": "long/s", "tool": "profile_summary"})
base = hwm(); t0 = time.perf_counter()
r = c.get("/data/plugin/tbprof/trace_search", query_string={"run": "long/s", "q": "kkkk", "limit": "1000"})
out = {"status": r.status_code, "answer_bytes": len(r.data)}
""",
    "long_name_sequences": r"""
from tests.hostile.profiles import one_name_gpu_xspace
from pathlib import Path
root = Path(WORK)
one_name_gpu_xspace(root / "logs/long/plugins/profile/s/vm.xplane.pb", b"k" * int(SCALE * (1 << 20)))
c = Client(create_app(root / "logs", cache_dir=root / "cache"))
c.get("/data/plugin/tbprof/data", query_string={"run": "long/s", "tool": "profile_summary"})
base = hwm(); t0 = time.perf_counter()
r = c.get("/data/plugin/tbprof/data", query_string={"run": "long/s", "tool": "kernel_sequences",
          "operator_name": "Execute (jit_train_step)", "min_pattern_len": "1"})
out = {"status": r.status_code, "answer_bytes": len(r.data)}
""",
    "empty_events_gzip": r"""
import gzip
path = os.path.join(WORK, "e.trace.json.gz")
n = int(SCALE * 10)
with gzip.open(path, "wb", compresslevel=9) as f:
    f.write(b'{"traceEvents":[' + b"{}," * 1_000_000 * n + b"{}]}")
out["file_bytes"] = os.path.getsize(path)
os.environ["TBPROF_CONVERT_MEMORY_BYTES"] = str(300_000_000)
base = hwm(); t0 = time.perf_counter()
try:
    read_chrome_trace(path); out["answer"] = "read"
except TbprofError as e:
    out["answer"] = str(e)[-160:]
""",
    "distinct_names_stream": r"""
from pathlib import Path
from tbprof.cache.disk_cache import DiskCache
from tbprof.readers.chrome_stream import stream_chrome_trace
path = Path(WORK) / "names.trace.json"
with open(path, "w") as f:
    f.write('{"traceEvents":[')
    for i in range(int(SCALE * 1_000_000)):  # event by event: the writing takes no memory to speak of
        f.write(("," if i else "") + f'{{"ph":"X","pid":1,"tid":1,"ts":{i},"dur":1,"name":"kernel_{i:012d}"}}')
    f.write("]}")
out["file_bytes"] = path.stat().st_size
base = hwm(); t0 = time.perf_counter()
try:
    stream_chrome_trace(path, DiskCache(Path(WORK) / "cache"), "k", 64_000_000); out["answer"] = "read"
except TbprofError as e:
    out["answer"] = str(e)[-140:]
""",
    "one_long_unit": r"""
data = b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"' + b"a" * int(SCALE * (64 << 20)) + b'"}]}'
base = hwm(); t0 = time.perf_counter()
chrome_trace_from_bytes(data, "unit.json", "h", window_bytes=256 << 10)
out["answer"] = "read"
""",
    "gzip_members": r"""
import gzip
data = gzip.compress(b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"k"}]}')
data += gzip.compress(b"") * int(SCALE * 100_000)
out["file_bytes"] = len(data)
base = hwm(); t0 = time.perf_counter()
try:
    chrome_trace_from_bytes(data, "m.json.gz", "h"); out["answer"] = "read"
except TbprofError as e:
    out["answer"] = str(e)[-120:]
""",
    "odd_json": r"""
data = b'{"traceEvents":[{"ph":"X","pid":' + b"9" * 5000 + b',"tid":1,"ts":1,"dur":2,"name":"k"}]}'
try:
    chrome_trace_from_bytes(data, "odd.json", "h"); out["answer"] = "read"
except TbprofError as e:
    out["answer"] = str(e)
""",
    "many_planes_descriptors": r"""
from pathlib import Path
from tbprof.cache.profile_cache import ProfileCache
from tbprof.protos import xplane_pb2
from tbprof.readers.xplane import read_xspace
space = xplane_pb2.XSpace()
for i in range(int(SCALE * 1150)):
    plane = space.planes.add(id=i, name=f"/device:CUSTOM:{i}".encode())
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = b"op"
    plane.lines.add(id=1, name=b"line", timestamp_ns=1000).events.add(metadata_id=1, offset_ps=i, duration_ps=10)
path = Path(WORK) / "many" / "vm.xplane.pb"
path.parent.mkdir()
path.write_bytes(space.SerializeToString())
out["file_bytes"] = path.stat().st_size
w = ProfileCache(Path(WORK) / "cache"); w.get(path, read_xspace); w.flush()
before = len(os.listdir("/proc/self/fd"))
base = hwm(); t0 = time.perf_counter()
store = ProfileCache(Path(WORK) / "cache").get(path, read_xspace)
out["descriptors_kept"] = len(os.listdir("/proc/self/fd")) - before
""",
}

_EPILOGUE = r"""
out["seconds"] = round(time.perf_counter() - t0, 3)
out["peak_growth_mb"] = round((hwm() - base) / 1e6, 1)
print(json.dumps(out))
"""


def run_case(name: str, scale: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="tbprof_hostile_") as work:
        code = (f"REPO = {str(REPO)!r}\nWORK = {work!r}\nSCALE = {scale!r}\n" + _PRELUDE + _CASES[name]
                + _EPILOGUE)
        env = {**os.environ, "PYTHONPATH": str(REPO / "plugin")}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--case", choices=sorted(_CASES), action="append")
    args = parser.parse_args()
    for name in args.case or list(_CASES):
        print(f"{name:26s} {json.dumps(run_case(name, args.scale))}", flush=True)


if __name__ == "__main__":
    main()
