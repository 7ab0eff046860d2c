"""One device name across pages (#29 §4): the overview's run environment, the roofline card
and the trace viewer's device groups all call a device what ``domain/planes.device_display_name``
calls it (the product name, "NVIDIA H200"); XProf's architecture name ("Nvidia GPU (Hopper)")
stays the roofline's ``device_type`` (its parity field) and is not shown as the device."""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.hlo import roofline_model
from tbprof.analyses.overview.overview import run_environment
from tbprof.domain.planes import device_planes_of
from tbprof.timeline.tracks import track_index
from tests.helpers import store_of


@pytest.mark.parametrize("profile", ["jax_mlp", "jax_2hosts_worker0"])
def test_overview_roofline_and_trace_viewer_name_the_device_alike(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    overview_name = run_environment([store])["device_model"]
    roofline = roofline_model.compute([store], {})
    device_groups = [g.name for g in track_index(store).groups if g.kind == "device"]
    # The name is the planes' own product name (a stat of the profile, not a table of ours).
    names = {str(store.planes[pi].plane_stats["gpu_device_name"]) for pi in device_planes_of(store)}
    assert len(names) == 1
    (name,) = names
    assert overview_name == name
    assert roofline["device_name"] == name
    assert device_groups and all(g.endswith(f"({name})") for g in device_groups)
    # XProf's architecture name is kept for parity, and differs from the shown name.
    assert roofline["device_type"].startswith("Nvidia GPU") and roofline["device_type"] != name
