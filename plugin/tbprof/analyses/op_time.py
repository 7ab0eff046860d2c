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

from tbprof.analyses import op_metrics
from tbprof.store.tables import ProfileStore


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


def _side_db(store: ProfileStore, side: str) -> op_metrics.OpMetricsDb:
    if side == "device":
        return op_metrics.device_framework_op_metrics(store)
    return op_metrics.host_op_metrics(store)


def has_device_ops(stores: Sequence[ProfileStore]) -> bool:
    return any(op_metrics.device_op_metrics(s).n_ops > 0 for s in stores)


def op_times(stores: Sequence[ProfileStore], side: str | None = None) -> OpTimes:
    """Ops of ``side`` ("device", "host"; default: device if any host has device ops) over ``stores``."""
    if side is None:
        side = "device" if has_device_ops(stores) else "host"
    dbs = [_side_db(s, side) for s in stores]
    dbs = [d for d in dbs if d.n_ops]
    if not dbs:
        e = np.zeros(0, np.int64)
        o = np.zeros(0, object)
        return OpTimes(side, o, o.copy(), e, e.copy(), e.copy(), e.astype(np.float64), e.astype(bool), 0)
    names = np.concatenate([d.name for d in dbs]).astype(str)
    types = np.concatenate([d.type for d in dbs])
    uniq, first, inv = np.unique(names, return_index=True, return_inverse=True)
    n = len(uniq)

    def total(col: str) -> np.ndarray:
        return np.bincount(inv, weights=np.concatenate([getattr(d, col) for d in dbs]).astype(np.float64),
                           minlength=n)

    self_ps = total("self_time_ps").round().astype(np.int64)
    order = np.lexsort((uniq, -self_ps))
    eager = np.bincount(inv, weights=np.concatenate([d.is_eager for d in dbs]).astype(np.float64), minlength=n) > 0
    return OpTimes(
        side=side, name=uniq.astype(object)[order], type=types[first][order],
        occurrences=total("occurrences").round().astype(np.int64)[order], self_time_ps=self_ps[order],
        time_ps=total("time_ps").round().astype(np.int64)[order], flops=total("flops")[order],
        is_eager=eager[order], total_op_time_ps=int(self_ps.sum()),
    )


def eager_percent(stores: Sequence[ProfileStore], side: str) -> float:
    """Share (0..100) of the side's op self time spent in eagerly executed ops."""
    t = op_times(stores, side)
    if t.total_op_time_ps <= 0:
        return 0.0
    return 100.0 * float(t.self_time_ps[t.is_eager].sum()) / t.total_op_time_ps
