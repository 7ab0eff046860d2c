"""PyTorch (Kineto) runs under XProf's tool ids: kernel_stats, framework_op_stats, steps, overview.

Expectations are sums over the raw trace JSON computed here, independently of the reader.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.ops import framework_op_stats, kernel_stats, kineto_ops
from tbprof.analyses.overview import overview
from tbprof.analyses.pod import pod_viewer
from tbprof.analyses.steps.assignment import DROP_BOUNDARY_ABOVE, has_steps_data, steps_of
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore


@pytest.fixture(scope="module")
def trace_path(sample_profiles: Path) -> Path:
    return next((sample_profiles / "torch_cnn").glob("*.pt.trace.json"))


@pytest.fixture(scope="module")
def store(trace_path: Path) -> ProfileStore:
    return read_chrome_trace(trace_path)


@pytest.fixture(scope="module")
def doc(trace_path: Path) -> dict[str, Any]:
    return json.loads(trace_path.read_text())


def _dims(v: list[int]) -> str:
    return ",".join(str(x) for x in v)


def test_planes_are_named_as_in_xspace(store: ProfileStore, doc: dict[str, Any]) -> None:
    # Kineto labels the GPU process "GPU 0" (pid 0) and the profiled process "CPU".
    names = [p.name for p in store.planes]
    assert "/host:CPU" in names and "/device:GPU:0" in names
    gpu = store.plane("/device:GPU:0")
    assert gpu is not None
    dev0 = next(d for d in doc["deviceProperties"] if d["id"] == 0)
    assert gpu.plane_stats["gpu_device_name"] == dev0["name"]
    assert gpu.plane_stats["core_count"] == dev0["numSms"]
    assert store.metadata["deviceProperties"] == doc["deviceProperties"]


def test_kernel_stats_match_raw_kernels(store: ProfileStore, doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    op_of = {e["args"]["External id"]: e["name"] for e in events if e.get("cat") == "cpu_op"}
    want_count: Counter[tuple[Any, ...]] = Counter()
    want_us: dict[tuple[Any, ...], float] = defaultdict(float)
    for e in events:
        # kernel_stats skips sub-nanosecond kernels, as XProf does (none in this trace).
        if e.get("cat") != "kernel" or e["dur"] < 0.001:
            continue
        a = e["args"]
        key = (e["name"], _dims(a["grid"]), _dims(a["block"]), a["registers per thread"], a["shared memory"],
               op_of.get(a["External id"], ""))
        want_count[key] += 1
        want_us[key] += e["dur"]
    result = kernel_stats.compute([store], {})
    t = result["tables"]["kernels"].data
    got_count: Counter[tuple[Any, ...]] = Counter()
    got_us: dict[tuple[Any, ...], float] = defaultdict(float)
    # Rows are also keyed by occupancy and TensorCore flags: fold them to the raw key.
    for n, g, b, r, s, o, c, us in zip(t["kernel_name"], t["grid_dim"], t["block_dim"], t["registers_per_thread"],
                                       t["shmem_bytes"], t["op_name"], t["occurrences"], t["total_duration_us"],
                                       strict=True):
        got_count[(n, g, b, r, s, o)] += int(c)
        got_us[(n, g, b, r, s, o)] += float(us)
    assert got_count == want_count
    for key, us in got_us.items():
        assert us == pytest.approx(want_us[key], abs=1e-3)  # the reader keeps whole nanoseconds
    assert result["kernel_event_count"] == sum(want_count.values())
    assert all(op for op in t["op_name"])  # every kernel has its launching operator here
    # TensorCore use by XProf's kernel-name rules.
    uses = [kernel_stats.kernel_uses_tensorcore(n) for n in t["kernel_name"]]
    assert list(t["kernel_uses_tensorcore"]) == uses


def test_framework_op_stats_match_raw_ops(store: ProfileStore, doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    calls: Counter[str] = Counter()
    host_us: dict[str, float] = defaultdict(float)
    device_by_ext: dict[int, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "cpu_op":
            calls[e["name"]] += 1
            host_us[e["name"]] += e["dur"]
        elif e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            device_by_ext[e["args"]["External id"]] += e["dur"]
    device_us: dict[str, float] = defaultdict(float)
    device_calls: Counter[str] = Counter()
    for e in events:
        ext = e.get("args", {}).get("External id")
        if e.get("cat") == "cpu_op" and ext in device_by_ext:
            device_us[e["name"]] += device_by_ext[ext]
            device_calls[e["name"]] += 1
    result = framework_op_stats.compute([store], framework_op_stats.TOOLS[0].parse_options({}))
    t = result["tables"]["ops"]
    names = [c.name for c in t.columns]
    rows = [dict(zip(names, r, strict=True)) for r in t.rows()]
    host = {r["operation"]: r for r in rows if r["host_or_device"] == "Host" and r["operation"] != "IDLE"}
    device = {r["operation"]: r for r in rows if r["host_or_device"] == "Device" and r["operation"] != "IDLE"}
    assert set(host) == set(calls)
    for op, r in host.items():
        assert r["occurrences"] == calls[op]
        assert r["total_time_us"] == pytest.approx(host_us[op], abs=1e-3)
        assert r["total_self_time_us"] <= r["total_time_us"] + 1e-9
    for op, us in device_us.items():
        assert device[op]["total_self_time_us"] == pytest.approx(us, abs=1e-3)
        assert device[op]["occurrences"] == device_calls[op]
    # A forward convolution's kernels are launched by the cuDNN op nested inside it.
    assert "aten::conv2d" in host and "aten::conv2d" not in device and "aten::cudnn_convolution" in device


def test_profiler_steps(store: ProfileStore, doc: dict[str, Any]) -> None:
    events = doc["traceEvents"]
    host_markers = sorted((e["ts"], e["name"], e["dur"]) for e in events
                          if e.get("cat") == "user_annotation" and re.fullmatch(r"ProfilerStep#\d+", e["name"]))
    steps = steps_of(store)
    assert steps.source == "markers" and steps.method == "profiler_step"
    assert len(host_markers) <= DROP_BOUNDARY_ABOVE  # 4 steps: none dropped
    assert steps.names == [n for _, n, _ in host_markers]
    # A step starts at its host marker, or where the previous step's device work ends if that is
    # later, and ends no earlier than its host marker.
    t0_us = min(e["ts"] for e in events if "ts" in e and e.get("ph") != "M")
    prev_end_us = 0.0
    for (ts, _, dur), begin_ps, end_ps in zip(host_markers, steps.begin_ps, steps.end_ps, strict=True):
        assert begin_ps / 1e6 == pytest.approx(max(ts - t0_us, prev_end_us), abs=2e-3)
        assert end_ps / 1e6 >= ts - t0_us + dur - 2e-3
        prev_end_us = end_ps / 1e6
    assert steps.has_device and has_steps_data(store)
    # No DataLoader in this trace: no input time.
    assert int(steps.type_ps[:, 11].sum() + steps.type_ps[:, 8].sum()) == 0


def test_overview_and_pod_viewer(store: ProfileStore) -> None:
    result = overview.compute([store], {})
    assert result["run_environment"]["device_type"] == "GPU"
    assert result["run_environment"]["device_count"] == 1  # one GPU has events
    assert result["steps"]["step_count"] == 4
    assert result["recommendation"]["input_bound"] in ("no", "potential")
    assert result["top_ops_side"] == "device"
    assert result["tables"]["top_ops"].n_rows > 0
    pods = pod_viewer.compute([store], pod_viewer.TOOLS[0].parse_options({}))
    assert pods["step_count"] == 4


def test_dataloader_is_input(tmp_path: Path) -> None:
    """A minimal Kineto trace: one step of 1000 us whose first 400 us wait in the DataLoader."""
    def x(name: str, cat: str, ts: float, dur: float, pid: int, tid: int, **args: Any) -> dict[str, Any]:
        return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}
    events = [
        {"ph": "M", "name": "process_labels", "pid": 10, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        x("ProfilerStep#1", "user_annotation", 0, 1000, 10, 10),
        x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", 0, 400, 10, 10),
        x("aten::mm", "cpu_op", 400, 100, 10, 10, **{"External id": 1}),
        x("cudaLaunchKernel", "cuda_runtime", 450, 10, 10, 10, correlation=5, **{"External id": 1}),
        x("gemm_kernel", "kernel", 470, 500, 0, 7, stream=7, correlation=5, **{"External id": 1}),
    ]
    path = tmp_path / "w.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0, "name": "GPU"}]}))
    s = read_chrome_trace(path)
    assert kineto_ops.is_kineto(s)
    result = overview.compute([s], {})
    breakdown = result["performance_summary"]["breakdown_ms"]
    # 400 us waiting for input (nothing else runs then) -> 40 % of the 1000 us step: input-bound (>= 20 %).
    assert breakdown["input_ms"]["avg"] == pytest.approx(0.4)
    assert result["recommendation"]["input_bound"] == "high"


def test_memory_profile_from_memory_events(store: ProfileStore, doc: dict[str, Any]) -> None:
    from tbprof.analyses.memory import memory_profile

    gpu = [e["args"] for e in doc["traceEvents"]
           if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1 and e["args"].get("Device Id") == 0]
    result = memory_profile.compute([store], memory_profile.TOOLS[0].parse_options({}))
    assert result["memory_id"] == "GPU 0" and "cpu" in result["memory_ids"]
    a = result["allocators"]["GPU 0"]
    peak = max(gpu, key=lambda g: g["Total Allocated"])
    assert a["peak_bytes_in_use"] == peak["Total Allocated"]
    # Capacity = what the caching allocator reserved at the peak; free = reserved - allocated.
    assert a["memory_capacity_bytes"] == peak["Total Reserved"]
    assert a["peak_free_bytes"] == peak["Total Reserved"] - peak["Total Allocated"]
    assert a["num_allocations"] == sum(1 for g in gpu if g["Bytes"] > 0)
    assert a["num_deallocations"] == sum(1 for g in gpu if g["Bytes"] < 0)
    timeline = result["tables"]["timeline"]
    assert max(timeline.data["in_use_bytes"]) == peak["Total Allocated"]
    # The breakdown explains the peak: its rows add up to the bytes in use there.
    assert sum(result["tables"]["breakdown"].data["total_allocation_bytes"]) == peak["Total Allocated"]


def test_cpu_only_trace_without_labels(tmp_path: Path) -> None:
    """A CPU-only PyTorch trace whose processes carry no labels: the process with the operators
    is the host; two 1000 us steps, each with 600 us of one operator -> 60 % host compute."""
    events: list[dict[str, Any]] = []
    for i, t0 in enumerate((0.0, 1000.0)):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "ts": t0, "dur": 1000,
                       "pid": 7, "tid": 7})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": t0 + 100, "dur": 600, "pid": 7,
                       "tid": 7, "args": {"External id": i + 1}})
    path = tmp_path / "cpu.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = read_chrome_trace(path)
    assert s.plane("/host:CPU") is not None
    result = overview.compute([s], {})
    assert result["run_environment"]["device_type"] == "CPU"
    assert result["steps"]["step_count"] == 2
    breakdown = result["performance_summary"]["breakdown_ms"]
    assert breakdown["host_compute_ms"]["avg"] == pytest.approx(0.6)
    assert result["top_ops_side"] == "host"
    assert result["tables"]["top_ops"].data["name"][0] == "aten::add"
