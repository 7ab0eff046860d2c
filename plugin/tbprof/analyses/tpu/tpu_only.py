"""XProf's TPU counter tools (megascale_stats, perf_counters, utilization_viewer,
kernel_utilization): never listed, because tbprof has no decoder for the data they read; asked
for by name, each says what this profile lacks (or that tbprof cannot read what it has).

XProf 2.24.2 lists them only for profiles that carry their data (none on the Cloud TPU v6e
inference profile, demo_logs/tpu_inference, nor on any GPU/CPU profile): the Megascale trace
plane (``/device:CUSTOM:Megascale Trace``) for megascale_stats, TPU hardware performance counters
for the other three. See docs/differences.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from tbprof.analyses import recording as rec
from tbprof.analyses.tool import Tool
from tbprof.errors import NoData
from tbprof.store.tables import ProfileStore

MEGASCALE_PLANE = "/device:CUSTOM:Megascale Trace"


def _tpu_planes(store: ProfileStore) -> list[Any]:
    return [p for p in store.planes if p.name.startswith("/device:TPU:") and p.n_events > 0]


def _missing(store: ProfileStore, title: str, what: str, megascale: bool) -> str:
    """What this profile lacks for the tool, in its own terms."""
    tpus = _tpu_planes(store)
    if megascale:
        plane = store.plane(MEGASCALE_PLANE)
        if plane is not None and plane.n_events > 0:
            return (f"{title}: this profile has a Megascale trace plane ({MEGASCALE_PLANE}), but tbprof does "
                    "not decode it yet; open the profile in XProf for this tool.")
        return (f"{title} has no data in this profile: it reads {what} from the {MEGASCALE_PLANE} plane, which "
                "only multi-slice TPU runs write, and this profile has none.")
    if not tpus:
        return (f"{title} has no data in this profile: it reads {what}, which only TPU planes (/device:TPU:N) "
                "carry, and this profile has no TPU plane with events.")
    lines = sorted({n for p in tpus for n in p.line_names if n})
    return (f"{title} has no data in this profile: it reads {what}; this profile's TPU planes hold only the "
            f"lines {', '.join(lines)} (no counter data), and tbprof has no decoder for TPU counters.")


def _tpu_only(name: str, title: str, what: str, megascale: bool = False) -> Tool:
    def compute_tpu(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> NoReturn:
        raise NoData(_missing(stores[0], title, what, megascale) if stores else f"{title}: no host selected.")

    return Tool(name=name, title=title, compute=compute_tpu, result=None, needs=frozenset({"xplane"}),
                available=lambda store: False, multi_host=True,
                description=f"{title}: reads {what} (TPU only); tbprof does not decode it, so it is never listed.",
                requires=f"a TPU profile: it reads {what}, which only TPU planes (/device:TPU:N) carry (XProf shows it "
                         "for TPU runs only).",
                how_to=(rec.TPU,))


# After XProf's other tools, in its menu order.
TOOLS = (
    _tpu_only("megascale_stats", "Megascale stats", "the Megascale (multi-slice DCN) collective events",
              megascale=True),
    _tpu_only("perf_counters", "Perf counters", "TPU hardware performance counters"),
    _tpu_only("utilization_viewer", "Utilization viewer", "TPU core unit utilization counters"),
    _tpu_only("kernel_utilization", "Kernel utilization", "TPU kernel (SparseCore/TensorCore) utilization"),
)
