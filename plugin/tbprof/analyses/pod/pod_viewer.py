"""pod_viewer: every host and device as a column of stacked step breakdown, step by step.

Columnar: ``steps`` lists the chosen steps; each entry of ``cores`` (one per column) holds one
value per chosen step. Columns: for each host, "all devices" (the host's step breakdown, which
is what XProf's GPU pod viewer shows as its single core) and then each device (GPU) on its own,
broken down from that device's events and the host's over the same step span (so a one-device
host's two columns agree). CPU-only hosts have one column.
A column's bottleneck is its largest category.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.overview.environment import run_environment
from tbprof.analyses.overview.overview import diagnostics
from tbprof.analyses.results.whole_run import PodCore, PodViewerResult
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.steps.assignment import has_steps_data
from tbprof.analyses.steps.table import step_table
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool
from tbprof.store.view import StoreView

LABELS = [label for _, label, _ in sb.CATEGORIES]


def compute(stores: Sequence[StoreView], options: Mapping[str, Any]) -> PodViewerResult:
    st = step_table(stores)
    want = options.get("step", -1)
    sel = np.arange(st.n_steps) if want in (-1, None) else np.array([want], np.int64)
    sel = sel[(sel >= 0) & (sel < st.n_steps)]
    cores: list[PodCore] = []
    for h, (host, steps) in enumerate(zip(st.hosts, st.per_host, strict=False)):
        k = st.step_index[h, sel] if len(sel) else np.zeros(0, np.int64)
        dur_us = steps.duration_ps[k] / 1e6
        mats = [("all devices" if steps.has_device else "host", steps.type_ps[k])]
        mats += [(stores[h].planes[pi].name, steps.per_device_type_ps[d][k])
                 for d, pi in enumerate(steps.device_planes)]
        for device, type_ps in mats:
            cats = sb.categories_ms(type_ps)
            bd = np.stack([cats[key] * 1000.0 for key, _, _ in sb.CATEGORIES]) if len(sel) else \
                np.zeros((len(LABELS), 0))
            top = np.argmax(bd, axis=0) if len(sel) else np.zeros(0, np.int64)
            bottleneck = np.where(dur_us > 0, np.array(LABELS, dtype=object)[top], "")
            cores.append({"host": host, "device": device, "total_duration_us": dur_us,
                          "begin_ps": steps.begin_ps[k], "bottleneck": bottleneck.tolist(),
                          "breakdown_us": {label: bd[i] for i, label in enumerate(LABELS)}})
    names = [st.names[int(j)] for j in sel]
    nums = st.step_nums[sel]
    n_cols = len(cores)
    table_cols = [Column("step", "Step", "str"), Column("step_num", "Step number", "int"),
                  Column("host", "Host", "str"), Column("device", "Device", "str"),
                  Column("total_duration_us", "Step time", "float", "us"),
                  Column("bottleneck", "Bottleneck", "str"),
                  *(Column(label.lower().replace(" ", "_") + "_us", label, "float", "us") for label in LABELS)]
    # Rows step-major: every column of step 0, then of step 1, ...
    values: dict[str, Any] = {
        "step": np.repeat(np.array(names, dtype=object), n_cols), "step_num": np.repeat(nums, n_cols),
        "host": np.tile(np.array([c["host"] for c in cores], dtype=object), len(sel)),
        "device": np.tile(np.array([c["device"] for c in cores], dtype=object), len(sel)),
        "total_duration_us": np.stack([c["total_duration_us"] for c in cores], 1).reshape(-1) if cores else [],
        "bottleneck": np.stack([np.array(c["bottleneck"], dtype=object) for c in cores], 1).reshape(-1)
        if cores else [],
    }
    for label, col in zip(LABELS, table_cols[6:], strict=False):
        values[col.name] = np.stack([c["breakdown_us"][label] for c in cores], 1).reshape(-1) if cores else []
    env = run_environment(stores)
    return {
        "schema_version": SCHEMA_VERSION, "tool": "pod_viewer", "hosts": st.hosts,
        "device_type": env["device_model"] or env["device_type"],
        "step_breakdown_events": {str(i + 1): label for i, label in enumerate(LABELS)},
        "steps_info": st.steps_json(), "step_count": st.n_steps,
        "steps": {"index": sel, "step": names, "step_num": nums},
        "cores": cores,
        "diagnostics": diagnostics(stores, st, options),
        "tables": {"pod_stats": Table.from_columns(table_cols, values, default_sort=None)},
    }


TOOLS = (
    Tool(
        name="pod_viewer", title="Pod viewer", compute=compute, compute_partials=compute, available=has_steps_data,
        multi_host=True,
        options=(Option("step", int, -1, "step index to show (-1: every step)", min_value=-1, max_value=2**31 - 1),),
        description="Step breakdown of every host and device side by side.",
        result=PodViewerResult, needs=frozenset({"step_markers"}),
        requires="step markers on several devices or hosts, to compare their steps side by side.",
        how_to=rec.STEP_MARKERS,
    ),
)
