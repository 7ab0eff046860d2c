"""Malformed XSpace bytes: every input either decodes or raises the reader's error, never crashes.

The numba scanner this replaced died with SIGSEGV on an 18-byte file whose string length was a
varint near 2^63 (``pos + n > end`` wrapped). Here: huge lengths at each nesting level, every
truncation point of a small real file, and a few thousand seeded byte flips. The decodes run in
a child process (``fuzz_child.py``): a crash shows up as a failed test with the signal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tbprof
from tbprof.protos import xplane_pb2
from tests.conftest import REPO, xplane_of

# Lengths that broke or could break an unchecked `pos + n > end`: around 2^31, 2^32, 2^63, 2^64.
HUGE_LENGTHS = (2**31 - 1, 2**31, 2**32 + 5, 2**62, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1)


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, wire: int, payload: bytes | int) -> bytes:
    tag = varint(number << 3 | wire)
    if wire == 0:
        assert isinstance(payload, int)
        return tag + varint(payload)
    assert isinstance(payload, bytes)
    return tag + varint(len(payload)) + payload if wire == 2 else tag + payload


def len_field(number: int, payload: bytes, length: int | None = None) -> bytes:
    """A LEN field whose declared length may lie (``length``)."""
    return varint(number << 3 | 2) + varint(len(payload) if length is None else length) + payload


# One message per nesting level, innermost first: the huge length goes on level ``level``.
LEVELS = ("plane", "line", "event", "stat", "string")


def crafted(level: str, length: int) -> bytes:
    """space > plane > line > event > stat > str, with the length of ``level`` replaced."""
    def wrap(name: str, number: int, payload: bytes) -> bytes:
        return len_field(number, payload, length if level == name else None)

    text = wrap("string", 5, b"abc")
    stat = wrap("stat", 4, field(1, 0, 1) + text)
    event = wrap("event", 4, field(1, 0, 1) + field(2, 0, 10) + field(3, 0, 5) + stat)
    line = wrap("line", 3, field(1, 0, 7) + event)
    return wrap("plane", 1, field(1, 0, 1) + line)


def run_child(inputs: list[bytes], reader: bool = True, compare: bool = True, timeout: float = 120,
              fmt: str = "xspace", windows: list[int] | None = None, disk: bool = False) -> dict[str, Any]:
    job = json.dumps({"inputs": [b.hex() for b in inputs], "reader": reader, "compare": compare, "format": fmt,
                      "windows": windows or [], "disk": disk})
    # The child imports tbprof from where this process did (the source tree, or an installed
    # wheel under cibuildwheel) and the tests package from the repository.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(tbprof.__file__).parent.parent), str(REPO)]))
    proc = subprocess.run([sys.executable, "-m", "tests.core.fuzz_child"], input=job, capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)
    assert proc.returncode == 0, f"the decoder child died (exit code {proc.returncode}): {proc.stderr[-2000:]}"
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["n_problems"] == 0, report["problems"]
    return report


def test_the_18_byte_crash_file_is_an_error() -> None:
    """The issue's crash: a stat string length of 2^63 - 1 inside otherwise valid framing."""
    data = crafted("string", 2**63 - 1)
    report = run_child([data])
    assert report["counts"] == {"ok": 0, "wire_error": 1, "read_ok": 0, "read_error": 1}


@pytest.mark.parametrize("level", LEVELS)
def test_huge_lengths_at_every_level_are_errors(level: str) -> None:
    inputs = [crafted(level, n) for n in HUGE_LENGTHS]
    report = run_child(inputs)
    assert report["counts"]["wire_error"] == len(inputs)
    assert report["counts"]["read_error"] == len(inputs)


def test_the_crafted_file_is_well_formed_when_honest() -> None:
    """Without a lying length the same bytes decode to one plane, event and stat."""
    from tbprof._core import wire

    honest = crafted("no level", 0)
    sc = wire.scan(honest)
    assert (sc.n_planes, sc.n_events, sc.n_stats) == (1, 1, 1)
    assert sc.texts.tolist() == [[0, len(honest) - 3, 3]]  # "abc" ends the file


def small_real_xspace(profiles_root: Path) -> bytes:
    """jax_mlp cut down with upb to 8 events per line and the metadata they use (~32 KB): every
    kind of plane, line, event and stat of a real GPU profile, small enough to truncate at every
    field boundary."""
    space = xplane_pb2.XSpace.FromString(xplane_of(profiles_root, "jax_mlp").read_bytes())
    for p in space.planes:
        for line in p.lines:
            del line.events[8:]
        used = {e.metadata_id for line in p.lines for e in line.events}
        for k in [k for k in p.event_metadata if k not in used]:
            del p.event_metadata[k]
        del p.stats[4:]
    return space.SerializeToString(deterministic=True)


def field_boundaries(data: bytes) -> list[int]:
    """Start and end offsets of every field the scanner walks (space, plane, line, event, stat)
    and of the fields inside those that it skips."""
    out: set[int] = set()
    descend = {0: {1: 1}, 1: {3: 2}, 2: {4: 3}, 3: {4: 4}, 4: {}}  # level -> field number -> child level

    def walk(pos: int, end: int, level: int) -> None:
        while pos < end:
            out.add(pos)
            tag, pos = _read_varint(data, pos)
            number, wire = tag >> 3, tag & 7
            if wire == 0:
                _, pos = _read_varint(data, pos)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                n, pos = _read_varint(data, pos)
                out.add(pos)
                child = descend[level].get(number)
                if child is not None:
                    walk(pos, pos + n, child)
                pos += n
            out.add(pos)

    walk(0, len(data), 0)
    return sorted(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def test_truncation_at_every_field_boundary(profiles_root: Path) -> None:
    data = small_real_xspace(profiles_root)
    cuts = field_boundaries(data)
    assert len(cuts) > 1000  # hundreds of events and stats: the cut list is not trivially short
    # Also one byte into every field: a cut inside a tag, a length or a value.
    inputs = [data[:c] for c in cuts if 0 < c < len(data)] + [data[:c + 1] for c in cuts if c + 1 < len(data)]
    report = run_child(inputs)
    counts = report["counts"]
    assert counts["ok"] + counts["wire_error"] == len(inputs)
    assert counts["wire_error"] > 0 and counts["ok"] > 0  # cuts between planes decode, others do not


def test_seeded_byte_flips(profiles_root: Path) -> None:
    data = bytearray(small_real_xspace(profiles_root))
    rng = np.random.default_rng(14)
    inputs = []
    for _ in range(3000):
        flipped = bytearray(data)
        for pos in rng.integers(0, len(data), int(rng.integers(1, 4))).tolist():
            # Half the flips set the high bit region (lengths and varints grow), half are random.
            flipped[pos] = int(rng.integers(0x80, 0x100)) if rng.random() < 0.5 else int(rng.integers(0, 0x100))
        inputs.append(bytes(flipped))
    report = run_child(inputs, reader=False)
    assert report["counts"]["ok"] + report["counts"]["wire_error"] == len(inputs)
    # The whole reader (upb for the small fields, the kernels, the store) on a share of them.
    run_child(inputs[::6], reader=True, compare=False)


def test_random_bytes_never_crash() -> None:
    rng = np.random.default_rng(2014)
    inputs = [rng.integers(0, 256, int(rng.integers(1, 200)), dtype=np.uint8).tobytes() for _ in range(1000)]
    report = run_child(inputs, reader=False)
    assert report["counts"]["ok"] + report["counts"]["wire_error"] == len(inputs)


def test_streaming_reader_on_truncations_flips_and_huge_lengths(profiles_root: Path) -> None:
    """The streaming reader (bounded windows of the file, readers/xplane_stream.py) on the same
    hostile inputs: it reads exactly what the in-memory reader reads (the same store) and
    refuses exactly what it refuses, never crashes, and leaves no entry behind a failure."""
    data = small_real_xspace(profiles_root)
    cuts = field_boundaries(data)
    inputs = [data[:c] for c in cuts[::40] if 0 < c < len(data)]
    rng = np.random.default_rng(16)
    for _ in range(50):  # a read flip writes and maps a whole entry (~300 files): the slow part
        flipped = bytearray(data)
        for pos in rng.integers(0, len(data), int(rng.integers(1, 4))).tolist():
            flipped[pos] = int(rng.integers(0x80, 0x100)) if rng.random() < 0.5 else int(rng.integers(0, 0x100))
        inputs.append(bytes(flipped))
    inputs += [crafted(level, n) for level in LEVELS for n in HUGE_LENGTHS]
    report = run_child(inputs, fmt="stream", timeout=300)
    counts = report["counts"]
    assert counts["both_ok"] + counts["both_error"] == len(inputs)
    assert counts["both_ok"] > 0 and counts["both_error"] > 0


# Values that break naive time and index arithmetic: overflow to +-inf or past int64 after the
# microseconds -> picoseconds scaling, NaN, wrong types.
WEIRD_VALUES: tuple[Any, ...] = (-1e18, 1e18, 1e300, -1e300, 2**70, -(2**70), float("nan"), float("inf"), 0, -1,
                                 "12", None, [1, 2], {"a": 1}, True)


def test_chrome_trace_mutations_read_or_raise(sample_profiles: Path) -> None:
    """The Chrome-trace kernels take no sizes from the file (line and row indices are computed
    from the parsed JSON), so the risk is in the values: seeded mutations of a real TF1
    timeline's events (phase, times, ids, args) either read or raise ProfileReadError."""
    doc = json.loads((sample_profiles / "tf1_timeline" / "timeline-0.json").read_text())
    events = doc["traceEvents"][:400]
    rng = np.random.default_rng(1414)
    phases = ("X", "B", "E", "i", "I", "C", "s", "t", "f", "N", "O", "D", "M", "b", "e", "P", "zz")
    inputs = []
    for _ in range(150):
        mutated = json.loads(json.dumps(events))
        for _ in range(int(rng.integers(1, 8))):
            ev = mutated[int(rng.integers(0, len(mutated)))]
            key = ("ph", "ts", "dur", "pid", "tid", "id", "args", "name", "bp", "cat")[int(rng.integers(0, 10))]
            if key == "ph":
                ev[key] = phases[int(rng.integers(0, len(phases)))]
            elif rng.random() < 0.2:
                ev.pop(key, None)
            else:
                ev[key] = WEIRD_VALUES[int(rng.integers(0, len(WEIRD_VALUES)))]
        inputs.append(json.dumps({"traceEvents": mutated}).encode())
    report = run_child(inputs, fmt="chrome")
    assert report["counts"]["read_ok"] + report["counts"]["read_error"] == len(inputs)
