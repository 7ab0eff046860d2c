"""A GPU's time shares, HTA 0.5.0's rules (docs/formulas.md, "GPU breakdowns (HTA)"): the
temporal breakdown of its device timeline (idle / compute / non-compute) and the share of it
with a communication kernel running, and the per-host values the run's headline averages
(``summary_values``).

Apart from the GPU breakdown tool (breakdown.py, which reports them per rank with its other
sections) so that a pod's worker computing the headline's parts (analyses/partials.py) imports
these rules and the device activity alone, not the tool and its tables.
"""

from __future__ import annotations

import numpy as np

from tbprof.analyses.gpu.activity import (
    COMMUNICATION,
    COMPUTATION,
    DeviceActivity,
    device_activity,
    device_intervals,
    has_device_activity,
    merge_intervals,
    per_device,
    union_ps,
)
from tbprof.store.tables import ProfileStore
from tbprof.store.view import CarriedValue, StoreView

PS_PER_US = 1e6


def temporal(act: DeviceActivity) -> dict[str, float]:
    """Idle / compute / non-compute time of one rank's device timeline (us and %)."""
    return _temporal(act.start_ps, act.end_ps, act.kind)


def _temporal(start_ps: np.ndarray, end_ps: np.ndarray, kind: np.ndarray) -> dict[str, float]:
    """``temporal`` of events in any order (the intervals' unions do not read it)."""
    if start_ps.shape[0] == 0:
        return {}
    s, e = merge_intervals(start_ps, end_ps)
    span_ps = int(e[-1] - s[0])
    busy_ps = int((e - s).sum())
    comp = kind == COMPUTATION
    compute_ps = union_ps(start_ps[comp], end_ps[comp])
    idle_ps = span_ps - busy_ps
    # HTA's sums count an event rounded to end before it starts as negative busy time, so the
    # compute union can pass the busy time by a few microseconds: then no non-compute time.
    non_compute_ps = max(span_ps - compute_ps - idle_ps, 0)
    pct = (lambda v: 100.0 * v / span_ps) if span_ps > 0 else (lambda v: float("nan"))
    return {"idle_time_us": idle_ps / PS_PER_US, "compute_time_us": compute_ps / PS_PER_US,
            "non_compute_time_us": non_compute_ps / PS_PER_US, "kernel_time_us": span_ps / PS_PER_US,
            "idle_time_percent": pct(idle_ps), "compute_time_percent": pct(compute_ps),
            "non_compute_time_percent": pct(non_compute_ps)}


def communication_percent(act: DeviceActivity) -> float:
    """Share of the device timeline (first start to last end) with a communication kernel running."""
    return _communication_percent(act.start_ps, act.end_ps, act.kind)


def _communication_percent(start_ps: np.ndarray, end_ps: np.ndarray, kind: np.ndarray) -> float:
    if start_ps.shape[0] == 0:
        return float("nan")
    span_ps = int(end_ps.max() - start_ps.min())
    comm = kind == COMMUNICATION
    return 100.0 * union_ps(start_ps[comm], end_ps[comm]) / span_ps if span_ps > 0 else float("nan")


RankedDevice = tuple[int, ProfileStore, str, DeviceActivity]  # rank, store, device plane, its activity


def devices_with_activity(ranked: list[tuple[int, ProfileStore]]) -> list[RankedDevice]:
    """(rank, store, device plane, its activity) for every GPU with device events."""
    out: list[RankedDevice] = []
    for rank, store in ranked:
        act = device_activity(store)
        if act.n:
            out.extend((rank, store, device, a) for device, a in per_device(store, act))
    return out


# The memo key of a store's per-GPU summary values (analyses/partials.py carries them).
SUMMARY_VALUES_KEY = ("gpu_breakdown", "summary_values")


def _summary_values(store: ProfileStore) -> tuple[bool, list[float], list[float]]:
    # An XSpace host's shares from its device events' intervals alone (``device_intervals``): the
    # activity's launches and order, which the shares do not read, are left to the GPU tools.
    devices = device_intervals(store)
    if devices is None:
        ranked = devices_with_activity([(0, store)]) if has_device_activity(store) else []
        devices = [(name, act.start_ps, act.end_ps, act.kind) for _, _, name, act in ranked]
    idle = [float(_temporal(start, end, kind)["idle_time_percent"]) for _, start, end, kind in devices]
    comm = [float(_communication_percent(start, end, kind)) for _, start, end, kind in devices]
    return bool(devices), idle, comm


SUMMARY_VALUES: CarriedValue[tuple[bool, list[float], list[float]]] = CarriedValue(SUMMARY_VALUES_KEY,
                                                                                   _summary_values)


def summary_values(store: StoreView) -> tuple[bool, list[float], list[float]]:
    """Of one host (memoised): whether it has device activity, and per GPU its idle % and
    communication %, what the run's headline (analyses/overview/headline.py) averages over the
    hosts' GPUs (so the average over all hosts combines per-host lists)."""
    return store.derive(SUMMARY_VALUES)
