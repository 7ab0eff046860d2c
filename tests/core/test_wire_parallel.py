"""The parallel scan gives the serial scan's columns for any thread count and chunk size."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize(("threads", "chunk_bytes"), [(1, 1 << 20), (2, 4096)])
def test_one_planes_stats_from_the_first_scans_index(profiles_root: Path, threads: int, chunk_bytes: int) -> None:
    """A lazily read plane's stats (``events=False`` and the first scan's ``index``): the stat
    rows, kinds, values and texts of that plane as a whole scan has them (its event rows are left
    unwritten: the plane has its events from the first scan)."""
    files = sorted(p for name in XSPACE_PROFILES for p in (profiles_root / name).rglob("*.xplane.pb"))
    for path in files:
        data = path.read_bytes()
        whole = wire.scan(data, threads=threads, chunk_bytes=chunk_bytes)
        first = wire.scan(data, threads=threads, chunk_bytes=chunk_bytes, stats=False)
        assert first.index is not None
        for pi in range(whole.n_planes):
            want = np.zeros(whole.n_planes, dtype=np.uint8)
            want[pi] = 1
            got = wire.scan(data, threads=threads, planes=want, events=False, index=first.index)
            assert got.spans.shape[0] == 0
            lines = np.flatnonzero(whole.lines[:, 0] == pi)
            in_plane = np.isin(whole.ev_line[whole.st_owner], lines)
            assert np.array_equal(got.st_owner, whole.st_owner[in_plane])
            for name in ("st_meta", "st_kind"):
                assert np.array_equal(getattr(got, name), getattr(whole, name)[in_plane]), name
            # Text values are rows of each scan's own texts: compare the texts they name.
            is_text = (got.st_kind == wire.KIND_STR) | (got.st_kind == wire.KIND_BYTES)
            assert np.array_equal(got.st_value[~is_text], whole.st_value[in_plane][~is_text])
            assert np.array_equal(got.texts[got.st_value[is_text], 1:],
                                  whole.texts[whole.st_value[in_plane][is_text], 1:])


def test_an_index_that_does_not_fit_the_bytes_is_refused(profiles_root: Path) -> None:
    path = sorted((profiles_root / XSPACE_PROFILES[0]).rglob("*.xplane.pb"))[0]
    data = path.read_bytes()
    index = wire.scan(data, stats=False).index
    assert index is not None
    lines, chunks, n_planes, n_events = index
    beyond = chunks.copy()
    beyond[-1, 2] = len(data) + 1
    for bad in ((lines, beyond, n_planes, n_events), (lines, chunks, n_planes, -1),
                (lines[:, :1], chunks, n_planes, n_events)):
        with pytest.raises(ValueError):
            wire.scan(data, planes=np.ones(n_planes, np.uint8), events=False, index=bad)


@pytest.mark.parametrize("piece_bytes", [7, 4096, wire.READ_PIECE_BYTES])
def test_the_walk_beside_the_read_scans_alike(profiles_root: Path, piece_bytes: int) -> None:
    """``scan(reading=...)``: the file read into the array on this thread while the index pass
    walks it on another (a step waits for its bytes; 7-byte pieces make it wait at most steps)
    gives the columns of a scan of the whole bytes, with and without stats."""
    files = sorted(p for name in XSPACE_PROFILES for p in (profiles_root / name).rglob("*.xplane.pb"))
    for path in files:
        data = path.read_bytes()
        for stats in (True, False):
            fd = os.open(path, os.O_RDONLY)
            try:
                array = np.empty(len(data), dtype=np.uint8)
                got = wire.scan(array, threads=2, chunk_bytes=4096, stats=stats,
                                reading=wire.FileRead(fd, array, piece_bytes=piece_bytes))
            finally:
                os.close(fd)
            assert_same(got, wire.scan(data, threads=2, chunk_bytes=4096, stats=stats))


def test_a_read_that_ends_short_is_its_own_error(profiles_root: Path, tmp_path: Path) -> None:
    """A file shorter than the array (it shrank after its size was taken): the walk stops where
    the bytes end and the scan raises ERR_SHORT_READ, not a malformed-bytes error."""
    data = next((profiles_root / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
    path = tmp_path / "short.xplane.pb"
    path.write_bytes(data[:len(data) // 2])
    fd = os.open(path, os.O_RDONLY)
    try:
        array = np.empty(len(data), dtype=np.uint8)
        with pytest.raises(wire.WireError) as e:
            wire.scan(array, reading=wire.FileRead(fd, array, piece_bytes=4096))
    finally:
        os.close(fd)
    assert e.value.code == wire.ERR_SHORT_READ and e.value.offset == len(data) // 2


@pytest.mark.parametrize(("threads", "chunk_bytes"), [(1, 1 << 20), (2, 4096), (3, 97)])
def test_events_without_stats_scan_alike(profiles_root: Path, threads: int, chunk_bytes: int) -> None:
    """``scan(stats=False)`` decodes events in a loop of its own (``fill_events_chunk``): the
    event columns of the serial scan, which decodes every field."""
    files = sorted(p for name in XSPACE_PROFILES for p in (profiles_root / name).rglob("*.xplane.pb"))
    for path in files:
        data = path.read_bytes()
        got, want = wire.scan(data, threads=threads, chunk_bytes=chunk_bytes, stats=False), wire.scan_serial_py(data)
        assert not got.with_stats
        for name in ("spans", "lines", "ev_line", "ev_meta", "ev_start", "ev_dur"):
            x, y = getattr(got, name), getattr(want, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name


def test_events_without_stats_read_any_encoding_of_their_fields() -> None:
    """Fields whose tags are written in more bytes than needed (a valid encoding) and fields the
    decoder does not know are read as the serial scan reads them."""
    def long_tag(field_no: int, wire_type: int) -> bytes:
        return bytes([((field_no << 3) | wire_type) | 0x80, 0x00])  # the same tag in two bytes

    event = (long_tag(1, 0) + b"\x05" + field(2, 0, 1000) + long_tag(3, 0) + b"\x07"
             + long_tag(4, 2) + b"\x02\x08\x01" + len_field(4, field(1, 0, 2)) + field(9, 0, 3))
    line = len_field(4, event) + len_field(4, field(1, 0, 6) + field(3, 0, 8))
    data = len_field(1, len_field(3, line))
    got, want = wire.scan(data, threads=1, stats=False), wire.scan_serial_py(data)
    for name in ("ev_line", "ev_meta", "ev_start", "ev_dur"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert want.ev_meta.tolist() == [5, 6] and want.ev_start.tolist() == [1000, 0] and want.ev_dur.tolist() == [7, 8]
