"""The memory guard counts an XSpace's metadata and text values, not only its size (#25).

2 M events each with its own name (a 75 MB file) peaked at 2.06 GB while the guard estimated
375 MB (5x the size), and a limit of 1.2 GB let it through. The file here is built from the
proto schema: 200 000 events, each with its own event metadata entry (name), about 9 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tbprof._core import wire
from tbprof.cache.memory_guard import LIMIT_ENV, memory_factor
from tbprof.errors import MemoryRefusal
from tbprof.protos import xplane_pb2
from tbprof.readers import xplane
from tests.conftest import REPO

N_NAMES = 200_000

_CHILD = r"""
import json, os, sys
os.environ["TBPROF_CONVERT_MEMORY_BYTES"] = str(1 << 40)
from tbprof.readers import xplane
def hwm():  # this process's peak RSS in bytes (ru_maxrss would carry the parent's over exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
r0 = hwm()
store = xplane.read_xspace(sys.argv[1])
print(json.dumps({"peak_bytes": hwm() - r0}))
"""


def many_names_xspace(path: Path, n: int) -> Path:
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name=b"/host:CPU")
    for i in range(1, n + 1):
        entry = plane.event_metadata[i]
        entry.id, entry.name = i, b"op_%09d_distinct" % i
    line = plane.lines.add(id=1, name=b"thread", timestamp_ns=1)
    for i in range(1, n + 1):
        line.events.add(metadata_id=i, offset_ps=i, duration_ps=1)
    path.write_bytes(space.SerializeToString())
    return path


@pytest.fixture(scope="module")
def names_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The crafted file and the growth of peak RSS while a fresh process reads it."""
    path = many_names_xspace(tmp_path_factory.mktemp("names") / "vm.xplane.pb", N_NAMES)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "plugin")})
    return path, int(json.loads(out.stdout)["peak_bytes"])


def test_the_estimate_covers_the_peak(names_file: tuple[Path, int]) -> None:
    path, peak = names_file
    data = np.fromfile(path, dtype=np.uint8)
    sc = wire.scan(data)
    # What the process holds besides what the builder allocates: the file's bytes and the
    # scanner's columns (the allocation check runs once they exist).
    held = path.stat().st_size + sum(a.nbytes for a in (sc.spans, sc.lines, sc.ev_line, sc.ev_meta, sc.ev_start,
                                                         sc.ev_dur, sc.st_owner, sc.st_meta, sc.st_kind, sc.st_value,
                                                         sc.texts))
    need = xplane.build_need_bytes(sc, data)
    assert peak <= held + need, (peak, held, need)


def test_a_limit_below_the_peak_refuses_it(names_file: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    path, peak = names_file
    limit = int(peak * 0.9)
    assert path.stat().st_size * memory_factor(path) < limit  # the size alone would let it through
    monkeypatch.setenv(LIMIT_ENV, str(limit))
    with pytest.raises(MemoryRefusal, match=r"200,00\d metadata entries"):
        xplane.read_xspace(path)
