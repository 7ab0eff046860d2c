"""Host-boundness of a GPU run: is the device idle inside the steps because the host does not
launch work fast enough? XProf 2.24.2's ``check_host_boundness`` asks it of TPUs only (duty cycle,
MXU idleness, HBM and ICI counters); on a GPU it always answers "not host-bound" (its MXU idleness
is 0). The GPU rule (docs/formulas.md, "Host-boundness"), per device:

* total time = the sum of the steps' durations (``analyses/steps``; XProf: average step time ×
  steps); busy = the union of the device's events (HTA's device activity) inside the steps;
  **idle time ratio** = (total - busy) / total;
* **host wait share**: of the gaps between consecutive events on each stream (positive ones), the
  share of their time where the next event's launch came after the previous event ended (HTA's
  "host wait": the device had nothing queued);
* **host-bound** when the idle time ratio is over 10 % (XProf's threshold) and host waits are at
  least half of the gaps; **equivalent idle devices** = devices × mean idle fraction, as XProf's
  ``equivalent_idle_chips``; no steps: insufficient data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import device_activity, has_device_activity, merge_intervals, per_device
from tbprof.analyses.gpu.breakdown import idle_intervals, rank_of
from tbprof.analyses.results.gpu import HostBoundnessResult
from tbprof.analyses.steps.assignment import steps_of
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.tables import ProfileStore

TOOL = "host_boundness"
IDLE_RATIO_THRESHOLD_PERCENT = 10.0  # XProf's _IDLE_TIME_RATIO_HIGH_THRESHOLD_PERCENT
HOST_WAIT_SHARE_THRESHOLD_PERCENT = 50.0
CONSECUTIVE_KERNEL_DELAY_PS = 30_000_000  # HTA's 30 us: a shorter gap is kernel wait, not idle
_PS_PER_MS = 1e9

COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"), Column("device", "Device", "str"),
    Column("steps", "Steps", "int"),
    Column("total_ms", "Total step time", "float", "ms"),
    Column("busy_ms", "Device busy", "float", "ms", "union of the device's events inside the steps"),
    Column("idle_ms", "Device idle", "float", "ms"),
    Column("idle_time_ratio_percent", "Idle time ratio", "float", "%"),
    Column("host_wait_share_percent", "Host wait share", "float", "%",
           "of the stream gaps' time: gaps where the next launch came after the previous event ended"),
    Column("host_bound", "Host-bound", "bool"),
]


def _clipped_union_ps(start: np.ndarray, end: np.ndarray, begin: np.ndarray, stop: np.ndarray) -> int:
    s, e = merge_intervals(start, end)
    total = 0
    for lo, hi in zip(begin.tolist(), stop.tolist(), strict=True):
        total += int(np.maximum(np.minimum(e, hi) - np.maximum(s, lo), 0).sum())
    return total


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> HostBoundnessResult:
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    rows: dict[str, list[Any]] = {c.name: [] for c in COLUMNS}
    for rank, store in ranked:
        steps = steps_of(store)
        for device, act in per_device(store, device_activity(store)):
            total = int(steps.duration_ps.sum()) if steps.n_steps else 0
            busy = _clipped_union_ps(act.start_ps, act.end_ps, steps.begin_ps, steps.end_ps) if total else 0
            gaps = idle_intervals(act, CONSECUTIVE_KERNEL_DELAY_PS)
            host_wait = sum(int(np.clip(g["gap_ps"][g["category"] == 0], 0, None).sum()) for g in gaps)
            all_gaps = sum(int(np.clip(g["gap_ps"], 0, None).sum()) for g in gaps)
            idle_ratio = 100.0 * (total - busy) / total if total > 0 else None
            share = 100.0 * host_wait / all_gaps if all_gaps > 0 else None
            rows["rank"].append(rank)
            rows["host"].append(store.host)
            rows["device"].append(device)
            rows["steps"].append(steps.n_steps)
            rows["total_ms"].append(total / _PS_PER_MS if total else None)
            rows["busy_ms"].append(busy / _PS_PER_MS if total else None)
            rows["idle_ms"].append((total - busy) / _PS_PER_MS if total else None)
            rows["idle_time_ratio_percent"].append(idle_ratio)
            rows["host_wait_share_percent"].append(share)
            rows["host_bound"].append(bool(idle_ratio is not None and share is not None
                                           and idle_ratio > IDLE_RATIO_THRESHOLD_PERCENT
                                           and share >= HOST_WAIT_SHARE_THRESHOLD_PERCENT))
    ratios = [r for r in rows["idle_time_ratio_percent"] if r is not None]
    shares = [s for s in rows["host_wait_share_percent"] if s is not None]
    n_devices = len(rows["device"])
    reasons: list[str] = []
    status: Literal["HOST_BOUND", "NOT_HOST_BOUND", "INSUFFICIENT_DATA"]
    if not ratios:
        status = "INSUFFICIENT_DATA"
        reasons.append("no steps were found: the idle time inside steps cannot be measured" if n_devices else
                       "no GPU device events (a TPU's host-boundness needs its counters: XProf's check_host_boundness)")
        idle = share = equivalent = None
    else:
        idle = float(np.mean(ratios))
        share = float(np.mean(shares)) if shares else None
        equivalent = n_devices * idle / 100.0
        idle_high = idle > IDLE_RATIO_THRESHOLD_PERCENT
        waits = share is not None and share >= HOST_WAIT_SHARE_THRESHOLD_PERCENT
        status = "HOST_BOUND" if idle_high and waits else "NOT_HOST_BOUND"
        reasons.append(f"idle time ratio {idle:.1f} % {'>' if idle_high else '<='} "
                       f"{IDLE_RATIO_THRESHOLD_PERCENT:.0f} % of the step time")
        reasons.append("host wait share not measured (no gaps between stream events)" if share is None else
                       f"host waits are {share:.1f} % of the stream gaps' time "
                       f"({'>=' if waits else '<'} {HOST_WAIT_SHARE_THRESHOLD_PERCENT:.0f} %)")
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "status": status, "reasons": reasons,
        "idle_time_ratio_percent": idle, "host_wait_share_percent": share, "equivalent_idle_devices": equivalent,
        "tables": {"devices": Table.from_columns(COLUMNS, rows, default_sort="idle_time_ratio_percent")},
    }


TOOLS = (
    Tool(
        name=TOOL, title="Host-boundness", compute=compute, available=has_device_activity, multi_host=True,
        description="XProf's check_host_boundness for GPU runs: the device's idle time inside the steps and how much "
                    "of it waits for the host's launches; a verdict with its reasons.",
        result=HostBoundnessResult, needs=frozenset({"devices", "step_markers"}),
        requires="GPU activity inside marked steps, with the host's kernel launches.",
        how_to=(rec.TORCH_TRACE, *rec.STEP_MARKERS[:2]),
    ),
)
