"""``gpu_counters`` (CUDA stream queue length, memory bandwidth) against HTA 0.5.0.

Goldens: ``tests/golden/hta/<profile>.json`` (``queue_length_*``, ``memory_bw_*``), written by
``tests/golden/make_hta_goldens.py`` from HTA's ``TraceAnalysis`` (``test_goldens_are_current``
in test_gpu_breakdown_parity.py re-runs HTA).

What must agree, and why the tolerance:

* every series has HTA's points: the same count and the same timestamps (exact, whole us);
* the value after all the changes at a timestamp is HTA's (exact for queue lengths, 1e-9 GB/s
  for bandwidths: float sums). *Between* simultaneous changes HTA's order comes from an
  unstable sort, so single points inside a tie may differ (docs/differences.md);
* the summaries equal pandas' ``describe()`` of tbprof's own series (exact), and HTA's summary
  within what the ties can move: queue length count/min/quartiles/max exact and mean/std within
  0.05 (ties are ~1 % of the points, each moving a value by 1: 0.01 on the mean, doubled for
  margin and for std); bandwidth count within the tied points, min/max exact, mean within 5 %.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tbprof.analyses.gpu import counters
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

GIB_PER_GB = 1e9 / 2**30  # HTA's GB/s (10^9 bytes/s) in the tables' GiB/s (2^30 bytes/s)

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
PROFILES = ("torch_cnn", "torch_ddp")
PS_PER_US = 1_000_000


def _stores(sample_profiles: Path, profile: str) -> list[ProfileStore]:
    return [read_chrome_trace(p) for p in sorted((sample_profiles / profile).glob("*.pt.trace.json"))]


def _rows(result: Mapping[str, Any], table: str) -> list[dict[str, Any]]:
    t = result["tables"][table]
    names = [c.name for c in t.columns]
    return [dict(zip(names, r, strict=True)) for r in t.rows()]


Case = tuple[list[ProfileStore], Mapping[str, Any], dict[str, Any]]


@pytest.fixture(scope="module", params=PROFILES)
def case(request: pytest.FixtureRequest, sample_profiles: Path) -> Case:
    stores = _stores(sample_profiles, request.param)
    result = counters.compute(stores, counters.TOOLS[0].parse_options({}))
    hta = json.loads((GOLDEN / "hta" / f"{request.param}.json").read_text())
    return stores, result, hta


def _ours(stores: list[ProfileStore], rank: int, queue: bool) -> dict[str, counters.StepSeries]:
    store = next(s for i, s in enumerate(stores) if counters.rank_of(s, i) == rank)
    out: dict[str, counters.StepSeries] = {}
    for _, _, queues, bandwidths in counters.device_counters(store):
        out.update({s.key: s for s in (queues if queue else bandwidths)})
    return out


def _last_per_ts(ts: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HTA's points grouped by timestamp: the value after the group's last change."""
    last = np.ones(ts.shape[0], bool)
    last[:-1] = ts[1:] != ts[:-1]
    return ts[last], values[last]


@pytest.mark.parametrize("queue", [True, False], ids=["queue_length", "memory_bw"])
def test_series_points(case: Case, queue: bool) -> None:
    stores, _, hta = case
    section, key, value = ("queue_length_series", "stream", "queue_length") if queue else \
        ("memory_bw_series", "name", "memory_bw_gbps")
    assert hta[section], "HTA found no series"
    for rank_text, records in hta[section].items():
        ours = _ours(stores, int(rank_text), queue)
        hta_keys = sorted({str(r[key]) for r in records})
        assert sorted(ours) == hta_keys
        for k in hta_keys:
            want = [r for r in records if str(r[key]) == k]
            hta_ts = np.array([r["ts"] for r in want], np.float64)
            hta_v = np.array([r[value] for r in want], np.float64)
            got = ours[k]
            assert got.time_ps.shape[0] == hta_ts.shape[0], (rank_text, k)
            # HTA's timestamps are relative to the earliest event of all ranks; compare the steps.
            hta_ps = np.round(hta_ts * PS_PER_US).astype(np.int64)
            assert np.array_equal(np.diff(got.time_ps), np.diff(hta_ps)), (rank_text, k)
            want_t, want_v = _last_per_ts(hta_ps - hta_ps[0], hta_v)
            got_t, got_v = counters.last_per_time(got.time_ps - got.time_ps[0], got.value)
            assert np.array_equal(got_t, want_t)
            np.testing.assert_allclose(got_v, want_v, rtol=0, atol=1e-9)


def _summaries(result: Mapping[str, Any], table: str, key: str) -> dict[tuple[int, str], dict[str, Any]]:
    return {(r["rank"], str(r[key])): r for r in _rows(result, table)}


def test_queue_length_summary(case: Case) -> None:
    stores, result, hta = case
    ours = _summaries(result, "queue_length_summary", "stream")
    assert sorted(ours) == sorted((r["rank"], str(r["stream"])) for r in hta["queue_length_summary"])
    for want in hta["queue_length_summary"]:
        got = ours[(want["rank"], str(want["stream"]))]
        assert got["count"] == want["count"]
        for ours_key, hta_key in (("min", "min"), ("p25", "25%"), ("p50", "50%"), ("p75", "75%"), ("max", "max")):
            assert got[ours_key] == want[hta_key], ours_key
        assert got["mean"] == pytest.approx(want["mean"], abs=0.05)
        assert got["std"] == pytest.approx(want["std"], abs=0.05)
        # Exactly pandas' describe() of tbprof's own series.
        mine = pd.Series(_ours(stores, want["rank"], True)[str(want["stream"])].value).describe()
        assert [got[k] for k in ("count", "mean", "std", "min", "p25", "p50", "p75", "max")] == \
            pytest.approx(mine.tolist(), rel=1e-12)
    assert result["max_queue_length"] == max(r["max"] for r in hta["queue_length_summary"])


def test_memory_bw_summary(case: Case) -> None:
    stores, result, hta = case
    ours = _summaries(result, "memory_bw_summary", "memory_kind")
    assert sorted(ours) == sorted((r["rank"], r["name"]) for r in hta["memory_bw_summary"])
    for want in hta["memory_bw_summary"]:
        got = ours[(want["rank"], want["name"])]
        series = _ours(stores, want["rank"], False)[want["name"]]
        tied = int((np.diff(series.time_ps) == 0).sum())  # points inside a tie group
        assert abs(got["count"] - want["count"]) <= tied
        # HTA's GB/s (10^9 bytes/s); the table's GiB/s (2^30 bytes/s), the dashboard's unit.
        assert got["min_gibps"] == pytest.approx(want["min"] * GIB_PER_GB, rel=1e-9)
        assert got["max_gibps"] == pytest.approx(want["max"] * GIB_PER_GB, rel=1e-9)
        assert got["mean_gibps"] == pytest.approx(want["mean"] * GIB_PER_GB, rel=0.05)
        positive = series.value[series.value > 0] * GIB_PER_GB
        mine = pd.Series(positive).describe()
        assert [got[k] for k in ("count", "mean_gibps", "std_gibps", "min_gibps", "p25_gibps", "p50_gibps",
                                 "p75_gibps", "max_gibps")] == pytest.approx(mine.tolist(), rel=1e-12, nan_ok=True)
    assert result["peak_memory_bw_gibps"] == pytest.approx(max(r["max"] for r in hta["memory_bw_summary"]) * GIB_PER_GB)


def test_series_tables_list_every_point(case: Case) -> None:
    _, result, hta = case
    assert len(_rows(result, "queue_length_series")) == sum(len(v) for v in hta["queue_length_series"].values())
    assert len(_rows(result, "memory_bw_series")) == sum(len(v) for v in hta["memory_bw_series"].values())


def test_memory_kind_names() -> None:
    # HTA's types: the first 11 characters of a copy's name ("Memcpy HtoD (Pinned -> Device)").
    assert counters.memory_kind("Memcpy HtoD (Pinned -> Device)") == "Memcpy HtoD"
    assert counters.memory_kind("Memset (Device)") == "Memset"
    assert counters.memory_kind("dma_copy") == "Memcpy Unknown"
    assert counters.memory_kind("MemcpyH2D") == "MemcpyH2D"  # XSpace's CUPTI names are shorter


def test_xspace_gpu_profile(profiles_root: Path) -> None:
    """jax_mlp (CUPTI events): HTA cannot read XSpace, so the counters are derived here from the
    store's own events: every launch (host event with the device event's correlation_id) adds 1
    and every device start removes 1, so each stream ends at 0; a copy's bandwidth is the
    ``size:`` of its details over its duration."""
    from tbprof.analyses.gpu.activity import MEMORY, device_activity
    from tbprof.readers.xplane import read_xspace
    from tests.conftest import xplane_of

    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    result = counters.compute([store], {})
    act = device_activity(store)
    q = _rows(result, "queue_length_summary")
    assert {r["device"] for r in q} == {"/device:GPU:0", "/device:GPU:1"}
    launched = act.launch_name_id >= 0
    assert sum(r["count"] for r in q) == 2 * int(launched.sum())
    for _, _, queues, _ in counters.device_counters(store):
        for s in queues:
            assert s.value[-1] == 0 and s.value.min() >= 0
    bw = {(r["device"], r["memory_kind"]): r for r in _rows(result, "memory_bw_summary")}
    assert {k for _, k in bw} >= {"MemcpyD2D", "MemcpyH2D"}
    # The fastest single copy bounds the peak from below: derived from memcpy_details directly.
    plane = store.plane("/device:GPU:0")
    assert plane is not None
    sid = store.stat_id("memcpy_details")
    col = plane.event_stat(sid)
    details = store.strings.lookup(col.value.astype(np.int32))
    best = 0.0
    for row, text in zip(col.rows.tolist(), details, strict=True):
        size = float(next(p for p in text.split() if p.startswith("size:"))[5:])
        dur_ns = float(plane.dur_ps[row]) / 1000
        in_act = bool(((act.row == row) & (act.kind == MEMORY) & (act.plane == plane.index)).any())
        if dur_ns > 0 and in_act:
            best = max(best, size / dur_ns)
    gpu0 = [r for (d, _), r in bw.items() if d == "/device:GPU:0"]
    # A type whose copies carry no size (memsets) has no point above 0: its max is empty (None).
    assert max(r["max_gibps"] for r in gpu0 if r["max_gibps"] is not None) >= best * GIB_PER_GB > 0
