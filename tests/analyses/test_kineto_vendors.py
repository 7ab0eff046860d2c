"""Kineto traces name their device by its vendor, not by a compute capability alone (#33).

A ROCm build of PyTorch writes the same Kineto fields as a CUDA build (tests/kineto_fixtures.py):
the host's runtime calls under ``cuda_runtime`` but named ``hip*`` (``hipLaunchKernel``,
``hipMemcpyAsync``), kernels under ``kernel`` (composable-kernel ``ck_tile::`` GEMMs), and
``deviceProperties`` from ``hipDeviceProp_t`` under the CUDA keys (``name``, ``computeMajor`` /
``computeMinor`` = 9 / 4 on an MI300X, ``numSms`` = its 304 compute units, ``warpSize`` 64). MTIA
writes ``mtia_runtime`` launches and ``mtia_ccp_events`` device work.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview, profile_summary
from tbprof.domain.planes import device_display_name, device_model
from tbprof.store.tables import ProfileStore
from tests import kineto_fixtures as kf

MI300X = {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888, "computeMajor": 9,
          "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
          "regsPerBlock": 65536, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304,
          "sharedMemPerMultiprocessor": 65536}
CK_GEMM = "ck_tile::kentry<256, 1, ck_tile::GemmKernel<bf16>>"


def _hip_events(device: int) -> list[kf.Event]:
    return [
        kf.x("user_annotation", "ProfilerStep#1", 1000, 1000),
        kf.x("cpu_op", "aten::mm", 1010, 100),
        kf.launch("hipLaunchKernel", 1020, 10, 41),
        kf.kernel(CK_GEMM, 1100, 400, 41, device=device),
        kf.launch("hipMemcpyAsync", 1600, 10, 42),
        kf.kernel("Memcpy DtoH (Device -> Host)", 1610, 20, 42, device=device, cat="gpu_memcpy"),
    ]


def _hip_store(tmp_path: Path, device: int = 0) -> ProfileStore:
    doc = kf.trace(_hip_events(device), [MI300X], gpus=0)
    doc["traceEvents"] += kf.process(device, "python3", f"GPU {device}")
    return kf.write(tmp_path, doc)


def test_a_hip_trace_is_an_amd_gpu(tmp_path: Path) -> None:
    store = _hip_store(tmp_path)
    plane = store.plane("/device:GPU:0")
    assert plane is not None
    # XProf's GpuModelName for an AMD device without a gfx architecture name: the family by major.
    assert device_model(plane) == "AMD GPU - gfx-9XX series"
    assert device_display_name(plane) == "AMD Instinct MI300X"
    env = overview.run_environment([store])
    assert env["xprof_device_type"] == "AMD GPU - gfx-9XX series"
    assert env["devices"][0]["core_count"] == MI300X["numSms"]
    assert env["devices"][0]["compute_capability"] == "9.4"
    assert "Nvidia" not in str(env)
    assert kernel_stats.compute([store], {})["pie_by_kernel"][0]["name"] == CK_GEMM


def test_device_properties_of_a_device_numbered_otherwise(tmp_path: Path) -> None:
    """One GPU whose process and events say device 2 while its one ``deviceProperties`` entry is id 0."""
    store = _hip_store(tmp_path, device=2)
    plane = store.plane("/device:GPU:2")
    assert plane is not None
    assert device_display_name(plane) == "AMD Instinct MI300X"
    assert plane.plane_stats["core_count"] == MI300X["numSms"]


def test_a_cuda_trace_stays_nvidia(tmp_path: Path) -> None:
    h100 = {**MI300X, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}
    events = [e for e in _hip_events(0)]
    for e in events:
        e["name"] = e["name"].replace("hip", "cuda")
    store = kf.write(tmp_path, kf.trace(events, [h100]))
    plane = store.plane("/device:GPU:0")
    assert plane is not None and device_model(plane) == "Nvidia GPU (Hopper)"


def test_mtia_is_no_gpu(tmp_path: Path) -> None:
    events = [
        kf.x("user_annotation", "ProfilerStep#1", 1000, 1000),
        kf.launch("runFunction - job_prep_and_submit_for_execution", 1020, 10, 51, cat="mtia_runtime"),
        kf.kernel("fused_linear_relu", 1100, 400, 51, cat="mtia_ccp_events"),
    ]
    store = kf.write(tmp_path, kf.trace(events))
    env = overview.run_environment([store])
    assert env["device_type"] == "MTIA" and env["xprof_device_type"] == "MTIA"
    summary = profile_summary.compute([store], {})
    types = {p["name"]: p["device_type"] for p in summary["hosts"][0]["planes"]}
    assert types["/device:GPU:0"] == "MTIA"
    assert "GPU" not in {v for k, v in types.items()}


@pytest.mark.parametrize("name", ["hipLaunchKernel", "hipExtModuleLaunchKernel"])
def test_any_hip_launch_names_the_vendor(tmp_path: Path, name: str) -> None:
    events = _hip_events(0)
    events[2]["name"] = name
    store = kf.write(tmp_path, kf.trace(events, [{**MI300X, "name": ""}]))
    plane = store.plane("/device:GPU:0")
    assert plane is not None and device_model(plane).startswith("AMD GPU")
