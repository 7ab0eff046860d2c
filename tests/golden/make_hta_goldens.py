#!/usr/bin/env python3
"""Write HTA 0.5.0 golden files for tbprof's ``gpu_breakdown`` parity tests.

HOW TO REGENERATE
-----------------
With a Python that has PyPI ``holistictraceanalysis==0.5.0`` (``pip install -e ".[test]"``
installs it)::

    python tests/golden/make_hta_goldens.py             # every profile below
    python tests/golden/make_hta_goldens.py torch_ddp   # one

For each PyTorch profile in ``demo_logs/`` the script runs HTA's own ``TraceAnalysis`` on a
copy of the trace files (HTA writes nothing into the folder, but the copy keeps the repo
clean if a later version does) and writes ``tests/golden/hta/<profile>.json`` with exactly
what HTA returned, DataFrames as lists of records:

* ``temporal_breakdown``: ``get_temporal_breakdown()``;
* ``idle_time_breakdown`` / ``idle_interval_stats``: ``get_idle_time_breakdown(ranks=r,
  show_idle_interval_stats=True)`` for every rank;
* ``comm_comp_overlap``: ``get_comm_comp_overlap()``;
* ``kernel_launch_stats``: ``get_cuda_kernel_launch_stats(ranks=all)`` (per launch);
* ``kernel_type_breakdown`` / ``kernel_breakdown``: ``get_gpu_kernel_breakdown()``;
* ``queue_length_series`` / ``queue_length_summary``: ``get_queue_length_time_series(ranks)``
  (per rank) and ``get_queue_length_summary(ranks)``;
* ``memory_bw_series`` / ``memory_bw_summary``: ``get_memory_bw_time_series(ranks)`` (per rank)
  and ``get_memory_bw_summary(ranks)``;
* ``trace_diff``: ``TraceDiff.compare_traces`` (first rank) of the profile's first iteration
  against its second (``first_vs_second_iteration``) and of the profile against each other
  profile of PROFILES (``vs_<other>``, first iterations), as records indexed by name;
* ``stragglers`` (profiles with several ranks): ``get_potential_stragglers(num_candidates)`` for 1
  and 2 on a copy whose ``ncclDevKernel`` names read ``ncclKernel`` (HTA 0.5.0's metric looks for
  that prefix only; NCCL >= 2.19 writes the former), or the error HTA raised.

Units are HTA's: microseconds (integers after HTA's inward rounding), percentages 0..100.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROFILES = ("torch_cnn", "torch_ddp")


def _records(df: Any) -> list[dict[str, Any]]:
    out = []
    for rec in df.reset_index().to_dict("records"):
        clean: dict[str, Any] = {}
        for k, v in rec.items():
            if hasattr(v, "item"):
                v = v.item()
            if isinstance(v, float) and math.isnan(v):
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out


def _summary_records(df: Any) -> list[dict[str, Any]]:
    """A ``describe()`` frame (two-level columns: value, statistic) as records keyed by statistic."""
    if df is None:
        return []
    flat = df.copy()
    flat.columns = [str(stat) for _, stat in flat.columns]
    return _records(flat)


def golden(profile: str) -> dict[str, Any]:
    """HTA's answers on ``demo_logs/<profile>`` (its deprecation warnings silenced: not ours)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _golden(profile)


def _golden(profile: str) -> dict[str, Any]:
    import hta  # noqa: F401  (fail early with a clear message when HTA is missing)
    from hta.trace_analysis import TraceAnalysis

    src = os.path.join(REPO, "demo_logs", profile)
    with tempfile.TemporaryDirectory() as tmp:
        trace_dir = os.path.join(tmp, profile)
        shutil.copytree(src, trace_dir)
        analysis = TraceAnalysis(trace_dir=trace_dir)
        ranks = sorted(analysis.t.get_ranks())
        idle: list[dict[str, Any]] = []
        idle_stats: list[dict[str, Any]] = []
        for rank in ranks:
            breakdown, stats = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False,
                                                                show_idle_interval_stats=True)
            idle += _records(breakdown)
            if stats is not None:
                idle_stats += _records(stats)
        launch = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
        type_df, kernel_df = analysis.get_gpu_kernel_breakdown(visualize=False)
        queue_series = analysis.get_queue_length_time_series(ranks=ranks)
        bw_series = analysis.get_memory_bw_time_series(ranks=ranks)
        return {
            "hta_version": _hta_version(),
            "profile": profile,
            "ranks": ranks,
            "temporal_breakdown": _records(analysis.get_temporal_breakdown(visualize=False)),
            "idle_time_breakdown": idle,
            "idle_interval_stats": idle_stats,
            "comm_comp_overlap": _records(analysis.get_comm_comp_overlap(visualize=False)),
            "kernel_launch_stats": {str(r): _records(df) for r, df in launch.items()},
            "kernel_type_breakdown": _records(type_df),
            "kernel_breakdown": _records(kernel_df),
            "queue_length_series": {str(r): _records(df[["ts", "stream", "queue_length"]])
                                    for r, df in queue_series.items()},
            "queue_length_summary": _summary_records(analysis.get_queue_length_summary(ranks=ranks)),
            "memory_bw_series": {str(r): _records(df[["ts", "name", "memory_bw_gbps"]])
                                 for r, df in bw_series.items()},
            "memory_bw_summary": _summary_records(analysis.get_memory_bw_summary(ranks=ranks)),
            "trace_diff": _trace_diffs(profile, src),
            "stragglers": _stragglers(src, tmp) if len(ranks) > 1 else None,
        }


def _stragglers(src: str, tmp: str) -> dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis

    renamed = os.path.join(tmp, "renamed")
    os.makedirs(renamed)
    for name in os.listdir(src):
        with open(os.path.join(src, name)) as f:
            text = f.read()
        with open(os.path.join(renamed, name), "w") as f:
            f.write(text.replace("ncclDevKernel", "ncclKernel"))
    analysis = TraceAnalysis(trace_dir=renamed)
    out: dict[str, Any] = {}
    for k in (1, 2):
        try:
            out[str(k)] = {"stragglers": [int(r) for r in analysis.get_potential_stragglers(num_candidates=k)]}
        except ValueError as e:
            out[str(k)] = {"error": f"{type(e).__name__}: {e}"}
    return out


def _trace_diffs(profile: str, src: str) -> dict[str, Any]:
    from hta.trace_diff import LabeledTrace, TraceDiff

    control = LabeledTrace(label="control", trace_dir=src)
    iterations = control.iterations()
    out: dict[str, Any] = {}
    if len(iterations) >= 2:
        test = LabeledTrace(label="test", trace_dir=src)
        out["first_vs_second_iteration"] = {
            "iterations": iterations[:2],
            "rows": _records(TraceDiff.compare_traces(control, test, control_iteration=iterations[0],
                                                      test_iteration=iterations[1]).rename_axis("name")),
        }
    for other in PROFILES:
        if other != profile:
            test = LabeledTrace(label="test", trace_dir=os.path.join(REPO, "demo_logs", other))
            out[f"vs_{other}"] = {"rows": _records(TraceDiff.compare_traces(control, test).rename_axis("name"))}
    return out


def _hta_version() -> str:
    from importlib.metadata import version
    return version("HolisticTraceAnalysis")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", nargs="*", default=list(PROFILES))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    out_dir = os.path.join(HERE, "hta")
    os.makedirs(out_dir, exist_ok=True)
    for profile in args.profiles:
        data = golden(profile)
        path = os.path.join(out_dir, f"{profile}.json")
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
