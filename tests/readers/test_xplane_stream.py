"""A file larger than the memory budget converts by streaming into the disk cache (issue #16).

The expected store is always the in-memory reader's (``read_xspace``), an independent path
(one ``bytes``, the parallel scanner, columns finished in memory): the streamed entry must
equal it in every column (``tests/core/store_digest.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tbprof.cache.disk_cache import DiskCache, cache_key
from tbprof.cache.memory_guard import LIMIT_ENV, memory_factor
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.readers.kinds import KINDS
from tbprof.readers.xplane import read_xspace
from tbprof.readers.xplane_stream import stream_xspace
from tests.conftest import xplane_of
from tests.core.store_digest import PROFILES, store_digest
from tests.readers.stream_memory import measure

SMALL = [p for p in PROFILES if p[0] != "jax_large"]


# 97 bytes: a prime window, so windows cut headers, varints and events at every kind of offset;
# None: the window a 4 MB budget gives (128 KB: 1/32 of it), several windows per file.
@pytest.mark.parametrize(("window_bytes", "budget_bytes"), [(97, 64 << 20), (None, 4 << 20)])
@pytest.mark.parametrize(("name", "host"), SMALL)
def test_streamed_store_equals_the_in_memory_store(profiles_root: Path, tmp_path: Path, name: str, host: str,
                                                   window_bytes: int | None, budget_bytes: int) -> None:
    path = xplane_of(profiles_root, name, host)
    want = store_digest(read_xspace(path))
    disk = DiskCache(tmp_path / "cache")
    got = stream_xspace(path, disk, "entry", budget_bytes, window_bytes=window_bytes)
    assert store_digest(got) == want
    # Loaded from the committed entry: its columns are mapped, not in memory.
    assert isinstance(got.planes[0].start_ps, np.memmap)
    assert disk.has("entry")
    assert not [p.name for p in (tmp_path / "cache" / "stores").iterdir() if p.name.startswith(".")]


def _xspace_cache(cache: ProfileCache, path: Path) -> object:
    kind = KINDS["xspace"]
    return cache.get(path, kind.reader, kind=kind.store_format, streamer=kind.streamer)


def test_a_file_over_the_budget_streams_instead_of_being_refused(profiles_root: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = xplane_of(profiles_root, "keras_cnn")
    want = store_digest(read_xspace(path))
    # Half of the guard's estimate of the in-memory need (5x the file): refused in memory.
    monkeypatch.setenv(LIMIT_ENV, str(path.stat().st_size * memory_factor(path) // 2))
    cache = ProfileCache(tmp_path / "cache")
    store = _xspace_cache(cache, path)
    assert isinstance(store.planes[0].start_ps, np.memmap)  # type: ignore[attr-defined]
    assert store_digest(store) == want  # type: ignore[arg-type]
    assert isinstance(cache.disk, DiskCache) and cache.disk.has(cache_key(path, "xspace"))
    # A second process (a fresh cache object) maps the entry without converting.
    assert store_digest(_xspace_cache(ProfileCache(tmp_path / "cache"), path)) == store_digest(store)  # type: ignore[arg-type]


def test_a_file_denser_than_its_size_says_streams_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 k empty events (2 bytes each: a 400 KB file) pass the size check (5x the file fits) but
    not the scanner's count check (~56 bytes of columns per event): the cache streams the file
    instead of refusing it."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    line = space.planes.add(name=b"/host:CPU").lines.add(id=1, name=b"dense")
    for _ in range(200_000):
        line.events.add()
    path = tmp_path / "dense.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert path.stat().st_size < 500_000
    want = store_digest(read_xspace(path))
    monkeypatch.setenv(LIMIT_ENV, str(4_000_000))  # > 5x the file, < 200 k x 56 bytes
    with pytest.raises(MemoryRefusal):
        read_xspace(path)
    store = _xspace_cache(ProfileCache(tmp_path / "cache"), path)
    assert isinstance(store.planes[0].start_ps, np.memmap)  # type: ignore[attr-defined]
    assert store_digest(store) == want  # type: ignore[arg-type]


def test_without_a_local_disk_cache_the_refusal_says_how_to_stream(profiles_root: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = xplane_of(profiles_root, "jax_mlp")
    monkeypatch.setenv(LIMIT_ENV, str(path.stat().st_size))
    with pytest.raises(MemoryRefusal, match=r"streaming.*--cache-dir"):
        _xspace_cache(ProfileCache(use_disk=False), path)


def test_a_truncated_file_is_a_read_error_and_leaves_no_entry(profiles_root: Path, tmp_path: Path) -> None:
    data = xplane_of(profiles_root, "jax_mlp").read_bytes()
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: len(data) * 2 // 3])
    disk = DiskCache(tmp_path / "cache")
    with pytest.raises(ProfileReadError, match="not a readable XSpace"):
        stream_xspace(path, disk, "entry", 1 << 20, window_bytes=4096)
    assert not disk.has("entry")
    assert os.listdir(tmp_path / "cache" / "stores") == []  # the temporary folder is gone too


def test_a_plane_out_of_time_order_is_sorted_alike(profiles_root: Path, tmp_path: Path) -> None:
    """Events written in reverse (no profiler does, the reader sorts them): the streamed entry is
    sorted in place like the in-memory store, stats re-pointed to their events' new rows."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace.FromString(xplane_of(profiles_root, "jax_mlp").read_bytes())
    busiest = max((line for p in space.planes for line in p.lines), key=lambda line: len(line.events))
    events = list(busiest.events)[::-1]
    del busiest.events[:]
    busiest.events.extend(events)
    offsets = [e.offset_ps for e in busiest.events]
    assert offsets != sorted(offsets)  # so the reader's sorting path runs
    path = tmp_path / "reversed.xplane.pb"
    path.write_bytes(space.SerializeToString())
    want = store_digest(read_xspace(path))
    assert store_digest(stream_xspace(path, DiskCache(tmp_path / "cache"), "entry", 4 << 20)) == want


def test_a_file_cut_or_rewritten_while_streaming_is_a_read_error(profiles_root: Path, tmp_path: Path) -> None:
    """Read by offset, never mapped: a file another process truncates mid-conversion gives a short
    read (a 422 naming the cause), where a mapping would have died with SIGBUS."""
    from tbprof.readers.byte_sources import LocalFile

    path = tmp_path / "live.xplane.pb"
    data = xplane_of(profiles_root, "jax_mlp").read_bytes()
    path.write_bytes(data)
    f = LocalFile(path)
    try:
        assert f.pread(0, 100) == data[:100]
        os.truncate(path, 1000)  # the profiler rewrites the file
        with pytest.raises(ProfileReadError, match="changed while it was being read"):
            f.pread(500, 4096)
        with pytest.raises(ProfileReadError, match="changed while it was being read"):
            f.check_unchanged()
    finally:
        f.close()


def test_an_index_larger_than_its_share_of_the_budget_is_refused(tmp_path: Path) -> None:
    """100 k empty lines (2 bytes each) need a 16-byte index row each: 1.6 MB of index from a
    200 KB file, more than a quarter of a 1 MB budget."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    for _ in range(100_000):
        plane.lines.add()
    path = tmp_path / "lines.xplane.pb"
    path.write_bytes(space.SerializeToString())
    with pytest.raises(MemoryRefusal, match="small fields"):
        stream_xspace(path, DiskCache(tmp_path / "cache"), "entry", 1 << 20)
    assert os.listdir(tmp_path / "cache" / "stores") == []


def test_a_file_of_zeros_is_refused_at_its_first_field(tmp_path: Path) -> None:
    """A sparse file reads as zeros: field number 0, which protobuf never writes. Refused at once
    (the in-memory reader's upb refuses it too), not indexed as a million 2-byte fields."""
    path = tmp_path / "zeros.xplane.pb"
    path.write_bytes(bytes(1 << 20))
    with pytest.raises(ProfileReadError, match=r"field number 0.* at byte 0"):
        stream_xspace(path, DiskCache(tmp_path / "cache"), "entry", 64 << 20)
    with pytest.raises(ProfileReadError):
        read_xspace(path)


def test_peak_anonymous_memory_stays_under_the_budget(profiles_root: Path, tmp_path: Path) -> None:
    """keras_cnn converted in memory, then streamed with a budget of half that conversion's peak
    anonymous memory growth: it streams, builds the same store, and grows by less than the budget
    (measured from outside the child; see stream_memory.py)."""
    path = xplane_of(profiles_root, "keras_cnn")
    in_memory = measure(path, "memory", tmp_path / "m", path)
    # The in-memory need: the sampled peak, or the kernel's exact peak RSS if a fast conversion
    # slipped its peak between two samples (see stream_memory.py).
    budget = max(in_memory["peak_anon_growth_bytes"], in_memory["hwm_growth_bytes"]) // 2
    assert budget > 0
    streamed = measure(path, "stream", tmp_path / "s", path, budget_bytes=budget)
    assert streamed["streamed"]
    assert streamed["digest"] == in_memory["digest"]
    assert streamed["peak_anon_growth_bytes"] < budget, (streamed["peak_anon_growth_bytes"], budget)


def test_an_executor_task_streams_a_file_over_the_budget(profiles_root: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``convert_host`` (process pool and Dask workers) takes the same decision as the cache."""
    from tbprof.analyses.overview.profile_summary import summarize_store
    from tbprof.service.executor import HostTask, convert_host

    path = xplane_of(profiles_root, "jax_mlp")
    want = summarize_store(read_xspace(path))
    monkeypatch.setenv(LIMIT_ENV, str(path.stat().st_size * 2))  # the in-memory reader needs ~5x
    result = convert_host(HostTask("vm", str(path), "xspace", str(tmp_path / "cache")))
    assert "error" not in result, result
    assert result["summary"] == want
    store = DiskCache(tmp_path / "cache").load(result["key"])
    assert store is not None and isinstance(store.planes[-2].start_ps, np.memmap)
