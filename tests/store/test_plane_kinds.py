"""A plane's kind is decided once (domain/planes.plane_kind) from its XSpace name, and the
device/host questions of every module are asked through it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tbprof.domain.planes import (
    DEVICE_SIDE,
    PlaneKind,
    device_planes,
    device_planes_of,
    is_accelerator,
    kind_of_name,
    on_host_side,
    plane_kind,
)
from tbprof.service.profiles import Profiles
from tbprof.store.tables import ProfileStore

REPO = Path(__file__).resolve().parent.parent.parent


def _stores(logdir: Path, cache_dir: Path) -> dict[str, ProfileStore]:
    profiles = Profiles(logdir, cache_dir=cache_dir)
    out = {}
    for run in profiles.index.runs().values():
        store = profiles.store(run, sorted(run.hosts)[0])
        if isinstance(store, ProfileStore):
            out[run.kind] = store
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProfileStore]:
    logdir = tmp_path_factory.mktemp("logdir")
    for name in ("jax_mlp", "tpu_inference", "torch_cnn", "tf1_timeline"):
        shutil.copytree(REPO / "demo_logs" / name, logdir / name)
    return _stores(logdir, tmp_path_factory.mktemp("cache"))


def test_kinds_of_the_real_planes(stores: dict[str, ProfileStore]) -> None:
    assert {"xspace", "pytorch", "tf1_timeline"} <= set(stores)
    kinds = {(k, p.name): plane_kind(p) for k, s in stores.items() for p in s.planes}
    # XSpace's naming (tsl/profiler/utils/xplane_schema.h): /host:CPU, /host:metadata, /device:GPU:n.
    for (_, name), kind in kinds.items():
        if name == "/host:metadata":
            assert kind is PlaneKind.META
        elif name.startswith("/host:"):
            assert kind is PlaneKind.HOST
        elif name.startswith(("/device:GPU:", "/device:TPU:")):
            assert kind is PlaneKind.DEVICE
        elif name.startswith("/device:"):
            assert kind is PlaneKind.DEVICE_AUX
        else:
            assert kind is PlaneKind.OTHER
    assert PlaneKind.DEVICE in kinds.values() and PlaneKind.META in kinds.values()
    # A TF1 timeline's processes name the TF device inside: "other", not an accelerator plane.
    assert all(plane_kind(p) is PlaneKind.OTHER for p in stores["tf1_timeline"].planes)


def test_device_lists_follow_the_kind(stores: dict[str, ProfileStore]) -> None:
    for store in stores.values():
        assert device_planes_of(store) == [i for i, p in enumerate(store.planes)
                                           if plane_kind(p) is PlaneKind.DEVICE and p.n_events > 0]
        assert device_planes(store) == [p for p in store.planes if plane_kind(p) in DEVICE_SIDE and p.n_events > 0]
        assert all(is_accelerator(p) == (kind_of_name(p.name) is PlaneKind.DEVICE) for p in store.planes)
        assert all(on_host_side(p) == p.name.startswith("/host:") for p in store.planes)
    assert kind_of_name("/device:CUSTOM:Megascale Trace") is PlaneKind.DEVICE_AUX
