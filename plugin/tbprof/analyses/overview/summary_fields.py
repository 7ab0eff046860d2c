"""The step fields of ``tbprof summary``: step source and count, step time, input %, verdict, top ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tbprof.analyses.ops.op_time import op_times
from tbprof.analyses.overview.overview import run_environment
from tbprof.analyses.steps.table import analysis, step_table, summaries
from tbprof.store.view import StoreView

TOP_OPS = 10


def step_fields(stores: Sequence[StoreView]) -> dict[str, Any]:
    st = step_table(stores)
    summ = summaries(st)
    ana = analysis(st)
    env = run_environment(stores)
    ops = op_times(stores, "device" if st.has_device else "host")
    no_steps = st.n_steps == 0
    return {
        "step_source": st.source,
        "step_method": st.method,
        "step_confidence": st.confidence,
        "step_count": st.n_steps,
        "avg_step_time_ms": None if no_steps else summ["step_time_ms"]["avg"],
        "stddev_step_time_ms": None if no_steps else summ["step_time_ms"]["stddev"],
        "input_percent": None if no_steps else ana["percent"]["input_percent"],
        "input_bound": ana["input_bound"],
        "step_diagnosis": st.diagnosis,
        "device_type": env["device_type"],
        "device_count": env["device_count"],
        "host_count": env["host_count"],
        "top_ops_side": ops.side,
        "top_ops": [{"name": str(ops.name[i]), "type": str(ops.type[i]),
                     "self_time_us": float(ops.self_time_ps[i]) / 1e6, "occurrences": int(ops.occurrences[i])}
                    for i in range(min(TOP_OPS, ops.n_ops))],
    }

