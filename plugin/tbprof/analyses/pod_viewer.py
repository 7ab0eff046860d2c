"""pod_viewer: every host and device as a column of stacked step breakdown, step by step.

Columns: for each host, "all devices" (the host's step breakdown, which is what XProf's GPU pod
viewer shows as its single core) and then each device (GPU) on its own, broken down from that
device's events over the same step span. CPU-only hosts have one column. A column's bottleneck
is its largest category.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import registry
from tbprof.analyses import step_breakdown as sb
from tbprof.analyses.overview import diagnostics, run_environment
from tbprof.analyses.step_table import step_table
from tbprof.analyses.table import Column, Table
from tbprof.store.tables import ProfileStore

LABELS = [label for _, label, _ in sb.CATEGORIES]


def _breakdown_us(type_ps: np.ndarray) -> dict[str, float]:
    cats = sb.categories_ms(type_ps[None, :])
    return {label: float(cats[key][0]) * 1000.0 for key, label, _ in sb.CATEGORIES}


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> dict[str, Any]:
    st = step_table(stores)
    want = options.get("step", -1)
    columns: list[dict[str, Any]] = []
    for h, (host, steps) in enumerate(zip(st.hosts, st.per_host)):
        columns.append({"host": host, "device": "all devices" if steps.has_device else "host", "host_index": h,
                        "device_index": -1})
        for d, pi in enumerate(steps.device_planes):
            columns.append({"host": host, "device": stores[h].planes[pi].name, "host_index": h, "device_index": d})
    step_list = []
    rows: dict[str, list[Any]] = {k: [] for k in ("step", "step_num", "host", "device", "total_duration_us",
                                                  "bottleneck", *LABELS)}
    for j in range(st.n_steps):
        if want not in (-1, None) and j != want:
            continue
        cores = []
        for c in columns:
            steps = st.per_host[c["host_index"]]
            k = int(st.step_index[c["host_index"], j])
            tps = steps.type_ps[k] if c["device_index"] < 0 else steps.per_device_type_ps[c["device_index"], k]
            bd = _breakdown_us(tps)
            dur_us = float(steps.duration_ps[k]) / 1e6
            bottleneck = max(bd, key=lambda x: bd[x]) if dur_us > 0 else ""
            cores.append({"host": c["host"], "device": c["device"], "total_duration_us": dur_us,
                          "bottleneck": bottleneck, "breakdown_us": bd, "begin_ps": int(steps.begin_ps[k])})
            for key, v in (("step", st.names[j]), ("step_num", int(st.step_nums[j])), ("host", c["host"]),
                           ("device", c["device"]), ("total_duration_us", dur_us), ("bottleneck", bottleneck)):
                rows[key].append(v)
            for label in LABELS:
                rows[label].append(bd[label])
        step_list.append({"index": j, "step": st.names[j], "step_num": int(st.step_nums[j]), "cores": cores})
    table_cols = [Column("step", "Step", "str"), Column("step_num", "Step number", "int"),
                  Column("host", "Host", "str"), Column("device", "Device", "str"),
                  Column("total_duration_us", "Step time", "float", "us"),
                  Column("bottleneck", "Bottleneck", "str"),
                  *(Column(label.lower().replace(" ", "_") + "_us", label, "float", "us") for label in LABELS)]
    values = {col.name: rows[col.name] for col in table_cols[:6]}
    for label, col in zip(LABELS, table_cols[6:]):
        values[col.name] = rows[label]
    env = run_environment(stores)
    return {
        "schema_version": registry.SCHEMA_VERSION, "tool": "pod_viewer", "hosts": st.hosts,
        "device_type": env["device_model"] or env["device_type"],
        "step_breakdown_events": {str(i + 1): label for i, label in enumerate(LABELS)},
        "steps_info": st.steps_json(), "step_count": st.n_steps,
        "step_names": st.names, "columns": [{"host": c["host"], "device": c["device"]} for c in columns],
        "steps": step_list,
        "diagnostics": diagnostics(stores, st, options),
        "tables": {"pod_stats": Table.from_columns(table_cols, values, default_sort=None)},
    }


registry.register(registry.Tool(
    name="pod_viewer", title="Pod viewer", compute=compute, available=lambda store: store.n_events > 0,
    multi_host=True,
    options=(registry.Option("step", int, -1, "step index to show (-1: every step)"),),
    description="Step breakdown of every host and device side by side.",
))
