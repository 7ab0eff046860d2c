"""Peak allocations per HLO module, as XProf 2.24.2's agent CLI ``get_peak_allocations``
(docs/formulas.md, "Peak allocations"): every module of the host, largest first, with its total
buffer allocation in HBM (``memory_viewer``'s ``total_buffer_allocation_bytes``, XProf's
``totalBufferAllocationMib``) and the largest buffers live at its heap peak (``memory_viewer``'s
max heap), same-named buffers of one size grouped as XProf groups them (``param.3``, ``param.5``
of 64 MiB: ``param.*``, 2 of them) and those under ``min_size_mib`` summed into "Others".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tbprof.analyses.hlo import memory_viewer
from tbprof.analyses.hlo.memory_viewer import has_buffer_assignment
from tbprof.analyses.results.hlo import PeakAllocationsResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_float
from tbprof.store.tables import ProfileStore

TOOL = "peak_allocations"
_MIB = 2**20
TOP_BUFFERS_PER_MODULE = 10

MODULE_COLUMNS = [
    Column("module", "HLO module", "str"),
    Column("total_allocation_mib", "Total allocation", "float", "MiB", "the module's buffer allocations in HBM"),
    Column("peak_heap_mib", "Peak heap", "float", "MiB", "heap in use at the module's peak"),
]
BUFFER_COLUMNS = [
    Column("module", "HLO module", "str"),
    Column("buffer", "Buffer", "str", "", "instruction; same-named buffers of one size grouped as name.*"),
    Column("size_mib", "Size", "float", "MiB", "a group's summed size"),
    Column("count", "Buffers", "int"),
]


def _base_name(instruction: str) -> str | None:
    """``param.3`` -> ``param.*`` (a name and a numeric suffix), else None."""
    head, dot, tail = instruction.rpartition(".")
    return f"{head}.*" if dot and head and tail.isascii() and tail.isdigit() else None


def group_buffers(buffers: Sequence[tuple[str, int]], min_size_mib: float) -> list[tuple[str, float, int]]:
    """(label, size MiB, buffers) of the buffers, grouped and with the small ones as "Others", largest first."""
    groups: dict[tuple[str, float], list[str]] = {}
    others = 0.0
    n_others = 0
    for name, size_bytes in buffers:
        size_mib = size_bytes / _MIB
        if size_mib < min_size_mib:
            others += size_mib
            n_others += 1
            continue
        groups.setdefault((_base_name(name) or name, size_mib), []).append(name)
    out = []
    for (base, size_mib), names in groups.items():
        if len(names) > 1:
            out.append((f"{base} ({len(names)} occurrences of size {size_mib:g} MiB)", size_mib * len(names),
                        len(names)))
        else:
            out.append((names[0], size_mib, 1))
    if n_others:
        out.append((f"Others (< {min_size_mib} MiB)", others, n_others))
    return sorted(out, key=lambda g: -g[1])


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> PeakAllocationsResult:
    viewer = memory_viewer.TOOLS[0]
    store = stores[0]
    first = viewer.compute([store], viewer.parse_options({}))
    modules: dict[str, list[Any]] = {c.name: [] for c in MODULE_COLUMNS}
    buffers: dict[str, list[Any]] = {c.name: [] for c in BUFFER_COLUMNS}
    for entry in first.get("modules", []):
        module = str(entry["module"])
        result = viewer.compute([store], viewer.parse_options({"module": module}))
        total = result.get("total_buffer_allocation_bytes")
        if not isinstance(total, int):
            continue
        modules["module"].append(module)
        modules["total_allocation_mib"].append(total / _MIB)
        modules["peak_heap_mib"].append(int(result.get("peak_heap_bytes") or 0) / _MIB)
        live = [(str(b["instruction_name"]), int(b["size_bytes"])) for b in result.get("max_heap", [])]
        for label, size_mib, count in group_buffers(live, options["min_size_mib"])[:TOP_BUFFERS_PER_MODULE]:
            buffers["module"].append(module)
            buffers["buffer"].append(label)
            buffers["size_mib"].append(size_mib)
            buffers["count"].append(count)
    order = sorted(range(len(modules["module"])), key=lambda i: -modules["total_allocation_mib"][i])
    ordered = {k: [v[i] for i in order] for k, v in modules.items()}
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "host": store.host, "module_count": len(order),
        "largest_module": ordered["module"][0] if order else None,
        "largest_allocation_mib": ordered["total_allocation_mib"][0] if order else None,
        "tables": {"modules": Table.from_columns(MODULE_COLUMNS, ordered, default_sort="total_allocation_mib"),
                   "buffers": Table.from_columns(BUFFER_COLUMNS, buffers, default_sort=None)},
    }


TOOLS = (
    Tool(
        name=TOOL, title="Peak allocations", compute=compute, available=has_buffer_assignment, few_planes=True,
        options=(Option("min_size_mib", parse_float, 1.0, "buffers smaller than this are summed as Others (MiB)",
                        min_value=0, max_value=1e9),),
        description="XProf's get_peak_allocations: every HLO module by its HBM allocation, with the largest buffers "
                    "live at its peak.",
        result=PeakAllocationsResult, needs=frozenset({"hlo"}),
        requires="the HLO protos of XLA programs with their buffer assignment (written on the /host:metadata plane).",
        how_to=(
            "Profile JAX, or TensorFlow with XLA; each compiled program's buffer assignment comes with the profile.",
        ),
    ),
)
