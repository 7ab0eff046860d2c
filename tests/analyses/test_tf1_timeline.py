"""TF1 timeline runs (six timeline-<step>.json files) against plain-JSON counts and sums."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.tf1 import tf1_timeline
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

STEPS = range(6)


@pytest.fixture(scope="module")
def timeline_dir(sample_profiles: Path) -> Path:
    return sample_profiles / "tf1_timeline"


@pytest.fixture(scope="module")
def stores(timeline_dir: Path) -> list[ProfileStore]:
    # Deliberately out of order: the tools order steps by the number in the file name.
    return [read_chrome_trace(timeline_dir / f"timeline-{s}.json") for s in (3, 0, 5, 1, 4, 2)]


def _events(timeline_dir: Path, step: int) -> list[dict[str, Any]]:
    return json.loads((timeline_dir / f"timeline-{step}.json").read_text())["traceEvents"]


def _process_names(events: list[dict[str, Any]]) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}


@pytest.mark.parametrize("step", STEPS)
def test_event_counts_per_file(timeline_dir: Path, step: int) -> None:
    events = _events(timeline_dir, step)
    names = _process_names(events)
    store = read_chrome_trace(timeline_dir / f"timeline-{step}.json")
    by_plane = {p.name: p.n_events for p in store.planes}
    phases = Counter((names[e["pid"]], e["ph"]) for e in events if e["ph"] != "M")
    compute = next(n for n in names.values() if n.endswith(" Compute"))
    tensors = next(n for n in names.values() if n.endswith(" Tensors"))
    # Ops are the X events of the Compute process; allocator samples the C events; each tensor
    # (created by N, deleted by D) is one lifetime event.
    assert by_plane[compute] == phases[(compute, "X")]
    assert by_plane["Allocators"] == phases[("Allocators", "C")]
    assert by_plane[tensors] == phases[(tensors, "N")] == phases[(tensors, "D")]
    ops = tf1_timeline.step_ops(store)
    assert len(ops.name) == phases[(compute, "X")]
    assert set(ops.side.tolist()) == {"Host"}  # a CPU-only session


def test_per_op_totals_over_six_steps(timeline_dir: Path, stores: list[ProfileStore]) -> None:
    total_us: dict[tuple[str, str], float] = defaultdict(float)
    count: Counter[tuple[str, str]] = Counter()
    for step in STEPS:
        for e in _events(timeline_dir, step):
            if e["ph"] == "X":
                key = (e["args"]["op"], e["args"]["name"])
                total_us[key] += e["dur"]
                count[key] += 1
    result = tf1_timeline.op_stats_compute(stores, {})
    table = result["tables"]["ops"]
    got = {(t, n): (o, tot) for t, n, o, tot in zip(table.data["type"], table.data["operation"],
                                                     table.data["occurrences"], table.data["total_time_us"],
                                                     strict=True)}
    assert set(got) == set(total_us)
    for key, (occ, tot) in got.items():
        assert occ == count[key]
        assert tot == pytest.approx(total_us[key], abs=1e-6)
    assert result["steps"] == list(STEPS)
    # Nothing nests on these threads: self time is the time.
    assert list(table.data["total_self_time_us"]) == pytest.approx(list(table.data["total_time_us"]))
    fractions = table.data["self_time_fraction"]
    assert fractions.sum() == pytest.approx(1.0)
    assert list(table.data["total_self_time_us"]) == sorted(table.data["total_self_time_us"], reverse=True)


def test_step_times_across_files(timeline_dir: Path, stores: list[ProfileStore]) -> None:
    result = tf1_timeline.steps_compute(stores, {})
    assert result["chart"]["step"] == list(STEPS)
    for step, ms in zip(STEPS, result["chart"]["step_time_ms"], strict=True):
        ops = [e for e in _events(timeline_dir, step) if e["ph"] == "X"]
        span_us = max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)
        assert ms == pytest.approx(span_us / 1e3)
    table = result["tables"]["steps"]
    assert list(table.data["op_count"]) == [sum(e["ph"] == "X" for e in _events(timeline_dir, s)) for s in STEPS]
    assert result["max_step_time_ms"] == max(result["chart"]["step_time_ms"])


def test_allocator_memory_timeline(timeline_dir: Path, stores: list[ProfileStore]) -> None:
    result = tf1_timeline.memory_compute(stores, {})
    for step in STEPS:
        samples: dict[str, list[int]] = defaultdict(list)
        for e in _events(timeline_dir, step):
            if e["ph"] == "C":
                samples[e["name"]].append(e["args"][e["name"]])
        series = {s["allocator"]: s for s in result["series"] if s["step"] == step}
        assert set(series) == set(samples)
        for allocator, values in samples.items():
            # Same samples in time order (ties keep file order); the peak is their maximum.
            assert sorted(series[allocator]["bytes_in_use"]) == sorted(values)
            row = [i for i in range(result["tables"]["allocators"].n_rows)
                   if result["tables"]["allocators"].data["step"][i] == step
                   and result["tables"]["allocators"].data["allocator"][i] == allocator]
            assert result["tables"]["allocators"].data["peak_bytes"][row[0]] == max(values)


def test_timeline_tools_only_for_timelines(sample_profiles: Path, stores: list[ProfileStore]) -> None:
    torch = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    assert tf1_timeline.is_tf1_timeline(stores[0])
    assert not tf1_timeline.is_tf1_timeline(torch)


# --- the same ids as XSpace: overview_page and framework_op_stats -------------------------------

def test_overview_has_one_step_per_file(timeline_dir: Path, stores: list[ProfileStore]) -> None:
    from tbprof.analyses.overview import overview

    result = overview.compute(stores, {})
    steps = result["tables"]["steps"]
    assert list(steps.data["step_num"]) == list(STEPS)  # ordered by the number in the file name
    assert list(steps.data["step"]) == [f"timeline-{s}" for s in STEPS]
    for step, got_ms in zip(STEPS, steps.data["step_time_ms"], strict=True):
        events = _events(timeline_dir, step)
        names = _process_names(events)
        ops = [e for e in events if e["ph"] == "X" and names[e["pid"]].endswith(" Compute")]
        # A step file's step time: last op end - first op start (µs in the file).
        want_ms = (max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)) / 1e3
        assert got_ms == pytest.approx(want_ms, abs=2e-6)
    assert result["steps"]["step_source"] == "markers" and result["steps"]["method"] == "timeline_file"
    assert result["run_environment"]["device_type"] == "CPU"  # a CPU-only session
    # The breakdown of each step adds up to its step time.
    total = sum(np.asarray(steps.data[c]) for c in ("device_compute_ms", "device_to_device_ms",
                                                     "device_collectives_ms", "host_compute_ms",
                                                     "kernel_launch_ms", "input_ms", "output_ms",
                                                     "compile_ms", "all_others_ms"))
    assert np.allclose(total, steps.data["step_time_ms"], atol=1e-6)


def test_framework_op_stats_equal_raw_sums(timeline_dir: Path, stores: list[ProfileStore]) -> None:
    from tbprof.analyses.ops import framework_op_stats

    total_us: dict[tuple[str, str], float] = defaultdict(float)
    count: Counter[tuple[str, str]] = Counter()
    for step in STEPS:
        events = _events(timeline_dir, step)
        names = _process_names(events)
        for e in events:
            if e["ph"] == "X" and names[e["pid"]].endswith(" Compute"):
                key = (e["args"].get("op", ""), e["args"].get("name", e["name"]))
                total_us[key] += e["dur"]
                count[key] += 1
    result = framework_op_stats.compute(stores, framework_op_stats.TOOLS[0].parse_options({}))
    t = result["tables"]["ops"].data
    got = {(ty, op): (n, us) for side, ty, op, n, us in zip(t["host_or_device"], t["type"], t["operation"],
                                                            t["occurrences"], t["total_time_us"], strict=True)
           if side == "Host" and op != "IDLE"}
    assert set(got) == set(count)
    for key, (n, us) in got.items():
        assert n == count[key]
        assert us == pytest.approx(total_us[key], abs=1e-3)


@pytest.mark.parametrize("step", [1, 4])
def test_memory_profile_from_allocator_counters(timeline_dir: Path, step: int) -> None:
    from tbprof.analyses.memory import memory_profile

    events = _events(timeline_dir, step)
    samples = [e for e in events if e["ph"] == "C"]
    series: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for e in samples:
        for name, value in e["args"].items():
            series[name].append((e["ts"], int(value)))
    store = read_chrome_trace(timeline_dir / f"timeline-{step}.json")
    options = memory_profile.TOOLS[0].parse_options({})
    first = memory_profile.compute([store], options)
    assert first["memory_ids"] == sorted(series)
    for allocator, points in series.items():
        result = memory_profile.compute([store], {**options, "memory_id": allocator})
        a = result["allocators"][allocator]
        values = [v for _, v in sorted(points, key=lambda p: p[0])]  # file order within a timestamp
        assert a["peak_bytes_in_use"] == max(values)
        assert a["event_count"] == len(values)
        # A rise of the counter counts as an allocation, a fall as a deallocation.
        rises = sum(1 for prev, cur in zip([0, *values[:-1]], values, strict=True) if cur > prev)
        assert a["num_allocations"] == rises
        assert a["peak_step_id"] == step
        assert result["tables"]["breakdown"].n_rows == 0  # counters name no allocations
        assert max(result["tables"]["timeline"].data["in_use_bytes"]) == max(values)
