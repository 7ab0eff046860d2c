"""TF1 timelines with GPU tracing: one GPU is one device, and its scheduling process is host time (#33).

The fixtures are written as ``tensorflow/python/client/timeline.py`` writes a step's
``StepStats``: per ``dev_stats.device`` a ``<device> Compute`` process (``process_name``
metadata); each ``NodeExecStats`` an ``X`` event of category ``Op`` named by its op type, with
``args.name`` the node and ``args.op`` the type (for GPU tracer devices, ``/stream:`` or
``/memcpy``, both split from the ``name:op`` node name). TF's GPU tracer saves every kernel to
``<gpu>/stream:all`` and ``<gpu>/stream:<n>``, every copy to ``<gpu>/memcpy`` and
``<gpu>/stream:<n>``; the executor's own record of each op is on the GPU's scheduling device
``/job:localhost/replica:0/task:0/device:GPU:0``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.steps.assignment import steps_of
from tbprof.analyses.tf1 import tf1_timeline
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
STREAM_ALL, STREAM_7, STREAM_14, MEMCPY = (f"/device:GPU:0/{s}" for s in ("stream:all", "stream:7", "stream:14",
                                                                          "memcpy"))
# (node, op type, start µs, duration µs): two kernels and one host-to-device copy.
MATMUL = ("dense/MatMul", "MatMul", 150, 200)
RELU = ("dense/Relu", "Relu", 350, 50)
COPY = ("dense/kernel/read", "MEMCPYHtoD", 400, 30)
HOST_OPS = {CPU: [("IteratorGetNext", "IteratorGetNext", 0, 100)],
            GPU: [("dense/MatMul", "MatMul", 100, 20), ("dense/Relu", "Relu", 120, 10)]}


def _timeline(devices: dict[str, list[tuple[str, str, int, int]]]) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for pid, (device, ops) in enumerate(devices.items()):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"{device} Compute"}})
        events += [{"ph": "X", "cat": "Op", "name": op, "pid": pid, "tid": 0, "ts": ts, "dur": dur,
                    "args": {"name": node, "op": op}} for node, op, ts, dur in ops]
    return {"traceEvents": events}


def _store(tmp_path: Path, devices: dict[str, list[tuple[str, str, int, int]]], step: int = 0) -> ProfileStore:
    path = tmp_path / f"timeline-{step}.json"
    path.write_text(json.dumps(_timeline(devices)))
    return read_chrome_trace(path)


WITH_STREAM_ALL = {**HOST_OPS, STREAM_ALL: [MATMUL, RELU], STREAM_7: [MATMUL, RELU], STREAM_14: [COPY],
                   MEMCPY: [COPY]}
WITHOUT_STREAM_ALL = {**HOST_OPS, STREAM_7: [MATMUL, RELU], STREAM_14: [COPY], MEMCPY: [COPY]}
# Device op time: each kernel and the copy once; host op time: the CPU's op and the GPU's scheduling.
DEVICE_US = MATMUL[3] + RELU[3] + COPY[3]
HOST_US = 100 + 20 + 10


@pytest.mark.parametrize("devices", [WITH_STREAM_ALL, WITHOUT_STREAM_ALL], ids=["stream_all", "per_stream"])
def test_one_gpu_is_one_device(tmp_path: Path, devices: dict[str, list[tuple[str, str, int, int]]]) -> None:
    store = _store(tmp_path, devices)
    steps = tf1_timeline.steps_compute([store], {})["tables"]["steps"].data
    assert steps["device_op_time_ms"].tolist() == [pytest.approx(DEVICE_US / 1e3)]
    assert steps["host_op_time_ms"].tolist() == [pytest.approx(HOST_US / 1e3)]
    assert steps["step_time_ms"].tolist() == [pytest.approx((COPY[2] + COPY[3]) / 1e3)]
    assert len(steps_of(store).device_planes) == 1
    ops = tf1_timeline.op_stats_compute([store], {})["tables"]["ops"].data
    device_rows = [d for d, side in zip(ops["device"].tolist(), ops["host_or_device"].tolist(), strict=True)
                   if side == "Device"]
    assert set(device_rows) == {GPU}  # the GPU, not its stream processes


def test_the_real_cpu_timeline_has_no_device(sample_profiles: Path) -> None:
    store = read_chrome_trace(sample_profiles / "tf1_timeline" / "timeline-1.json")
    assert steps_of(store).device_planes == []
    steps = tf1_timeline.steps_compute([store], {})["tables"]["steps"].data
    assert steps["device_op_time_ms"].tolist() == [0.0]
