"""The op-time headline metrics (analyses/metrics.py) that framework op stats, op profile and
smart suggestions all show: computed here once, from the same op metrics, so the pages agree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tbprof.analyses.metrics import metric_json, percent
from tbprof.analyses.ops.op_metrics import hosts_op_metrics
from tbprof.analyses.results.common import MetricJson
from tbprof.store import kineto_names as kn
from tbprof.store.view import StoreView

# XLA categories of device ops that move data between devices.
COLLECTIVE_CATEGORIES = frozenset(("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                   "collective-permute", "collective-broadcast", "send", "recv"))


def idle_metric(stores: Sequence[StoreView], side: str) -> MetricJson:
    """``device_idle_of_device_time`` (side "device") or ``host_idle_of_thread_time`` (side "host")."""
    db = hosts_op_metrics(stores, "device" if side == "device" else "host")
    key = "device_idle_of_device_time" if side == "device" else "host_idle_of_thread_time"
    return metric_json(key, percent(db.idle_time_ps, db.total_time_ps))


def collectives_metric(stores: Sequence[StoreView]) -> MetricJson:
    """``collectives_of_device_op_time``: collective ops' self time over all device ops' self time.
    Collective ops: XLA's collective categories; PyTorch's collective spans (``nccl:all_reduce``,
    the operator of its NCCL kernels) and NCCL kernels no operator launched."""
    db = hosts_op_metrics(stores, "device")
    if db.n_ops == 0:
        return metric_json("collectives_of_device_op_time", None)
    named = [kn.is_collective_name(str(t)) or kn.is_collective_kernel(str(n))
             for t, n in zip(db.type, db.name, strict=True)]
    coll = np.isin(db.type.astype(str), list(COLLECTIVE_CATEGORIES)) | np.array(named, dtype=bool)
    self_ps, coll_ps = float(db.self_time_ps.sum()), float(db.self_time_ps[coll].sum())
    return metric_json("collectives_of_device_op_time", percent(coll_ps, self_ps))
