"""``cli/huge_pages.py``: the ``tbprof`` command turns numpy's huge pages off where a virtio
balloon reports free pages to its host, and only there. The device folders below are laid out
as Linux's sysfs shows a virtio device (``device``: its id in hex; ``features``: one '0' or '1'
per negotiated feature bit, bit 0 first)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tbprof.cli.huge_pages import NUMPY_HUGEPAGE_VAR, choose_page_size, free_pages_reported


def _device(root: Path, name: str, device_id: int, bits: set[int], width: int = 64) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "device").write_text(f"0x{device_id:04x}\n")
    (d / "features").write_text("".join("1" if i in bits else "0" for i in range(width)) + "\n")


# This VM's balloon as sysfs showed it (bits 1, 2, 5, 7: stats, deflate on OOM, free page
# reporting, and one more), a network device (id 1) and a block device (id 2) beside it.
BALLOON_REPORTING = {1, 2, 5, 7}


def test_a_balloon_that_reports_free_pages_is_found(tmp_path: Path) -> None:
    _device(tmp_path, "virtio0", 5, BALLOON_REPORTING)
    _device(tmp_path, "virtio1", 1, {0, 5})
    assert free_pages_reported(str(tmp_path))


def test_a_balloon_without_reporting_or_another_device_with_bit_5_is_not(tmp_path: Path) -> None:
    _device(tmp_path, "virtio0", 5, BALLOON_REPORTING - {5})
    _device(tmp_path, "virtio1", 1, {5})  # bit 5 of a network device means something else
    _device(tmp_path, "virtio2", 2, {5})
    assert not free_pages_reported(str(tmp_path))


def test_no_virtio_bus_and_unreadable_devices_mean_no_reporting(tmp_path: Path) -> None:
    assert not free_pages_reported(str(tmp_path / "absent"))  # not a virtual machine
    (tmp_path / "virtio0").mkdir()  # no files
    bad = tmp_path / "virtio1"
    bad.mkdir()
    (bad / "device").write_text("balloon\n")
    (bad / "features").write_text("1" * 64)
    short = tmp_path / "virtio2"
    short.mkdir()
    (short / "device").write_text("0x0005\n")
    (short / "features").write_text("0110")  # fewer bits than the one asked about
    assert not free_pages_reported(str(tmp_path))
    _device(tmp_path, "virtio3", 5, BALLOON_REPORTING)  # the readable one among them still counts
    assert free_pages_reported(str(tmp_path))


def test_the_choice_sets_small_pages_only_where_reported_and_never_over_the_user(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reporting, plain = tmp_path / "reporting", tmp_path / "plain"
    _device(reporting, "virtio0", 5, BALLOON_REPORTING)
    _device(plain, "virtio0", 5, BALLOON_REPORTING - {5})
    monkeypatch.delenv(NUMPY_HUGEPAGE_VAR, raising=False)
    choose_page_size(str(plain))
    assert NUMPY_HUGEPAGE_VAR not in os.environ  # numpy's own default stays
    choose_page_size(str(reporting))
    assert os.environ[NUMPY_HUGEPAGE_VAR] == "0"
    monkeypatch.setenv(NUMPY_HUGEPAGE_VAR, "1")
    choose_page_size(str(reporting))
    assert os.environ[NUMPY_HUGEPAGE_VAR] == "1"


# The command's process: ``entry`` chooses before anything imports numpy, and numpy honours it.
# The platform's answer is given (the real one depends on the machine); ``main`` is replaced by
# one that reports numpy's setting; ``tools`` is a read-only command, so entry leaves with _exit.
_ENTRY = """
import sys
assert "numpy" not in sys.modules, "importing the command module imported numpy"
from tbprof.cli import huge_pages, main as m
huge_pages.free_pages_reported = lambda devices=None: {reported}
def fake_main(detach_writes=False):
    import numpy
    print(numpy._core.multiarray._get_madvise_hugepage(), flush=True)
    return 0
m.main = fake_main
sys.argv = ["tbprof", "tools", "."]
m.entry()
"""


@pytest.mark.parametrize(("reported", "numpy_huge"), [(True, "False"), (False, "True")])
def test_the_command_process_gives_numpy_the_choice(reported: bool, numpy_huge: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != NUMPY_HUGEPAGE_VAR}
    out = subprocess.run([sys.executable, "-c", _ENTRY.format(reported=reported)], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == numpy_huge, out.stderr

