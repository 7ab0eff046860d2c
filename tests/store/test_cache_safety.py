"""The disk cache holds nothing executable and trusts no one else's folder (issue #15 items 7, 8)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tbprof.cache.disk_cache import cache_key
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import UnsafeCacheDir
from tbprof.readers import chrome_trace, xplane
from tbprof.service.profiles import Profiles
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
    run = next(r for r in profiles.index.runs().values() if r.name.startswith("custom_loop"))
    host = next(iter(run.hosts))
    want = profiles.event_store(run, host)
    profiles.cache.flush()
    (meta,) = cache_dir.rglob("meta.json")
    meta.unlink()
    meta.mkdir()
    again = Profiles(profiles_root, cache_dir=cache_dir)
    assert all(isinstance(again.is_loaded(r, h), bool) for r in again.index.runs().values() for h in r.hosts)
    assert_same_store(want, again.event_store(run, host))
    again.cache.flush()
    assert len(list(cache_dir.rglob("meta.json"))) == 1 and next(cache_dir.rglob("meta.json")).is_file()


def _safe_parent(tmp_path: Path) -> Path:
    parent = tmp_path / "parent"
    parent.mkdir(mode=0o700)
    parent.chmod(0o700)
    return parent


@pytest.mark.parametrize("attack", ["foreign_parent", "world_writable_parent", "foreign_grandparent"])
def test_an_unsafe_parent_is_refused(tmp_path: Path, attack: str) -> None:
    """#25: whoever may rename a folder above the cache can swap the cache itself."""
    parent = _safe_parent(tmp_path)
    (parent / "mid").mkdir(mode=0o700)
    root = parent / "mid" / "cache"
    if attack == "foreign_parent":
        os.chown(parent / "mid", 4242, -1)
    elif attack == "world_writable_parent":
        (parent / "mid").chmod(0o777)
    else:
        os.chown(parent, 4242, -1)
    with pytest.raises(UnsafeCacheDir, match="a folder above the tbprof cache dir") as e:
        ProfileCache(root)
    assert "--cache-dir" in str(e.value)


def test_a_sticky_world_writable_parent_is_fine(tmp_path: Path) -> None:
    parent = _safe_parent(tmp_path)
    parent.chmod(0o1777)  # as /tmp: others cannot rename what they do not own
    ProfileCache(parent / "cache")


def test_a_parent_turning_unsafe_while_running_stops_the_cache(profiles_root: Path, tmp_path: Path) -> None:
    parent = _safe_parent(tmp_path)
    path = xplane_of(profiles_root, "custom_loop")
    cache = ProfileCache(parent / "cache")
    want = cache.get(path, xplane.read_xspace)
    cache.flush()
    parent.chmod(0o777)  # someone may now swap the cache folder under the running process
    assert cache.disk is not None
    assert cache.disk.load(cache_key(path, "xspace")) is None  # no longer trusted
    cache.clear_memory()
    assert_same_store(want, cache.get(path, xplane.read_xspace))  # converted instead
    cache.disk.save("other", want)
    assert not cache.disk.has("other")


def test_a_symlinked_entry_is_not_followed(profiles_root: Path, tmp_path: Path) -> None:
    path = xplane_of(profiles_root, "custom_loop")
    cache = ProfileCache(tmp_path / "cache")
    cache.get(path, xplane.read_xspace)
    cache.flush()
    key = cache_key(path, "xspace")
    entry = tmp_path / "cache" / "stores" / key
    planted = tmp_path / "planted"
    shutil.copytree(entry, planted)
    shutil.rmtree(entry)
    entry.symlink_to(planted)
    assert cache.disk is not None and cache.disk.load(key) is None
    assert planted.is_dir()  # the link's target is not ours to remove


def test_cache_keys_of_a_folder_are_each_files_key(profiles_root: Path, tmp_path: Path) -> None:
    """``cache_keys`` resolves a folder once for all its files (issue #28: a pod's lookup); each
    key is still ``cache_key``'s: through a linked file, a linked folder, '..' in the path, a
    relative path, and a file that is gone (its error)."""
    from tbprof.cache.disk_cache import cache_keys
    from tbprof.errors import ProfileReadError

    files = sorted(profiles_root.rglob("*.xplane.pb"))
    (tmp_path / "file.pb").symlink_to(files[0])
    (tmp_path / "folder").symlink_to(files[1].parent)
    odd = [tmp_path / "file.pb", tmp_path / "folder" / files[1].name,
           files[2].parent / ".." / files[2].parent.name / files[2].name, Path(os.path.relpath(files[3]))]
    paths = files + odd
    assert cache_keys(paths, "xspace") == [cache_key(p, "xspace") for p in paths]
    assert cache_keys(paths, "xspace") != cache_keys(paths, "chrome_trace")
    with pytest.raises(ProfileReadError, match="cannot read the file"):
        cache_keys([files[0], tmp_path / "gone.xplane.pb"], "xspace")


def test_listed_keys_find_what_has_finds(profiles_root: Path, cache_dir: Path) -> None:
    """A pod's lookup lists the stores folder once (issue #28): a key in the listing is still
    checked as ``has`` checks it, one not in it is absent without a stat."""
    path = xplane_of(profiles_root, "jax_mlp")
    cache = ProfileCache(cache_dir)
    assert cache.listed_keys() == set()
    cache.get(path, xplane.read_xspace)
    cache.flush()
    key = cache_key(path, "xspace")
    listed = cache.listed_keys()
    assert listed == {key}
    cache.clear_memory()
    assert cache.contains_key(key, listed) and cache.contains_key(key)
    assert not cache.contains_key("0" * 32, listed) and not cache.contains_key("0" * 32)
    shutil.rmtree(cache_dir / "stores" / key)  # listed, but gone since: has() decides
    assert not cache.contains_key(key, listed)
