"""Bytes-valued stats count in the memory budget (#25).

8 profiles carrying a 40 MB HLO proto each grew RSS to 389 MB under a 100 MB budget: a plane's
``nbytes`` left its ``blobs`` out. Here each crafted XSpace (built from the proto schema) holds
one event with a 4 MB bytes stat; the budget has room for one such store.
"""

from __future__ import annotations

from pathlib import Path

from tbprof.cache.profile_cache import ProfileCache
from tbprof.protos import xplane_pb2
from tbprof.readers import xplane

BLOB_BYTES = 4 << 20


def _blob_xspace(path: Path, fill: bytes) -> Path:
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name=b"/host:CPU")
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = b"hlo_proto"
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = b"op"
    line = plane.lines.add(id=1, name=b"thread", timestamp_ns=1000)
    event = line.events.add(metadata_id=1, offset_ps=0, duration_ps=10)
    event.stats.add(metadata_id=1, bytes_value=fill * BLOB_BYTES)
    path.write_bytes(space.SerializeToString())
    return path


def test_a_planes_bytes_stats_are_in_its_size(tmp_path: Path) -> None:
    store = xplane.read_xspace(_blob_xspace(tmp_path / "a.xplane.pb", b"a"))
    assert sum(len(b) for p in store.planes for b in p.blobs) == BLOB_BYTES
    assert store.nbytes >= BLOB_BYTES


def test_blob_stores_are_evicted_under_the_budget(tmp_path: Path) -> None:
    # Room for one store (its blob and a little more), not two.
    cache = ProfileCache(use_disk=False, memory_bytes=BLOB_BYTES + (BLOB_BYTES // 2))
    paths = [_blob_xspace(tmp_path / f"{c}.xplane.pb", c.encode()) for c in "abc"]
    for path in paths:
        cache.get(path, xplane.read_xspace)
    assert [cache.contains(p) for p in paths] == [False, False, True]
