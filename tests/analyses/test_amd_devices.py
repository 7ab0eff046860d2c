"""AMD GPUs named as XProf names them ("AMD GPU - gfx942"), on every page that names NVIDIA ones.

No AMD profile is in the repository: the fixture is jax_mlp's real xplane with the device plane
stats an XLA ROCm profile carries instead of the NVIDIA ones (``device_vendor`` "AMD",
``gpu_device_name`` holding the ROCm architecture name ``gfx942:sramecc+:xnack-`` as
hipDeviceProp.gcnArchName gives it, ``compute_cap_major/minor`` 9/4 for gfx942), set through the
XSpace proto. XProf 2.24.2 (hardware_type_utils GpuModelName) prefers the gfx name, then the
family by compute capability major ("AMD GPU - gfx-9XX series"), then "AMD GPU".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.hlo import roofline_model
from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview, profile_summary
from tbprof.domain.planes import device_model, gfx_arch
from tbprof.protos import xplane_pb2
from tbprof.readers.xplane import read_xspace
from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index
from tests.conftest import xplane_of

ROCM_ARCH_NAME = "gfx942:sramecc+:xnack-"  # an MI300X's gcnArchName


def _set_stat(plane: xplane_pb2.XPlane, name: str, value: str | int | None) -> None:
    """Set (or, with None, remove) the plane stat ``name``."""
    mid = next((k for k, m in plane.stat_metadata.items() if m.name == name.encode()), None)
    if mid is None:
        mid = max(plane.stat_metadata, default=0) + 1
        plane.stat_metadata[mid].id = mid
        plane.stat_metadata[mid].name = name.encode()
    kept = [s for s in plane.stats if s.metadata_id != mid]
    del plane.stats[:]
    plane.stats.extend(kept)
    if value is None:
        return
    stat = plane.stats.add(metadata_id=mid)
    if isinstance(value, str):
        stat.str_value = value.encode()
    else:
        stat.int64_value = value


def _amd_store(root: Path, tmp_path: Path, device_name: str | None, major: int = 9, minor: int = 4,
               vendor: str | None = "AMD") -> ProfileStore:
    space = xplane_pb2.XSpace()
    space.ParseFromString(xplane_of(root, "jax_mlp").read_bytes())
    for plane in space.planes:
        if plane.name.startswith(b"/device:GPU:"):
            _set_stat(plane, "device_vendor", vendor)
            _set_stat(plane, "gpu_device_name", device_name)
            _set_stat(plane, "compute_cap_major", major)
            _set_stat(plane, "compute_cap_minor", minor)
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(space.SerializeToString())
    return read_xspace(path)


def test_amd_gpu_is_named_on_every_page(profiles_root: Path, tmp_path: Path) -> None:
    store = _amd_store(profiles_root, tmp_path, ROCM_ARCH_NAME)
    env = overview.run_environment([store])
    assert env["xprof_device_type"] == "AMD GPU - gfx942"
    assert env["device_model"] == "AMD GPU - gfx942" and env["device_count"] == 2
    assert roofline_model.compute([store], {})["device_type"] == "AMD GPU - gfx942"
    summary = profile_summary.compute([store], {})
    names = {p["name"]: p["device_name"] for p in summary["hosts"][0]["planes"]}
    assert names["/device:GPU:0"] == names["/device:GPU:1"] == "AMD GPU - gfx942"
    groups = [g.name for g in track_index(store).groups if g.kind == "device"]
    assert groups and all(g.endswith("(AMD GPU - gfx942)") for g in groups)


def test_hip_kernels_are_listed_as_cuda_kernels_are(profiles_root: Path, tmp_path: Path) -> None:
    """The kernel table reads the kernel events and their kernel_details, whoever the vendor."""
    nvidia = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    amd = _amd_store(profiles_root, tmp_path, ROCM_ARCH_NAME)

    def rows(store: ProfileStore) -> list[list[Any]]:
        return list(kernel_stats.compute([store], {})["tables"]["kernels"].rows())

    assert rows(amd) == rows(nvidia) and rows(amd)


@pytest.mark.parametrize(("device_name", "major", "minor", "expected"), [
    (None, 9, 4, "AMD GPU - gfx-9XX series"),  # no architecture name: the family by major
    ("gfx90a", 9, 0, "AMD GPU - gfx90a"),
    (None, 12, 0, "AMD GPU"),
])
def test_amd_model_falls_back_as_xprof_does(profiles_root: Path, tmp_path: Path, device_name: str | None,
                                            major: int, minor: int, expected: str) -> None:
    store = _amd_store(profiles_root, tmp_path, device_name, major, minor)
    assert overview.run_environment([store])["xprof_device_type"] == expected


def test_amd_without_vendor_stat_is_known_by_its_name(profiles_root: Path, tmp_path: Path) -> None:
    """A trace without a device_vendor stat (PyTorch's deviceProperties give the product name and
    compute capability): an "AMD ..." name is an AMD GPU, not the NVIDIA architecture of major 9."""
    store = _amd_store(profiles_root, tmp_path, "AMD Instinct MI300X", vendor=None)
    env = overview.run_environment([store])
    assert (env["device_model"], env["xprof_device_type"]) == ("AMD Instinct MI300X", "AMD GPU - gfx-9XX series")


def test_nvidia_and_tpu_models_are_unchanged(profiles_root: Path, sample_profiles: Path) -> None:
    gpu = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    env = overview.run_environment([gpu])
    assert (env["device_model"], env["xprof_device_type"]) == ("NVIDIA H200", "Nvidia GPU (Hopper)")
    tpu = read_xspace(xplane_of(sample_profiles, "tpu_inference", "tpu_inference_2"))
    assert device_model(tpu.planes[0]) == "TPU v6 Lite"


@pytest.mark.parametrize(("name", "arch"), [("gfx942:sramecc+:xnack-", "gfx942"), ("gfx1100", "gfx1100"),
                                            ("NVIDIA H200", ""), ("gfx", ""), ("", "")])
def test_gfx_arch(name: str, arch: str) -> None:
    assert gfx_arch(name) == arch
