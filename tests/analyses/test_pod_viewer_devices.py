"""Pod viewer (#29 §4): a device's column counts the host's events too, so on a host with one
device that column and the host's "all devices" column are the same step breakdown and name the
same bottleneck (PyTorch rank 1 of torch_ddp read "Host compute" for all devices and "All
others" for its GPU: the host compute of the step was missing from the GPU's column)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.pod import pod_viewer
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store.tables import ProfileStore
from tests.helpers import store_of

DEMO = Path(__file__).resolve().parents[2] / "demo_logs"


def _torch_ddp() -> list[ProfileStore]:
    return [read_chrome_trace(p) for p in sorted((DEMO / "torch_ddp").glob("*.pt.trace.json"))]


def _pairs(result: Mapping[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(all devices, device) columns of each host with exactly one device."""
    by_host: dict[str, list[dict[str, Any]]] = {}
    for c in result["cores"]:
        by_host.setdefault(c["host"], []).append(c)
    out = []
    for cols in by_host.values():
        devices = [c for c in cols if c["device"] != "all devices"]
        alls = [c for c in cols if c["device"] == "all devices"]
        if len(devices) == 1 and len(alls) == 1:
            out.append((alls[0], devices[0]))
    return out


@pytest.mark.parametrize("which", ["torch_ddp", "jax_2hosts"])
def test_one_device_host_columns_agree(profiles_root: Path, which: str) -> None:
    stores = _torch_ddp() if which == "torch_ddp" else \
        [store_of(profiles_root, "jax_2hosts_worker0"), store_of(profiles_root, "jax_2hosts_worker1")]
    result = pod_viewer.compute(stores, {"step": -1})
    pairs = _pairs(result)
    assert len(pairs) == 2
    for everything, device in pairs:
        assert device["bottleneck"] == everything["bottleneck"], device["host"]
        for label, values in everything["breakdown_us"].items():
            np.testing.assert_allclose(device["breakdown_us"][label], values, err_msg=label)
    if which == "torch_ddp":
        # The case the issue saw: host compute is rank 1's bottleneck in some steps.
        assert any("Host compute" in e["bottleneck"] for e, _ in pairs)
