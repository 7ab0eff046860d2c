"""input_pipeline_analyzer: is the program input-bound, and where does input time go?

Device side: per step, step time against time waiting for input (XProf's "input" category).
Host side: the tf.data ops (``Iterator::...`` events) and host-to-device enqueue ops of the host
threads, with XProf's split into reading files on demand, reading in advance, preprocessing and
enqueuing, scaled as XProf scales them (``GenerateHostResult``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.ops import kineto_ops, op_metrics
from tbprof.analyses.overview.overview import diagnostics
from tbprof.analyses.results.whole_run import InputPipelineResult, InputTimeBreakdown
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.steps.advice import framework_of, input_advice
from tbprof.analyses.steps.assignment import has_steps_data
from tbprof.analyses.steps.table import analysis, step_table, steps_table, summaries
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Tool
from tbprof.store.view import StoreView

ENQUEUE = "Enqueue"
DEMANDED_READ = "Demanded file read"
ADVANCED_READ = "Advanced file read"
PREPROCESSING = "Preprocessing"
_FILE_READERS = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO")
_IN_ADVANCE = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")

# One suggestion per host-side input category (our wording; same categories as XProf).
RECOMMENDATIONS = (
    "Enqueuing to the device: send fewer, larger batches (fewer host-to-device copies).",
    "Preprocessing: parallelise Dataset.map (num_parallel_calls=tf.data.AUTOTUNE), or preprocess once "
    "and store the result.",
    "Reading files ahead of time: tune prefetch buffer sizes, interleave cycle_length and reader buffer_size.",
    "Reading files on demand: read ahead instead, with prefetch, interleave and reader buffers.",
    "Other reading or processing: a tf.data pipeline makes this time visible and tunable.",
)


def is_enqueue_op(op_type: str) -> bool:
    return op_type.startswith("InfeedEnqueue") or op_type.lower().startswith(("memcpyhtod", "memcpyh2d"))


def categorize_input_op(name: str, op_type: str) -> str:
    """XProf's CategorizeInputOp (legacy input-pipeline analysis)."""
    if is_enqueue_op(op_type):
        return ENQUEUE
    if name.endswith(_FILE_READERS):
        return ADVANCED_READ if any(x in name for x in _IN_ADVANCE) else DEMANDED_READ
    return PREPROCESSING


def input_ops(stores: Sequence[StoreView]) -> Table:
    """Input ops (tf.data iterators, host-to-device enqueues) of the hosts' threads, by self time."""
    names: list[str] = []
    types: list[str] = []
    hosts: list[str] = []
    count, time_ps, self_ps = [], [], []
    for s in stores:
        db = op_metrics.host_op_metrics(s)
        for i in range(db.n_ops):
            t = str(db.type[i])
            if t == "Dataset" or is_enqueue_op(t):
                names.append(str(db.name[i]))
                types.append(t)
                hosts.append(s.host)
                count.append(int(db.occurrences[i]))
                time_ps.append(int(db.time_ps[i]))
                self_ps.append(int(db.self_time_ps[i]))
    tp = np.array(time_ps, dtype=np.float64)
    sp = np.array(self_ps, dtype=np.float64)
    total = float(sp.sum())
    order = np.lexsort((np.array(names, dtype=object).astype(str), -sp)) if names else np.zeros(0, np.int64)
    cats = [categorize_input_op(n, t) for n, t in zip(names, types, strict=False)]
    cols = [Column("op_name", "Input op", "str"), Column("host", "Host", "str"), Column("count", "Count", "int"),
            Column("time_ms", "Total time", "float", "ms"),
            Column("time_percent", "Total time", "float", "%", "of the summed self time of all input ops"),
            Column("self_time_ms", "Self time", "float", "ms"),
            Column("self_time_percent", "Self time", "float", "%", "of the summed self time of all input ops"),
            Column("category", "Category", "str")]
    pick = lambda xs: np.array(xs, dtype=object)[order] if len(order) else np.zeros(0, object)  # noqa: E731
    return Table.from_columns(cols, {
        "op_name": pick(names), "host": pick(hosts), "count": np.array(count, np.int64)[order],
        "time_ms": tp[order] / 1e9, "time_percent": 100.0 * tp[order] / total if total else tp[order] * 0,
        "self_time_ms": sp[order] / 1e9, "self_time_percent": 100.0 * sp[order] / total if total else sp[order] * 0,
        "category": pick(cats)}, default_sort=None)


def host_breakdown_us(ops: Table, avg_step_ms: float, avg_h2d_ms: float) -> InputTimeBreakdown:
    """XProf's host input-time split: self time per category, scaled to the non-enqueue time."""
    by_cat: dict[str, float] = {ENQUEUE: 0.0, DEMANDED_READ: 0.0, ADVANCED_READ: 0.0, PREPROCESSING: 0.0}
    for cat, ms in zip(ops.data["category"].tolist(), ops.data["self_time_ms"].tolist(), strict=False):
        by_cat[cat] = by_cat.get(cat, 0.0) + ms * 1000.0
    enqueue = by_cat[ENQUEUE]
    total_input = by_cat[DEMANDED_READ] + by_cat[ADVANCED_READ] + by_cat[PREPROCESSING]
    ratio = min(1.0, avg_h2d_ms / avg_step_ms) if avg_step_ms > 0 else 0.0
    non_enqueue = enqueue * (1.0 - ratio) / ratio if ratio != 0.0 else total_input

    def scaled(x: float) -> float:
        return non_enqueue * x / total_input if total_input else 0.0

    demanded, advanced = scaled(by_cat[DEMANDED_READ]), scaled(by_cat[ADVANCED_READ])
    preprocessing = scaled(by_cat[PREPROCESSING])
    return {"enqueue_us": enqueue, "demanded_file_read_us": demanded, "advanced_file_read_us": advanced,
            "preprocessing_us": preprocessing,
            "unclassified_non_enqueue_us": max(0.0, non_enqueue - (demanded + advanced + preprocessing))}


def compute(stores: Sequence[StoreView], options: Mapping[str, Any]) -> InputPipelineResult:
    st = step_table(stores)
    summ = summaries(st)
    ops = input_ops(stores)
    host = host_breakdown_us(ops, summ["step_time_ms"]["avg"] or 0.0, summ["host_to_device_ms"]["avg"] or 0.0)
    tf_data_used = host["demanded_file_read_us"] > 0 or host["advanced_file_read_us"] > 0 or \
        host["preprocessing_us"] > 0
    pytorch = bool(stores) and all(kineto_ops.is_kineto(s) for s in stores)
    ana = analysis(st, tf_data_used, input_advice(framework_of(pytorch, tf_data_used)))
    if ana["input_classification"] in ("host", "both"):
        next_step = ("Look at the host-side breakdown below for where input time goes on the host."
                     if tf_data_used else
                     "The host-side breakdown below only covers tf.data pipelines; this run's input does not use "
                     "tf.data, so that section stays empty.")
        if pytorch:
            next_step = ("This run reads its input through a PyTorch DataLoader: the host-side breakdown below "
                         "covers tf.data pipelines only; the trace viewer shows the DataLoader's "
                         "enumerate(DataLoader) spans.")
    elif ana["input_classification"] == "unknown":
        next_step = st.diagnosis or "No steps, so no input analysis."
    else:
        next_step = "You may skip the rest of this page."
    with np.errstate(invalid="ignore", divide="ignore"):
        per_step_pct = np.where(st.step_time_ms > 0, 100.0 * st.category_ms.get("input_ms", np.zeros(0))
                                / np.where(st.step_time_ms > 0, st.step_time_ms, 1), 0.0)
    return {
        "schema_version": SCHEMA_VERSION, "tool": "input_pipeline_analyzer",
        "hosts": st.hosts, "steps": st.steps_json(),
        "verdict": {"input_bound": ana["input_bound"], "input_bound_reason": ana["input_bound_reason"],
                    "input_classification": ana["input_classification"],
                    "input_percent": (None if ana["input_classification"] == "unknown"
                                      else ana["percent"]["input_percent"]),
                    "statement": ana["input_statement"],
                    "summary_next_step": next_step,
                    "kernel_launch_statement": ana["kernel_launch_statement"],
                    "all_other_statement": ana["all_other_statement"],
                    "device_collectives_statement": ana["device_collectives_statement"],
                    "input_thresholds_percent": sb.INPUT_THRESHOLDS_PERCENT},
        "device_side": {"step_time_ms": summ["step_time_ms"], "input_ms": summ["input_ms"],
                        "breakdown_ms": {k: summ[k] for k in (*sb.CATEGORY_KEYS, "host_wait_input_ms",
                                                               "host_to_device_ms")},
                        "input_percent_per_step": sb.summary_stats(per_step_pct),
                        "step_time_graph": {"step": st.names, "step_time_ms": st.step_time_ms,
                                            "input_ms": st.category_ms.get("input_ms", np.zeros(0))}},
        "host_side": {"tf_data_used": tf_data_used, "input_time_breakdown_us": host,
                      "input_op_time_ms": float(ops.data["self_time_ms"].sum())},
        "recommendations": list(RECOMMENDATIONS),
        "diagnostics": diagnostics(stores, st, options),
        "tables": {"steps": steps_table(st), "input_ops": ops},
    }


TOOLS = (
    Tool(
        name="input_pipeline_analyzer", title="Input pipeline analyzer", compute=compute, compute_partials=compute,
        available=has_steps_data, multi_host=True,
        description="Whether steps wait for input, and which input operations take the host's time.",
        result=InputPipelineResult, needs=frozenset({"step_markers"}),
        requires="step markers and the host-side input ops (tf.data iterator events) of each step.",
        how_to=(*rec.STEP_MARKERS, rec.HOST_EVENTS),
    ),
)
