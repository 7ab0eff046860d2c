"""A Chrome trace scanned in segments on several threads (``readers/chrome_scan.scan_file``) is read
exactly as one scanner reads it: the same strings in the same order, the same columns, the same
warnings, the same refusals with the same byte offsets.

Segments are made small here (``SEGMENT_MIN_BYTES``) so that the demo traces, a few KB to a few MB,
are cut in several places; each test checks that the cut it is about really happened (the number
of scanners merged, or that a scanner went on past a cut), so none passes by reading serially.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.errors import ProfileReadError
from tbprof.readers import chrome_scan
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store import tables
from tests.core.chrome_digest import DEMO, DIGESTS, demo_files, semantic_digest

WANT = json.loads(DIGESTS.read_text())
_PLANE_COLUMNS = ("start_ps", "dur_ps", "name_id", "meta_idx", "depth", "line_idx", "line_offsets", "line_ids",
                  "meta_name_id", "meta_ids")
_STAT_COLUMNS = ("owner", "stat_id", "kind", "value")


class _Merges:
    """Counts the scanners merged per read (1 when the file was read by one scanner)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: list[int] = []
        merged = chrome_scan._merged

        def counting(scanners: list[Any], source: str) -> chrome_scan.Scan:
            self.counts.append(len(scanners))
            return merged(scanners, source)

        monkeypatch.setattr(chrome_scan, "_merged", counting)


def _serial(monkeypatch: pytest.MonkeyPatch, path: Path) -> tables.ProfileStore:
    with monkeypatch.context() as m:
        m.setenv("TBPROF_THREADS", "1")
        return read_chrome_trace(path)


def _segmented(monkeypatch: pytest.MonkeyPatch, path: Path, segment_bytes: int, threads: int = 4,
               window_bytes: int = chrome_scan.SEGMENT_WINDOW_BYTES) -> tables.ProfileStore:
    with monkeypatch.context() as m:
        m.setenv("TBPROF_THREADS", str(threads))
        m.setattr(chrome_scan, "SEGMENT_MIN_BYTES", segment_bytes)
        m.setattr(chrome_scan, "SEGMENT_WINDOW_BYTES", window_bytes)
        m.setattr(chrome_scan, "_PROBE_BYTES", 4096)
        return read_chrome_trace(path)


def _assert_same(a: tables.ProfileStore, b: tables.ProfileStore) -> None:
    assert a.strings.as_list() == b.strings.as_list()
    assert (a.warnings, a.metadata, a.origin_ps, a.span_ps) == (b.warnings, b.metadata, b.origin_ps, b.span_ps)
    assert [p.name for p in a.planes] == [p.name for p in b.planes]
    for p, q in zip(a.planes, b.planes, strict=True):
        assert (p.line_names, p.plane_stats) == (q.line_names, q.plane_stats)
        for col in _PLANE_COLUMNS:
            assert np.array_equal(getattr(p, col), getattr(q, col)), (p.name, col)
        for table in ("stats", "meta_stats"):
            for col in _STAT_COLUMNS:
                assert np.array_equal(getattr(getattr(p, table), col), getattr(getattr(q, table), col)), \
                    (p.name, table, col)


@pytest.mark.parametrize("path", [p for p in demo_files() if not p.name.endswith(".gz")], ids=lambda p: p.name)
def test_demo_traces_read_alike_in_segments(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    merges = _Merges(monkeypatch)
    # Segments of a fifth of the file (1 KB at least): cut up to three times. A gzip stream is read
    # by one scanner (it cannot be entered in the middle).
    size = path.stat().st_size
    got = _segmented(monkeypatch, path, max(1024, size // 5))
    assert merges.counts and merges.counts[-1] >= 2, "the file was not cut"
    _assert_same(got, _serial(monkeypatch, path))
    assert json.loads(json.dumps(semantic_digest(got))) == WANT[str(path.relative_to(DEMO))]


def test_segments_read_in_windows_shorter_than_an_event(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each segment's scanner reads windows of ``SEGMENT_WINDOW_BYTES``: events cut by a window's end
    (here most of them: windows of 64 bytes) are carried into the next, as one scanner reads them."""
    path = tmp_path / "t.json"
    path.write_bytes(_trace(600, text_every=9))
    merges = _Merges(monkeypatch)
    got = _segmented(monkeypatch, path, 16 << 10, window_bytes=64)
    assert merges.counts and merges.counts[-1] >= 2, "the file was not cut"
    _assert_same(got, _serial(monkeypatch, path))


def test_the_scan_is_freed_without_the_cyclic_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a store is read, the scan (its token table, the scanner's memory) and the builder are
    freed by their references alone: a one-shot command may never run the cyclic collector, and a
    cycle would hold them beside the store until the process ends."""
    import gc
    import weakref

    from tbprof.readers import chrome_collect, chrome_trace

    held: list[weakref.ref[Any]] = []
    real_build, real_scan_file = chrome_collect.Collector.build, chrome_scan.scan_file

    def build(self: chrome_collect.Collector, scan: chrome_scan.Scan) -> tables.ProfileStore:
        held.append(weakref.ref(self))
        return real_build(self, scan)

    def scan_file(*args: Any) -> chrome_scan.Scan:
        scan = real_scan_file(*args)
        held.append(weakref.ref(scan))
        return scan

    monkeypatch.setattr(chrome_collect.Collector, "build", build)
    monkeypatch.setattr(chrome_trace.chrome_scan, "scan_file", scan_file)
    path = next((DEMO / "torch_ddp").glob("rank0.*.pt.trace.json"))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        store = _segmented(monkeypatch, path, 256 << 10)
        assert len(held) == 2, "the file was not read in segments"
        assert [ref() for ref in held] == [None, None]
    finally:
        if was_enabled:
            gc.enable()
    assert store.planes


def test_a_whole_scan_drops_its_token_index() -> None:
    """The scanner's hash index goes once its scan is whole (``Scan``): its tokens stay readable by
    id, and it reads and interns no more (a refusal, not a read of freed memory)."""
    from tbprof._core import jsonscan

    sc = jsonscan.Scanner()
    assert sc.feed(b'[{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]', 0, True) > 0
    scan = chrome_scan.Scan(sc)
    assert [scan.tokens[t] for t in range(len(scan.tokens))] == [sc.token(t) for t in range(sc.n_tokens)]
    assert b"Sa" in [scan.tokens[t] for t in range(len(scan.tokens))]
    with pytest.raises(ValueError, match="dropped"):
        sc.feed(b" ", 0, True)
    with pytest.raises(ValueError, match="dropped"):
        sc.merge_tokens([jsonscan.Scanner()], np)


@pytest.mark.parametrize("first_empty", [False, True])
def test_merged_token_tables_number_tokens_as_one_scanner(first_empty: bool) -> None:
    """``Scanner.merge_tokens`` gives every token the id one scanner reading the whole array gives
    it: tokens repeated across segments keep their first id, new ones follow in file order (also
    when the first segment holds no token at all)."""
    from tbprof._core import jsonscan

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    parts = [b"[{}," if first_empty else b'[{"name": "w3", "cat": "c"},']
    for _ in range(3):
        events = [json.dumps({"name": str(rng.choice(words)), "args": {"k": str(rng.choice(words)), "n": int(i)}})
                  for i in rng.integers(0, 30, size=25)]
        parts.append(("".join(e + "," for e in events)).encode())
    parts[-1] = parts[-1][:-1] + b"]"
    whole = jsonscan.Scanner()
    assert whole.feed(b"".join(parts), 0, True) > 0
    scanners = [jsonscan.Scanner() for _ in parts]
    for k, (sc, part) in enumerate(zip(scanners, parts, strict=True)):
        if k:
            sc.resume_in_events(True)
        assert sc.feed(part, 0, k == len(parts) - 1) == len(part)
    if first_empty:
        assert scanners[0].n_tokens == 0
    remaps = scanners[0].merge_tokens(scanners[1:], np)
    merged = scanners[0]
    assert [merged.token(t) for t in range(merged.n_tokens)] == [whole.token(t) for t in range(whole.n_tokens)]
    for sc, remap in zip(scanners[1:], remaps, strict=True):
        assert [merged.token(int(t)) for t in remap] == [sc.token(t) for t in range(sc.n_tokens)]
    with pytest.raises(ValueError, match="dropped"):
        merged.feed(b" ", 0, True)


def _trace(n: int, text_every: int = 0, tail: str = "") -> bytes:
    """A trace object of ``n`` complete events (distinct names every 7, so later segments find
    tokens the earlier ones did not), and with ``text_every`` an args string that reads like an
    event boundary (``}, {``); ``tail``: top-level members after the event array."""
    events = []
    for i in range(n):
        args: dict[str, Any] = {"i": i, "note": f"x{i % 5}"}
        if text_every and i % text_every == 0:
            args["text"] = '{"a": 1}, {"ph": "X"}' * 3
        events.append({"ph": "X", "name": f"op{i % 7}_{i // 50}", "cat": "cpu_op", "pid": 1, "tid": 1 + i % 3,
                       "ts": 1000 + 3 * i, "dur": 2, "args": args})
    body = json.dumps({"schemaVersion": 1, "traceEvents": events})[:-1]
    return (body + tail + "}").encode()


def test_cuts_inside_strings_are_not_taken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Every event carries a string with '}, {' in it: most candidate cuts fall inside a string,
    # where the scanner before the cut does not stop between two events; it reads on.
    path = tmp_path / "strings.json"
    path.write_bytes(_trace(3000, text_every=1))
    feeds: list[int] = []
    segments: list[int] = []
    feed, cuts = chrome_scan._Feeder.feed, chrome_scan._cuts

    def counting_feed(self: chrome_scan._Feeder, windows: Any) -> None:
        feeds.append(self.base)
        feed(self, windows)

    def counting_cuts(f: Any, n: int) -> list[int]:
        got = cuts(f, n)
        segments.append(len(got) - 1)
        return got

    monkeypatch.setattr(chrome_scan._Feeder, "feed", counting_feed)
    monkeypatch.setattr(chrome_scan, "_cuts", counting_cuts)
    got = _segmented(monkeypatch, path, 16 << 10, threads=6)
    assert segments[-1] >= 2
    assert len(feeds) == segments[-1] + 1, "no scanner read on past a cut inside a string"
    _assert_same(got, _serial(monkeypatch, path))


def test_members_after_the_events_and_a_second_event_array(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    merges = _Merges(monkeypatch)
    after = tmp_path / "after.json"
    after.write_bytes(_trace(3000, tail=', "displayTimeUnit": "ns", "schemaVersion": 2'))
    got = _segmented(monkeypatch, after, 16 << 10)
    assert merges.counts[-1] >= 2
    _assert_same(got, _serial(monkeypatch, after))
    assert got.metadata["schemaVersion"] == 2 and got.metadata["displayTimeUnit"] == "ns"
    # A second 'traceEvents' after the cuts: the last one wins, as json.loads has it.
    again = tmp_path / "again.json"
    again.write_bytes(_trace(3000, tail=', "traceEvents": [{"ph": "X", "name": "last", "pid": 1, "tid": 1, '
                                        '"ts": 5, "dur": 1}]'))
    got = _segmented(monkeypatch, again, 16 << 10)
    _assert_same(got, _serial(monkeypatch, again))
    assert got.n_events == 1


def test_a_bare_event_array(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    merges = _Merges(monkeypatch)
    events = json.loads(_trace(3000).decode())["traceEvents"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(events))
    got = _segmented(monkeypatch, path, 16 << 10)
    assert merges.counts[-1] >= 2
    _assert_same(got, _serial(monkeypatch, path))
    # Cut short (a tracer killed mid-write): read up to the last whole event, as one scanner does.
    cut = tmp_path / "cut.json"
    cut.write_bytes(path.read_bytes()[:-1000])
    _assert_same(_segmented(monkeypatch, cut, 16 << 10), _serial(monkeypatch, cut))


@pytest.mark.parametrize("damage", ["late", "early", "utf8"])
def test_errors_are_those_of_one_scanner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, damage: str) -> None:
    data = bytearray(_trace(3000))
    at = {"late": len(data) * 9 // 10, "early": len(data) // 10, "utf8": len(data) * 6 // 10}[damage]
    at = data.index(b'"name"', at)  # a key's opening quote: the event is no longer JSON there
    data[at] = 0xFF if damage == "utf8" else ord("}")
    path = tmp_path / "bad.json"
    path.write_bytes(bytes(data))
    with pytest.raises(ProfileReadError) as serial:
        _serial(monkeypatch, path)
    with pytest.raises(ProfileReadError) as segmented:
        _segmented(monkeypatch, path, 16 << 10)
    assert segmented.value.reason == serial.value.reason
    assert f"at byte {at}" in serial.value.reason or damage == "utf8"


def test_seeded_byte_flips_read_or_fail_alike(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    base = _trace(600, text_every=4)
    rng = np.random.default_rng(39)
    path = tmp_path / "flip.json"
    outcomes = set()
    for _ in range(60):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.choice(list(b'{}[],:" \\x0')))
        path.write_bytes(bytes(data))
        try:
            want: tables.ProfileStore | str = _serial(monkeypatch, path)
        except ProfileReadError as e:
            want = e.reason
        try:
            got: tables.ProfileStore | str = _segmented(monkeypatch, path, 4096)
        except ProfileReadError as e:
            got = e.reason
        assert type(got) is type(want)
        if isinstance(want, str):
            assert got == want
        else:
            assert isinstance(got, tables.ProfileStore)
            _assert_same(got, want)
        outcomes.add(type(want))
    assert outcomes == {str, tables.ProfileStore}  # some flips break the trace, some do not


def test_a_refusal_for_memory_stops_every_segment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The columns of every segment together are counted against the memory free: 3000 events of a
    # few arguments need ~0.8 MB by the scanner's bytes per event and per value (chrome_scan.py),
    # more than 200 KB.
    from tbprof.errors import MemoryRefusal

    path = tmp_path / "big.json"
    path.write_bytes(_trace(3000))
    monkeypatch.setenv("TBPROF_CONVERT_MEMORY_BYTES", str(200_000))
    merges = _Merges(monkeypatch)
    segments: list[int] = []
    cuts = chrome_scan._cuts

    def counting_cuts(f: Any, n: int) -> list[int]:
        got = cuts(f, n)
        segments.append(len(got) - 1)
        return got

    monkeypatch.setattr(chrome_scan, "_cuts", counting_cuts)
    with pytest.raises(MemoryRefusal, match="events"):
        _segmented(monkeypatch, path, 16 << 10)
    assert segments and segments[-1] >= 2  # scanned in segments
    assert merges.counts == []  # refused before any merge
    with pytest.raises(MemoryRefusal, match="events"):
        _serial(monkeypatch, path)


@pytest.mark.parametrize(("env", "cpus", "want"), [(None, 32, 16), (None, 12, 12), (None, 2, 2), ("4", 32, 4),
                                                    ("24", 2, 24), ("0", 32, 16)])
def test_scan_threads(monkeypatch: pytest.MonkeyPatch, env: str | None, cpus: int, want: int) -> None:
    """The scan's threads: ``$TBPROF_THREADS`` when set (a positive number, as ``default_threads``
    reads it), else the CPUs this process may use up to ``SCAN_MAX_THREADS``; one per
    ``SEGMENT_MIN_BYTES`` of the file."""
    import os

    if env is None:
        monkeypatch.delenv("TBPROF_THREADS", raising=False)
    else:
        monkeypatch.setenv("TBPROF_THREADS", env)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)))
    assert chrome_scan.SCAN_MAX_THREADS == 16
    assert chrome_scan.scan_threads() == want
    assert chrome_scan.segment_threads(100 * chrome_scan.SEGMENT_MIN_BYTES) == want
    assert chrome_scan.segment_threads(3 * chrome_scan.SEGMENT_MIN_BYTES + 1) == min(want, 3)
    assert chrome_scan.segment_threads(1) == 1
