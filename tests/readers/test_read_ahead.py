"""``read_ahead``: a file read on a thread while the command imports, taken once by the ordinary
read, and never taken when the file changed since."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tbprof.readers import files, xplane
from tests.conftest import xplane_of


@pytest.fixture
def ahead(monkeypatch: pytest.MonkeyPatch) -> files._ReadAhead:
    """A fresh read-ahead slot, and no size floor (the demo profiles are below it)."""
    slot = files._ReadAhead()
    monkeypatch.setattr(files, "_AHEAD", slot)
    monkeypatch.setattr(files, "READ_AHEAD_MIN_BYTES", 0)
    return slot


def _copy(profiles_root: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "vm.xplane.pb"
    shutil.copyfile(xplane_of(profiles_root, "jax_mlp"), dest)
    return dest


def test_read_ahead_gives_the_file_once(ahead: files._ReadAhead, profiles_root: Path, tmp_path: Path) -> None:
    path = _copy(profiles_root, tmp_path)
    files.read_ahead(path)
    early = files.read_profile_array(path)
    assert early.dtype == np.uint8 and early.tobytes() == path.read_bytes()
    assert ahead.take(path) is None  # taken: a second read is an ordinary one
    assert files.read_profile_array(path).tobytes() == path.read_bytes()
    # The store of the early bytes is the store of an ordinary read.
    files.read_ahead(path)
    from_early, ordinary = xplane.read_xspace(path), xplane.read_xspace(path)
    assert from_early.n_events == ordinary.n_events > 0
    for a, b in zip(from_early.planes, ordinary.planes, strict=True):
        assert np.array_equal(a.start_ps, b.start_ps) and np.array_equal(a.dur_ps, b.dur_ps)


def test_a_file_changed_since_is_read_again(ahead: files._ReadAhead, profiles_root: Path, tmp_path: Path) -> None:
    path = _copy(profiles_root, tmp_path)
    files.read_ahead(path)
    assert ahead._thread is not None
    ahead._thread.join()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # rewritten: another size (and inode time)
    assert files.read_profile_array(path).tobytes() == data[: len(data) // 2]


def test_another_file_is_not_given_the_early_bytes(ahead: files._ReadAhead, profiles_root: Path,
                                                   tmp_path: Path) -> None:
    path = _copy(profiles_root, tmp_path)
    other = tmp_path / "other.xplane.pb"
    shutil.copyfile(xplane_of(profiles_root, "custom_loop"), other)
    files.read_ahead(path)
    assert files.read_profile_array(other).tobytes() == other.read_bytes()
    assert files.read_profile_array(path).tobytes() == path.read_bytes()  # still waiting for its file


def test_small_files_and_special_files_are_not_read_ahead(monkeypatch: pytest.MonkeyPatch, profiles_root: Path,
                                                          tmp_path: Path) -> None:
    slot = files._ReadAhead()
    monkeypatch.setattr(files, "_AHEAD", slot)
    path = _copy(profiles_root, tmp_path)
    assert path.stat().st_size < files.READ_AHEAD_MIN_BYTES
    files.read_ahead(path)
    assert slot._thread is None
    fifo = tmp_path / "pipe.xplane.pb"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "READ_AHEAD_MIN_BYTES", 0)
    files.read_ahead(fifo)  # refused by open_regular on the thread, never blocks
    assert slot.take(fifo) is None
    files.read_ahead(tmp_path / "missing.xplane.pb")


def test_a_file_too_large_for_the_memory_is_not_read_ahead(ahead: files._ReadAhead, profiles_root: Path,
                                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversion would refuse it (MemoryRefusal): the read-ahead does not read it first."""
    path = _copy(profiles_root, tmp_path)
    # Less memory than the file itself, so the conversion's estimate (a multiple of it) cannot fit.
    monkeypatch.setenv("TBPROF_CONVERT_MEMORY_BYTES", str(path.stat().st_size // 2))
    files.read_ahead(path)
    assert ahead.take(path) is None
