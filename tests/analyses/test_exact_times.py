"""Times exact to the trace's text, ties decided by exact time, no negative durations (issue #33).

The fixture ``tests/data/kineto_exact_times`` (its README says how it was written and why each
value was chosen) holds Kineto ``ts``/``dur`` decimals on which float64 arithmetic and the
decimal text disagree. Every expected number is derived here from the JSON text, read with
``Decimal`` (no float on the way), and HTA's rounding (start up, end down, to whole
microseconds) applied to it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.gpu import breakdown, counters, sequences
from tbprof.cache.disk_cache import DiskCache
from tbprof.readers.chrome_stream import stream_chrome_trace
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

TRACE = Path(__file__).resolve().parents[1] / "data" / "kineto_exact_times" / "exact.pt.trace.json"
PS_PER_US = 1_000_000


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(TRACE.read_text(), parse_float=Decimal)
    return parsed


@pytest.fixture(scope="module")
def store() -> ProfileStore:
    return read_chrome_trace(TRACE)


def _complete(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _one(doc: Mapping[str, Any], name: str, **args: Any) -> dict[str, Any]:
    found = [e for e in _complete(doc) if e["name"] == name and all(e["args"].get(k) == v for k, v in args.items())]
    assert len(found) == 1
    return found[0]


def _inward_us(ts: Decimal, dur: Decimal) -> int:
    """HTA's duration of an event: its end rounded down minus its start rounded up (µs)."""
    return math.floor(ts + dur) - math.ceil(ts)


def _rows(result: Mapping[str, Any], table: str) -> list[dict[str, Any]]:
    t = result["tables"][table]
    names = [c.name for c in t.columns]
    return [dict(zip(names, r, strict=True)) for r in t.rows()]


def _times(store: ProfileStore, names: set[str]) -> list[tuple[str, int, int]]:
    strings = store.strings.as_list()
    return sorted((strings[int(p.name_id[i])], store.origin_ps + int(p.start_ps[i]), int(p.dur_ps[i]))
                  for p in store.planes for i in range(p.n_events) if strings[int(p.name_id[i])] in names)


def test_every_event_is_its_decimal_text_in_picoseconds(doc: dict[str, Any], store: ProfileStore,
                                                        tmp_path: Path) -> None:
    want = sorted((e["name"], int(Decimal(e["ts"]) * PS_PER_US), int(Decimal(e["dur"]) * PS_PER_US))
                  for e in _complete(doc))
    names = {w[0] for w in want}
    assert _times(store, names) == want
    # Streamed into the disk cache, two events a chunk: the same exact times.
    streamed = stream_chrome_trace(TRACE, DiskCache(tmp_path / "cache"), "0" * 32, 1 << 20, chunk_events=2)
    assert _times(streamed, names) == want


def test_the_fixture_rounds_wrong_in_float64(doc: dict[str, Any]) -> None:
    # What the fixture is for: float64 arithmetic (each time relative to the first event, to the
    # nearest nanosecond) puts the launch's start 1 ns early, so its end misses the whole µs.
    launch = _one(doc, "cudaLaunchKernel", correlation=1)
    ts, dur = launch["ts"], launch["dur"]
    t0 = min(Decimal(e["ts"]) for e in doc["traceEvents"] if e.get("ph") != "M")
    assert ts + dur == Decimal("4903393897457.000")
    assert _inward_us(ts, dur) == 12
    start_ns = round((float(ts) - float(t0)) * 1e3)
    assert start_ns == (ts - t0) * 1000 - 1
    end_ns = start_ns + round(float(dur) * 1e3)
    assert _inward_us(t0 + Decimal(start_ns) / 1000, Decimal(end_ns - start_ns) / 1000) == 11


def test_hta_launch_duration_from_the_exact_end(doc: dict[str, Any], store: ProfileStore) -> None:
    result = breakdown.compute([store], breakdown.TOOLS[0].parse_options({}))
    launches = {r["correlation"]: r for r in _rows(result, "kernel_launches")}
    for corr in (1, 2):
        launch = _one(doc, "cudaLaunchKernel", correlation=corr)
        assert launches[corr]["cpu_duration_us"] == _inward_us(launch["ts"], launch["dur"])
    assert launches[1]["cpu_duration_us"] == 12


def test_sub_microsecond_events_last_zero_not_minus_one(doc: dict[str, Any], store: ProfileStore) -> None:
    # The memset (0.64 µs), the kernel (0.2 µs) and the kernel's launch (0.4 µs) each lie inside
    # one microsecond: HTA's rounding gives -1 µs; tbprof shows 0.
    for name in ("Memset (Device)", "tiny_kernel"):
        e = _one(doc, name)
        assert _inward_us(e["ts"], e["dur"]) == -1
    tiny_launch = _one(doc, "cudaLaunchKernel", correlation=6)
    assert _inward_us(tiny_launch["ts"], tiny_launch["dur"]) == -1
    result = breakdown.compute([store], breakdown.TOOLS[0].parse_options({}))
    launches = {r["correlation"]: r for r in _rows(result, "kernel_launches")}
    assert launches[6]["cpu_duration_us"] == 0 and launches[6]["gpu_duration_us"] == 0
    assert launches[5]["gpu_duration_us"] == 0
    top = {r["name"]: r for r in _rows(result, "top_kernels")}
    for name in ("Memset (Device)", "tiny_kernel"):
        assert (top[name]["sum_us"], top[name]["min_us"], top[name]["max_us"]) == (0, 0, 0)
    for row in _rows(result, "idle_time_breakdown") + _rows(result, "temporal_breakdown"):
        assert all(v >= 0 for k, v in row.items() if k.endswith("_us") and v is not None and v == v)


def test_kernels_half_a_microsecond_apart_keep_their_order(doc: dict[str, Any], store: ProfileStore) -> None:
    # Launched second, gemm_a starts 0.5 µs before gemm_b: rounded up to whole microseconds
    # both start at the same one.
    kernels = [e for e in _complete(doc) if e["cat"] == "kernel" and e["args"]["External id"] == 2]
    assert len({math.ceil(e["ts"]) for e in kernels}) == 1
    by_exact_start = [e["name"] for e in sorted(kernels, key=lambda e: e["ts"])]
    assert by_exact_start == ["gemm_a_stream8", "gemm_b_stream7"]
    options = sequences.TOOLS[0].parse_options({"min_pattern_len": "2"})
    rows = _rows(sequences.compute([store], options), "patterns")
    assert [r["pattern"] for r in rows if r["operator"] == "aten::linear"] == ["|".join(["aten::linear",
                                                                                          *by_exact_start])]


def test_a_copy_that_ends_as_another_starts_is_not_beside_it(doc: dict[str, Any], store: ProfileStore) -> None:
    copies = sorted((e for e in _complete(doc) if e["cat"] == "gpu_memcpy"), key=lambda e: e["ts"])
    first, second = copies
    assert first["ts"] + first["dur"] == second["ts"]  # touching, never overlapping
    peak_gbps = max(first["args"]["memory bandwidth (GB/s)"], second["args"]["memory bandwidth (GB/s)"])
    result = counters.compute([store], counters.TOOLS[0].parse_options({}))
    summary = {r["memory_kind"]: r for r in _rows(result, "memory_bw_summary")}
    assert summary["Memcpy HtoD"]["max_gibps"] == pytest.approx(float(peak_gbps) * counters.GIB_PER_GB)
    series = [r for r in _rows(result, "memory_bw_series") if r["memory_kind"] == "Memcpy HtoD"]
    assert max(r["memory_bw_gibps"] for r in series) == pytest.approx(float(peak_gbps) * counters.GIB_PER_GB)
    assert min(r["memory_bw_gibps"] for r in series) >= 0
