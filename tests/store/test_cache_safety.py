"""The disk cache holds nothing executable and trusts no one else's folder (issue #15 items 7, 8)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tbprof.errors import UnsafeCacheDir
from tbprof.readers import chrome_trace, xplane
from tbprof.service.profiles import Profiles
from tbprof.store.cache import ProfileCache
from tests.conftest import xplane_of
from tests.helpers import assert_same_store


def test_entries_are_json_and_plain_arrays(profiles_root: Path, cache_dir: Path) -> None:
    """jax_mlp has HLO blobs (bytes stats): they must survive without pickle."""
    path = xplane_of(profiles_root, "jax_mlp")
    cache = ProfileCache(cache_dir)
    fresh = cache.get(path, xplane.read_xspace)
    cache.flush()
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix not in (".json", ".npy")]
    for npy in (p for p in files if p.suffix == ".npy"):
        np.load(npy, allow_pickle=False)  # raises on an object array
    assert any(p.blobs for p in fresh.planes)
    reopened = ProfileCache(cache_dir).get(path, lambda p: pytest.fail("converted again"))
    assert_same_store(fresh, reopened)
    for pa, pb in zip(fresh.planes, reopened.planes, strict=True):
        assert pa.blobs == pb.blobs


def test_chrome_trace_round_trip(sample_profiles: Path, cache_dir: Path) -> None:
    path = next((sample_profiles / "torch_cnn").rglob("*.pt.trace.json*"))
    cache = ProfileCache(cache_dir)
    fresh = cache.get(path, chrome_trace.read_chrome_trace, kind="chrome_trace")
    cache.flush()
    reopened = ProfileCache(cache_dir).get(path, lambda p: pytest.fail("converted again"), kind="chrome_trace")
    assert_same_store(fresh, reopened)


@pytest.mark.parametrize("attack", ["world_writable", "group_writable", "foreign_owner", "stores_foreign"])
def test_unsafe_cache_dir_is_refused(tmp_path: Path, attack: str) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    root.chmod(0o700)
    if attack == "world_writable":
        root.chmod(0o777)
    elif attack == "group_writable":
        root.chmod(0o770)
    elif attack == "foreign_owner":
        os.chown(root, 4242, -1) if os.getuid() == 0 else pytest.fail("needs root to chown")
    else:
        (root / "stores").mkdir()
        os.chown(root / "stores", 4242, -1) if os.getuid() == 0 else pytest.fail("needs root to chown")
    with pytest.raises(UnsafeCacheDir, match="refusing the tbprof cache dir") as e:
        ProfileCache(root)
    assert "--cache-dir" in str(e.value)


def test_unreadable_entry_is_a_miss_and_runs_still_answer(profiles_root: Path, tmp_path: Path) -> None:
    """An entry we cannot read (here: meta.json replaced by a folder, as unreadable as a root-owned
    0600 file) is converted again into a fresh entry; listing runs never fails on it."""
    cache_dir = tmp_path / "cache"
    profiles = Profiles(profiles_root, cache_dir=cache_dir)
    run = next(r for r in profiles.runs().values() if r.name.startswith("custom_loop"))
    host = next(iter(run.hosts))
    want = profiles.event_store(run, host)
    profiles.cache.flush()
    (meta,) = cache_dir.rglob("meta.json")
    meta.unlink()
    meta.mkdir()
    again = Profiles(profiles_root, cache_dir=cache_dir)
    assert all(isinstance(again.is_loaded(r, h), bool) for r in again.runs().values() for h in r.hosts)
    assert_same_store(want, again.event_store(run, host))
    again.cache.flush()
    assert len(list(cache_dir.rglob("meta.json"))) == 1 and next(cache_dir.rglob("meta.json")).is_file()
