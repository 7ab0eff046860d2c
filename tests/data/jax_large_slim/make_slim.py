#!/usr/bin/env python3
"""Writes tests/data/jax_large_slim/ from the real jax_large profile (shared profiles'
``jax_large.tar.gz``: a JAX op-by-op loop on GPU 0 of a two-GPU machine, 60.7 MB).

What it keeps, unchanged: every plane's metadata (event and stat metadata, plane stats: the
device capabilities, the HLO protos on ``/host:metadata``), the idle ``/device:GPU:1`` plane
(no events: the profiler lists every GPU of the machine), and GPU 0's events that start in the
first ``WINDOW_PS`` of each of its lines. What it drops: the host threads' events (1.99 M, most
of them the Python tracer's) and ``/host:__ScopeRangeCallStack__``. The result is a real
profile cut to a window, small enough for the repository (about 0.9 MB), for the tools that read
the device side (roofline_model's per-core time divides by every GPU plane, idle ones included).

    python tests/data/jax_large_slim/make_slim.py /path/to/jax_large/.../vm.xplane.pb
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "plugin"))

from tbprof.protos import xplane_pb2  # noqa: E402

WINDOW_PS = 400_000_000_000  # the first 0.4 s of each GPU 0 line
SESSION = "2026_11_26_00_33_10"  # the source profile's session folder


def slim(space: xplane_pb2.XSpace) -> xplane_pb2.XSpace:
    out = xplane_pb2.XSpace()
    out.CopyFrom(space)
    del out.planes[:]
    for plane in space.planes:
        name = bytes(plane.name).decode()
        if name == "/host:__ScopeRangeCallStack__":
            continue
        kept = out.planes.add()
        kept.CopyFrom(plane)
        if name == "/host:CPU":
            del kept.lines[:]
        elif name.startswith("/device:GPU:"):
            for line in kept.lines:
                events = [e for e in line.events if e.offset_ps < WINDOW_PS]
                del line.events[:]
                line.events.extend(events)
    return out


def main(source: str) -> None:
    space = xplane_pb2.XSpace()
    space.ParseFromString(Path(source).read_bytes())
    target = HERE / "plugins" / "profile" / SESSION / "vm.xplane.pb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(slim(space).SerializeToString())
    print(f"{target}: {target.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
