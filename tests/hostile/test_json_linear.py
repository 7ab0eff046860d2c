"""The Chrome-trace JSON path in linear time and bounded memory (issue #34, high and medium).

* A small gzip of empty events (``{}`` repeated: one event per 3 bytes of JSON, ~19x the memory per
  byte the guard assumed from the JSON's length) is counted against the memory while it is scanned
  and refused (MemoryRefusal: not remembered, it may fit elsewhere) with its peak within the limit.
* One JSON unit longer than a window: gathered by doubling, not rebuilt at every window (time
  linear in its length), and refused past ``MAX_UNIT_BYTES``.
* A gzip of one real member followed by many empty members: the input after a member is not
  copied at every member (time linear in the file), and past ``MAX_GZIP_MEMBERS`` it is refused.

Files are generated here. Linear time is asserted on the work done, counted, not timed: the bytes
handed to the JSON scanner and to zlib, for an input and for twice that input.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest

from tbprof._core import jsonscan
from tbprof.errors import ProfileReadError
from tbprof.readers import chrome_gzip, chrome_scan
from tbprof.readers.chrome_gzip import MAX_GZIP_MEMBERS
from tbprof.readers.chrome_trace import chrome_trace_from_bytes
from tests.servers import PLUGIN_SRC

_EVENT = b'{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"k"}'


class _CountingScanner(jsonscan.Scanner):
    """The compiled scanner, counting the bytes it is handed (each byte handed is scanned)."""
    fed_bytes = 0

    def feed(self, data: bytes | bytearray | memoryview, base: int, final: bool) -> int:
        type(self).fed_bytes += len(data)
        return int(super().feed(data, base, final))


class _CountingInflater:
    """A zlib decompressor counting the input it is handed: at a member's end zlib copies what it
    did not use into ``unused_data``, so the input handed per call is the work done."""
    handed_bytes = 0

    def __init__(self, wbits: int) -> None:
        self._d = zlib.decompressobj(wbits=wbits)

    def decompress(self, data: bytes | memoryview, max_length: int = 0) -> bytes:
        type(self).handed_bytes += len(data)
        return self._d.decompress(data, max_length)

    def __getattr__(self, name: str) -> object:
        return getattr(self._d, name)


class _WithCountingScanner(types.ModuleType):
    """The scanner module as the reader sees it, its ``Scanner`` counting."""
    Scanner = _CountingScanner

    def __getattr__(self, name: str) -> object:
        return getattr(jsonscan, name)


def _scanned_bytes(monkeypatch: pytest.MonkeyPatch, data: bytes, window_bytes: int) -> int:
    monkeypatch.setattr(chrome_scan, "jsonscan", _WithCountingScanner("jsonscan"))
    _CountingScanner.fed_bytes = 0
    chrome_trace_from_bytes(data, "unit.json", "h", window_bytes=window_bytes)
    return _CountingScanner.fed_bytes


_PEAK_CHILD = """
import json, resource, sys
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.errors import MemoryRefusal
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:
    read_chrome_trace(sys.argv[1])
    refused = ""
except MemoryRefusal as e:
    refused = str(e)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"grew_bytes": peak - base, "refused": refused}))
"""


def test_gzip_of_empty_events_is_refused_within_the_memory_limit(tmp_path: Path) -> None:
    n_events = 10_000_000
    path = tmp_path / "empty.trace.json.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"traceEvents":[')
        for _ in range(n_events // 1_000_000 - 1):
            f.write(b"{}," * 1_000_000)
        f.write(b"{}," * 999_999 + b"{}]}")
    assert path.stat().st_size < 100_000  # 30 MB of JSON in a file of ~30 KB
    limit_bytes = 300_000_000
    out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(path)], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(PLUGIN_SRC), "TBPROF_CONVERT_MEMORY_BYTES": str(limit_bytes)},
                         check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # The columns of 10 M events take ~45 bytes each, 450 MB, over the limit: refused while scanning.
    assert "events" in got["refused"], got
    assert got["grew_bytes"] < limit_bytes, got


def _one_unit(mb: int) -> bytes:
    return b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"' + b"a" * (mb << 20) + b'"}]}'


def test_one_long_unit_reads_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    store = chrome_trace_from_bytes(_one_unit(1), "unit.json", "h", window_bytes=64 << 10)
    assert "a" * (1 << 20) in store.strings.as_list()
    # Windows of 64 KiB: an 8 MB event spans 128 of them, as a 2 GB one spans 128 of 16 MiB. Rescanned
    # at every window (the quadratic reading) it would be handed ~64x its length; gathered by
    # doubling, each doubling is scanned once: under 4x its length, and twice the unit twice the work.
    one, two = (_one_unit(mb) for mb in (8, 16))
    scanned_one = _scanned_bytes(monkeypatch, one, 64 << 10)
    scanned_two = _scanned_bytes(monkeypatch, two, 64 << 10)
    assert len(one) <= scanned_one <= 4 * len(one)
    assert scanned_two <= 2.5 * scanned_one


def test_one_unit_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chrome_scan, "MAX_UNIT_BYTES", 1 << 20)
    with pytest.raises(ProfileReadError, match="longer than 1 MiB"):
        chrome_trace_from_bytes(_one_unit(4), "unit.json", "h", window_bytes=64 << 10)
    # A unit under the cap still reads.
    half = b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"' + b"b" * (1 << 19) + b'"}]}'
    assert "b" * (1 << 19) in chrome_trace_from_bytes(half, "unit.json", "h", window_bytes=64 << 10).strings.as_list()


def _members(extra: int) -> bytes:
    return gzip.compress(b'{"traceEvents":[' + _EVENT + b"]}") + gzip.compress(b"") * extra


def test_gzip_members_read_in_linear_time_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under the cap: every member read, the event of the first one kept.
    store = chrome_trace_from_bytes(_members(MAX_GZIP_MEMBERS - 1), "m.json.gz", "h")
    assert sum(int(p.start_ps.shape[0]) for p in store.planes) == 1
    with pytest.raises(ProfileReadError, match="members"):
        chrome_trace_from_bytes(_members(MAX_GZIP_MEMBERS), "m.json.gz", "h")

    # 1 MB and 2 MB of empty members (20 bytes each): refused past the cap, the input handed to zlib
    # bounded by the members read (each at most one input step), whatever follows them. Handing
    # zlib the rest of the file at every member (the quadratic reading) is ~MAX_GZIP_MEMBERS x 1 MB.
    monkeypatch.setattr(chrome_gzip, "zlib", types.SimpleNamespace(decompressobj=_CountingInflater, error=zlib.error))

    def handed_bytes(data: bytes) -> int:
        _CountingInflater.handed_bytes = 0
        with pytest.raises(ProfileReadError, match="members"):
            chrome_trace_from_bytes(data, "m.json.gz", "h")
        return _CountingInflater.handed_bytes

    one, two = _members(50_000), _members(100_000)
    handed_one, handed_two = handed_bytes(one), handed_bytes(two)
    assert handed_one <= MAX_GZIP_MEMBERS * chrome_gzip.GZIP_INPUT_BYTES
    assert handed_two <= 2.5 * handed_one
