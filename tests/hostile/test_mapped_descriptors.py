"""A store opened from the disk cache keeps no descriptor per column (issue #34, medium).

An XSpace of 1,150 planes of one event each (~80 KB) opened from the disk cache pinned 17
descriptors per plane (``np.memmap`` keeps a duplicate of each column's), 19,560 in all. Columns
are mapped without keeping descriptors: reopening the store adds a bounded few. The file is written
here from the XSpace schema's fields (planes, lines, events, event metadata).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tbprof.cache.profile_cache import ProfileCache
from tbprof.protos import xplane_pb2
from tbprof.readers.xplane import read_xspace

N_PLANES = 1150


def _many_planes(path: Path) -> None:
    space = xplane_pb2.XSpace()
    for i in range(N_PLANES):
        plane = space.planes.add(id=i, name=f"/device:CUSTOM:{i}".encode())
        plane.event_metadata[1].id = 1
        plane.event_metadata[1].name = b"op"
        line = plane.lines.add(id=1, name=b"line", timestamp_ns=1000)
        line.events.add(metadata_id=1, offset_ps=i, duration_ps=10)
    path.parent.mkdir(parents=True)
    path.write_bytes(space.SerializeToString())


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_store_from_the_disk_cache_keeps_few_descriptors(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "many" / "vm.xplane.pb"
    _many_planes(path)
    writer = ProfileCache(tmp_path / "cache")
    first = writer.get(path, read_xspace)
    writer.persist_pending()
    writer.flush()  # the write runs on a thread: wait for it
    assert writer.disk is not None and writer.contains(path)

    before = _descriptors()
    reader = ProfileCache(tmp_path / "cache")
    store = reader.get(path, lambda p: (_ for _ in ()).throw(AssertionError("converted, not loaded")))
    assert isinstance(store.planes[0].start_ps, np.memmap)  # read from the entry
    assert len(store.planes) == len(first.planes) >= N_PLANES
    # Every column reads as written.
    assert [int(p.dur_ps.sum()) for p in store.planes] == [int(p.dur_ps.sum()) for p in first.planes]
    # One descriptor for the entry's lock (held as long as the store) and a few of the cache's own.
    assert _descriptors() - before < 16
    del store
