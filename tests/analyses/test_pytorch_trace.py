"""PyTorch (Kineto) kernel and operator statistics against sums over the raw JSON."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.legacy import pytorch_trace
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore


@pytest.fixture(scope="module")
def trace_path(sample_profiles: Path) -> Path:
    return next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))


@pytest.fixture(scope="module")
def store(trace_path: Path) -> ProfileStore:
    return read_chrome_trace(trace_path)


@pytest.fixture(scope="module")
def events(trace_path: Path) -> list[dict[str, Any]]:
    return json.loads(trace_path.read_text())["traceEvents"]  # type: ignore[no-any-return]


def _dims(v: list[int]) -> str:
    return ",".join(str(x) for x in v)


def test_kernel_stats_match_raw_kernels(store: ProfileStore, events: list[dict[str, Any]]) -> None:
    op_of = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    want_count: Counter[tuple[Any, ...]] = Counter()
    want_us: dict[tuple[Any, ...], float] = defaultdict(float)
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e["args"]
        key = (e["name"], _dims(a["grid"]), _dims(a["block"]), a["registers per thread"], a["shared memory"],
               op_of.get(a["External id"], ""))
        want_count[key] += 1
        want_us[key] += e["dur"]
    result = pytorch_trace.kernel_stats_compute([store], {})
    t = result["tables"]["kernels"].data
    got = {(n, g, b, r, s, o): (c, us) for n, g, b, r, s, o, c, us in zip(
        t["kernel_name"], t["grid_dim"], t["block_dim"], t["registers_per_thread"], t["shmem_bytes"],
        t["op_name"], t["occurrences"], t["total_duration_us"], strict=True)}
    assert set(got) == set(want_count)
    for key, (c, us) in got.items():
        assert c == want_count[key]
        assert us == pytest.approx(want_us[key], abs=1e-3)  # the reader keeps whole nanoseconds
    assert result["kernel_event_count"] == sum(want_count.values())
    assert all(op for op in t["op_name"])  # every kernel has its launching operator here


def test_op_stats_match_raw_ops(store: ProfileStore, events: list[dict[str, Any]]) -> None:
    calls: Counter[str] = Counter()
    host_us: dict[str, float] = defaultdict(float)
    device_by_ext: dict[int, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "cpu_op":
            calls[e["name"]] += 1
            host_us[e["name"]] += e["dur"]
        elif e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            device_by_ext[e["args"]["External id"]] += e["dur"]
    device_self: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "cpu_op":
            device_self[e["name"]] += device_by_ext.get(e["args"]["External id"], 0.0)
    t = pytorch_trace.op_stats_compute([store], {})["tables"]["operators"].data
    assert set(t["operator"]) == set(calls)
    for i, op in enumerate(t["operator"]):
        assert t["calls"][i] == calls[op]
        assert t["host_total_us"][i] == pytest.approx(host_us[op], abs=1e-3)
        assert t["device_self_us"][i] == pytest.approx(device_self[op], abs=1e-3)
        assert t["host_self_us"][i] <= t["host_total_us"][i] + 1e-9
        assert t["device_total_us"][i] >= t["device_self_us"][i] - 1e-9
    # A forward convolution's kernels are launched by the cuDNN op nested inside it.
    conv = list(t["operator"]).index("aten::conv2d")
    assert t["device_self_us"][conv] == 0 < t["device_total_us"][conv]


def test_kineto_detection(store: ProfileStore, sample_profiles: Path) -> None:
    assert pytorch_trace.is_kineto(store)
    assert not pytorch_trace.is_kineto(read_chrome_trace(sample_profiles / "tf1_timeline" / "timeline-0.json"))
