"""The parallel scan gives the serial scan's columns for any thread count and chunk size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tbprof._core import wire
from tests.conftest import XSPACE_PROFILES
from tests.core.test_wire_fuzz import field, len_field

COLUMNS = ("spans", "lines", "ev_line", "ev_meta", "ev_start", "ev_dur", "st_owner", "st_meta", "st_kind",
           "st_value", "texts")


def assert_same(a: wire.ScanResult, b: wire.ScanResult) -> None:
    assert a.n_planes == b.n_planes
    for name in COLUMNS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


@pytest.mark.parametrize(("threads", "chunk_bytes"), [(1, 1 << 20), (2, 1 << 20), (2, 4096), (3, 97)])
def test_real_profiles_scan_alike(profiles_root: Path, threads: int, chunk_bytes: int) -> None:
    files = sorted(p for name in XSPACE_PROFILES for p in (profiles_root / name).rglob("*.xplane.pb"))
    assert len(files) == 5
    for path in files:
        data = path.read_bytes()
        assert_same(wire.scan(data, threads=threads, chunk_bytes=chunk_bytes), wire.scan_serial_py(data))


def test_a_small_file_scans_alike_on_this_thread(profiles_root: Path) -> None:
    """Below ``ONE_THREAD_BELOW_BYTES`` the default scan decodes the chunks on the calling thread
    (its chunks' stats counted first) and tells ``on_counts`` the exact stat count before the
    stat columns are made, as the serial scan does."""
    files = sorted(p for name in XSPACE_PROFILES for p in (profiles_root / name).rglob("*.xplane.pb"))
    for path in files:
        data = path.read_bytes()
        assert len(data) < wire.ONE_THREAD_BELOW_BYTES
        counts: list[tuple[int, int]] = []

        def count(n_events: int, n_stats: int, seen: list[tuple[int, int]] = counts) -> None:
            seen.append((n_events, n_stats))

        got = wire.scan(data, on_counts=count)
        assert got.phase_s is not None and got.phase_s["threads"] == 1  # not the serial scan's fallback
        serial = wire.scan_serial_py(data)
        assert_same(got, serial)
        assert counts[-1] == (serial.n_events, serial.n_stats)


def test_dense_stats_and_texts_scan_alike() -> None:
    """Stats are counted before they are decoded, so 2-byte empty stats land in exact columns;
    a chunk's text buffer starts at 1/32 of its bytes (real files: ~60 bytes per text) and 5-byte
    string stats overflow it, so the chunk grows it and is decoded again."""
    stats = b"".join(len_field(4, b"") for _ in range(3000))
    texts = b"".join(len_field(4, len_field(5, b"x")) for _ in range(3000))
    events = [len_field(4, field(1, 0, i) + (stats if i % 2 else texts)) for i in range(8)]
    line = len_field(3, b"".join(events))
    data = len_field(1, field(1, 0, 1) + line)
    serial = wire.scan_serial_py(data)
    assert serial.n_stats == 8 * 3000 and serial.texts.shape[0] == 4 * 3000
    for chunk_bytes in (1, 500, 1 << 20):
        assert_same(wire.scan(data, threads=2, chunk_bytes=chunk_bytes), serial)
    assert_same(wire.scan(data), serial)  # a small file: its one thread's buffers start at 1/8


def test_ids_beyond_int32_switch_to_int64_columns() -> None:
    event = len_field(4, field(1, 0, 2**40) + len_field(4, field(1, 0, 2**33) + field(3, 0, 7)))
    data = len_field(1, len_field(3, event))
    sc = wire.scan(data, threads=2, chunk_bytes=1)
    assert sc.ev_meta.dtype == np.int64 and sc.ev_meta.tolist() == [2**40]
    assert sc.st_meta.tolist() == [2**33] and sc.st_value.tolist() == [7]


def test_stat_kinds_agree_with_the_store() -> None:
    """The scanner writes kind codes the store interprets (store/tables.py mirrors them)."""
    from tbprof.store import tables

    names = ("KIND_NONE", "KIND_DOUBLE", "KIND_UINT64", "KIND_INT64", "KIND_STR", "KIND_BYTES", "KIND_REF")
    assert [getattr(wire, n) for n in names] == [getattr(tables, n) for n in names]
