"""The XSpace reader against an independent decode of every real xplane with the protobuf API."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tbprof.errors import ProfileReadError
from tbprof.protos import xplane_pb2
from tbprof.readers import xplane
from tbprof.store import tables
from tests.conftest import XSPACE_PROFILES, xplane_of


def _all_xplanes(root: Path) -> list[Path]:
    return sorted(p for name in XSPACE_PROFILES for p in (root / name).rglob("*.xplane.pb"))


def _independent(path: Path) -> tuple[xplane_pb2.XSpace, dict[str, tuple[int, int, int]]]:
    """Per plane: (lines, events, event stats) counted with upb, no tbprof code involved."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    counts = {}
    for p in space.planes:
        n_events = sum(len(line.events) for line in p.lines)
        n_stats = sum(len(e.stats) for line in p.lines for e in line.events)
        counts[p.name.decode()] = (len(p.lines), n_events, n_stats)
    return space, counts


def test_every_small_profile_matches_protobuf_counts(profiles_root: Path) -> None:
    files = _all_xplanes(profiles_root)
    assert len(files) == 5  # keras_cnn, custom_loop, jax_mlp, jax_2hosts x2
    for path in files:
        space, expected = _independent(path)
        store = xplane.read_xspace(path)
        got = {p.name: (p.n_lines, p.n_events, len(p.stats)) for p in store.planes}
        assert got == expected, path
        assert store.hostnames == [h.decode() for h in space.hostnames]


def test_event_times_names_and_stats_match_protobuf(profiles_root: Path) -> None:
    """Every event's absolute start, duration, name and stat multiset, on jax_mlp (GPU + host)."""
    path = next(p for p in _all_xplanes(profiles_root) if "jax_mlp" in str(p))
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    store = xplane.read_xspace(path)
    for pb_plane, plane in zip(space.planes, store.planes, strict=True):
        names = {k: v.name.decode() for k, v in pb_plane.event_metadata.items()}
        stat_names = {k: v.name.decode() for k, v in pb_plane.stat_metadata.items()}
        want: Counter[tuple[str, int, int, str]] = Counter()
        want_stats: Counter[str] = Counter()
        for line in pb_plane.lines:
            for e in line.events:
                start = line.timestamp_ns * 1000 + e.offset_ps - store.origin_ps
                want[(line.name.decode(), start, e.duration_ps, names.get(e.metadata_id, ""))] += 1
                for s in e.stats:
                    want_stats[stat_names[s.metadata_id]] += 1
        got: Counter[tuple[str, int, int, str]] = Counter()
        for i in range(plane.n_events):
            got[(plane.line_names[plane.line_idx[i]], int(plane.start_ps[i]), int(plane.dur_ps[i]),
                 store.strings[int(plane.name_id[i])])] += 1
        assert got == want, plane.name
        got_stats = Counter(store.strings[int(s)] for s in plane.stats.stat_id)
        assert got_stats == want_stats


def test_stat_values_decode_like_protobuf(profiles_root: Path) -> None:
    """kernel_details (a ref), correlation_id (uint64) and context_id (str) of GPU kernels."""
    path = next(p for p in _all_xplanes(profiles_root) if "jax_mlp" in str(p))
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    pb_gpu = next(p for p in space.planes if p.name == b"/device:GPU:0")
    sm = {k: v.name.decode() for k, v in pb_gpu.stat_metadata.items()}
    want_details: Counter[str] = Counter()
    want_corr = set()
    for line in pb_gpu.lines:
        for e in line.events:
            for s in e.stats:
                if sm[s.metadata_id] == "kernel_details":
                    want_details[sm[s.ref_value] if s.WhichOneof("value") == "ref_value" else s.str_value.decode()] += 1
                if sm[s.metadata_id] == "correlation_id":
                    want_corr.add(int(getattr(s, s.WhichOneof("value"))))
    store = xplane.read_xspace(path)
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None
    details = gpu.event_stat(store.stat_id("kernel_details"))
    assert Counter(store.strings[int(v)] for v in details.value) == want_details
    corr = gpu.event_stat(store.stat_id("correlation_id"))
    assert set(corr.as_int().tolist()) == want_corr


def test_events_sorted_and_nested(profiles_root: Path) -> None:
    """Sorted by (line, start, -dur); a child's depth is its parent's + 1 when strictly inside."""
    path = next(p for p in _all_xplanes(profiles_root) if "custom_loop" in str(p))
    store = xplane.read_xspace(path)
    host = store.plane("/host:CPU")
    assert host is not None
    key = np.lexsort((-host.dur_ps, host.start_ps, host.line_idx))
    assert np.array_equal(key, np.arange(host.n_events))
    # Depth derivation: brute force on one line with a plain stack of end times.
    line = int(np.argmax(np.diff(host.line_offsets)))
    rows = host.line_rows(line)
    stack: list[int] = []
    for i in range(rows.start, rows.stop):
        s = int(host.start_ps[i])
        while stack and stack[-1] <= s:
            stack.pop()
        assert host.depth[i] == len(stack)
        stack.append(s + int(host.dur_ps[i]))


def _space_bytes(**planes: list[tuple[str, int, int]]) -> bytes:
    space = xplane_pb2.XSpace(hostnames=[b"h"])
    for pname, events in planes.items():
        p = space.planes.add(id=1, name=pname.encode())
        line = p.lines.add(id=1, name=b"t", timestamp_ns=1000)
        for i, (name, off, dur) in enumerate(events, start=1):
            p.event_metadata[i].id = i
            p.event_metadata[i].name = name.encode()
            line.events.add(metadata_id=i, offset_ps=off, duration_ps=dur)
    return space.SerializeToString()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "malformed varint"),
        (bytes(range(256)) * 8, "not a readable XSpace"),
        (_space_bytes(plane=[("a", 0, 10), ("b", 20, 5)])[:30], "truncated"),
        # A valid protobuf of another kind: an XStatMetadata has fields 1-3 only, none a plane.
        (xplane_pb2.XStatMetadata(id=5, name=b"not a space").SerializeToString(), "holds no XSpace planes"),
    ],
)
def test_bad_bytes_raise_clear_errors(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "bad.xplane.pb"
    path.write_bytes(data)
    with pytest.raises(ProfileReadError) as info:
        xplane.read_xspace(path)
    assert reason in str(info.value)
    assert str(path) in str(info.value)


def test_random_bytes_never_crash(tmp_path: Path) -> None:
    """Fuzz: random buffers and random truncations of a real profile raise or parse, never crash."""
    rng = np.random.default_rng(0)
    real = _space_bytes(plane=[("a", 0, 10), ("b", 5, 2)])
    for i in range(300):
        data = rng.integers(0, 256, size=int(rng.integers(1, 400)), dtype=np.uint8).tobytes()
        if i % 3 == 0:
            data = real[: int(rng.integers(1, len(real)))]
        try:
            xplane.xspace_from_bytes(data, "fuzz", "h")
        except ProfileReadError:
            pass


def test_plane_without_events_and_non_utf8_names(tmp_path: Path) -> None:
    space = xplane_pb2.XSpace()
    space.planes.add(id=1, name=b"/device:GPU:0")  # no lines at all
    p = space.planes.add(id=2, name=b"/host:CPU")
    p.event_metadata[1].id = 1
    p.event_metadata[1].name = b"op\xff\xfename"
    line = p.lines.add(id=7, name=b"thread\xc3", timestamp_ns=5)
    line.events.add(metadata_id=1, offset_ps=3, duration_ps=4)
    path = tmp_path / "odd.xplane.pb"
    path.write_bytes(space.SerializeToString())
    store = xplane.read_xspace(path)
    assert [p.n_events for p in store.planes] == [0, 1]
    host = store.planes[1]
    assert store.strings[int(host.name_id[0])] == "op\ufffd\ufffdname"
    assert host.line_names == ["thread\ufffd"]
    assert int(host.start_ps[0]) == 0 and store.origin_ps == 5 * 1000 + 3


def test_file_that_changes_while_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profiler still writing the file: size/mtime differ before and after the read."""
    path = tmp_path / "growing.xplane.pb"
    path.write_bytes(_space_bytes(plane=[("a", 0, 10)]))
    real_open = os.open

    def growing_open(p: object, flags: int, *a: object, **k: object) -> int:
        fd = real_open(p, flags, *a, **k)  # type: ignore[arg-type]
        if str(p) == str(path) and not flags & (os.O_WRONLY | os.O_RDWR):
            with open(path, "ab") as g:  # the writer appends while we read
                g.write(b"\x00" * 16)
        return fd

    monkeypatch.setattr(os, "open", growing_open)
    with pytest.raises(ProfileReadError, match="changed while it was being read"):
        xplane.read_xspace(path)


def test_stat_kinds_round_trip(tmp_path: Path) -> None:
    """double, uint64 (> 2^63), int64 (negative), str, bytes and ref values all decode."""
    space = xplane_pb2.XSpace()
    p = space.planes.add(id=1, name=b"/host:CPU")
    for i, n in enumerate([b"d", b"u", b"i", b"s", b"b", b"r", b"target"], start=1):
        p.stat_metadata[i].id = i
        p.stat_metadata[i].name = n
    p.event_metadata[1].id = 1
    p.event_metadata[1].name = b"e"
    e = p.lines.add(id=1, name=b"t").events.add(metadata_id=1, offset_ps=0, duration_ps=1)
    e.stats.add(metadata_id=1, double_value=2.5)
    e.stats.add(metadata_id=2, uint64_value=2**64 - 2)
    e.stats.add(metadata_id=3, int64_value=-7)
    e.stats.add(metadata_id=4, str_value=b"hello")
    e.stats.add(metadata_id=5, bytes_value=b"\x00\x01")
    e.stats.add(metadata_id=6, ref_value=7)
    path = tmp_path / "kinds.xplane.pb"
    path.write_bytes(space.SerializeToString())
    store = xplane.read_xspace(path)
    plane = store.planes[0]

    def col(name: str) -> tables.StatColumn:
        return plane.event_stat(store.stat_id(name))

    assert col("d").as_float().tolist() == [2.5]
    assert col("u").value.view(np.uint64).tolist() == [2**64 - 2]
    assert col("i").as_int().tolist() == [-7]
    assert store.strings[int(col("s").value[0])] == "hello"
    assert plane.blobs[int(col("b").value[0])] == b"\x00\x01"
    assert store.strings[int(col("r").value[0])] == "target"


@pytest.mark.parametrize("name,host", [("jax_mlp", "vm"), ("custom_loop", "vm"), ("jax_2hosts", "worker1")])
def test_real_profiles_match_protobuf_counts(profiles_root: Path, name: str, host: str) -> None:
    """Lines, events and stats of every plane, counted independently with the protobuf API."""
    path = xplane_of(profiles_root, name, host)
    _, expected = _independent(path)
    store = xplane.read_xspace(path)
    assert {p.name: (p.n_lines, p.n_events, len(p.stats)) for p in store.planes} == expected
    assert sum(v[1] for v in expected.values()) == store.n_events


def _decoded_events(store: tables.ProfileStore, plane: tables.Plane) -> list[tuple[object, ...]]:
    """(line name, start, dur, name, sorted (stat name, value)) of every event, in store order."""
    by_owner: dict[int, list[tuple[str, object]]] = {}
    for owner, sid, kind, value in zip(plane.stats.owner.tolist(), plane.stats.stat_id.tolist(),
                                       plane.stats.kind.tolist(), plane.stats.value.tolist(), strict=True):
        shown = store.strings[value] if kind in (tables.KIND_STR, tables.KIND_REF) else value
        by_owner.setdefault(owner, []).append((store.strings[sid], shown))
    return [(plane.line_names[int(plane.line_idx[i])], int(plane.start_ps[i]), int(plane.dur_ps[i]),
             store.strings[int(plane.name_id[i])], sorted(by_owner.get(i, []), key=repr))
            for i in range(plane.n_events)]


def _unordered_space(meta_ids: tuple[int, int, int]) -> xplane_pb2.XSpace:
    """Two planes; the second writes its events out of time order, each with its own stats."""
    space = xplane_pb2.XSpace()
    first = space.planes.add(id=1, name=b"/device:GPU:0")
    first.event_metadata[5].id = 5
    first.event_metadata[5].name = b"kernel"
    first.stat_metadata[9].id = 9
    first.stat_metadata[9].name = b"correlation_id"
    ev = first.lines.add(id=1, name=b"stream", timestamp_ns=2).events.add(metadata_id=5, offset_ps=0, duration_ps=3)
    ev.stats.add(metadata_id=9, uint64_value=77)
    p = space.planes.add(id=2, name=b"/host:CPU")
    a, b, s = meta_ids
    for mid, name in ((a, b"outer"), (b, b"inner")):
        p.event_metadata[mid].id = mid
        p.event_metadata[mid].name = name
    p.stat_metadata[s].id = s
    p.stat_metadata[s].name = b"step"
    p.stat_metadata[s + 1].id = s + 1
    p.stat_metadata[s + 1].name = b"label"
    line = p.lines.add(id=3, name=b"thread", timestamp_ns=1)
    # Wire order: inner (starts later), outer, then a zero-offset event of the same length as
    # outer but listed after it; store order is (start, -dur).
    for mid, off, dur, step, label in ((b, 500, 100, 2, b"x"), (a, 0, 1000, 1, b"y"), (b, 0, 10, 3, b"z")):
        e = line.events.add(metadata_id=mid, offset_ps=off, duration_ps=dur)
        e.stats.add(metadata_id=s, int64_value=step)
        e.stats.add(metadata_id=s + 1, str_value=label)
        e.stats.add(metadata_id=s + 1, ref_value=s)
    return space


@pytest.mark.parametrize(
    "meta_ids",
    [
        (1, 2, 3),  # dense small ids: lookup tables
        (7, 10**9, 2 * 10**9),  # sparse ids that fit int32: binary search
        (2**40, -5, 2**45),  # ids beyond int32 (and a negative one): 64-bit rescan
    ],
)
def test_out_of_order_events_and_any_metadata_ids(tmp_path: Path, meta_ids: tuple[int, int, int]) -> None:
    path = tmp_path / "unordered.xplane.pb"
    space = _unordered_space(meta_ids)
    path.write_bytes(space.SerializeToString())
    store = xplane.read_xspace(path)
    gpu, host = store.planes
    # Origin: host line at 1 ns + 0 ps = 1000 ps is the earliest event.
    assert store.origin_ps == 1000
    assert _decoded_events(store, gpu) == [("stream", 1000, 3, "kernel", [("correlation_id", 77)])]
    rows = _decoded_events(store, host)
    assert rows == [
        ("thread", 0, 1000, "outer", sorted([("step", 1), ("label", "y"), ("label", "step")], key=repr)),
        ("thread", 0, 10, "inner", sorted([("step", 3), ("label", "z"), ("label", "step")], key=repr)),
        ("thread", 500, 100, "inner", sorted([("step", 2), ("label", "x"), ("label", "step")], key=repr)),
    ]
    assert host.depth.tolist() == [0, 1, 1]
    assert host.line_offsets.tolist() == [0, 3]
    assert np.all(np.diff(host.stats.owner) >= 0)


def test_repeated_plane_stats_keep_the_last_value(tmp_path: Path) -> None:
    """Plane stats by name (a name that repeats keeps its last value); unknown ids read as ""."""
    space = xplane_pb2.XSpace()
    p = space.planes.add(id=1, name=b"/host:__ScopeRangeCallStack__")
    p.stat_metadata[1].id = 1
    p.stat_metadata[1].name = b"device_name"
    for i in range(1000):
        p.stats.add(metadata_id=1, str_value=f"gpu {i}".encode())
    p.stats.add(metadata_id=12345, int64_value=4)  # no metadata for this id
    path = tmp_path / "plane_stats.xplane.pb"
    path.write_bytes(space.SerializeToString())
    store = xplane.read_xspace(path)
    assert store.planes[0].plane_stats == {"device_name": "gpu 999", "": 4}


def test_many_plane_stats_keep_the_last_of_each_name(tmp_path: Path) -> None:
    """A plane with thousands of stats (JAX's scope-range plane: each stat its own metadata id,
    almost none with metadata) keeps the last value of each name, as reading every stat would:
    ids 3 and 4 share the name "shared", so the last stat of either wins; ids without metadata,
    and a stat without a metadata_id, have the empty name (string id 0), like id 5 named ""."""
    space = xplane_pb2.XSpace()
    p = space.planes.add(id=1, name=b"/host:__ScopeRangeCallStack__")
    for i, n in ((1, b"a"), (2, b"b"), (3, b"shared"), (4, b"shared"), (5, b"")):
        p.stat_metadata[i].id = i
        p.stat_metadata[i].name = n
    for k in range(3000):
        p.stats.add(metadata_id=1 + k % 4, int64_value=k)
        p.stats.add(metadata_id=1000 + k, int64_value=-k)  # an id of its own, no metadata
    p.stats.add(metadata_id=5, int64_value=55)
    p.stats.add(int64_value=-1)  # no metadata_id at all
    p.stats.add(metadata_id=1, str_value=b"last a")
    path = tmp_path / "many.xplane.pb"
    path.write_bytes(space.SerializeToString())
    # Expected, by reading every stat with the protobuf API: the last value of each name.
    names = {i: p.stat_metadata[i].name.decode() for i in p.stat_metadata}
    expected: dict[str, object] = {}
    for st in xplane_pb2.XSpace.FromString(path.read_bytes()).planes[0].stats:
        expected[names.get(st.metadata_id, "")] = st.str_value.decode() \
            if st.WhichOneof("value") == "str_value" else st.int64_value
    store = xplane.read_xspace(path)
    assert store.planes[0].plane_stats == expected == {"a": "last a", "b": 2997, "shared": 2999, "": -1}


def test_plane_stat_ids_of_hostile_spans_never_crash() -> None:
    """The compiled id reader on random bytes and random (even inverted or out of range) spans:
    each answer is an id or -1, never a crash."""
    from tbprof._core import wire

    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
    starts = rng.integers(-10, 4200, 20_000)
    ends = starts + rng.integers(-5, 300, 20_000)
    ids = wire.field_metadata_ids(data, starts, ends)
    assert ids.shape == (20_000,) and (ids >= -1).all()
    # A well-formed stat field: tag 0x32, length 3, then metadata_id (field 1) = 300 as a varint
    # (0xAC 0x02); cut one byte short, it does not parse.
    field = bytes([0x32, 3, 0x08, 0xAC, 0x02])
    assert wire.field_metadata_ids(field, np.array([0, 0]), np.array([5, 4])).tolist() == [300, -1]


def _wrapped(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _timed_space(line_ts_ns: list[int], events: list[list[tuple[int, int]]]) -> bytes:
    """One plane per line (``line_ts_ns``), each line's events (offset_ps, duration_ps)."""
    space = xplane_pb2.XSpace()
    for pi, (ts, evs) in enumerate(zip(line_ts_ns, events, strict=True)):
        p = space.planes.add(id=pi, name=f"/device:GPU:{pi}".encode())
        p.event_metadata[1].id = 1
        p.event_metadata[1].name = b"op"
        line = p.lines.add(id=1, name=b"stream", timestamp_ns=ts)
        for off, dur in evs:
            line.events.add(metadata_id=1, offset_ps=off, duration_ps=dur)
    return space.SerializeToString()


# Line timestamps as profilers write them: since the epoch (in picoseconds past int64, where the
# times wrap as int64 arithmetic does), small, and one whose events straddle the wrap.
_EPOCH_NS = 1_764_000_000_000_000_000
_STRADDLE_NS = (2**63 - 5_000) // 1000


@pytest.mark.parametrize(
    ("line_ts_ns", "events", "from_bounds"),
    [
        ([_EPOCH_NS, _EPOCH_NS + 7], [[(10, 5), (3, 40)], [(0, 1), (2_000, 9)]], True),
        ([29_554_945, 69_863], [[(500, 100), (0, 1000)], [(1, 2)]], True),
        ([_STRADDLE_NS, 1], [[(0, 10), (20_000, 10)], [(5, 5)]], False),
    ],
)
def test_origin_and_starts_as_the_line_times_add_up_in_int64(tmp_path: Path, line_ts_ns: list[int],
                                                             events: list[list[tuple[int, int]]],
                                                             from_bounds: bool) -> None:
    """The origin found from each line's bounds (the scanner's) equals the one every event's
    absolute start gives, wrapped as int64 like the kernels; a line whose times wrap part of the
    way is left to the pass over every event. Derived here event by event."""
    path = tmp_path / "timed.xplane.pb"
    path.write_bytes(_timed_space(line_ts_ns, events))
    scanned = xplane.wire.scan(path.read_bytes())
    line_ts_ps = np.array(line_ts_ns, dtype=np.int64) * 1000  # (wraps where it must, as the reader's)
    assert scanned.line_bounds is not None
    assert (xplane._origin_from_lines(scanned.line_bounds, line_ts_ps) is not None) == from_bounds
    absolute = [[(_wrapped(int(ts) + off), dur) for off, dur in evs]
                for ts, evs in zip(line_ts_ps, events, strict=True)]
    origin = min(s for evs in absolute for s, _ in evs)
    end = max(_wrapped(s + d) for evs in absolute for s, d in evs)
    store = xplane.read_xspace(path)
    assert store.origin_ps == origin
    assert store.span_ps == end - origin
    for plane, evs in zip(store.planes, absolute, strict=True):
        want = sorted(((_wrapped(s - origin), d) for s, d in evs), key=lambda e: (e[0], -e[1]))
        assert list(zip(plane.start_ps.tolist(), plane.dur_ps.tolist(), strict=True)) == want


def test_negative_offsets_leave_the_origin_to_every_event(tmp_path: Path) -> None:
    """A negative offset (int64 on the wire, a hostile or broken writer) gives the scanner no line
    bounds: the pass over every event places the origin, as before."""
    path = tmp_path / "negative.xplane.pb"
    path.write_bytes(_timed_space([1], [[(-10, 5), (7, 1)]]))
    assert xplane.wire.scan(path.read_bytes()).line_bounds is None
    store = xplane.read_xspace(path)
    starts = [1000 - 10, 1000 + 7]
    assert store.origin_ps == min(starts)
    assert store.planes[0].start_ps.tolist() == [s - min(starts) for s in starts]


def test_every_lines_depths_restart_at_the_line(profiles_root: Path) -> None:
    """The depths computed in ``finish_events``' pass, every line of every plane of two real hosts,
    against a plain stack of end times per line (a line's first event at depth 0)."""
    for name in ("custom_loop", "jax_mlp"):
        store = xplane.read_xspace(xplane_of(profiles_root, name))
        checked = 0
        for plane in store.planes:
            for line in range(plane.n_lines):
                rows = plane.line_rows(line)
                stack: list[int] = []
                for i in range(rows.start, rows.stop):
                    s = int(plane.start_ps[i])
                    while stack and stack[-1] <= s:
                        stack.pop()
                    assert plane.depth[i] == min(len(stack), 32767)
                    stack.append(s + int(plane.dur_ps[i]))
                    checked += 1
        assert checked == sum(p.n_events for p in store.planes) > 0


def test_a_file_read_beside_its_walk_gives_the_same_store(profiles_root: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real xplane read by ``read_xspace`` through ``files.ArrayRead`` (the header walk
    beside the read, used from ``wire.READ_BESIDE_MIN_BYTES`` on: here from 0) is the store of
    its bytes, eager and lazy."""
    from tbprof._core import wire
    from tests.core.store_digest import store_digest

    monkeypatch.setattr(wire, "READ_BESIDE_MIN_BYTES", 0)
    monkeypatch.setattr(xplane, "LAZY_MIN_BYTES", 0)
    monkeypatch.setattr(xplane, "map_profile", lambda p: None)  # the read, not the map (tested below)
    for path in _all_xplanes(profiles_root):
        for lazy in (False, True):
            got = xplane.read_xspace(path, lazy=lazy)
            want = xplane.xspace_from_bytes(path.read_bytes(), str(path), got.host, 0 if lazy else None)
            for store in (got, want):
                for plane in store.planes:
                    _ = plane.stats
            assert store_digest(got) == store_digest(want)


def test_a_file_that_shrinks_while_read_beside_its_walk_is_reported_as_changed(
        profiles_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file shrinks between its size being taken and its read: the reader says the file
    changed while it was read (as a plain read does), not that its bytes are malformed."""
    from tbprof._core import wire
    from tbprof.readers import files

    path = tmp_path / "vm.xplane.pb"
    data = next((profiles_root / "jax_mlp").rglob("*.xplane.pb")).read_bytes()
    path.write_bytes(data)
    monkeypatch.setattr(wire, "READ_BESIDE_MIN_BYTES", 0)

    def shrinking(p: Path) -> files.ArrayRead | None:
        opened = files.read_beside(p)
        os.truncate(p, len(data) // 3)
        return opened

    monkeypatch.setattr(xplane, "read_beside", shrinking)
    monkeypatch.setattr(xplane, "map_profile", lambda p: None)
    with pytest.raises(ProfileReadError, match="changed while it was being read"):
        xplane.read_xspace(path)
