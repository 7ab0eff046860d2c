"""XProf's TPU-only tools (megascale_stats, perf_counters, utilization_viewer,
kernel_utilization): listed so the dashboard's no-data page says why they are empty. They read
TPU counters that only ``/device:TPU:N`` planes carry; tbprof has no decoder for them, so on a
TPU profile too they answer "no data" with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tbprof.analyses.tool import Tool
from tbprof.errors import NoData
from tbprof.store.tables import ProfileStore


def _has_tpu(store: ProfileStore) -> bool:
    return any(p.name.startswith("/device:TPU") and p.n_events > 0 for p in store.planes)


def _tpu_only(name: str, title: str, what: str) -> Tool:
    reason = (f"{title} needs a TPU profile: it reads {what}, which only TPU planes (/device:TPU:N) carry. "
              "GPU and CPU profiles have no such data in XProf either.")

    def compute_tpu(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
        # Listed so the no-data page can say why; tbprof has no TPU decoder for these counters.
        raise NoData(reason)

    return Tool(name=name, title=title, compute=compute_tpu, available=_has_tpu, multi_host=True,
                description=reason)


# After XProf's other tools, in its menu order.
TOOLS = (
    _tpu_only("megascale_stats", "Megascale stats", "the Megascale (multi-slice DCN) collective events"),
    _tpu_only("perf_counters", "Perf counters", "TPU hardware performance counters"),
    _tpu_only("utilization_viewer", "Utilization viewer", "TPU core unit utilization counters"),
    _tpu_only("kernel_utilization", "Kernel utilization", "TPU kernel (SparseCore/TensorCore) utilization"),
)
