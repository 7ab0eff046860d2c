"""The store cache: disk round trip, single flight, memory bound, key invalidation."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tbprof.cache.profile_cache import ProfileCache
from tbprof.readers import xplane
from tbprof.store.tables import ProfileStore
from tests.conftest import xplane_of
from tests.helpers import assert_same_store


def test_disk_round_trip_is_identical(profiles_root: Path, cache_dir: Path) -> None:
    path = xplane_of(profiles_root, "jax_mlp")
    first = ProfileCache(cache_dir)
    fresh = first.get(path, xplane.read_xspace)
    first.flush()
    calls: list[Path] = []

    def must_not_convert(p: Path) -> ProfileStore:
        calls.append(p)
        return xplane.read_xspace(p)

    reopened = ProfileCache(cache_dir).get(path, must_not_convert)
    assert calls == []  # served from disk
    assert_same_store(fresh, reopened)


def test_single_flight(profiles_root: Path, cache_dir: Path) -> None:
    path = xplane_of(profiles_root, "custom_loop")
    cache = ProfileCache(cache_dir, use_disk=False)
    calls = 0
    gate = threading.Event()

    def slow_loader(p: Path) -> ProfileStore:
        nonlocal calls
        calls += 1
        gate.wait(5)
        return xplane.read_xspace(p)

    results: list[ProfileStore] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(path, slow_loader))) for _ in range(6)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(30)
    assert calls == 1 and len(results) == 6
    assert all(r is results[0] for r in results)


def test_memory_bound_evicts_oldest(profiles_root: Path, cache_dir: Path) -> None:
    a, b = xplane_of(profiles_root, "custom_loop"), xplane_of(profiles_root, "keras_cnn")
    cache = ProfileCache(cache_dir, memory_bytes=1, use_disk=False)  # room for one store only
    sa = cache.get(a, xplane.read_xspace)
    cache.get(b, xplane.read_xspace)
    assert cache.contains(b) and not cache.contains(a)
    assert cache.get(a, xplane.read_xspace) is not sa  # converted again


def test_rewritten_file_misses(tmp_path: Path, profiles_root: Path, cache_dir: Path) -> None:
    src = xplane_of(profiles_root, "custom_loop")
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(src.read_bytes())
    cache = ProfileCache(cache_dir)
    first = cache.get(path, xplane.read_xspace)
    cache.flush()
    other = xplane_of(profiles_root, "keras_cnn")
    path.write_bytes(other.read_bytes())
    second = ProfileCache(cache_dir).get(path, xplane.read_xspace)
    assert second.n_events != first.n_events
    assert second.n_events == xplane.read_xspace(other).n_events


def test_damaged_cache_entry_is_rebuilt(profiles_root: Path, cache_dir: Path) -> None:
    path = xplane_of(profiles_root, "custom_loop")
    cache = ProfileCache(cache_dir)
    want = cache.get(path, xplane.read_xspace)
    cache.flush()
    for meta in cache_dir.rglob("meta.json"):
        meta.write_bytes(b"garbage")
    got = ProfileCache(cache_dir).get(path, xplane.read_xspace)
    assert_same_store(want, got)


def _same_size_rewrite(path: Path, old: bytes, new: bytes, replace: bool) -> None:
    """Rewrites ``path`` with ``old`` replaced by ``new`` (same length), then restores its mtime."""
    st = path.stat()
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) >= 1
    data = data.replace(old, new)
    if replace:  # written beside and renamed over: a new inode
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    else:  # rewritten in place: the same inode, a new ctime
        with open(path, "r+b") as f:
            f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@pytest.mark.parametrize("replace", [False, True])
def test_same_size_and_mtime_rewrite_misses(tmp_path: Path, profiles_root: Path, cache_dir: Path,
                                            replace: bool) -> None:
    """#25: a file rewritten with its size and mtime kept is converted again, also after a restart
    (a new ProfileCache over the same disk cache); the key holds its inode and ctime."""
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(xplane_of(profiles_root, "custom_loop").read_bytes())
    cache = ProfileCache(cache_dir)
    first = cache.get(path, xplane.read_xspace)
    cache.flush()
    assert any(p.name == "/host:CPU" for p in first.planes)
    _same_size_rewrite(path, b"/host:CPU", b"/host:XPU", replace)
    for reopened in (cache, ProfileCache(cache_dir)):
        names = {p.name for p in reopened.get(path, xplane.read_xspace).planes}
        assert "/host:XPU" in names and "/host:CPU" not in names
