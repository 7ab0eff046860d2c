"""``collectives`` against torch-tb-profiler 0.4.3's distributed view ("Communication Operations
Stats": calls, total latency, data transfer time per worker and collective).

Golden: ``distributed`` of ``tests/golden/tb_profiler/torch_ddp.json`` (make_tb_profiler_goldens.py).
Tolerance 0.01 us: torch-tb-profiler's times are float microseconds near 4.8e12 (1 ns of float64
resolution, summed over 12 calls); its averages are rounded to whole microseconds (±0.5 us).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.gpu import distributed
from tbprof.readers.chrome_trace import read_chrome_trace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tb_profiler" / "torch_ddp.json"


def test_collectives_equal_torch_tb_profiler(sample_profiles: Path) -> None:
    paths = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))
    result = distributed.compute([read_chrome_trace(p) for p in paths], {})
    assert result["matched_across_ranks"]
    t = result["tables"]["collectives"]
    names = [c.name for c in t.columns]
    rows = [dict(zip(names, r, strict=True)) for r in t.rows()]
    golden = json.loads(GOLDEN.read_text())["distributed"]["comm_ops"]
    assert len(golden) == 2
    for file_name, want in golden.items():
        host = file_name.removesuffix(".pt.trace.json")
        got = {r["name"]: r for r in rows if r["host"] == host}
        col = {c: i for i, c in enumerate(want["columns"])}
        assert sorted(got) == sorted(r[col["Name"]] for r in want["rows"])
        for w in want["rows"]:
            g = got[w[col["Name"]]]
            assert g["calls"] == w[col["Calls"]]
            assert g["total_latency_us"] == pytest.approx(w[col["Total Latency (us)"]], abs=0.01)
            assert g["transfer_us"] == pytest.approx(w[col["Data Transfer Time (us)"]], abs=0.01)
            assert abs(g["avg_latency_us"] - w[col["Avg Latency (us)"]]) <= 0.5 + 0.01
            # Synchronizing is the rest of the latency (torch-tb-profiler's chart: latency - transfer).
            assert g["synchronizing_us"] == pytest.approx(g["total_latency_us"] - g["transfer_us"])
    # The slowest rank of each collective waits least: here rank 1 (rank 0 waits ~19 ms in all-reduces).
    for name in {r["name"] for r in rows}:
        mine = [r for r in rows if r["name"] == name]
        slowest = [r for r in mine if r["slowest"]]
        assert len(slowest) == 1
        assert slowest[0]["synchronizing_us"] == min(r["synchronizing_us"] for r in mine)


def test_one_rank_has_no_transfer_split(sample_profiles: Path) -> None:
    """torch_cnn has no collectives; one rank of torch_ddp alone has nothing to compare against."""
    store = read_chrome_trace(sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))[0])
    result = distributed.compute([store], {})
    t = result["tables"]["collectives"]
    # No transfer split: the float column holds NaN (null in JSON).
    assert not result["matched_across_ranks"] and all(v != v for v in t.data["transfer_us"].tolist())
    cnn = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    assert not distributed.has_collectives(cnn)


def test_overlap_equals_torch_tb_profiler(sample_profiles: Path) -> None:
    """The Computation/Communication Overview: per rank the mean over step events ("all", which the
    plugin truncates to whole us: tolerance 1 us) and each step name (the last event of that
    name, the GPU annotation, as the plugin keeps it)."""
    paths = sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))
    stores = [read_chrome_trace(p) for p in paths]
    result = distributed.compute(stores, {})
    t = result["tables"]["overlap"]
    names = [c.name for c in t.columns]
    rows = {r[names.index("host")]: r for r in t.rows()}
    want = json.loads(GOLDEN.read_text())["distributed"]["overlap"]
    keys = ("computation_us", "overlapping_us", "communication_us", "other_us")
    for file_name, values in want["all"].items():
        got = rows[file_name.removesuffix(".pt.trace.json")]
        for k, v in zip(keys, values, strict=True):
            assert got[names.index(k)] == pytest.approx(v, abs=1.0)
    for store, path in zip(stores, paths, strict=True):
        last = {step: values for step, *values in distributed.step_overlap(store)}
        for step, per_worker in want.items():
            if step == "all":
                continue
            assert last[step] == pytest.approx(per_worker[path.name], abs=0.01)
