"""A device is a device (#33): host operators that carry a ``stream`` argument make no device row
and no device time, and ``cuda_sync`` waits are not kernels in the idle-time breakdown.

Fixtures are Kineto traces written from libkineto's fields (tests/kineto_fixtures.py):

* Inductor's Triton launcher: in every ``torch.compile`` trace the generated kernel's launch is a
  ``cpu_op`` named after the kernel on the Python thread, its ``args`` holding
  ``kernel_backend: "triton"`` and the raw ``stream`` it launches on (torch/_inductor's
  ``triton_heuristics`` profiler kwargs), followed by the driver's ``cuLaunchKernel``;
* ``cuda_sync`` events (``enable_cuda_sync_events=True``): an ``Event Sync`` on the stream that
  waits and a device-wide one whose stream is CUPTI's invalid id written unsigned (4294967295).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.gpu import breakdown, utilization
from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview
from tbprof.analyses.overview.headline import headline
from tbprof.store.tables import ProfileStore
from tbprof.timeline.tracks import track_index
from tests import kineto_fixtures as kf
from tests.helpers import GOLDEN

# Two kernels on GPU 0's stream 7: [1200, 1300) and [1500, 1800) µs; the Triton launcher cpu_op
# runs on the host at [1100, 1150).
TRITON_EVENTS = [
    kf.x("user_annotation", "ProfilerStep#1", 1000, 1000),
    kf.x("cpu_op", "triton_poi_fused_mul_0", 1100, 50, stream=7, kernel_backend="triton"),
    kf.launch("cuLaunchKernel", 1110, 20, 21, cat="cuda_driver"),
    kf.kernel("triton_poi_fused_mul_0", 1200, 100, 21),
    kf.x("cpu_op", "aten::mm", 1300, 100),
    kf.launch("cudaLaunchKernel", 1310, 10, 22),
    kf.kernel("ampere_sgemm_128x64_nn", 1500, 300, 22),
    kf.x("user_annotation", "ProfilerStep#2", 2000, 500),
]
# The device timeline: 1200 to 1800 = 600 µs, busy 100 + 300, idle the 200 between.
SPAN_US, BUSY_US = 1800 - 1200, 100 + 300
IDLE_PERCENT = 100 * (SPAN_US - BUSY_US) / SPAN_US


@pytest.fixture()
def triton_store(tmp_path: Path) -> ProfileStore:
    return kf.write(tmp_path, kf.trace(TRITON_EVENTS))


def _opts() -> dict[str, object]:
    return breakdown.TOOLS[0].parse_options({})


def test_a_host_operator_with_a_stream_is_no_device(triton_store: ProfileStore) -> None:
    result = breakdown.compute([triton_store], _opts())
    temporal = result["tables"]["temporal_breakdown"].data
    assert temporal["device"].tolist() == ["/device:GPU:0"]
    assert temporal["idle_time_us"].tolist() == [SPAN_US - BUSY_US]
    assert temporal["compute_time_us"].tolist() == [BUSY_US]
    assert set(result["tables"]["idle_time_breakdown"].data["device"].tolist()) == {"/device:GPU:0"}
    # The headline is the GPU's own, not averaged with a host "device".
    assert result["device_idle_percent"] == pytest.approx(IDLE_PERCENT)
    assert headline([triton_store]).get("device_idle_percent") == pytest.approx(IDLE_PERCENT, abs=0.01)


def test_other_pages_see_one_gpu(triton_store: ProfileStore) -> None:
    ks = kernel_stats.compute([triton_store], {})
    assert ks["kernel_event_count"] == 2 and ks["total_duration_us"] == BUSY_US
    util = utilization.compute([triton_store], {})["tables"]["devices"].data
    assert util["device"].tolist() == [0]
    groups = [(g.name, g.kind) for g in track_index(triton_store).groups]
    assert [kind for _, kind in groups].count("device") == 1
    env = overview.run_environment([triton_store])
    assert env["device_count"] == 1
    # The host plane still holds the launcher: it is the host's work.
    host = triton_store.plane("/host:CPU")
    assert host is not None and "triton_poi_fused_mul_0" in triton_store.strings.lookup(host.name_id)


# Stream 7: kernel A [1000, 1100), launched at 990; kernel B [1300, 1400), launched at 1290 (after A
# ended: the host was late, 200 µs of host wait). The host waits on an event from 1104 to 1500
# (cudaEventSynchronize); CUPTI records it as an Event Sync on stream 7 over the same span, and a
# device-wide Context Sync on stream 4294967295.
SYNC_EVENTS = [
    kf.x("user_annotation", "ProfilerStep#1", 900, 700),
    kf.launch("cudaLaunchKernel", 990, 5, 31),
    kf.kernel("kernel_a", 1000, 100, 31),
    kf.launch("cudaEventSynchronize", 1104, 396, 32),
    kf.kernel("Event Sync", 1105, 395, 32, cat="cuda_sync"),
    kf.launch("cudaDeviceSynchronize", 1600, 10, 34),
    kf.kernel("Context Sync", 1600, 10, 34, stream=4294967295, cat="cuda_sync"),
    kf.launch("cudaLaunchKernel", 1290, 5, 33),
    kf.kernel("kernel_b", 1300, 100, 33),
    kf.x("user_annotation", "ProfilerStep#2", 1700, 100),
]


def test_cuda_sync_events_are_not_kernels_in_the_idle_breakdown(tmp_path: Path) -> None:
    store = kf.write(tmp_path, kf.trace(SYNC_EVENTS))
    idle = breakdown.compute([store], _opts())["tables"]["idle_time_breakdown"].data
    assert idle["stream"].tolist() == [7, 7, 7]  # no row for 4294967295
    by_cat = dict(zip(idle["idle_category"].tolist(), idle["idle_time_us"].tolist(), strict=True))
    # The one gap between A's end (1100) and B's start (1300), B launched after A ended.
    assert by_cat == {"host_wait": 1300 - 1100, "kernel_wait": 0.0, "other": 0.0}
    ratios = idle["idle_time_ratio"]
    assert np.all((ratios >= 0) & (ratios <= 1))
    assert np.all(idle["idle_time_us"] >= 0)


# --- against HTA 0.5.0 (tests/golden/make_hta_device_fixture_goldens.py) --------------------------

def _hta(fixture: str) -> dict[str, Any]:
    golden: dict[str, Any] = json.loads((GOLDEN / "hta" / "device_fixtures.json").read_text())[fixture]
    return golden


def _idle_by_category(store: ProfileStore) -> dict[str, float]:
    idle = breakdown.compute([store], _opts())["tables"]["idle_time_breakdown"].data
    return dict(zip(idle["idle_category"].tolist(), idle["idle_time_us"].tolist(), strict=True))


@pytest.mark.parametrize("fixture", ["triton_launcher", "cuda_sync"])
def test_idle_time_breakdown_equals_htas(tmp_path: Path, fixture: str) -> None:
    events = TRITON_EVENTS if fixture == "triton_launcher" else SYNC_EVENTS
    ours = _idle_by_category(kf.write(tmp_path, kf.trace(events)))
    for row in _hta(fixture)["idle_time_breakdown"]:
        assert ours[row["idle_category"]] == row["idle_time"]


def test_temporal_breakdown_with_syncs_equals_htas(tmp_path: Path) -> None:
    """HTA's temporal breakdown takes the waits' spans as device time; so does tbprof's."""
    temporal = breakdown.compute([kf.write(tmp_path, kf.trace(SYNC_EVENTS))], _opts())["tables"]["temporal_breakdown"]
    hta = _hta("cuda_sync")["temporal_breakdown"][0]
    for ours, theirs in (("idle_time_us", "idle_time(us)"), ("compute_time_us", "compute_time(us)"),
                         ("non_compute_time_us", "non_compute_time(us)"), ("kernel_time_us", "kernel_time(us)")):
        assert temporal.data[ours].tolist() == [hta[theirs]]


def test_hta_puts_the_launcher_on_the_device_timeline(triton_store: ProfileStore) -> None:
    """The difference docs/differences.md names: HTA's timeline starts at the launcher (1100 µs)
    and counts its 50 µs as compute; tbprof's is the GPU's (1200 to 1800 µs)."""
    hta = _hta("triton_launcher")["temporal_breakdown"][0]
    assert hta["kernel_time(us)"] == 1800 - 1100 and hta["compute_time(us)"] == BUSY_US + 50
    temporal = breakdown.compute([triton_store], _opts())["tables"]["temporal_breakdown"].data
    assert temporal["kernel_time_us"].tolist() == [SPAN_US]


def test_trace_diff_keeps_the_launcher_as_a_host_operator(triton_store: ProfileStore) -> None:
    """The launcher (50 µs on the host) and its kernel (100 µs) share a name: both are counted in
    step 1; as a "kernel" without a launch, the launcher would belong to no iteration."""
    from tbprof.analyses.gpu import trace_diff
    summary = trace_diff.op_summary(triton_store, 1)
    assert summary.counts["triton_poi_fused_mul_0"] == 2
    assert summary.total_us["triton_poi_fused_mul_0"] == 50 + 100
