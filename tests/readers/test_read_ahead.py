"""A profile file read and scanned ahead (readers/read_ahead.py): handed to its reader once,
only while the file is unchanged, never where it would not fit or is converted already; a failed
read or scan ahead leaves the reader to read and report, and ``tbprof summary`` answers the same
with it."""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tbprof._core.wire import ScanResult
from tbprof.cache.keys import cache_key, converted_on_disk
from tbprof.cli import main as cli
from tbprof.errors import ProfileReadError
from tbprof.readers import files, read_ahead, xplane
from tests.conftest import xplane_of
from tests.helpers import assert_same_store


@pytest.fixture(autouse=True)
def _no_slot_left() -> Iterator[None]:
    yield
    read_ahead.discard()


@pytest.fixture()
def one_host(profiles_root: Path, tmp_path: Path) -> Path:
    """A logdir of one real host (jax_mlp's XSpace; its Chrome trace left out)."""
    source = xplane_of(profiles_root, "jax_mlp")
    session = tmp_path / "logdir" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    shutil.copy(source, session / "vm.xplane.pb")
    return tmp_path / "logdir"


def _never_converted(_: Path) -> bool:
    return False


def test_the_single_xspace_file_of_a_path(profiles_root: Path, tmp_path: Path) -> None:
    single = xplane_of(profiles_root, "jax_mlp")
    assert read_ahead.single_xspace_file(profiles_root / "jax_mlp") == single
    assert read_ahead.single_xspace_file(single) == single
    # Two hosts: a pod, nothing to read ahead; a Chrome trace is not an XSpace file.
    assert read_ahead.single_xspace_file(profiles_root / "jax_2hosts") is None
    assert read_ahead.single_xspace_file(next((profiles_root / "jax_mlp").rglob("*.trace.json.gz"))) is None
    assert read_ahead.single_xspace_file(tmp_path / "missing") is None
    # A folder of more entries than the walk looks at: given up, even with one XSpace file.
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for i in range(5):
        (crowded / f"notes{i}.txt").write_text("x")
    shutil.copy(single, crowded / "vm.xplane.pb")
    assert read_ahead.single_xspace_file(crowded, max_entries=6) == crowded / "vm.xplane.pb"
    assert read_ahead.single_xspace_file(crowded, max_entries=5) is None


def test_read_ahead_is_taken_once_with_the_files_bytes(one_host: Path) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    read_ahead.start(one_host, _never_converted).join()
    taken = read_ahead.take(file)
    assert taken is not None and taken[1] is None  # read, not scanned
    assert taken[0].dtype == np.uint8 and taken[0].tobytes() == file.read_bytes()
    assert read_ahead.take(file) is None  # handed out once


def test_the_reader_reads_no_file_read_ahead(one_host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    own = xplane.read_xspace(file)
    read_ahead.start(one_host, _never_converted).join()

    def no_second_read(*_: object) -> None:
        raise AssertionError("read again")

    monkeypatch.setattr(xplane, "read_profile_array", no_second_read)
    assert_same_store(xplane.read_xspace(file), own)


def test_a_file_changed_since_its_read_ahead_is_read_again(one_host: Path) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    read_ahead.start(one_host, _never_converted, xplane.scan_xspace).join()
    original = file.read_bytes()
    file.write_bytes(original[: len(original) // 2])  # rewritten: size, mtime and ctime change
    assert read_ahead.take(file) is None
    assert files.read_profile_array(file).tobytes() == original[: len(original) // 2]


def test_nothing_is_read_ahead_where_converted_or_too_large(one_host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    read_ahead.start(one_host, lambda _: True).join()
    assert read_ahead.take(file) is None
    # A file whose conversion would not fit in memory now streams or is refused: not read here.
    monkeypatch.setenv("TBPROF_CONVERT_MEMORY_BYTES", str(file.stat().st_size))
    read_ahead.start(one_host, _never_converted).join()
    assert read_ahead.take(file) is None


def test_a_failed_read_ahead_leaves_the_read_to_the_conversion(one_host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None

    def failing(*_: object) -> None:
        raise ProfileReadError(str(file), "cannot read the file: injected")

    with monkeypatch.context() as m:
        m.setattr(files, "read_unchanged", failing)
        read_ahead.start(one_host, _never_converted).join()
    assert read_ahead.take(file) is None
    assert files.read_profile_array(file).tobytes() == file.read_bytes()


def test_the_eager_reader_builds_from_the_scan_done_ahead(one_host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file scanned ahead gives the eager reader the store a read of its own gives (every
    table equal), handed over once, the reader scanning nothing itself; the lazy reader (events
    without stats) scans its own way."""
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    scans: list[str] = []
    real_scan = xplane.scan_xspace

    def counting(data: bytes | np.ndarray, source: str, lazy: bool = False) -> ScanResult:
        scans.append(threading.current_thread().name)
        return real_scan(data, source, lazy)

    monkeypatch.setattr(xplane, "scan_xspace", counting)
    read_ahead.start(one_host, _never_converted, counting).join()
    assert scans == ["tbprof-read-ahead"]
    ahead = xplane.read_xspace(file)
    assert scans == ["tbprof-read-ahead"]
    assert read_ahead.take(file) is None  # handed out once
    own = xplane.read_xspace(file)
    assert scans == ["tbprof-read-ahead", "MainThread"]
    assert_same_store(ahead, own)
    # The lazy reader takes the bytes, not the eager scan (it scans events without their stats).
    read_ahead.start(one_host, _never_converted, counting).join()
    assert xplane.read_xspace(file, lazy=True).host == "vm"
    assert scans == ["tbprof-read-ahead", "MainThread", "tbprof-read-ahead", "MainThread"]
    assert read_ahead.take(file) is None


def test_a_failed_conversion_ahead_is_the_readers_error(tmp_path: Path) -> None:
    """A file that does not convert: nothing kept, the reader reads it again and raises the error."""
    bad = tmp_path / "logdir" / "vm.xplane.pb"
    bad.parent.mkdir()
    bad.write_bytes(b"\xff" * 64)
    read_ahead.start(tmp_path / "logdir", _never_converted, xplane.scan_xspace).join()
    assert read_ahead.take(bad) is None
    with pytest.raises(ProfileReadError, match="not a readable XSpace profile"):
        xplane.read_xspace(bad)


def test_converted_on_disk_asks_the_cache_of_the_command(one_host: Path, tmp_path: Path) -> None:
    file = read_ahead.single_xspace_file(one_host)
    assert file is not None
    cache_dir = tmp_path / "cache"
    assert not converted_on_disk(cache_dir, file)
    entry = cache_dir / "stores" / cache_key(file, "xspace")
    entry.mkdir(parents=True)
    assert not converted_on_disk(cache_dir, file)  # no meta file: not committed
    (entry / "meta.json").write_text("{}")
    assert converted_on_disk(cache_dir, file)
    assert not converted_on_disk(cache_dir, file, "chrome_trace")
    assert converted_on_disk("s3://bucket/cache", file)  # a URL cache is not asked here


def test_summary_answers_the_same_with_the_file_read_ahead(capsys: pytest.CaptureFixture[str], one_host: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    real_take = read_ahead.take

    def counting(path: str | Path) -> tuple[np.ndarray, ScanResult | None] | None:
        found = real_take(path)
        taken.append(found is not None and found[1] is not None)
        return found

    monkeypatch.setattr(read_ahead, "take", counting)
    assert cli.main(["summary", str(one_host), "--json", "--cache-dir", str(tmp_path / "c1")]) == 0
    ahead = json.loads(capsys.readouterr().out)
    assert taken == [True]

    def nothing(*_: object) -> None:
        return None

    monkeypatch.setattr(read_ahead, "start", nothing)
    assert cli.main(["summary", str(one_host), "--json", "--cache-dir", str(tmp_path / "c2")]) == 0
    assert json.loads(capsys.readouterr().out) == ahead
    assert taken == [True, False]
    assert ahead["event_count"] > 0


def test_summary_of_an_unreadable_single_file_is_a_clean_error(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    bad = tmp_path / "logdir" / "plugins" / "profile" / "s1" / "vm.xplane.pb"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xff" * 64)
    code = cli.main(["summary", str(tmp_path / "logdir"), "--cache-dir", str(tmp_path / "c")])
    assert code == cli.EXIT_UNREADABLE
    assert "vm.xplane.pb" in capsys.readouterr().err
    assert os.path.exists(bad)
