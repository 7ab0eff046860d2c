"""The batch frame (analyses/partial_frames.py, analyses/partial_batches.py): what a pod's worker
sends the server. It round-trips every value it carries exactly, and its decoder refuses a
truncated, damaged or lying frame with a ``FrameError`` naming what is wrong (never an
IndexError, a read past the end or a wrong answer): every truncation, random byte flips, and
directories rewritten (their checksum fixed) to point outside the frame."""

from __future__ import annotations

import dataclasses
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.partial_batches import ERROR, FRAMED, decode_batch
from tbprof.analyses.partial_frames import _COVERED, _ENTRY, _PREFIX, Frame, FrameError, FrameWriter
from tbprof.analyses.partials import CARRIED, partial_from_bytes
from tbprof.service.executor import HostTask, convert_batch


def _sample() -> bytes:
    w = FrameWriter()
    w.put("ints", np.array([1, -2, 2**62], dtype=np.int64))
    w.put("floats", np.array([0.1, np.nan, -np.inf, 5e-324]))
    w.put("flags", [True, False, True], "?")
    w.put("bytes", np.frombuffer(b"\x00\xffabc", dtype=np.uint8))
    w.put_strings("texts", ["", "plain", "ünïcödé ✓", "\ud800 lone surrogate", "a\x00b"])
    w.put_string_lists("lists", [["x", "y"], [], ["z"]])
    w.put_ragged("rows", [np.arange(3), np.zeros(0, np.int64), np.array([[7, 8], [9, 10]])], "<i8")
    return bytes(w)


def test_a_frame_round_trips_exactly() -> None:
    f = Frame(_sample())
    assert f.get("ints", "<i8").tolist() == [1, -2, 2**62]
    floats = f.get("floats", "<f8")
    assert floats[0] == 0.1 and np.isnan(floats[1]) and floats[2] == -np.inf and floats[3] == 5e-324
    assert f.get("flags", "?").tolist() == [True, False, True]
    assert f.get("bytes", "<u1").tobytes() == b"\x00\xffabc"
    assert f.strings("texts", 5) == ["", "plain", "ünïcödé ✓", "\ud800 lone surrogate", "a\x00b"]
    assert f.string_lists("lists", 3) == [["x", "y"], [], ["z"]]
    values, bounds = f.ragged("rows", 3, "<i8")
    assert bounds == [0, 3, 3, 7] and values.tolist() == [0, 1, 2, 7, 8, 9, 10]
    assert not values.flags.writeable  # views of the frame's bytes: a caller copies what it keeps
    with pytest.raises(FrameError, match="expected int64"):
        f.get("floats", "<i8")
    with pytest.raises(FrameError, match="has 6 items, expected 5"):
        f.strings("texts", 4)
    with pytest.raises(FrameError, match="lacks section 'nothing'"):
        f.get("nothing", "<i8")


def test_every_truncation_is_refused() -> None:
    blob = _sample()
    for n in range(len(blob)):
        with pytest.raises(FrameError, match=r"truncated|checksum"):
            Frame(blob[:n])


def test_random_damage_is_refused() -> None:
    blob = _sample()
    rng = random.Random(39)
    for _ in range(300):
        damaged = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        if bytes(damaged) == blob:
            continue
        with pytest.raises(FrameError):
            Frame(bytes(damaged))


def _rewritten(blob: bytes, section: int, **fields: int) -> bytes:
    """The frame with one directory entry's fields replaced and its checksum made right again:
    a frame whose bytes lie consistently, as a hostile worker would send."""
    out = bytearray(blob)
    at = _PREFIX.size + section * _ENTRY.size
    name_at, name_len, code, offset, count = _ENTRY.unpack_from(out, at)
    values = {"name_at": name_at, "name_len": name_len, "code": code, "offset": offset, "count": count, **fields}
    _ENTRY.pack_into(out, at, *values.values())
    return _with_checksum(out)


def _with_checksum(out: bytearray) -> bytes:
    magic, version, n, names_len, _ = _PREFIX.unpack_from(out)
    covered = zlib.crc32(_COVERED.pack(magic, version, n, names_len))
    _PREFIX.pack_into(out, 0, magic, version, n, names_len, zlib.crc32(memoryview(out)[_PREFIX.size:], covered))
    return bytes(out)


@pytest.mark.parametrize(("fields", "message"), [
    ({"count": 10**6}, "lie outside the frame"),
    ({"count": 2**63}, "lie outside the frame"),
    ({"offset": 2**40}, "lie outside the frame"),
    ({"offset": 4}, "lie outside the frame"),  # misaligned
    ({"code": 200}, "unknown dtype code"),
    ({"name_at": 10**6}, "name out of bounds"),
    ({"name_len": 0}, "name out of bounds"),
    ({"name_at": 0, "name_len": 4}, "repeated"),  # names the first section again
])
def test_a_lying_directory_is_refused(fields: dict[str, int], message: str) -> None:
    with pytest.raises(FrameError, match=message):
        Frame(_rewritten(_sample(), 1, **fields))


def test_a_huge_directory_and_other_versions_are_refused() -> None:
    blob = bytearray(_sample())
    magic, version, n, names_len, crc = _PREFIX.unpack_from(blob)
    with pytest.raises(FrameError, match="directory too large"):
        Frame(_PREFIX.pack(magic, version, 10**9, names_len, crc) + bytes(blob[_PREFIX.size:]))
    with pytest.raises(FrameError, match="frame version 2"):
        Frame(_PREFIX.pack(magic, 2, n, names_len, crc) + bytes(blob[_PREFIX.size:]))
    with pytest.raises(FrameError, match="checksum"):  # the names' length is covered too
        Frame(_PREFIX.pack(magic, version, n, names_len + 2, crc) + bytes(blob[_PREFIX.size:]))
    with pytest.raises(FrameError, match="magic"):
        Frame(b"PK\x03\x04" + bytes(blob[4:]))


def test_offsets_that_go_backwards_or_bad_utf8_are_refused() -> None:
    w = FrameWriter()
    w.put("texts.o", np.array([0, 3, 1, 4], dtype=np.int64))
    w.put("texts.b", np.frombuffer(b"abcd", dtype=np.uint8))
    w.put("bad.o", np.array([0, 2], dtype=np.int64))
    w.put("bad.b", np.frombuffer(b"\xff\xfe", dtype=np.uint8))
    w.put("neg.n", np.array([-1, 1], dtype=np.int64))
    w.put("neg.o", np.array([0], dtype=np.int64))
    w.put("neg.b", np.zeros(0, dtype=np.uint8))
    f = Frame(bytes(w))
    with pytest.raises(FrameError, match="offsets do not cover"):
        f.strings("texts", 3)
    with pytest.raises(FrameError, match="not UTF-8"):
        f.strings("bad", 1)
    with pytest.raises(FrameError, match="negative list length"):
        f.string_lists("neg", 2)


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types (arrays: dtype, shape and bits)."""
    if isinstance(a, np.ndarray):
        if not (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        return _same(a.tolist(), b.tolist()) if a.dtype == object else a.tobytes() == b.tobytes()
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    if hasattr(a, "__dict__") and not isinstance(a, (str, int, float, bool)):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return type(a) is type(b) and bool(a == b)


@pytest.fixture(scope="module")
def batch(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[HostTask], bytes]:
    """A batch of every demo XSpace host (four programs: CPU only, one GPU, two GPUs) and a
    missing file, converted as a worker converts it."""
    cache = tmp_path_factory.mktemp("cache")
    files = sorted(profiles_root.rglob("*.xplane.pb"))
    tasks = [HostTask(f"h{i}", str(f), "xspace", str(cache), write_store=False) for i, f in enumerate(files)]
    tasks.append(HostTask("gone", str(cache / "gone.xplane.pb"), "xspace", str(cache), write_store=False))
    frame = convert_batch(tasks)["frame"]
    assert isinstance(frame, bytes)
    return tasks, frame


def test_a_batch_carries_each_host_as_its_own_partial_does(batch: tuple[list[HostTask], bytes]) -> None:
    """Every host built from the frame's arrays equals the host decoded from its own partial:
    header, planes and their stats, and every carried value (those the frame carries and those
    decoded from the blob on first use)."""
    tasks, frame = batch
    # Every readable host as arrays (none fell back to its blob alone), the missing file an error.
    assert Frame(frame).get("mode", "<u1").tolist() == [FRAMED] * (len(tasks) - 1) + [ERROR]
    got = decode_batch(frame, [t.host for t in tasks])
    assert [r["host"] for r in got.results] == [t.host for t in tasks]
    assert "error" in got.results[-1] and "cannot read the file" in got.results[-1]["error"]
    assert len(got.parts) == len(tasks) - 1 >= 5
    assert got.combined is not None and got.combined_hosts == [t.host for t in tasks[:-1]]
    for r in got.results[:-1]:
        ref, part = partial_from_bytes(r["partial"]), got.parts[r["host"]]
        for name in ("host", "format", "source_path", "span_ps", "hostnames", "errors", "warnings", "metadata",
                     "summary", "available_tools"):
            assert _same(getattr(ref, name), getattr(part, name)), name
        assert [(p.name, p.n_events) for p in ref.planes] == [(p.name, p.n_events) for p in part.planes]
        assert all(_same(p.plane_stats, q.plane_stats) for p, q in zip(ref.planes, part.planes, strict=True))
        for c in CARRIED:
            assert _same(ref.carried(c.key), part.carried(c.key)), c.name


def test_a_batch_frame_refuses_damage_and_other_hosts(batch: tuple[list[HostTask], bytes]) -> None:
    tasks, frame = batch
    hosts = [t.host for t in tasks]
    with pytest.raises(FrameError, match="other hosts"):
        decode_batch(frame, hosts[::-1])
    with pytest.raises(FrameError, match=r"other hosts|items, expected"):
        decode_batch(frame, hosts[:-1])
    rng = random.Random(28)
    for _ in range(40):
        cut = rng.randrange(len(frame))
        with pytest.raises(FrameError):
            decode_batch(frame[:cut], hosts)
        damaged = bytearray(frame)
        damaged[rng.randrange(len(frame))] ^= 0x10
        with pytest.raises(FrameError):
            decode_batch(bytes(damaged), hosts)


def test_a_batch_whose_shapes_lie_is_refused(batch: tuple[list[HostTask], bytes]) -> None:
    """A step table shape that does not match its values (checksum right) is a FrameError."""
    tasks, frame = batch
    f = Frame(frame)
    names = list(f.arrays)
    section = names.index("steps.type_shape")
    entry = _ENTRY.unpack_from(frame, _PREFIX.size + section * _ENTRY.size)
    data_start = len(frame) - sum(-(-a.nbytes // 8) * 8 for a in f.arrays.values())
    out = bytearray(frame)
    struct.pack_into("<q", out, data_start + entry[3], 3)  # the first host's step count, now 3
    with pytest.raises(FrameError, match="does not match"):
        decode_batch(_with_checksum(out), [t.host for t in tasks])


def test_a_batch_of_the_headlines_parts_carries_those_only(profiles_root: Path, tmp_path: Path) -> None:
    """A batch converted for ``tbprof summary`` (``HostTask.parts``: the headline's parts): each
    host has exactly those parts (no tool list, no kernel reports), as its own partial says,
    every value it has equal to the host's complete partial's, and a value it lacks is refused
    (LookupError), never computed as something else."""
    from tbprof.analyses.partial_formats import HEADLINE_PARTS
    from tbprof.analyses.partials import ALL_PARTS

    files = sorted(profiles_root.rglob("*.xplane.pb"))
    hosts = [f"h{i}" for i in range(len(files))]

    def converted(parts: frozenset[str] | None, cache: Path) -> Any:
        tasks = [HostTask(h, str(f), "xspace", str(cache), write_store=False, parts=parts)
                 for h, f in zip(hosts, files, strict=True)]
        return decode_batch(convert_batch(tasks)["frame"], hosts)

    lean, full = converted(HEADLINE_PARTS, tmp_path / "c1"), converted(None, tmp_path / "c2")
    assert len(lean.parts) == len(files) >= 5
    kernel_key = next(c.key for c in CARRIED if c.name == "kernel_reports")
    for h in hosts:
        part, ref = lean.parts[h], full.parts[h]
        assert part.parts() == partial_from_bytes(lean.results[hosts.index(h)]["partial"]).parts() == HEADLINE_PARTS
        assert ref.parts() == ALL_PARTS and ref.available_tools and part.available_tools is None
        assert part.holds(HEADLINE_PARTS) and not part.holds(ALL_PARTS)
        for c in CARRIED:
            if c.name in HEADLINE_PARTS:
                assert _same(ref.carried(c.key), part.carried(c.key)), c.name
        with pytest.raises(LookupError, match="does not carry"):
            part.carried(kernel_key)
