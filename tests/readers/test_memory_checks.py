"""Memory checks that a file's name and size cannot fool (issue #15 item 9)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tbprof.cache import memory_guard
from tbprof.cache.profile_cache import ProfileCache
from tbprof.errors import MemoryRefusal, ProfileReadError
from tbprof.readers import chrome_trace, xplane
from tbprof.readers.files import gunzip_bounded
from tests.hostile.test_hostile_server import _field, _varint


def test_dense_xplane_is_checked_against_the_scanners_counts(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """2 M empty events in 4 MB: the size check (5x = 20 MB) passes a 40 MB budget, the
    scanner's count (2 M events x 32 bytes of store columns = 64 MB) does not."""
    path = tmp_path / "dense.xplane.pb"
    path.write_bytes(_field(1, _field(3, _varint(1 << 3) + _varint(1) + _field(4, b"") * 2_000_000)))
    monkeypatch.setenv(memory_guard.LIMIT_ENV, str(40_000_000))
    memory_guard.check_fits(path)  # the size alone looks fine
    with pytest.raises(MemoryRefusal, match="2,000,000 events"):
        xplane.read_xspace(path)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, str(4_000_000_000))
    assert xplane.read_xspace(path).n_events == 2_000_000


def test_gzip_behind_a_json_name_gets_the_gzip_factor(tmp_path: Path) -> None:
    doc = json.dumps([{"ph": "X", "name": "a", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]).encode()
    plain, zipped = tmp_path / "a.trace.json", tmp_path / "b.trace.json"
    plain.write_bytes(doc)
    zipped.write_bytes(gzip.compress(doc))
    # 3x the JSON, 30x the gzip: the measured peaks of the streaming reader, rounded up (memory_guard).
    assert memory_guard.memory_factor(plain, plain.read_bytes()[:2]) == 3
    assert memory_guard.memory_factor(zipped, zipped.read_bytes()[:2]) == 30


def test_streaming_gunzip_of_a_trace_stops_at_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 50 MB of JSON in ~50 KB of gzip; 30 MB of memory allows 10 MB of JSON (3 bytes per byte).
    bomb = tmp_path / "bomb.trace.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (50 << 20) + b"]"))
    monkeypatch.setenv(memory_guard.LIMIT_ENV, str(30 << 20))
    with pytest.raises(MemoryRefusal, match="expands beyond 10 MB"):
        chrome_trace.read_chrome_trace(bomb)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, str(400 << 20))
    assert chrome_trace.read_chrome_trace(bomb).n_events == 0


def test_gunzip_stops_at_its_budget() -> None:
    bomb = gzip.compress(b" " * (50 << 20))  # 50 MB of spaces in ~50 KB
    assert len(bomb) < 1 << 20
    with pytest.raises(MemoryRefusal, match="expands beyond"):
        gunzip_bounded(bomb, "bomb", 10 << 20)
    # Several members (as `cat a.gz b.gz` makes) are all read; a cut member is damaged.
    two = gzip.compress(b"[1,") + gzip.compress(b"2]")
    assert gunzip_bounded(two, "two", None) == b"[1,2]"
    with pytest.raises(ProfileReadError, match="damaged or truncated"):
        gunzip_bounded(two[:-3], "cut", None)


def test_conversions_in_flight_reserve_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two conversions that each fit alone, but not together: the second is refused while the
    first runs (each used to pass the same check against the same free memory)."""
    doc = json.dumps([{"ph": "X", "name": "a", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(2000)])
    a, b = tmp_path / "a.trace.json", tmp_path / "b.trace.json"
    a.write_text(doc)
    b.write_text(doc)
    size = a.stat().st_size
    factor = memory_guard.memory_factor(a)
    monkeypatch.setenv(memory_guard.LIMIT_ENV, str(int(size * factor * 1.5)))  # room for one and a half
    inside, release = threading.Event(), threading.Event()

    def slow_reader(path: Path) -> object:
        inside.set()
        release.wait(30)
        return chrome_trace.read_chrome_trace(path)

    cache = ProfileCache(tmp_path / "cache", use_disk=False)
    first = threading.Thread(target=lambda: cache.get(a, slow_reader, kind="chrome_trace"))
    first.start()
    try:
        assert inside.wait(30)
        with pytest.raises(MemoryRefusal, match="conversions in flight"):
            cache.get(b, chrome_trace.read_chrome_trace, kind="chrome_trace")
    finally:
        release.set()
        first.join(30)
    assert memory_guard.reserved_bytes() == 0
    assert cache.get(b, chrome_trace.read_chrome_trace, kind="chrome_trace").n_events == 2000  # fits now


def test_the_scanner_asks_before_it_fills_a_column() -> None:
    """The dense file's counts reach the guard before the scanner fills a column: refusing there
    means no column of 2 M rows was ever filled (the parallel scan counts each chunk's stats before
    its decode, the serial scan has its counting pass)."""
    from tbprof._core import wire

    data = _field(1, _field(3, _varint(1 << 3) + _varint(1) + _field(4, b"") * 2_000_000))
    seen: list[tuple[int, int]] = []

    class Refused(Exception):
        pass

    def refuse(n_events: int, n_stats: int) -> None:
        seen.append((n_events, n_stats))
        raise Refused

    with pytest.raises(Refused):
        wire.scan(data, threads=2, on_counts=refuse)
    with pytest.raises(Refused):
        wire.scan_serial_py(data, on_counts=refuse)
    assert seen == [(2_000_000, 0), (2_000_000, 0)]


def test_the_parallel_scan_counts_stats_before_it_fills() -> None:
    """Both scans tell the guard the file's exact stat count, not an estimate: 3,000 events of
    three stats each (an int, a str and an empty stat) are 9,000 stats."""
    from tbprof._core import wire

    stat = _field(4, _varint(1 << 3) + _varint(7) + _varint(4 << 3) + _varint(5))
    text = _field(4, _varint(1 << 3) + _varint(8) + _field(5, b"name"))
    event = _field(4, _varint(1 << 3) + _varint(1) + stat + text + _field(4, b""))
    data = _field(1, _field(3, event * 3000))
    seen: list[tuple[int, int]] = []
    wire.scan(data, threads=2, chunk_bytes=4096, on_counts=lambda e, s: seen.append((e, s)))
    wire.scan_serial_py(data, on_counts=lambda e, s: seen.append((e, s)))
    assert seen == [(3000, 9000), (3000, 9000)]


RELEASE_CHILD = """
import threading, numpy as np
from tbprof.cache.memory_guard import release_free_memory
def rss():
    return next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmRSS')) // 1024
keep = []
import ctypes
# Mid-sized blocks from the heap, as after glibc raised its mmap threshold on freeing a large block
# (set here, M_MMAP_THRESHOLD = -3: the dynamic raise depends on what the process did before).
ctypes.CDLL("libc.so.6").mallopt(-3, 32 << 20)
def convert():  # like a conversion thread: many mid-sized temporaries, a few kept
    temps = [np.ones(100_000) for _ in range(500)]  # 500 x 0.8 MB, now from this thread's heap
    keep.extend(temps[::50])
t = threading.Thread(target=convert)
t.start()
t.join()
before = rss()
release_free_memory()
print(before, rss())
"""


def test_freed_conversion_memory_goes_back_to_the_kernel() -> None:
    # Memory freed on a conversion thread stayed resident under the tools that ran next, until
    # trimmed. A child process: a fresh allocator.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", RELEASE_CHILD], capture_output=True, text=True, env=env, check=True)
    before, after = (int(x) for x in out.stdout.split())
    assert before - after > 200, (before, after, out.stderr)  # 450 of the 500 temporaries (~360 MB) were freed


class _FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1


@pytest.mark.parametrize("env", [None, "64"])
def test_heaps_are_shared_once_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch, env: str | None) -> None:
    """``share_heaps`` caps glibc's arenas (``mallopt(M_ARENA_MAX)``, -8 in glibc's malloc.h) at
    ``SHARED_HEAPS`` once per process, and leaves them alone where ``$MALLOC_ARENA_MAX`` is set
    (glibc read it at start: the user's choice stands)."""
    libc = _FakeLibc()
    monkeypatch.setattr(memory_guard, "_libc", libc)
    monkeypatch.setattr(memory_guard, "_heaps_shared", False)
    if env is None:
        monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    else:
        monkeypatch.setenv("MALLOC_ARENA_MAX", env)
    memory_guard.share_heaps()
    memory_guard.share_heaps()
    assert libc.calls == ([] if env is not None else [(-8, memory_guard.SHARED_HEAPS)])
    assert memory_guard.SHARED_HEAPS == 2


def test_a_segmented_scan_shares_the_heaps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Chrome reader shares the heaps before its segments' threads start."""
    from tbprof.readers import chrome_scan

    calls: list[int] = []
    monkeypatch.setattr(chrome_scan, "share_heaps", lambda: calls.append(1))
    monkeypatch.setenv("TBPROF_THREADS", "4")
    monkeypatch.setattr(chrome_scan, "SEGMENT_MIN_BYTES", 4096)
    monkeypatch.setattr(chrome_scan, "_PROBE_BYTES", 4096)
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"k": i}}
              for i in range(2000)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = chrome_trace.read_chrome_trace(path)
    assert calls == [1]
    assert sum(p.n_events for p in store.planes) == 2000
