"""A plane's metadata read by the compiled core (``plane_builder.wire_plane_meta``) gives the
store that upb's parse of the same plane gives (``plane_meta``): the same tables, blobs and
string ids, on every real xplane of the repository and on planes written here from
``xplane.proto``'s documented fields in the forms upb reads its own way (a repeated map key, a
value field twice, a oneof set twice, a ref above 2^63, many plane stats of few names). Where
the compiled reader declines a plane (None), upb reads it; it never declines the real files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.protos import xplane_pb2
from tbprof.readers import plane_builder, xplane
from tbprof.store import tables
from tests.conftest import REPO

REAL = sorted([*(REPO / "demo_logs").rglob("*.xplane.pb"), *(REPO / "tests" / "data").rglob("*.xplane.pb")])


def _dump(store: tables.ProfileStore) -> list[Any]:
    out: list[Any] = [store.strings.as_list(), store.origin_ps, store.span_ps, store.hostnames]
    for p in store.planes:
        out.append((p.index, p.id, p.name, p.line_names, p.meta_ids.tolist(), p.meta_name_id.tolist(),
                    p.meta_display_name_id.tolist(),
                    [getattr(p.meta_stats, c).tolist() for c in ("owner", "stat_id", "kind", "value")],
                    [(k, repr(v)) for k, v in p.plane_stats.items()], p.blobs, p.name_id.tolist(),
                    [getattr(p.stats, c).tolist() for c in ("owner", "stat_id", "kind", "value")]))
    return out


def _both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any], list[bool]]:
    """The store's dump with the compiled metadata reader, without it (upb), and per plane
    whether the compiled reader read it."""
    compiled = plane_builder.wire_plane_meta
    read: list[bool] = []

    def counting(*args: Any) -> Any:
        got = compiled(*args)
        read.append(got is not None)
        return got

    monkeypatch.setattr(xplane, "wire_plane_meta", counting)
    fast = _dump(xplane.xspace_from_bytes(data, "test", "host"))
    monkeypatch.setattr(xplane, "wire_plane_meta", lambda *args: None)
    upb = _dump(xplane.xspace_from_bytes(data, "test", "host"))
    return fast, upb, read


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(REPO)))
def test_real_planes_read_as_upb_reads_them(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, upb, read = _both(path.read_bytes(), monkeypatch)
    assert fast == upb
    assert read and all(read)


def _stat(meta: int, **value: Any) -> xplane_pb2.XStat:
    return xplane_pb2.XStat(metadata_id=meta, **value)


def _plane() -> xplane_pb2.XPlane:
    """A device plane with event and stat metadata of every stat kind, and one event."""
    p = xplane_pb2.XPlane(id=7, name=b"/device:GPU:0")
    for sid, name in ((1, b"flops"), (2, b"tf_op"), (3, b"blob"), (4, b"ratio"), (5, b"big"), (6, b"ref")):
        p.stat_metadata[sid].id = sid
        p.stat_metadata[sid].name = name
    for mid, name, display in ((30, b"fusion.1", b"fusion"), (10, b"dot", b""), (20, b"\xffbad", b"d\xfe")):
        m = p.event_metadata[mid]
        m.id = mid
        m.name = name
        m.display_name = display
    p.event_metadata[30].stats.extend([_stat(1, int64_value=-5), _stat(2, str_value=b"a/b:Op"),
                                       _stat(3, bytes_value=b"\x00\x01"), _stat(4, double_value=0.25),
                                       _stat(5, uint64_value=2**64 - 1), _stat(6, ref_value=2),
                                       _stat(99, int64_value=1), _stat(2)])
    p.stats.extend([_stat(2, str_value=b"x"), _stat(4, double_value=-1.5), _stat(2, str_value=b"y"),
                    _stat(6, ref_value=2**63 + 2), _stat(77, int64_value=3)])
    line = p.lines.add(id=1, name=b"stream", timestamp_ns=1000)
    line.events.add(metadata_id=30, offset_ps=5, duration_ps=10, stats=[_stat(2, str_value=b"ev")])
    return p


def _space(*planes: xplane_pb2.XPlane) -> bytes:
    return xplane_pb2.XSpace(planes=list(planes), hostnames=[b"h"]).SerializeToString()


def test_every_stat_kind_reads_as_upb_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fast, upb, read = _both(_space(_plane()), monkeypatch)
    assert fast == upb and read == [True]


def _entry(field: int, key: int, value: bytes) -> bytes:
    """A raw XPlane map entry (event_metadata 4, stat_metadata 5): key 1, value 2."""
    body = bytes([0x08]) + _varint(key) + bytes([0x12]) + _varint(len(value)) + value
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _with_raw_fields(plane: xplane_pb2.XPlane, raw: bytes) -> bytes:
    """An XSpace of ``plane`` whose serialized fields are followed by ``raw`` (more XPlane fields)."""
    body = plane.SerializeToString() + raw
    return _varint(1 << 3 | 2) + _varint(len(body)) + body


@pytest.mark.parametrize("raw", [
    _entry(4, 30, xplane_pb2.XEventMetadata(id=30, name=b"again").SerializeToString()),  # a repeated key
    _entry(5, 1, xplane_pb2.XStatMetadata(id=1, name=b"renamed").SerializeToString()),
    # one entry with its value twice (upb merges the two values)
    _varint(4 << 3 | 2) + _varint(12) + bytes([0x08, 0x28, 0x12, 0x03, 0x12, 0x01, 0x61, 0x12, 0x03, 0x22, 0x01, 0x62]),
], ids=["event key twice", "stat key twice", "value twice"])
def test_what_upb_reads_its_own_way_is_left_to_upb(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, upb, read = _both(_with_raw_fields(_plane(), raw), monkeypatch)
    assert fast == upb and read == [False]


def test_many_plane_stats_keep_the_last_of_each_name_as_upb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``MANY_PLANE_STATS`` the reader keeps the last stat of each metadata name before
    parsing (``without_replaced_stats``), which orders the plane's stats by the kept ones."""
    p = _plane()
    p.stat_metadata[8].name = b"tf_op"  # a second id of an existing name
    names = (2, 8, 4, 77, 1)
    p.stats.extend(_stat(names[i % len(names)], int64_value=i) if i % 3 else _stat(2, str_value=b"s%d" % i)
                   for i in range(plane_builder.MANY_PLANE_STATS + 40))
    fast, upb, read = _both(_space(p), monkeypatch)
    assert fast == upb and read == [True]
    store = xplane.xspace_from_bytes(_space(p), "test", "host")
    n = plane_builder.MANY_PLANE_STATS + 40
    last_int = max(i for i in range(n) if i % 3 and names[i % len(names)] == 4)
    assert store.planes[0].plane_stats["ratio"] == last_int


def test_seeded_byte_flips_read_as_upb_or_fail_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flipped bytes in the metadata: the compiled reader gives upb's store, declines, or the file
    is refused either way (the scanner or upb names the damage)."""
    from tbprof.errors import ProfileReadError

    good = bytearray(_space(_plane()))
    rng = np.random.default_rng(39)
    compared = 0
    for _ in range(3000):
        data = bytearray(good)
        for at in rng.integers(0, len(data), size=2).tolist():
            data[at] = int(rng.integers(0, 256))
        try:
            fast, upb, _ = _both(bytes(data), monkeypatch)
        except ProfileReadError:
            continue
        assert fast == upb
        compared += 1
    assert compared > 30
