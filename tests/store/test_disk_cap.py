"""The disk cache is bounded and cleans up after itself (#25).

A size cap with least-recently-used eviction that never removes an entry a live store maps (in
this or another process), the entries of a rewritten file's older versions removed, leftovers of
killed writers removed at start, a transient ``OSError`` never costing a good entry, and a
streamed conversion that hits a full disk releasing its mapped files at once.
"""

from __future__ import annotations

import errno
import gc
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tbprof.cache import disk_cache
from tbprof.cache.disk_cache import (
    DEFAULT_MAX_BYTES,
    MAX_BYTES_ENV,
    DiskCache,
    default_max_bytes,
    locked_temp_folder,
    max_bytes_from_env,
)
from tbprof.cache.entry_writer import EntryWriter
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import MemoryRefusal
from tbprof.readers import xplane
from tbprof.readers.xplane_stream import stream_xspace
from tests.conftest import REPO, xplane_of
from tests.helpers import assert_same_store

NAMES = ("custom_loop", "keras_cnn", "jax_mlp")


def _sizes(profiles_root: Path, tmp_path: Path) -> dict[str, int]:
    """Each profile's entry size, from a scratch cache of its own."""
    out = {}
    for name in NAMES:
        scratch = DiskCache(tmp_path / f"scratch_{name}")
        scratch.save(name, xplane.read_xspace(xplane_of(profiles_root, name)))
        ((_, _, size, _),) = scratch.entries()
        out[name] = size
    return out


def _age(disk: DiskCache, key: str, seconds_ago: float) -> None:
    when = time.time() - seconds_ago
    os.utime(disk.entry_path(key), (when, when))


def test_least_recently_used_entries_go_first(profiles_root: Path, tmp_path: Path) -> None:
    sizes = _sizes(profiles_root, tmp_path)
    a, b, c = NAMES
    # Room for any two, not for all three: saving c must remove one entry, b (used least recently).
    disk = DiskCache(tmp_path / "cache", max_bytes=sum(sizes.values()) - 1)
    for name in (a, b):
        disk.save(name, xplane.read_xspace(xplane_of(profiles_root, name)))
        _age(disk, name, 1000)
    assert disk.load(a) is not None  # a is used now; the store is dropped at once
    disk.save(c, xplane.read_xspace(xplane_of(profiles_root, c)))
    assert {k for k, *_ in disk.entries()} == {a, c}
    assert sum(size for _, _, size, _ in disk.entries()) <= disk.max_bytes


def test_an_entry_in_use_is_not_evicted(profiles_root: Path, tmp_path: Path) -> None:
    sizes = _sizes(profiles_root, tmp_path)
    a, b, c = NAMES
    disk = DiskCache(tmp_path / "cache", max_bytes=sum(sizes.values()) - 1)
    for name in (a, b):
        disk.save(name, xplane.read_xspace(xplane_of(profiles_root, name)))
    _age(disk, a, 500)
    _age(disk, b, 1000)  # b is the least recently used, but a live store maps it
    live = disk.load(b)
    assert live is not None
    disk.save(c, xplane.read_xspace(xplane_of(profiles_root, c)))
    assert {k for k, *_ in disk.entries()} == {b, c}
    assert_same_store(live, xplane.read_xspace(xplane_of(profiles_root, b)))  # its mappings still read
    del live  # released: now it may go
    gc.collect()
    disk.max_bytes = sizes[c]
    disk.trim(keep=c)
    assert {k for k, *_ in disk.entries()} == {c}


_HOLDER = r"""
import sys
from pathlib import Path
from tbprof.cache.disk_cache import DiskCache
store = DiskCache(Path(sys.argv[1]), max_bytes=1 << 40).load(sys.argv[2])
print("held" if store is not None else "missing", flush=True)
sys.stdin.read()
"""


def test_an_entry_another_process_maps_is_not_evicted(profiles_root: Path, tmp_path: Path) -> None:
    disk = DiskCache(tmp_path / "cache", max_bytes=1 << 40)
    disk.save("a", xplane.read_xspace(xplane_of(profiles_root, "custom_loop")))
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugin")}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(disk.root), "a"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not disk.evict("a")
        disk.max_bytes = 0
        disk.trim()
        assert disk.has("a")
    finally:
        holder.communicate("", timeout=60)
    assert disk.evict("a") and not disk.has("a")


def test_a_rewritten_files_old_entry_is_removed(profiles_root: Path, tmp_path: Path) -> None:
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(xplane_of(profiles_root, "custom_loop").read_bytes())
    cache_dir = tmp_path / "cache"
    cache = ProfileCache(cache_dir)
    cache.get(path, xplane.read_xspace)
    cache.flush()
    assert len(DiskCache(cache_dir).entries()) == 1
    path.write_bytes(xplane_of(profiles_root, "keras_cnn").read_bytes())
    again = ProfileCache(cache_dir)
    again.get(path, xplane.read_xspace)
    again.flush()
    (entry,) = DiskCache(cache_dir).entries()
    assert entry[0] == disk_cache.cache_key(path, "xspace")


def test_leftovers_are_removed_at_start_but_not_a_writers_folder(tmp_path: Path) -> None:
    stores = tmp_path / "cache" / "stores"
    stores.mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").chmod(0o700)
    orphan = stores / f".{'0' * 32}.abc123"  # the temporary folder of a killed writer
    stale = stores / f".stale-{'1' * 32}-99-abcd"
    for folder in (orphan, stale):
        folder.mkdir()
        (folder / "p0_start_ps.npy").write_bytes(b"x" * 100)
    entry = stores / ("2" * 32)
    entry.mkdir()
    with locked_temp_folder(stores, f".{'3' * 32}.") as writing:
        DiskCache(tmp_path / "cache")
        assert writing.is_dir()  # a live writer's folder stays
    assert not orphan.exists() and not stale.exists()
    assert entry.is_dir()


@pytest.mark.parametrize("code", [errno.EMFILE, errno.EAGAIN])
def test_a_transient_error_keeps_a_good_entry(profiles_root: Path, tmp_path: Path, code: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    disk = DiskCache(tmp_path / "cache")
    disk.save("a", xplane.read_xspace(xplane_of(profiles_root, "custom_loop")))
    real_open = os.open
    calls = 0

    def failing_open(path: object, flags: int, *args: object, **kwargs: object) -> int:
        nonlocal calls
        calls += 1
        if calls == 3:  # a column file, after the entry and meta.json were opened
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(disk_cache.os, "open", failing_open)
    assert disk.load("a") is None  # a miss for now
    monkeypatch.setattr(disk_cache.os, "open", real_open)
    assert disk.has("a") and disk.load("a") is not None


def _mapped_under(folder: Path) -> list[str]:
    text = Path("/proc/self/maps").read_text()
    return [line for line in text.splitlines() if str(folder) in line]


def test_disk_full_while_streaming_releases_the_mapped_files(profiles_root: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = xplane_of(profiles_root, "keras_cnn")
    disk = DiskCache(tmp_path / "cache")
    real_save = EntryWriter.save

    def save_or_full(self: EntryWriter, name: str, array: np.ndarray) -> None:
        if name.endswith("_depth"):  # while a plane is finished in place: its columns are mapped
            assert _mapped_under(disk.root)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(self, name, array)

    monkeypatch.setattr(EntryWriter, "save", save_or_full)
    with pytest.raises(MemoryRefusal, match="No space left") as refusal:
        stream_xspace(path, disk, "a", 64 << 20)
    assert refusal.value.__cause__ is None
    assert _mapped_under(disk.root) == []  # released while the answer is still held
    assert not [p for p in (disk.root / "stores").iterdir()]


def test_cap_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, "3G")
    assert max_bytes_from_env(tmp_path) == 3 << 30
    monkeypatch.setenv(MAX_BYTES_ENV, "12345")
    assert DiskCache(tmp_path / "c").max_bytes == 12345
    monkeypatch.setenv(MAX_BYTES_ENV, "lots")
    total = shutil.disk_usage(tmp_path).total
    assert max_bytes_from_env(tmp_path) == min(DEFAULT_MAX_BYTES, total // 10) == default_max_bytes(tmp_path)


def test_columns_are_plain_arrays_read_without_following_links(profiles_root: Path, tmp_path: Path) -> None:
    """A column replaced by a symlink (to a file the attacker controls) makes the entry a miss."""
    disk = DiskCache(tmp_path / "cache")
    disk.save("a", xplane.read_xspace(xplane_of(profiles_root, "custom_loop")))
    column = disk.entry_path("a") / "p0_start_ps.npy"
    elsewhere = tmp_path / "elsewhere.npy"
    np.save(elsewhere, np.zeros(3, dtype=np.int64))
    column.unlink()
    column.symlink_to(elsewhere)
    assert disk.load("a") is None
    assert elsewhere.exists() and not disk.has("a")


def test_partials_are_trimmed_with_the_stores(profiles_root: Path, tmp_path: Path) -> None:
    """Per-host partials (files beside the stores) count in the cap, least recently used first, and
    a rewritten file's old partials go with its old entry."""
    from tbprof.service.partials import PartialFiles

    disk = DiskCache(tmp_path / "cache", max_bytes=1 << 40)
    files = PartialFiles(disk.root)
    for i in range(3):
        files.save(f"{i:032x}", b"x" * 1000)
        when = time.time() - 1000 + i  # partial 0 is the least recently used
        os.utime(files._path(f"{i:032x}"), (when, when))
    assert files.load(f"{0:032x}") is not None  # used now: partial 1 is the oldest
    disk.max_bytes = 2000
    disk.trim()
    assert [files.load(f"{i:032x}") is not None for i in range(3)] == [True, False, True]
    # A rewritten file: its old entry and that entry's partial go, the new ones stay.
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(xplane_of(profiles_root, "custom_loop").read_bytes())
    disk.max_bytes = 1 << 40
    old_key = disk_cache.cache_key(path, "xspace")
    disk.save(old_key, xplane.read_xspace(path))
    files.save(old_key, b"{}")
    path.write_bytes(xplane_of(profiles_root, "keras_cnn").read_bytes())
    new_key = disk_cache.cache_key(path, "xspace")
    disk.save(new_key, xplane.read_xspace(path))
    assert not disk.has(old_key) and files.load(old_key) is None and disk.has(new_key)
