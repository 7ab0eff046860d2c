"""The streaming Chrome-trace reader: bounded windows, gzip as a stream, the scanner's text rules.

The store of each demo trace is pinned by ``tests/core/chrome_digests.json`` (made by the
reader of ``json.loads`` before the scanner); here the same stores must come out of windows far
smaller than any event, so that every token lies across a window boundary somewhere.
"""

from __future__ import annotations

import decimal
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.errors import ProfileReadError
from tbprof.readers import chrome_gzip, chrome_trace
from tbprof.readers.chrome_trace import chrome_trace_from_bytes, read_chrome_trace
from tbprof.store.tables import KIND_STR, ProfileStore
from tests.core.chrome_digest import DEMO, DIGESTS, semantic_digest

WANT = json.loads(DIGESTS.read_text())
TORCH = next((DEMO / "torch_cnn").glob("*.pt.trace.json"))
JAX = next((DEMO / "jax_mlp").rglob("*.trace.json.gz"))


def _same_as_pinned(store: ProfileStore, path: Path) -> None:
    got = json.loads(json.dumps(semantic_digest(store)))
    want = WANT[str(path.relative_to(DEMO))]
    assert {k: got[k] for k in want if got.get(k) != want[k]} == {}


@pytest.mark.parametrize(("path", "window"), [(TORCH, 97), (JAX, 61)], ids=["torch_97", "jax_gz_61"])
def test_tiny_windows_read_the_pinned_store(monkeypatch: pytest.MonkeyPatch, path: Path, window: int) -> None:
    reads: list[int] = []
    real_pread = chrome_trace.LocalFile.pread

    def pread(self: Any, offset: int, n: int) -> bytes:
        reads.append(n)
        return real_pread(self, offset, n)

    monkeypatch.setattr(chrome_trace, "WINDOW_BYTES", window)
    monkeypatch.setattr(chrome_trace.LocalFile, "pread", pread)
    _same_as_pinned(read_chrome_trace(path), path)
    # The file was read window by window, never whole.
    assert max(reads) == window and sum(reads) == path.stat().st_size


def test_gzip_is_decompressed_in_bounded_steps() -> None:
    raw = JAX.read_bytes()
    steps = list(chrome_gzip.gunzip_windows(iter([raw[i:i + 4096] for i in range(0, len(raw), 4096)]), "t", 1000))
    assert max(len(s) for s in steps) <= 1000
    assert b"".join(steps) == gzip.decompress(raw)


def test_gzip_members_padding_and_trailing_garbage() -> None:
    events = [{"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(3)]
    text = json.dumps({"traceEvents": events}).encode()
    # Two members (gzip(1) concatenates them), NUL padding, then garbage (ignored, as gzip does).
    data = gzip.compress(text[:40]) + gzip.compress(text[40:]) + b"\x00" * 7 + b"junk"
    for window in (1, 5, 64, 1 << 20):
        store = chrome_trace_from_bytes(data, "t.json.gz", "t", window_bytes=window)
        assert sorted(store.strings.lookup(store.planes[0].name_id)) == ["e0", "e1", "e2"]
    with pytest.raises(ProfileReadError, match="gzip stream is damaged"):
        chrome_trace_from_bytes(gzip.compress(text)[:-12], "t.json.gz", "t", window_bytes=7)


def _args_of(store: ProfileStore) -> dict[str, Any]:
    plane = store.planes[0]
    out: dict[str, Any] = {}
    for i in range(len(plane.stats)):
        name = store.strings[int(plane.stats.stat_id[i])]
        value = int(plane.stats.value[i])
        out[name] = store.strings[value] if int(plane.stats.kind[i]) == KIND_STR else value
    return out


def _random_value(rng: np.random.Generator, depth: int = 0) -> Any:
    pick = int(rng.integers(0, 9 if depth < 3 else 6))
    if pick == 0:
        return int(rng.integers(-(1 << 62), 1 << 62))
    if pick == 1:
        return "".join(chr(int(c)) for c in rng.choice([0x41, 0x22, 0x5C, 0x0A, 0x01, 0x7F, 0xE9, 0x4E2D, 0x1F600,
                                                         0x2F, 0x20], size=int(rng.integers(0, 6))))
    if pick == 2:
        return bool(rng.integers(0, 2))
    if pick == 3:
        return None
    if pick == 4:
        return float(rng.normal() * 10 ** int(rng.integers(-5, 20)))
    if pick == 5:
        return -0 if rng.integers(0, 2) else 0
    if pick == 8:
        return {str(int(rng.integers(0, 5))): _random_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))}
    return [_random_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]


def test_arrays_and_objects_are_stored_as_their_canonical_json_text() -> None:
    # The scanner writes arrays of ints/strings/bools/nulls itself; anything else goes through
    # Python. Either way the stat is json.dumps(value, sort_keys=True), the reader's rule.
    rng = np.random.default_rng(7)
    values: list[Any] = [[_random_value(rng) for _ in range(int(rng.integers(0, 5)))] for _ in range(300)]
    values += [{"b": [1, 2], "a": "x"}, [[1, 2], []], ["float", ""], [1, [2, [3, [4, ["\u00e9\U0001f600"]]]]]]
    args = {f"k{i}": v for i, v in enumerate(values)}
    text = json.dumps([{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": args}],
                      ensure_ascii=bool(rng.integers(0, 2))).encode()
    got = _args_of(chrome_trace_from_bytes(text, "t.json", "t", window_bytes=13))
    assert got == {k: json.dumps(v, sort_keys=True) for k, v in args.items()}


def test_text_rules() -> None:
    text = (b'[{"ph": "X", "name": "a\\ud800b\\udc00c\\ud83d\\ude00", "pid": 1, "tid": 1, "ts": 0, "dur": 1, '
            b'"args": {"dup": 1, "dup": "last", "huge": 123456789012345678901234567890, "u64": 18446744073709551615, '
            b'"none": null, "t": true}}]')
    store = chrome_trace_from_bytes(text, "t.json", "t")
    # Lone surrogates (which UTF-8 cannot hold) become U+FFFD; a proper pair is one character.
    assert store.strings[int(store.planes[0].name_id[0])] == "a\ufffdb\ufffdc\U0001f600"
    args = _args_of(store)
    assert args["dup"] == "last" and args["huge"] == "123456789012345678901234567890" and args["t"] == 1
    assert args["u64"] == (1 << 64) - 1 - (1 << 64) and "none" not in args  # uint64 bit pattern, null dropped
    with pytest.raises(ProfileReadError, match="not UTF-8"):
        chrome_trace_from_bytes(b'[{"ph": "X", "name": "\xc3\x28", "ts": 0, "dur": 1}]', "t.json", "t")
    with pytest.raises(ProfileReadError, match="nested too deeply"):
        chrome_trace_from_bytes(b'[{"args": {"a": ' + b"[" * 600 + b"]" * 600 + b"}}]", "t.json", "t")


def test_repeated_trace_events_key_keeps_the_last() -> None:
    text = (b'{"traceEvents": [{"ph": "X", "name": "first", "ts": 0, "dur": 1}], '
            b'"traceEvents": [{"ph": "X", "name": "second", "ts": 0, "dur": 1}]}')
    store = chrome_trace_from_bytes(text, "t.json", "t", window_bytes=3)
    assert store.strings.lookup(store.planes[0].name_id) == ["second"]  # as json.loads keeps it


def test_a_unit_larger_than_the_windows_is_read_in_growing_windows() -> None:
    big = {"ph": "X", "name": "n" * 100_000, "pid": 1, "tid": 1, "ts": 0, "dur": 1}
    store = chrome_trace_from_bytes(json.dumps([big]).encode(), "t.json", "t", window_bytes=64)
    assert store.strings.lookup(store.planes[0].name_id) == ["n" * 100_000]


def test_zlib_damage_is_a_read_error() -> None:
    data = bytearray(gzip.compress(b"[" + b'{"ph": "X", "ts": 1, "dur": 1},' * 200 + b"]"))
    data[30] ^= 0xFF
    with pytest.raises(ProfileReadError, match="gzip stream is damaged"):
        chrome_trace_from_bytes(bytes(data), "t.json.gz", "t")


def test_flow_ids_are_compared_as_values() -> None:
    # A dict keyed by the JSON values (the reader's rule) makes 1, 1.0 and true one id, "1" another:
    # integer ids are numbered in bulk, the rest one by one, and both must agree.
    events = [{"ph": "X", "name": f"slice{t}", "pid": 1, "tid": t, "ts": 0, "dur": 10} for t in range(1, 5)]
    events += [{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1}, {"ph": "f", "id": 1.0, "bp": "e", "pid": 1,
                                                                  "tid": 2, "ts": 2},
               {"ph": "t", "id": True, "pid": 1, "tid": 3, "ts": 3},
               {"ph": "s", "id": "1", "pid": 1, "tid": 4, "ts": 1}, {"ph": "f", "id": "1", "bp": "e", "pid": 1,
                                                                    "tid": 1, "ts": 5}]
    store = chrome_trace_from_bytes(json.dumps(events).encode(), "t.json", "t")
    plane = store.planes[0]
    col = plane.stat_column(store.stat_id("flow_id"))
    chains: dict[int, set[str]] = {}
    for row, chain in zip(col.rows.tolist(), col.value.tolist(), strict=True):
        chains.setdefault(chain, set()).add(store.strings[int(plane.name_id[row])])
    assert sorted(map(sorted, chains.values())) == [["slice1", "slice2", "slice3"], ["slice1", "slice4"]]


def _exact_ps(text: str) -> int:
    """A JSON number of microseconds in picoseconds, from its decimal text: to the nearest
    picosecond, a half away from zero (the scanner's documented rule)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 2000
        ctx.Emax, ctx.Emin = decimal.MAX_EMAX, decimal.MIN_EMIN
        value = decimal.Decimal(text) * 1_000_000
        return int(value.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))


def test_numbers_parse_exactly() -> None:
    # ts/dur come from their decimal digits (no float); args numbers through the C library's
    # strtod (no GIL), equal to float(text), Python's correctly rounded parse. Digit strings of
    # every shape, and the Kineto values that float64 arithmetic rounds a nanosecond off.
    rng = np.random.default_rng(11)
    texts = ["0", "-0", "0.1", "1e-400", "4.9e-324", "2.2250738585072011e-308", "1.7976931348623157e308", "1e309",
             "9007199254740993", "4818192730861.720", "48119.048000000003", "123456789012345678901234567890.5e-10",
             "4903393897444.885", "12.115", "0.0000005", "-0.0000005", "0.00000049999", "-2.5e-7", "1E+3",
             "9223372036853.9999994", "9223372036853.9999995", "-9223372036853.5", "1.5e-1000000000000"]
    for _ in range(3000):
        digits = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 25))))
        digits = digits.lstrip("0") or "0"
        frac = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 20))))
        exp = f"e{int(rng.integers(-330, 310))}" if rng.random() < 0.3 else ""
        texts.append(f"{'-' if rng.random() < 0.2 else ''}{digits}.{frac}{exp}")
    body = ",".join(f'{{"ph": "C", "name": "c", "pid": 1, "ts": {t}, "args": {{"v": {t}}}, "dur": {t}}}'
                    for t in texts)
    from tbprof._core import jsonscan

    sc = jsonscan.Scanner()
    assert sc.feed(("[" + body + "]").encode(), 0, True) > 0
    cols = sc.columns(np)
    missing = jsonscan.TIME_MISSING
    max_dur_us = ((1 << 63) - 1) // 1_000_000 - 1  # whole µs whose picoseconds (and 999,999 more) fit int64
    want_ts, want_dur = [], []
    for t in texts:
        ps = _exact_ps(t)
        whole, sub = divmod(ps, 1_000_000)  # floor: the picoseconds above a whole microsecond
        want_ts.append((whole, sub) if -(1 << 63) < whole < (1 << 63) else (missing, 0))
        want_dur.append(ps if -max_dur_us <= whole <= max_dur_us else missing)
    assert list(zip(cols["ts_us"].tolist(), cols["ts_sub_ps"].tolist(), strict=True)) == want_ts
    assert cols["dur_ps"].tolist() == want_dur
    # The example: 4903393897444.885 + 12.115 ends on a whole microsecond, exactly.
    assert want_ts[12] == (4903393897444, 885_000) and want_dur[13] == 12_115_000
    floats = [i for i, t in enumerate(texts) if any(c in t for c in ".eE")]  # args keep integers as int64
    assert cols["st_value"].view(np.float64)[floats].tolist() == [float(texts[i]) for i in floats]


def test_the_scanner_lets_other_threads_run() -> None:
    # The event loop runs with the GIL released: a Python thread keeps running during one long
    # feed() (it would get no turn while a C call held the GIL).
    import threading

    from tbprof._core import jsonscan

    event = b'{"ph": "X", "name": "a", "cat": "c", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2, "args": {"k": [1, 2]}},'
    data = b"[" + event * 400_000 + b"{}]"  # ~40 MB, one feed of a few hundred ms
    spans: list[tuple[float, float]] = []
    ticks: list[float] = []
    started = threading.Event()

    def scan() -> None:
        import time

        started.set()
        t = time.perf_counter()
        jsonscan.Scanner().feed(data, 0, True)
        spans.append((t, time.perf_counter()))

    def tick() -> None:
        import time

        started.wait()
        while not spans:
            ticks.append(time.perf_counter())

    threads = [threading.Thread(target=scan), threading.Thread(target=tick)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lo, hi = spans[0]
    # The middle of the call (its ends may overlap the interpreter's 5 ms thread switches).
    mid_lo, mid_hi = lo + 0.25 * (hi - lo), hi - 0.25 * (hi - lo)
    assert sum(1 for t in ticks if mid_lo < t < mid_hi) > 50, (hi - lo, len(ticks))
