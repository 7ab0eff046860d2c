"""One disk -> stream -> read decision (store/cache.convert_file) for the store cache and the
executor's workers (service/executor.convert_host)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof.cache.disk_cache import DiskCache
from tbprof.cache.memory_guard import LIMIT_ENV
from tbprof.errors import MemoryRefusal
from tbprof.readers.xplane import read_xspace
from tbprof.service.executor import HostTask, convert_host


def _dense_file(tmp_path: Path) -> Path:
    """200 k empty events (2 bytes each: a 400 KB file): they pass the size check (5x the file)
    but not the scanner's count check (~56 bytes of columns per event)."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    line = space.planes.add(name=b"/host:CPU").lines.add(id=1, name=b"dense")
    for _ in range(200_000):
        line.events.add()
    path = tmp_path / "dense.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return path


def test_a_worker_streams_a_file_denser_than_its_size_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache streamed such a file after the reader's refusal; a worker used to answer the
    refusal. Now both take the same decision."""
    path = _dense_file(tmp_path)
    n_events = sum(p.n_events for p in read_xspace(path).planes)
    monkeypatch.setenv(LIMIT_ENV, str(4_000_000))  # > 5x the file, < 200 k x 56 bytes
    with pytest.raises(MemoryRefusal):
        read_xspace(path)
    result = convert_host(HostTask("vm", str(path), "xspace", str(tmp_path / "cache")))
    assert "error" not in result, result
    assert result["stored"] and result["summary"]["event_count"] == n_events
    store = DiskCache(tmp_path / "cache").load(result["key"])
    assert store is not None and isinstance(store.planes[0].start_ps, np.memmap)
