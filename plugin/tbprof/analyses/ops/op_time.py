"""Self time of framework ops per side (device or host), the shared core of "top ops" lists.

The per-op aggregation itself lives in ``op_metrics`` (XProf's OpMetricsDb, written for the
TensorFlow-stats page and memoised per store); this module only picks the side a page shows
(the device when the run has one, else the host), merges hosts and ranks ops, so the overview
page, ``tbprof summary`` and the TF-stats page count op time the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tbprof.analyses.ops import op_metrics
from tbprof.store.view import StoreView


@dataclass
class OpTimes:
    """Ops of one side over one or more hosts, sorted by self time (descending)."""

    side: str  # "device" | "host"
    name: np.ndarray  # object
    type: np.ndarray  # object
    occurrences: np.ndarray  # int64
    self_time_ps: np.ndarray  # int64
    time_ps: np.ndarray  # int64
    flops: np.ndarray  # float64
    is_eager: np.ndarray  # bool
    total_op_time_ps: int  # sum of op self times on that side (idle excluded)

    @property
    def n_ops(self) -> int:
        return int(self.name.shape[0])


def has_device_ops(stores: Sequence[StoreView]) -> bool:
    return any(op_metrics.device_op_metrics(s).n_ops > 0 for s in stores)


def op_times(stores: Sequence[StoreView], side: str | None = None, costs: bool = True) -> OpTimes:
    """Ops of ``side`` ("device", "host"; default: device if any host has device ops) over
    ``stores``. ``costs=False``: FLOPs not determined (NaN), for a reader of times alone (no HLO
    cost analysis, ``op_metrics.DEVICE_OP_TIMES``)."""
    if side is None:
        side = "device" if has_device_ops(stores) else "host"
    db = op_metrics.hosts_op_metrics(stores, "device_framework" if side == "device" else "host", costs)
    order = np.lexsort((db.name.astype(str), -db.self_time_ps))
    return OpTimes(
        side=side, name=db.name[order], type=db.type[order], occurrences=db.occurrences[order],
        self_time_ps=db.self_time_ps[order], time_ps=db.time_ps[order], flops=db.flops[order],
        is_eager=db.is_eager[order], total_op_time_ps=db.total_op_time_ps,
    )


def eager_percent(stores: Sequence[StoreView], side: str) -> float:
    """Share (0..100) of the side's op self time spent in eagerly executed ops."""
    t = op_times(stores, side)
    if t.total_op_time_ps <= 0:
        return 0.0
    return 100.0 * float(t.self_time_ps[t.is_eager].sum()) / t.total_op_time_ps
