"""Local XSpace files read through read-only maps (``_core/mapped.pyx``, ``files.map_profile``):
the same store as the file's bytes give; a file cut short, grown or rewritten under the map is
refused as "changed while it was being read" (never SIGBUS), during the scan and in a later lazy
decode of its stats; a SIGBUS anywhere else still ends the process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tbprof._core import mapped
from tbprof.errors import ProfileReadError
from tbprof.readers import files, xplane
from tests.conftest import XSPACE_PROFILES
from tests.core.store_digest import store_digest

pytestmark = pytest.mark.skipif(not mapped.supported(), reason="maps of profile files are Linux-only")


def _all_xplanes(root: Path) -> list[Path]:
    return sorted(p for name in XSPACE_PROFILES for p in (root / name).rglob("*.xplane.pb"))


def _largest(root: Path) -> Path:
    return max(_all_xplanes(root), key=lambda p: p.stat().st_size)


def _no_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails any read of the file other than through its map."""
    def refused(*a: object, **k: object) -> None:
        raise AssertionError("read instead of mapped")

    monkeypatch.setattr(xplane, "read_beside", refused)
    monkeypatch.setattr(xplane, "read_profile_array", refused)


def test_every_real_xplane_read_through_its_map_is_the_store_of_its_bytes(
        profiles_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)
    _no_reads(monkeypatch)
    paths = _all_xplanes(profiles_root)
    assert paths
    for path in paths:
        for lazy in (False, True):
            got = xplane.read_xspace(path, lazy=lazy)
            want = xplane.xspace_from_bytes(path.read_bytes(), str(path), got.host, 0 if lazy else None)
            for store in (got, want):
                for plane in store.planes:
                    _ = plane.stats
            assert store_digest(got) == store_digest(want)


def test_a_file_from_the_threshold_on_is_mapped_and_a_smaller_one_read(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 64 << 10)
    big, small = tmp_path / "big", tmp_path / "small"
    big.write_bytes(b"\x07" * files.MAP_MIN_BYTES)
    small.write_bytes(b"\x07" * (files.MAP_MIN_BYTES - 1))
    got = files.map_profile(big)
    assert got is not None
    assert not got.array.flags.writeable
    assert got.array.tobytes() == big.read_bytes()
    assert files.map_profile(small) is None
    assert files.map_profile(tmp_path / "missing") is None  # the read reports it
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert files.map_profile(fifo) is None  # never opened for a blocking read: refused by the read


def test_an_empty_file_is_never_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to map: the read reports the empty file (a 422), whatever the threshold."""
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    empty = tmp_path / "vm.xplane.pb"
    empty.write_bytes(b"")
    assert files.map_profile(empty) is None
    with pytest.raises(ProfileReadError, match="empty"):
        xplane.read_xspace(empty)


def test_pages_cut_off_under_a_map_read_as_zeros_and_mark_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "f"
    size = 3 << 20
    path.write_bytes(b"\x01" * size)
    fd = os.open(path, os.O_RDONLY)
    try:
        m = mapped.MappedFile(fd, size)
    finally:
        os.close(fd)
    array = np.frombuffer(memoryview(m), dtype=np.uint8)
    assert int(array[:4096].sum()) == 4096 and not m.changed
    keep = 4096 + 100
    os.truncate(path, keep)
    # The whole map is read, every thread's way: numpy's sum, a copy, a slice as bytes.
    assert int(array.sum()) == keep
    assert m.changed
    assert bytes(memoryview(m)[keep + 10:keep + 1000]) == bytes(990)
    assert array[-1] == 0


def test_a_sigbus_elsewhere_still_ends_the_process(tmp_path: Path) -> None:
    """The handler passes a fault outside its maps to what was there before (the default: the
    process ends), after a map of its own has been made."""
    script = textwrap.dedent(f"""
        import mmap, os
        from tbprof._core import mapped
        path = {str(tmp_path / "other")!r}
        open(path, "wb").write(b"x" * 8192)
        fd = os.open(path, os.O_RDONLY)
        ours = mapped.MappedFile(fd, 8192)
        theirs = mmap.mmap(fd, 8192, prot=mmap.PROT_READ)
        os.truncate(path, 0)
        print(theirs[5000])
        print("survived")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGBUS, proc
    assert "survived" not in proc.stdout


def test_a_file_cut_short_after_it_is_mapped_is_refused_as_changed(
        profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    _no_reads(monkeypatch)
    source = _largest(profiles_root)
    path = tmp_path / "vm.xplane.pb"
    real_map = files.map_profile
    for keep in (0, 4096, source.stat().st_size // 3):
        shutil.copyfile(source, path)

        def cut(p: Path, keep: int = keep) -> files.MappedProfile | None:
            got = real_map(p)
            os.truncate(p, keep)  # before a byte is scanned: every scan thread reads zeros
            return got

        monkeypatch.setattr(xplane, "map_profile", cut)
        with pytest.raises(ProfileReadError, match="changed while it was being read"):
            xplane.read_xspace(path)


def test_a_file_grown_or_rewritten_after_it_is_mapped_is_refused_as_changed(
        profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    _no_reads(monkeypatch)
    source = _largest(profiles_root)
    path = tmp_path / "vm.xplane.pb"
    real_map = files.map_profile

    def appended(p: Path) -> None:
        with open(p, "ab") as f:  # a profiler still writing it
            f.write(b"\x00" * 16)

    def rewritten(p: Path) -> None:
        data = p.read_bytes()
        with open(p, "r+b") as f:  # the same size, other bytes, a later mtime
            f.write(data[::-1])
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))

    for change in (appended, rewritten):
        shutil.copyfile(source, path)

        def changing(p: Path, change: Callable[[Path], None] = change) -> files.MappedProfile | None:
            got = real_map(p)
            change(p)
            return got

        monkeypatch.setattr(xplane, "map_profile", changing)
        with pytest.raises(ProfileReadError, match="changed while it was being read"):
            xplane.read_xspace(path)


def test_a_lazy_store_whose_file_is_cut_short_later_refuses_its_stats(
        profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server holds a lazy store for hours; its file is then overwritten (``cp`` truncates
    it first): the next plane's stats are refused as changed, and the process goes on."""
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    _no_reads(monkeypatch)
    def planes_with_events(p: Path) -> int:
        return sum(1 for plane in xplane.read_xspace(p).planes if plane.n_events)

    source = max(_all_xplanes(profiles_root), key=planes_with_events)
    path = tmp_path / "vm.xplane.pb"
    shutil.copyfile(source, path)
    store = xplane.read_xspace(path, lazy=True)
    planes = [p for p in store.planes if p.n_events]
    assert len(planes) >= 2
    _ = planes[0].stats  # before the change: decoded from the map
    os.truncate(path, 0)
    with pytest.raises(ProfileReadError, match="changed while it was being read"):
        _ = planes[1].stats


def test_a_lazy_store_whose_file_is_replaced_reads_the_mapped_one(
        profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file renamed over the mapped one (how most writers replace a file) leaves the mapped
    file whole: its stats still decode, the same as an eager read of the original bytes."""
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 0)
    source = _largest(profiles_root)
    path = tmp_path / "vm.xplane.pb"
    shutil.copyfile(source, path)
    store = xplane.read_xspace(path, lazy=True)
    other = tmp_path / "other"
    other.write_bytes(b"\x00" * 100)
    os.replace(other, path)
    for plane in store.planes:
        _ = plane.stats
    want = xplane.xspace_from_bytes(source.read_bytes(), str(path), store.host)
    for plane in want.planes:
        _ = plane.stats
    assert store_digest(store) == store_digest(want)


def test_when_every_slot_is_taken_the_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "MAP_MIN_BYTES", 64 << 10)
    path = tmp_path / "f"
    path.write_bytes(b"\x05" * files.MAP_MIN_BYTES)
    held = []
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError, match="too many mapped profile files"):
            for _ in range(100_000):
                held.append(mapped.MappedFile(fd, files.MAP_MIN_BYTES))
        assert files.map_profile(path) is None
        held.pop()
        assert files.map_profile(path) is not None  # a slot freed is used again
    finally:
        os.close(fd)
        held.clear()
