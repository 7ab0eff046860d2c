#!/usr/bin/env python3
"""Write XProf 2.24.2 golden files for tbprof's parity tests.

HOW TO REGENERATE
-----------------
Run from anywhere, with a Python that has PyPI ``xprof==2.24.2`` installed
(never the system Python; on the dev box it is ``/opt/xprof-venv``)::

    /opt/xprof-venv/bin/python tests/golden/make_goldens.py
    /opt/xprof-venv/bin/python tests/golden/make_goldens.py --profiles jax_mlp
    /opt/xprof-venv/bin/python tests/golden/make_goldens.py --raw-dir /tmp/xprof_raw

The script copies ``<repo>/demo_logs/<name>`` into a temporary
directory itself, runs XProf's own in-process conversion
(``bench/xprof_runner.py`` -> ``xprof.convert.raw_to_tool_data``) on a fresh
copy of the xplane files for every tool (so no XProf cache file influences a
result; see docs/xprof_reference.md "Caching"), and writes compact JSON to
``tests/golden/<selection>/<tool>.json``.  The untouched XProf outputs are
written to ``--raw-dir`` (default ``/tmp/xprof_raw``, never into the repo).

Selections: ``custom_loop``, ``jax_mlp``, ``keras_cnn``, ``jax_2hosts`` (both
hosts, XProf's "ALL_HOSTS" view), ``jax_2hosts_worker0`` and
``jax_2hosts_worker1`` (one host each), ``tpu_inference`` (XProf's public Cloud TPU v6e
inference profile, four TPU cores, no step markers), ``jax_large_slim`` (from
``tests/data/jax_large_slim``: the device side of the real jax_large profile, one busy and one
idle GPU; generate it with ``--tools roofline_model hlo_stats``).

Units are in every field name (``_ms``, ``_us``, ``_ps``, ``_bytes``,
``_percent`` = 0..100, ``_fraction`` = 0..1).  Fields under ``xprof`` are
exactly what XProf printed (after parsing its strings to numbers where noted);
fields under ``derived`` are computed by this script from XProf's own
full-precision per-row numbers with the formulas documented in
docs/xprof_reference.md, and the script checks that they reproduce XProf's
rounded strings (a mismatch aborts generation).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench"))
import xprof_runner  # noqa: E402  pylint: disable=wrong-import-position


def _profiles_dir() -> str:
    """<repo>/demo_logs (the same files as the shared archives, unpacked); the
    TBPROF_PROFILES_DIR environment variable overrides it."""
    return os.environ.get("TBPROF_PROFILES_DIR") or os.path.join(REPO, "demo_logs")


PROFILES_DIR = _profiles_dir()
XPROF_VERSION = "2.24.2"

# selection name -> (archive stem, host stems or None for all xplanes)
SELECTIONS = {
    "custom_loop": ("custom_loop", None),
    "jax_mlp": ("jax_mlp", None),
    "keras_cnn": ("keras_cnn", None),
    "jax_2hosts": ("jax_2hosts", None),
    "jax_2hosts_worker0": ("jax_2hosts", ["worker0"]),
    "jax_2hosts_worker1": ("jax_2hosts", ["worker1"]),
    "tpu_inference": ("tpu_inference", None),
    "jax_large_slim": ("jax_large_slim", None),
}
# Stems read from tests/data rather than demo_logs: jax_large_slim is the real jax_large profile
# cut to its device side and a 0.4 s window by tests/data/jax_large_slim/make_slim.py (one busy
# and one idle GPU plane).
TEST_DATA_STEMS = ("jax_large_slim",)

TOOLS = (
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "kernel_stats",
    "memory_profile",
    "pod_viewer",
    "op_profile",
    "hlo_stats",
    "roofline_model",
    "memory_viewer",
    "graph_viewer",
    "smart_suggestion",
    "inference_profile",
)

# graph_viewer cases per selection: (module, op, graph_width). Ops of the training step and of
# its async all-reduce computation, at widths 1 and 2.
GRAPH_CASES = {
    "jax_mlp": [("jit_train_step(13929)", "fusion.97", 1), ("jit_train_step(13929)", "fusion.97", 2),
                ("jit_train_step(13929)", "loop_subtract_fusion.1", 1), ("jit_train_step(13929)", "custom-call.1", 2),
                ("jit_train_step(13929)", "all-reduce.2.1", 1)],
    "jax_2hosts_worker0": [("jit_step(16572)", "loop_subtract_fusion", 1),
                           ("jit_step(16572)", "custom-call.5", 2)],
    # TPU: an async copy's start and done ops, and the fusion between them.
    "tpu_inference": [("jit_f(12190760917235803885)", "copy-done.4", 1),
                      ("jit_f(12190760917235803885)", "copy-start.1", 1),
                      ("jit_f(12190760917235803885)", "broadcast_add_fusion", 2)],
}

# Column ids of XProf's generic (GPU/CPU) step-time table -> golden names.
STEP_COLUMNS = {
    "deviceComputeTimeMs": "device_compute_ms",
    "deviceToDeviceTimeMs": "device_to_device_ms",
    "deviceCollectivesTimeMs": "device_collectives_ms",
    "hostComputeTimeMs": "host_compute_ms",
    "kernelLaunchTimeMs": "kernel_launch_ms",
    "infeedTimeMs": "input_ms",
    "outfeedTimeMs": "output_ms",
    "compileTimeMs": "compile_ms",
    "otherTimeMs": "all_others_ms",
    "stepTimeMs": "step_time_ms",
}

# XProf table property (OneDigit string) -> per-step golden column it summarises.
STEP_SUMMARY_PROPS = {
    "steptime_ms": "step_time_ms",
    "device_compute_time_ms": "device_compute_ms",
    "device_to_device_time_ms": "device_to_device_ms",
    "device_collectives_time_ms": "device_collectives_ms",
    "host_compute_time_ms": "host_compute_ms",
    "kernel_launch_time_ms": "kernel_launch_ms",
    "infeed_time_ms": "input_ms",
    "outfeed_time_ms": "output_ms",
    "compile_time_ms": "compile_ms",
    "other_time_ms": "all_others_ms",
}


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def rnd(x: Any, sig: int = 10) -> Any:
    """Round floats to `sig` significant digits (drops float noise, keeps ints)."""
    if isinstance(x, float):
        if x == 0 or not math.isfinite(x):
            return x
        r = round(x, sig - 1 - int(math.floor(math.log10(abs(x)))))
        return int(r) if r == int(r) and abs(r) < 2**53 else r
    if isinstance(x, dict):
        return {k: rnd(v, sig) for k, v in x.items()}
    if isinstance(x, list):
        return [rnd(v, sig) for v in x]
    return x


def one_digit(x: float) -> str:
    """XProf's OneDigit(): printf %.1f."""
    return "%.1f" % x


def pct_str_to_float(s: str) -> float | None:
    """'53.0%' -> 53.0 ; 'unknown' -> None."""
    s = s.strip()
    if s.endswith("%"):
        return float(s[:-1])
    try:
        return float(s)
    except ValueError:
        return None


def table_rows(table: dict) -> list[dict]:
    ids = [c["id"] for c in table.get("cols", [])]
    out = []
    for r in table.get("rows", []):
        out.append({i: (c or {}).get("v") for i, c in zip(ids, r["c"], strict=True)})
    return out


def strip_html(s: str) -> str:
    return re.sub(r"<[^>]+>", "", s)


def sample_stats(values: list[float]) -> dict:
    """XProf's StepSummary: mean, sqrt(sample variance, n-1), min, max."""
    if not values:
        return {"avg": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    return {
        "avg": statistics.fmean(values),
        "stddev": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


class Mismatch(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Mismatch(msg)


# --------------------------------------------------------------------------
# per-tool extraction
# --------------------------------------------------------------------------

def extract_step_table(table: dict, max_core_step_ms: list[float] | None = None) -> dict:
    """The generic step-time DataTable shared by overview & input pipeline.

    XProf's rows show core 1 (kDefaultGpuLocalCoreId) only, but its step-time
    summary uses, per step, the maximum duration over all (non-SparseCore)
    cores.  With several hosts those differ; `max_core_step_ms` (taken from
    pod_viewer run on the same cached OpStats) supplies the per-step maxima.
    """
    p = dict(table.get("p", {}))
    rows = table_rows(table)
    steps = []
    for r in rows:
        s = {"step": r["stepnum"]}
        for col, name in STEP_COLUMNS.items():
            s[name] = r.get(col)
        steps.append(s)
    multi_core = False
    if max_core_step_ms is not None and len(max_core_step_ms) == len(steps):
        if any(abs(m - s["step_time_ms"]) > 1e-9 for m, s in zip(max_core_step_ms, steps, strict=True)):
            multi_core = True
            for m, s in zip(max_core_step_ms, steps, strict=True):
                s["step_time_ms_max_over_cores"] = m

    props_numeric = {}
    for key, val in p.items():
        if re.fullmatch(r"-?\d+(\.\d+)?", str(val)):
            props_numeric[key] = float(val)
    statements = {
        k: strip_html(v) for k, v in p.items()
        if k.endswith(("_statement", "_bottleneck", "_conclusion", "nextstep"))
    }

    # ---- derived full-precision values (XProf formulas, XProf inputs) ----
    derived: dict[str, Any] = {}
    summaries = {}
    for prop, col in STEP_SUMMARY_PROPS.items():
        if col == "step_time_ms" and multi_core:
            col = "step_time_ms_max_over_cores"
        vals = [s[col] for s in steps]
        st = sample_stats(vals)
        summaries[col] = st
        # consistency: XProf printed OneDigit(avg) and OneDigit(sdv). With no step XProf's TPU
        # table prints "0.00" (two digits) and there is nothing to derive.
        if not steps:
            continue
        if prop == "steptime_ms":
            for k, sk in (("average", "avg"), ("standard_deviation", "stddev"),
                          ("minimum", "min"), ("maximum", "max")):
                if f"steptime_ms_{k}" in p:
                    check(one_digit(st[sk]) == p[f"steptime_ms_{k}"],
                          f"steptime_ms_{k}: derived {st[sk]} vs xprof {p[f'steptime_ms_{k}']}")
        else:
            for k, sk in (("avg", "avg"), ("sdv", "stddev")):
                if f"{prop}_{k}" in p:
                    check(one_digit(st[sk]) == p[f"{prop}_{k}"],
                          f"{prop}_{k}: derived {st[sk]} vs xprof {p[f'{prop}_{k}']}")
    if multi_core:  # also keep the core-1 statistics of the rows themselves
        summaries["step_time_ms"] = sample_stats([s["step_time_ms"] for s in steps])
    derived["summary_ms"] = summaries

    total_step = sum(s["step_time_ms"] for s in steps)

    def pct(col: str) -> float:
        return 100.0 * sum(s[col] for s in steps) / total_step if total_step else 0.0

    if total_step:
        input_pct = pct("input_ms")
        output_pct = pct("output_ms")
        compute_pct = pct("device_compute_ms")
        coll_pct = pct("device_collectives_ms")
        derived["percent_of_total_step_time"] = {
            "input_percent": input_pct,
            "output_percent": output_pct,
            "device_compute_percent": compute_pct,
            "device_collectives_percent": coll_pct,
            "idle_percent": max(0.0, 100.0 - input_pct - output_pct - compute_pct - coll_pct),
            "kernel_launch_percent": pct("kernel_launch_ms"),
            "all_others_percent": pct("all_others_ms"),
            "host_compute_percent": pct("host_compute_ms"),
            "device_to_device_percent": pct("device_to_device_ms"),
            "compile_percent": pct("compile_ms"),
        }
        derived["input_percent_per_step_summary"] = sample_stats(
            [100.0 * s["input_ms"] / s["step_time_ms"] if s["step_time_ms"] else 0.0
             for s in steps])
        # consistency with the verdict sentence (OneDigit percentages)
        m = re.search(r"because (?:only )?([\d.]+)% of the total step time", p.get("input_conclusion", ""))
        if m:
            ref = (derived["percent_of_total_step_time"]["all_others_percent"]
                   if "'All Others'" in p["input_conclusion"] else input_pct)
            check(one_digit(ref) == m.group(1),
                  f"input_conclusion percent {m.group(1)} vs derived {ref}")
        m = re.match(r"([\d.]+) % of the total step time sampled is spent on 'Device Collective",
                     p.get("device_collectives_statement", ""))
        if m:
            check(one_digit(coll_pct) == m.group(1), f"collectives {m.group(1)} vs {coll_pct}")
    else:
        derived["percent_of_total_step_time"] = None

    return {
        "step_count": len(steps),
        "steps": steps,
        "xprof_properties_numeric": props_numeric,
        "hardware_type": p.get("hardware_type"),
        "statements": statements,
        "derived": derived,
    }


def extract_diagnostics(table: dict) -> list[dict]:
    return [{"severity": r["severity"], "message": r["message"]} for r in table_rows(table)]


def golden_overview(raw: Any, max_core_step_ms: list[float] | None = None) -> dict:
    analysis, steptable, runenv, reco, latency, _empty, diag = raw
    ap = analysis.get("p", {})
    top_ops = []
    for r in table_rows(analysis):
        op = {
            "operation": r["operation"],
            "category": r["category"],
            "self_time_fraction": r["selfTimePercent"],
            "cumulative_time_fraction": r["cumulativeTimePercent"],
            "flop_rate_gflops_per_sec": r["flopRate"],
        }
        if "tcEligibility" in r:
            op["tensorcore_eligible"] = r["tcEligibility"]
            op["using_tensorcore"] = r["tcUtilization"]
        top_ops.append(op)
    analysis_props = {}
    for k, v in ap.items():
        if k in ("remark_text", "remark_color"):
            analysis_props[k] = v
        elif k == "host_trace_level":
            analysis_props[k] = int(v)
        else:
            analysis_props[k] = pct_str_to_float(v)
    rp = runenv.get("p", {})
    m = re.match(r"(\d+)", rp.get("task_count", ""))
    run_env = {
        "device_type": rp.get("device_type"),
        "device_core_count": int(re.match(r"-?\d+", rp["device_core_count"]).group()) if rp.get("device_core_count", "unknown") != "unknown" else None,
        "device_core_count_str": rp.get("device_core_count"),
        "host_count": int(rp["host_count"]) if rp.get("host_count", "unknown") != "unknown" else None,
        "task_count": int(m.group(1)) if m else None,
        "task_count_str": rp.get("task_count"),
        "is_training": rp.get("is_training") == "true",
        "host_rows": table_rows(runenv),
    }
    rcp = reco.get("p", {})
    recommendation = {k: strip_html(v) for k, v in rcp.items()}
    tips = [{"tip_type": r["tip_type"], "link": strip_html(r["link"])} for r in table_rows(reco)]
    steps = extract_step_table(steptable, max_core_step_ms)
    summ = steps["derived"]["summary_ms"]
    return {
        "step_count": steps["step_count"],
        "steps": steps["steps"],
        "step_time_ms": summ.get("step_time_ms_max_over_cores", summ["step_time_ms"]),
        "step_time_ms_core1_rows": summ["step_time_ms"] if "step_time_ms_max_over_cores" in summ else None,
        "breakdown_ms": {k: v for k, v in summ.items() if not k.startswith("step_time_ms")},
        "percent_of_total_step_time": steps["derived"]["percent_of_total_step_time"],
        "input_percent": (steps["derived"]["percent_of_total_step_time"] or {}).get("input_percent"),
        "xprof_step_table_properties": steps["xprof_properties_numeric"],
        "hardware_type": steps["hardware_type"],
        "step_table_statements": steps["statements"],
        "analysis": analysis_props,
        "top_device_ops": top_ops,
        "run_environment": run_env,
        "recommendation": recommendation,
        "tips": tips,
        "inference_latency_row_count": len(latency.get("rows", [])),
        "diagnostics": extract_diagnostics(diag),
        "_fields": {
            "steps": "XProf's per-step rows (step-time graph): step name and ms per category, full precision",
            "step_time_ms / breakdown_ms": "mean, sample stddev (n-1), min, max over the steps above; XProf shows them as OneDigit strings (kept in xprof_step_table_properties). step_time_ms summarises step_time_ms_max_over_cores when the steps carry it (several hosts/cores: rows show core 1 only, the summary takes each step's slowest core)",
            "percent_of_total_step_time": "100 * sum(category ms over steps) / sum(step ms); XProf's input_percent etc. (only printed inside statements)",
            "top_device_ops.self_time_fraction": "0..1 fraction of total device time (idle excluded) - XProf's 'Time (%)' column holds a fraction",
            "analysis": "overview analysis table properties, percent strings parsed to numbers (0..100); host/device_tf_op_percent are shares of op *occurrence counts*, not time",
        },
    }


def golden_input_pipeline(raw: Any, max_core_step_ms: list[float] | None = None) -> dict:
    _tpu_max_infeed, steptable, hosttable, recotable, diag = raw
    steps = extract_step_table(steptable, max_core_step_ms)
    hp = hosttable.get("p", {})
    input_ops = []
    for r in table_rows(hosttable):
        input_ops.append({
            "op_name": r["opName"],
            "count": r["count"],
            "time_ms": r["timeInMs"],
            "time_fraction_of_input_time": r["timeInPercent"],
            "self_time_ms": r["selfTimeInMs"],
            "self_time_fraction_of_input_time": r["selfTimeInPercent"],
            "category": r["category"],
        })
    return {
        "step_count": steps["step_count"],
        "steps": steps["steps"],
        "device_side_ms": steps["derived"]["summary_ms"],
        "percent_of_total_step_time": steps["derived"]["percent_of_total_step_time"],
        "input_percent": (steps["derived"]["percent_of_total_step_time"] or {}).get("input_percent"),
        "input_percent_per_step_summary": steps["derived"].get("input_percent_per_step_summary"),
        "xprof_step_table_properties": steps["xprof_properties_numeric"],
        "hardware_type": steps["hardware_type"],
        "verdict": {
            "input_conclusion": steps["statements"].get("input_conclusion"),
            "summary_nextstep": steps["statements"].get("summary_nextstep"),
            "device_collectives_statement": steps["statements"].get("device_collectives_statement"),
            "kernel_launch_statement": steps["statements"].get("kernel_launch_statement"),
            "all_other_statement": steps["statements"].get("all_other_statement"),
        },
        "host_input_time_breakdown_us": {k: float(v) for k, v in hp.items()},
        "input_ops": input_ops,
        "recommendation_count": len(recotable.get("rows", [])),
        "diagnostics": extract_diagnostics(diag),
        "_fields": {
            "device_side_ms": "per-category mean/sample-stddev/min/max over steps (XProf prints OneDigit strings, see xprof_step_table_properties); step time uses step_time_ms_max_over_cores when present",
            "host_input_time_breakdown_us": "XProf table properties (printed %.3f): enqueue, demanded/advanced file read, preprocessing, unclassified",
            "input_ops": "XProf host input-op table, XProf order; *_fraction_of_input_time are fractions (0..1) of the summed self time of all input ops",
        },
    }


FOS_ALIASES = {
    "total_time": "total_time_us", "avg_time": "avg_time_us",
    "total_self_time": "total_self_time_us", "avg_self_time": "avg_self_time_us",
    "device_total_self_time_percent": "device_self_time_fraction",
    "device_cumulative_total_self_time_percent": "device_cumulative_self_time_fraction",
    "host_total_self_time_percent": "host_self_time_fraction",
    "Host_cumulative_total_self_time_percent": "host_cumulative_self_time_fraction",
    "measured_flop_rate": "measured_flop_rate_gflops_per_sec",
    "model_flop_rate": "model_flop_rate_gflops_per_sec",
    "measured_memory_bw": "measured_memory_bw_gibibytes_per_sec",
    "operational_intensity": "operational_intensity_flops_per_byte",
    "gpu_tensorcore_utilization": "gpu_tensorcore_utilization_fraction",
    "eager": "execution_mode",
}


def golden_framework_op_stats(raw: Any) -> dict:
    inc, exc = raw
    cols = [FOS_ALIASES.get(c["id"], c["id"]) for c in inc["cols"]]
    inc_rows = [[(c or {}).get("v") for c in r["c"]] for r in inc["rows"]]
    ecols = [c["id"] for c in exc["cols"]]
    exc_rows = table_rows(exc)
    # verify: exclude-idle table = include-idle table minus IDLE rows, with
    # only rank and the four percent columns recomputed.
    inc_by_key = {(r[1], r[3]): r for r in inc_rows}
    pct_ids = {"rank", "device_total_self_time_percent", "device_cumulative_total_self_time_percent",
               "host_total_self_time_percent", "Host_cumulative_total_self_time_percent"}
    for r in exc_rows:
        full = inc_by_key[(r["host_or_device"], r["operation"])]
        for i, cid in enumerate(ecols):
            if cid not in pct_ids:
                check(full[i] == r[cid], f"exclude-idle row differs in {cid}: {r['operation']}")
    exc_compact_cols = ["rank", "host_or_device", "operation", "device_self_time_fraction",
                        "device_cumulative_self_time_fraction", "host_self_time_fraction",
                        "host_cumulative_self_time_fraction"]
    exc_compact = [[r["rank"], r["host_or_device"], r["operation"],
                    r["device_total_self_time_percent"], r["device_cumulative_total_self_time_percent"],
                    r["host_total_self_time_percent"], r["Host_cumulative_total_self_time_percent"]]
                   for r in exc_rows]
    counts = collections.Counter(r[1] for r in inc_rows)
    idle_rows = [dict(zip(cols, r, strict=True)) for r in inc_rows if r[2] == "IDLE"]
    return {
        "table_properties": inc.get("p", {}),
        "row_count_include_idle": len(inc_rows),
        "row_count_exclude_idle": len(exc_rows),
        "rows_per_side_include_idle": dict(counts),
        "rows_per_side_exclude_idle": dict(collections.Counter(r["host_or_device"] for r in exc_rows)),
        "idle_rows": idle_rows,
        "include_idle": {"columns": cols, "rows": inc_rows},
        "exclude_idle": {"columns": exc_compact_cols, "rows": exc_compact},
        "_note": ("include_idle holds XProf's first table (IDLE rows included) in full, XProf order; "
                  "exclude_idle holds XProf's second table reduced to its key and the columns that differ "
                  "(all other values are identical to include_idle - checked by make_goldens.py). "
                  "*_fraction columns are 0..1 even though XProf's ids say 'percent'. measured_memory_bw is GiB/s (XProf labels it "
                  "'GBytes/Sec' but divides by 2^30). "
                  "XProf keeps at most 500 ops per side (host/device), IDLE included."),
    }


KS_ALIASES = {"occupancy_pct": "occupancy_percent",
              "is_op_tensor_core_eligible": "op_tensorcore_eligible",
              "is_kernel_using_tensor_core": "kernel_uses_tensorcore"}


def golden_kernel_stats(raw: Any) -> dict:
    cols = [KS_ALIASES.get(c["id"], c["id"]) for c in raw["cols"]]
    rows = [[(c or {}).get("v") for c in r["c"]] for r in raw["rows"]]
    tot = sum(r[cols.index("total_duration_us")] for r in rows)
    return {
        "row_count": len(rows),
        "total_duration_us_all_rows": tot,
        "tensorcore_rows": sum(1 for r in rows if r[cols.index("kernel_uses_tensorcore")]),
        "tensorcore_eligible_rows": sum(1 for r in rows if r[cols.index("op_tensorcore_eligible")]),
        "columns": cols,
        "rows": rows,
        "_note": "Every XProf row, XProf order (descending total duration). block_dim/grid_dim are 'x,y,z' strings.",
    }


def golden_memory_profile(raw: Any, xplane_counts: dict | None) -> dict:
    out = {"memory_ids": raw.get("memoryIds", []), "num_hosts": raw.get("numHosts"),
           "version": raw.get("version"), "allocators": {}}
    for mid, a in sorted(raw.get("memoryProfilePerAllocator", {}).items()):
        ps = a["profileSummary"]
        peak = ps["peakStats"]
        sampled = a.get("sampledTimelineSnapshots", [])
        act_counts = collections.Counter(s["activityMetadata"].get("memoryActivity") for s in sampled)
        snaps = a.get("memoryProfileSnapshots", [])
        specials = a.get("specialAllocations", [])
        active = []
        for aa in a.get("activeAllocations", []):
            si, sp = int(aa["snapshotIndex"]), int(aa["specialIndex"])
            meta = (snaps[si]["activityMetadata"] if si >= 0 else specials[sp])
            active.append({
                "num_occurrences": int(aa["numOccurrences"]),
                "allocation_bytes": int(meta.get("allocationBytes", 0)),
                "requested_bytes": int(meta.get("requestedBytes", 0)),
                "tf_op_name": meta.get("tfOpName", ""),
                "region_type": meta.get("regionType", ""),
                "data_type": meta.get("dataType", ""),
                "tensor_shape": meta.get("tensorShape", ""),
                "step_id": int(meta.get("stepId", 0)),
                "special": si < 0,
            })
        entry = {
            "peak_heap_allocated_bytes": int(peak["heapAllocatedBytes"]),
            "peak_stack_reserved_bytes": int(peak["stackReservedBytes"]),
            "peak_bytes_in_use": int(peak["peakBytesInUse"]),
            "peak_free_memory_bytes": int(peak["freeMemoryBytes"]),
            "peak_fragmentation_fraction": float(peak["fragmentation"]),
            "peak_stats_time_ps": int(ps["peakStatsTimePs"]),
            "peak_bytes_usage_lifetime": int(ps["peakBytesUsageLifetime"]),
            "memory_capacity_bytes": int(ps["memoryCapacity"]),
            "active_allocation_table_rows": len(active),
            "active_allocation_count": sum(x["num_occurrences"] for x in active),
            "active_allocations_total_bytes": sum(x["allocation_bytes"] * x["num_occurrences"] for x in active),
            "peak_step_id": active[0]["step_id"] if active else None,
            "special_allocations": [{"tf_op_name": s.get("tfOpName"), "allocation_bytes": int(s.get("allocationBytes", 0)),
                                     "region_type": s.get("regionType")} for s in specials],
            "sampled_timeline_snapshots": len(sampled),
            "sampled_timeline_allocations": act_counts.get("ALLOCATION", 0),
            "sampled_timeline_deallocations": act_counts.get("DEALLOCATION", 0),
            "timeline_is_downsampled": len(sampled) >= 1000,
            "active_allocations": active,
        }
        if len(sampled) < 1000:
            # Not downsampled: every event's step id, as [address, 1 = allocation / 0, step_id] in
            # XProf's order (its times are relative to each event's line, so compare per address).
            entry["timeline_steps"] = [
                [int(s["activityMetadata"].get("address", 0)),
                 int(s["activityMetadata"].get("memoryActivity") == "ALLOCATION"),
                 int(s["activityMetadata"].get("stepId", 0))] for s in sampled]
        if xplane_counts is not None:
            c = xplane_counts.get(mid, {})
            entry["num_allocations"] = c.get("ALLOCATION", 0)
            entry["num_deallocations"] = c.get("DEALLOCATION", 0)
            if len(sampled) < 1000:
                check(entry["num_allocations"] == entry["sampled_timeline_allocations"]
                      and entry["num_deallocations"] == entry["sampled_timeline_deallocations"],
                      f"memory event count mismatch for {mid}")
        out["allocators"][mid] = entry
    out["_note"] = (
        "Per memory id (allocator). peak_* come from XProf's profileSummary.peakStats (the snapshot with the "
        "highest stack+heap bytes in the window; ties -> latest). num_allocations/num_deallocations are NOT an XProf "
        "output: they count the MemoryAllocation/MemoryDeallocation events of the host plane that XProf turns into "
        "snapshots (cross-checked against XProf's sampled timeline when it is not downsampled, i.e. < 1000 snapshots). "
        "active_allocations is XProf's 'memory breakdown at peak' table (identical allocations merged, num_occurrences). "
        "timeline_steps (only when the sampled timeline is not downsampled): [address, is_allocation, step_id] of "
        "every snapshot, from XProf's sampled timeline."
    )
    return out


def golden_pod_viewer(raw: Any) -> dict:
    names = {str(e["id"]): e["name"] for e in raw.get("stepBreakdownEvents", [])}
    steps = []
    for m in raw.get("podStatsSequence", {}).get("podStatsMap", []):
        cores = []
        for core_id, c in sorted(m.get("podStatsPerCore", {}).items(), key=lambda kv: int(kv[0])):
            cores.append({
                "core_id": int(core_id),
                "host_name": c.get("hostName"),
                "chip_id": c.get("chipId"),
                "node_id": c.get("nodeId"),
                "step_num": c.get("stepNum"),
                "total_duration_us": c.get("totalDurationUs"),
                "bottleneck": c.get("bottleneck"),
                "breakdown_us": {names.get(k, k): v for k, v in sorted(c.get("stepBreakdownUs", {}).items(), key=lambda kv: int(kv[0]))},
            })
        steps.append({"step_num": m.get("stepNum"), "cores": cores,
                      "all_reduce_ops": len(m.get("allReduceOpDb", [])),
                      "channels": len(m.get("channelDb", []))})
    return {
        "device_type": raw.get("deviceType"),
        "step_breakdown_events": names,
        "step_count": len(steps),
        "steps": steps,
        "diagnostics": raw.get("diagnostics"),
    }


def _op_node(n: dict) -> dict:
    m = n.get("metrics", {})
    node = {
        "name": n.get("name"),
        "num_children": n.get("numChildren", len(n.get("children", []))),
        "time_ps": m.get("rawTime", 0),
        "occurrences": m.get("occurrences", 0),
        "avg_time_ps": m.get("avgTimePs", 0),
        "flops": m.get("rawFlops", 0),
        "bf16_flops": m.get("bf16Flops", 0),
        "flops_utilization_fraction": m.get("flops", 0),
        "uncapped_flops_utilization_fraction": m.get("uncappedFlops", 0),
        "bandwidth_utilization_fractions": m.get("bandwidthUtils", []),
        "bytes_accessed": m.get("rawBytesAccessedArray", []),
    }
    xla = n.get("xla")
    if xla:
        node["xla_category"] = xla.get("category")
        node["program_id"] = xla.get("programId")
        node["provenance"] = xla.get("provenance")
    return node


def _op_tree(root: dict, levels: int = 2) -> dict:
    def rec(n, depth):
        d = _op_node(n)
        if depth < levels:
            d["children"] = [rec(c, depth + 1) for c in n.get("children", [])]
        return d
    return rec(root, 0)


def golden_op_profile(raw_by_group: dict) -> dict:
    out = {"_note": ("Trees cut after two levels below the root (root -> program or category -> next level). "
                     "time_ps is the node's total (inclusive) time; flops_utilization_fraction = flops / time / peak; "
                     "bandwidth_utilization_fractions = [HBM, ...] per memory space.")}
    for group, raw in raw_by_group.items():
        out["device_type"] = raw.get("deviceType")
        out["agg_dvfs_time_scale_multiplier"] = raw.get("aggDvfsTimeScaleMultiplier")
        for key, val in raw.items():
            if key.startswith("by"):
                out[f"group_by_{group}:{key}"] = _op_tree(val)
    return out


HLO_STATS_COLUMNS = (
    "rank", "program_id", "category", "hlo_op_name", "hlo_op_expression", "tf_op_name", "occurrences",
    "total_time", "avg_time", "total_self_time", "avg_self_time", "total_self_time_percent",
    "cumulative_total_self_time_percent", "model_flop_rate", "measured_memory_bw", "hbm_bw",
    "operational_intensity", "bound_by", "source_info",
)


def golden_smart_suggestion(raw: Any) -> dict:
    return {"suggestions": raw.get("suggestions", []),
            "_note": "XProf's smart_suggestion JSON as served (its open-source rules generate no suggestion text)."}


def golden_inference_profile(raw: Any) -> dict:
    models = table_rows(raw[0]) if raw else []
    rows = table_rows(raw[1]) if len(raw) > 1 else []
    requests = [r for r in rows if r.get("request_id") not in (None, "", "N/A")]
    return {
        "models": [r.get("model_name") for r in models],
        "percentile_rows": [{"percentile": r.get("percentile"), "request_id": r.get("request_id"),
                             "latency_ms": r.get("latency_ms")} for r in rows],
        "request_count": len(requests),
        "_note": ("XProf's inference_profile: the model table and the first model's per-percentile latency table; "
                  "request_count counts the rows naming a request (a training profile has only the 'Average' "
                  "row with request id N/A)."),
    }


def golden_hlo_stats(raw: Any) -> dict:
    rows = table_rows(raw)
    out_rows = []
    for r in rows:
        row = {c: r.get(c) for c in HLO_STATS_COLUMNS}
        row["source_info"] = strip_html(row["source_info"] or "")
        out_rows.append(row)
    return {
        "columns": list(HLO_STATS_COLUMNS),
        "row_count": len(out_rows),
        "rows": out_rows,
        "_note": ("XProf's hlo_stats DataTable, XProf order (rank = total self time), the columns tbprof keeps. "
                  "Times in us, total_self_time_percent 0..100, model_flop_rate GFLOP/s, bandwidths GiB/s; "
                  "source_info is the visible text of XProf's HTML cell."),
    }


def golden_roofline_model(raw: Any) -> dict:
    table = raw[0] if raw else {"cols": [], "rows": []}
    props = {k: v for k, v in (table.get("p") or {}).items()}
    peaks = {}
    for k in ("peak_flop_rate", "peak_hbm_bw", "hbm_ridge_point", "peak_vmem_write_bw", "vmem_write_ridge_point"):
        if k in props:
            peaks[k] = float(props[k])
    rows = table_rows(table)
    for r in rows:
        if isinstance(r.get("source_info"), str):
            r["source_info"] = strip_html(r["source_info"])
    return {
        "device_type": props.get("device_type", ""),
        "peaks": peaks,
        "peaks_note": "XProf prints the peaks with 6 significant digits (%g)",
        "total_rows": [r for r in rows if r.get("step") == "Total"],
        "step_ids": sorted({r.get("step") for r in rows if r.get("step") != "Total"}),
        "_note": ("XProf's roofline DataTable: total_rows are the step == 'Total' rows (program row rank 0, then "
                  "one per HLO op, with and without infeed/outfeed). Per-step rows are not kept (XProf's GPU "
                  "per-step rows are all zero); step_ids lists which steps XProf emitted."),
    }


MIB = 1 << 20


def golden_memory_viewer(raw_by_module: dict) -> dict:
    """Memory space 0 per module under "modules"; the other memory spaces a module's buffer
    allocations use under "memory_spaces" ("<module>|<space>" keys, the same fields)."""
    modules = {}
    spaces = {}
    for key, raw in sorted(raw_by_module.items()):
        name, _, space = key.partition("|")
        target = modules if space in ("", "0") else spaces
        target[name if space in ("", "0") else key] = _memory_viewer_module(raw)
    return {"modules": modules, "memory_spaces": spaces,
            "_note": ("XProf's memory_viewer per HLO module (module_name=<name>(<program id>)); modules: memory "
                      "space 0, memory_spaces: the module's other memory spaces (memory_space=N) keyed "
                      "'<module>|<N>'. MiB values converted to bytes (x 2^20, rounded); max_heap is XProf's list of "
                      "buffers live at the peak in its order; max_heap_by_size_order its 'by size' order (indices "
                      "into max_heap); logical_buffer_spans maps a logical buffer id to its [start, limit) "
                      "positions in the heap simulation; buffer_blocks is the allocation timeline's blocks "
                      "(an allocation's container row has logical_buffer_id -1).")}


def _memory_viewer_module(raw: dict) -> dict:
    def buf(b: dict) -> dict:
        # proto3 JSON omits 0: a missing id is buffer 0 (the merged small row says -1).
        return {"logical_buffer_id": int(b.get("logicalBufferId", 0)),
                "size_bytes": round(float(b.get("logicalBufferSizeMib", 0)) * MIB),
                "unpadded_size_bytes": round(float(b.get("unpaddedShapeMib", 0)) * MIB),
                "instruction_name": b.get("instructionName", ""), "shape": b.get("shapeString", ""),
                "tf_op_name": b.get("tfOpName", ""), "group": b.get("groupName", ""),
                "opcode": b.get("opCode", ""), "label": b.get("label", "")}
    return {
        "module_name": raw.get("moduleName"),
        "entry_computation_name": raw.get("entryComputationName"),
        "peak_heap_bytes": round(float(raw.get("peakHeapMib", 0)) * MIB),
        "peak_unpadded_heap_bytes": round(float(raw.get("peakUnpaddedHeapMib", 0)) * MIB),
        "peak_heap_position": int(raw.get("peakHeapSizePosition", 0)),
        "entry_computation_parameters_bytes": round(float(raw.get("entryComputationParametersMib", 0)) * MIB),
        "non_reusable_bytes": round(float(raw.get("nonReusableMib", 0)) * MIB),
        "maybe_live_out_bytes": round(float(raw.get("maybeLiveOutMib", 0)) * MIB),
        "heap_sizes_bytes": [round(float(x) * MIB) for x in raw.get("heapSizes", [])],
        "unpadded_heap_sizes_bytes": [round(float(x) * MIB) for x in raw.get("unpaddedHeapSizes", [])],
        "max_heap": [buf(b) for b in raw.get("maxHeap", [])],
        "max_heap_by_size_order": [int(x) for x in raw.get("maxHeapToBySize", [])],
        "indefinite_lifetimes": [
            {"size_bytes": round(float(v.get("sizeMib", 0)) * MIB), "attributes": v.get("attributes", []),
             "logical_buffer_ids": [int(b.get("id", 0)) for b in v.get("logicalBuffers", [])],
             "common_shape": v.get("commonShape", "")}
            for v in raw.get("indefiniteLifetimes", [])],
        "logical_buffer_spans": {k: [int(v.get("start", 0)), int(v.get("limit", 0))]
                                 for k, v in sorted(raw.get("logicalBufferSpans", {}).items(), key=lambda kv: int(kv[0]))},
        "total_buffer_allocation_bytes": round(float(raw.get("totalBufferAllocationMib", 0)) * MIB),
        "indefinite_bytes": round(float(raw.get("indefiniteBufferAllocationMib", 0)) * MIB),
        "buffer_blocks": [
            {"logical_buffer_id": int(b.get("logicalBufferId", 0)), "name": b.get("name", ""),
             "offset_bytes": round(float(b.get("offset", 0))), "size_bytes": round(float(b.get("size", 0))),
             "start_step": int(b.get("startStep", 0)), "end_step": int(b.get("endStep", 0))}
            for b in raw.get("bufferBlocks", [])],
    }


def golden_graph_viewer(raw_by_case: dict) -> dict:
    cases = []
    for (module, node, width), dot in raw_by_case.items():
        edges = sorted(set(re.findall(r'tooltip="([^"]+) -> ([^"]+)"', dot)))
        cases.append({"module": module, "node_name": node, "graph_width": width,
                      "bold_labels": sorted(set(re.findall(r"\[label=<<b>([^<]+)</b>", dot))),
                      "edges": [list(e) for e in edges],
                      "dashed_labels": sorted(set(re.findall(r'\[label=<<b>([^<]+)</b>(?:(?!\];).)*?style="filled,dashed"', dot,
                                                             re.S)))})
    return {"cases": cases,
            "_note": ("XProf's graph_viewer (type=graph, format=dot, merge_fusion off, show_metadata off) per case: "
                      "the bold node labels (instruction names; fused and async computations are drawn inside "
                      "clusters, their parameters as 'Parameter N'), the dashed ones (boundary nodes) and every edge as (from, to) instruction "
                      "names, read from the DOT edge tooltips.")}


def run_graph_viewer(paths: list[str], cases: list, tmp_root: str) -> dict:
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel

    d, fresh = xprof_runner.copy_to_fresh_dir(paths, tmp_root)
    try:
        raw_to_tool_data.xspace_to_tool_names(fresh)
        out = {}
        for module, node, width in cases:
            opts = {"node_name": node, "module_name": module, "graph_width": width, "show_metadata": 0,
                    "merge_fusion": 0, "format": "dot", "type": "graph"}
            payload, _ = raw_to_tool_data.xspace_to_tool_data(fresh, "graph_viewer", {"graph_viewer_options": opts})
            out[(module, node, width)] = payload.decode() if isinstance(payload, bytes) else payload
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def memory_spaces(hlo_proto_path: str) -> set[int]:
    """The memory spaces (buffer allocation colors) of the HloProto XProf wrote for a module."""
    sys.path.insert(0, os.path.join(REPO, "plugin"))
    from tbprof.protos import hlo_pb2  # pylint: disable=import-outside-toplevel

    proto = hlo_pb2.HloProto()
    with open(hlo_proto_path, "rb") as f:
        proto.ParseFromString(f.read())
    return {int(a.color) for a in proto.buffer_assignment.buffer_allocations}


def run_memory_viewer(paths: list[str], tmp_root: str) -> dict:
    """memory_viewer for every HLO module of the host(s), in one fresh dir (XProf writes the
    modules' .hlo_proto.pb files there when it lists its tools)."""
    from xprof.convert import raw_to_tool_data  # pylint: disable=import-outside-toplevel

    d, fresh = xprof_runner.copy_to_fresh_dir(paths, tmp_root)
    try:
        raw_to_tool_data.xspace_to_tool_names(fresh)
        modules = sorted(f[: -len(".hlo_proto.pb")] for f in os.listdir(d) if f.endswith(".hlo_proto.pb"))
        out = {}
        for m in modules:
            payload, _ = xprof_runner.convert(fresh, "memory_viewer", {"module_name": m})
            if payload is not None:
                out[m] = json.loads(payload)
            for space in sorted(memory_spaces(os.path.join(d, m + ".hlo_proto.pb")) - {0}):
                payload, _ = xprof_runner.convert(fresh, "memory_viewer", {"module_name": m, "memory_space": str(space)})
                if payload is not None:
                    out[f"{m}|{space}"] = json.loads(payload)
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------------------
# xplane memory-event counting (only for memory_profile's num_allocations)
# --------------------------------------------------------------------------

def count_memory_events(xplane_path: str) -> dict:
    """Count MemoryAllocation/MemoryDeallocation events per memory id the way
    XProf's memory profile keys them (last of index_on_host / device_ordinal /
    allocator_name stats in event order)."""
    sys.path.insert(0, os.path.join(REPO, "plugin"))
    from tbprof.protos import xplane_pb2  # pylint: disable=import-outside-toplevel

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    def text(value: Any) -> str:  # tbprof's schema declares names and string values as bytes
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    counts: dict = collections.defaultdict(collections.Counter)
    for plane in space.planes:
        if text(plane.name) != "/host:CPU":
            continue
        stat_names = {k: text(v.name) for k, v in plane.stat_metadata.items()}
        ev_names = {k: text(v.name) for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for ev in line.events:
                name = ev_names.get(ev.metadata_id, "")
                if name not in ("MemoryAllocation", "MemoryDeallocation"):
                    continue
                mid = ""
                for st in ev.stats:
                    sn = stat_names.get(st.metadata_id, "")
                    if sn in ("index_on_host", "device_ordinal"):
                        which = st.WhichOneof("value")
                        mid = str(getattr(st, which))
                    elif sn == "allocator_name":
                        which = st.WhichOneof("value")
                        mid = (stat_names.get(st.ref_value, "") if which == "ref_value" else text(st.str_value))
                counts[mid]["ALLOCATION" if name == "MemoryAllocation" else "DEALLOCATION"] += 1
    return {k: dict(v) for k, v in counts.items()}


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------

def unpack(stem: str, dest: str) -> str:
    """A private copy of demo_logs/<stem> (XProf writes cache files beside the xplanes)."""
    target = os.path.join(dest, stem)
    source_dir = os.path.join(REPO, "tests", "data") if stem in TEST_DATA_STEMS else PROFILES_DIR
    shutil.copytree(os.path.join(source_dir, stem), target, ignore=shutil.ignore_patterns("*.py"))
    return target


def find_xplanes(logdir: str, hosts: list[str] | None) -> list[str]:
    files = sorted(glob.glob(os.path.join(logdir, "**", "plugins", "profile", "*", "*.xplane.pb"), recursive=True))
    if hosts is not None:
        files = [f for f in files if os.path.basename(f)[: -len(".xplane.pb")] in hosts]
    if not files:
        raise FileNotFoundError(f"no xplane files under {logdir} for hosts {hosts}")
    return files


def run_tool(paths: list[str], tool: str, params: dict, tmp_root: str) -> Any:
    payload, _ct = xprof_runner.convert_cold(paths, tool, params, tmp_root=tmp_root)
    if payload is None:
        raise RuntimeError(f"XProf failed for {tool} on {paths}")
    return json.loads(payload)


def run_tool_after(paths: list[str], first: str, tool: str, tmp_root: str) -> Any:
    """Run `first` then `tool` in the same fresh dir (tool may read first's cache)."""
    d, fresh = xprof_runner.copy_to_fresh_dir(paths, tmp_root)
    try:
        xprof_runner.convert(fresh, first, {})
        payload, _ = xprof_runner.convert(fresh, tool, {})
        return json.loads(payload)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write_json(path: str, obj: Any) -> int:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(rnd(obj), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return len(text.encode())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Generate XProf 2.24.2 golden files")
    ap.add_argument("--profiles", nargs="*", default=list(SELECTIONS), help="selections to generate")
    ap.add_argument("--tools", nargs="*", default=list(TOOLS))
    ap.add_argument("--out", default=HERE, help="golden root (default: tests/golden)")
    ap.add_argument("--raw-dir", default="/tmp/xprof_raw", help="where to save raw XProf outputs")
    args = ap.parse_args(argv)

    version = xprof_runner.xprof_version()
    if version != XPROF_VERSION:
        raise SystemExit(f"need xprof {XPROF_VERSION}, found {version}")

    quiet = os.environ.get("XPROF_GOLDEN_VERBOSE") is None
    index = {}
    with tempfile.TemporaryDirectory(prefix="xprof_golden_") as tmp:
        logdirs: dict[str, str] = {}
        for sel in args.profiles:
            stem, hosts = SELECTIONS[sel]
            if stem not in logdirs:
                logdirs[stem] = unpack(stem, os.path.join(tmp, "unpacked"))
            paths = find_xplanes(logdirs[stem], hosts)
            rel = [os.path.relpath(p, logdirs[stem]) for p in paths]
            header = {
                "xprof_version": version,
                "profile": sel,
                "source_archive": f"{stem}.tar.gz",
                "xplane_files": rel,
                "hosts": [os.path.basename(p)[: -len(".xplane.pb")] for p in paths],
            }
            index[sel] = dict(header, tools={})
            raw_dir = os.path.join(args.raw_dir, sel)
            os.makedirs(raw_dir, exist_ok=True)
            # Per-step maximum over cores of the step duration, from pod_viewer
            # reading the OpStats cache that overview_page wrote (same step db).
            with xprof_runner._quiet_stderr(quiet):  # pylint: disable=protected-access
                pod_after = run_tool_after(paths, "overview_page", "pod_viewer", tmp)
            max_core_step_ms = [
                max(c["totalDurationUs"] for c in m["podStatsPerCore"].values()) / 1000.0
                for m in pod_after["podStatsSequence"]["podStatsMap"] if m.get("podStatsPerCore")
            ]
            for tool in args.tools:
                if tool == "graph_viewer" and sel not in GRAPH_CASES:
                    index[sel]["tools"][tool] = "skipped: graph_viewer cases are defined for jax_mlp, jax_2hosts_worker0 and tpu_inference"
                    continue
                if tool in ("memory_profile", "memory_viewer") and len(paths) != 1:
                    index[sel]["tools"][tool] = f"skipped: XProf's {tool} reads exactly one host"
                    continue
                with xprof_runner._quiet_stderr(quiet):  # pylint: disable=protected-access
                    if tool == "op_profile":
                        raw = {g: run_tool(paths, tool, {"group_by": g}, tmp) for g in ("program", "category")}
                    elif tool == "memory_viewer":
                        raw = run_memory_viewer(paths, tmp)
                    elif tool == "graph_viewer":
                        raw = run_graph_viewer(paths, GRAPH_CASES[sel], tmp)
                    else:
                        raw = run_tool(paths, tool, {}, tmp)
                    extra_raw = None
                    if tool == "pod_viewer":
                        extra_raw = run_tool_after(paths, "overview_page", tool, tmp)
                with open(os.path.join(raw_dir, tool + ".json"), "w") as f:
                    json.dump({"|".join(map(str, k)): v for k, v in raw.items()} if tool == "graph_viewer" else raw,
                              f, indent=1, sort_keys=True)
                if tool == "overview_page":
                    body = golden_overview(raw, max_core_step_ms)
                elif tool == "input_pipeline_analyzer":
                    body = golden_input_pipeline(raw, max_core_step_ms)
                elif tool == "framework_op_stats":
                    body = golden_framework_op_stats(raw)
                elif tool == "kernel_stats":
                    body = golden_kernel_stats(raw)
                elif tool == "memory_profile":
                    body = golden_memory_profile(raw, count_memory_events(paths[0]))
                elif tool == "pod_viewer":
                    body = golden_pod_viewer(raw)
                    with open(os.path.join(raw_dir, "pod_viewer_after_overview_page.json"), "w") as f:
                        json.dump(extra_raw, f, indent=1, sort_keys=True)
                    body["as_served_after_overview_page"] = golden_pod_viewer(extra_raw)
                    body["_note"] = (
                        "Top level: pod_viewer converted on a fresh copy (XProf builds its own OpStats and keeps "
                        "every step). as_served_after_overview_page: pod_viewer run in a directory where "
                        "overview_page already wrote ALL_HOSTS.op_stats_v2.pb - XProf then reuses that cache, whose "
                        "step db dropped the first and last step; this is what the UI shows once the overview "
                        "page was opened first.")
                elif tool == "op_profile":
                    body = golden_op_profile(raw)
                elif tool == "hlo_stats":
                    body = golden_hlo_stats(raw)
                elif tool == "roofline_model":
                    body = golden_roofline_model(raw)
                elif tool == "memory_viewer":
                    body = golden_memory_viewer(raw)
                elif tool == "graph_viewer":
                    body = golden_graph_viewer(raw)
                elif tool == "smart_suggestion":
                    body = golden_smart_suggestion(raw)
                elif tool == "inference_profile":
                    body = golden_inference_profile(raw)
                else:
                    raise ValueError(tool)
                golden = dict(header, tool=tool, params=({"group_by": ["program", "category"]} if tool == "op_profile" else {}))
                golden.update(body)
                path = os.path.join(args.out, sel, tool + ".json")
                size = write_json(path, golden)
                index[sel]["tools"][tool] = f"{tool}.json"
                print(f"{sel:20s} {tool:25s} {size:8d} bytes", flush=True)
                if size > 200_000:
                    raise SystemExit(f"{path} is {size} bytes (> 200 KB)")
    if set(args.profiles) == set(SELECTIONS) and set(args.tools) == set(TOOLS):
        write_json(os.path.join(args.out, "index.json"), {
            "xprof_version": version,
            "generator": "tests/golden/make_goldens.py",
            "selections": index,
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
