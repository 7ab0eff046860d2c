"""The headline's GPU shares (analyses/gpu/shares.py ``summary_values``) of an XSpace host are
read from its device events' intervals (activity.py ``device_intervals``), not from the whole
device activity: the same idle and communication percentages as the GPU breakdown's, which
reads the activity, on every demo XSpace host with GPUs (one and two GPUs, with communication)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tbprof.analyses.gpu import activity, shares
from tbprof.readers.xplane import read_xspace

REPO = Path(__file__).resolve().parents[2]
GPU_HOSTS = sorted(str(p.relative_to(REPO)) for name in ("jax_mlp", "jax_2hosts")
                   for p in (REPO / "demo_logs" / name).glob("plugins/profile/*/*.xplane.pb"))
GPU_HOSTS.append("tests/data/jax_large_slim/plugins/profile/2026_11_26_00_33_10/vm.xplane.pb")


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("rel", GPU_HOSTS)
def test_shares_from_intervals_are_the_activitys(rel: str) -> None:
    fresh = read_xspace(str(REPO / rel))
    assert not fresh.has_derived(activity.DEVICE_ACTIVITY)
    intervals = activity.device_intervals(fresh)
    assert intervals  # every one of these hosts has GPU work
    active, idle, comm = shares._summary_values(fresh)
    assert not fresh.has_derived(activity.DEVICE_ACTIVITY)  # the shares did not build the activity

    store = read_xspace(str(REPO / rel))
    act = activity.device_activity(store)
    assert activity.device_intervals(store) is None  # derived already: read it
    per_gpu = activity.per_device(store, act)
    assert [name for name, *_ in intervals] == [name for name, _ in per_gpu]
    assert active and _same(idle, [shares.temporal(a)["idle_time_percent"] for _, a in per_gpu])
    assert _same(comm, [shares.communication_percent(a) for _, a in per_gpu])
    full_active, full_idle, full_comm = shares._summary_values(store)  # by the activity
    assert full_active == active and _same(full_idle, idle) and _same(full_comm, comm)


def test_a_host_without_gpus_has_none() -> None:
    store = read_xspace(str(next((REPO / "demo_logs" / "custom_loop").glob("plugins/profile/*/*.xplane.pb"))))
    assert activity.device_intervals(store) == []
    assert shares._summary_values(store) == (False, [], [])
