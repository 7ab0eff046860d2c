"""Malformed Chrome-trace JSON: every input is read or refused with ``ProfileReadError``, never a
crash, and read the same whatever the scanner's window size (``_core/jsonscan.pyx`` parses
whole units per window and re-parses a unit cut by a window's end) and whether its store is built
in memory or in a disk cache entry (``readers/chrome_stream.py``).

The reads run in a child process (``fuzz_child.py``, format "chrome"): a crash of the compiled
scanner fails the test with its signal instead of killing pytest.
"""

from __future__ import annotations

import json

import numpy as np

from tests.core.chrome_digest import FIXTURES, fixture_bytes
from tests.core.test_wire_fuzz import run_child

SMALL = (b'{"displayTimeUnit": "ns", "traceEvents": [{"ph": "X", "name": "a\\u00e9", "cat": "k", "pid": 1, '
         b'"tid": 2, "ts": 1.5, "dur": 2, "args": {"n": 1, "l": [[1, 2], ["x"]], "o": {"b": 1.5}}}, '
         b'{"ph": "B", "name": "b", "pid": 1, "tid": 2, "ts": 2}, {"ph": "E", "pid": 1, "tid": 2, "ts": 3}, '
         b'{"ph": "s", "id": 1, "pid": 1, "tid": 2, "ts": 2}, {"ph": "f", "id": 1, "pid": 1, "tid": 2, "ts": 3.1}'
         b'], "schemaVersion": 1}')


def test_every_truncation_every_small_window() -> None:
    # Each prefix of a small trace (cut inside every token) with windows of 1..9 bytes.
    inputs = [SMALL[:n] for n in range(len(SMALL) + 1)]
    report = run_child(inputs, fmt="chrome", windows=list(range(1, 10)), disk=True)
    assert report["counts"]["read_ok"] >= 1  # the whole file


def test_fixtures_read_the_same_in_every_window_size() -> None:
    report = run_child([fixture_bytes(name) for name in FIXTURES], fmt="chrome", windows=list(range(1, 24)), disk=True)
    assert report["counts"]["read_error"] == 0


def test_seeded_byte_flips() -> None:
    rng = np.random.default_rng(23)
    base = bytearray(SMALL)
    inputs = []
    for _ in range(400):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        inputs.append(bytes(data))
    report = run_child(inputs, fmt="chrome", windows=[1, 3, 17], disk=True)
    assert report["counts"]["read_error"] > 0  # flips do break it


def test_hostile_shapes() -> None:
    deep = b'{"traceEvents": [{"ph": "X", "ts": 0, "dur": 1, "args": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}]}"
    deep_top = b"[" * 100000
    inputs = [
        deep, deep_top, deep[:2000],
        b'[{"ph": "X", "ts": 1e400, "dur": 1e999, "pid": 1e400, "tid": -1e400, "args": {"h": 1' + b"0" * 5000 + b"}}]",
        b'[{"ph": "X", "ts": 1, "dur": 1, "args": {"u": "\xff\xfe"}}]',  # bad UTF-8 in a string
        b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\xed\xa0\x80"}]',  # an encoded surrogate
        b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\\ud800\\udc00\\ud800x\\udc00"}]',
        b'[{"ph": "X", "ts": 1, "dur": 1, "name": "\\uZZZZ"}]',
        b'[{"ph": "X", "ts": 1, "dur": 1, "name": "a\x01b"}]',  # a raw control character
        b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}], "traceEvents": [{"ph": "X", "ts": 5, "dur": 2}]}',
        b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}], "traceEvents": 3}',
        b'[{"ph": "X", "ph": "B", "ts": "1", "ts": 2, "dur": "3", "args": {"a": 1, "a": null}}]',
        b'[{"ph": "X", "ts": NaN, "dur": Infinity, "args": {"x": -Infinity, "y": NaN}}]',
        b'[{"ph": "X", "ts": -0, "dur": 0.0e-0, "args": {"z": [-0, 1E2, true, null, {"k": [1]}]}}]',
        b'[1, "x", null, [], {}, {"ph": "X", "ts": 1, "dur": 1}]  ',
        b'[{"ph": "X", "ts": 1, "dur": 1}] x', b"[,]", b"[{}", b"{", b"}", b"[", b"]", b" ", b"\xef\xbb\xbf[]",
        b'{"traceEvents": []', b'{"traceEvents" []}', b'{"a": 1,}', b"[01]", b"[1.]", b"[-]", b"[1e]", b"tru",
        json.dumps([{"ph": "X", "ts": i, "dur": 1, "name": "n" * 300} for i in range(50)]).encode(),
    ]
    report = run_child(inputs, fmt="chrome", windows=[1, 2, 5, 64], disk=True)
    assert report["counts"]["read_ok"] + report["counts"]["read_error"] == len(inputs)
