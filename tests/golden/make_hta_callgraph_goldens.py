#!/usr/bin/env python3
"""Write HTA 0.5.0 golden files for the analyses built on HTA's call graph (``kernel_sequences``).

HOW TO REGENERATE
-----------------
HTA 0.5.0's call graph (``hta.common.trace_call_graph.CallGraph``) does not run in tbprof's test
environment: with pandas 3 it fails on ``np.unique(axis=0)`` of an object array, and on
microsecond-rounded Kineto traces (HTA's default) it stops on a rounded event that ends before it
starts ("Unexpected case" in ``trace_call_stack``). So these goldens come from a separate
Python with pandas 2 and HTA's ns rounding off::

    python -m venv /tmp/hta2 && /tmp/hta2/bin/pip install "holistictraceanalysis==0.5.0" "pandas<3"
    HTA_DISABLE_NS_ROUNDING=1 /tmp/hta2/bin/python tests/golden/make_hta_callgraph_goldens.py

For each PyTorch profile of ``demo_logs/`` (and ``tests/data/kineto_bwd_thread``, written from
Kineto's documented fields: a backward thread whose top level holds the operator names searched)
and each rank it writes, to
``tests/golden/hta/<profile>.callgraph.json``, exactly what HTA returned (DataFrames as lists of
records, without HTA's ``pattern_indices``, trace row numbers of no use to tbprof):

* ``kernel_sequences[operator][rank]``: ``get_frequent_cuda_kernel_sequences(operator_name,
  output_dir, min_pattern_len=3, rank, visualize=False)`` for each operator in OPERATORS;
* ``self_parented[rank]``: the names of the events HTA's ``CallGraph`` makes their own parent (a
  cycle its kernel counts never enter, so nothing under them counts: docs/differences.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from make_hta_goldens import PROFILES, _hta_version, _records  # noqa: E402

# Operators with several patterns on the demo profiles (forward convolutions and linears, the
# backward functions), one with none at its shallowest depth ("aten::"), one HTA finds only as a
# GPU annotation ("Optimizer.step": docs/differences.md).
OPERATORS = ("aten::conv2d", "aten::linear", "autograd::engine::evaluate_function", "aten::", "Optimizer.step")
FIXTURES = {"kineto_bwd_thread": ("aten::", "CompiledFunction", "aten::cross_entropy_loss",
                                  "autograd::engine::evaluate_function")}


def golden(profile: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _golden(profile)


def _golden(profile: str) -> dict[str, Any]:
    if os.environ.get("HTA_DISABLE_NS_ROUNDING") != "1":
        raise SystemExit("run with HTA_DISABLE_NS_ROUNDING=1 (see the module docstring)")
    from hta.trace_analysis import TraceAnalysis

    src = os.path.join(REPO, "tests", "data", profile) if profile in FIXTURES else os.path.join(REPO, "demo_logs",
                                                                                                   profile)
    with tempfile.TemporaryDirectory() as tmp:
        trace_dir = os.path.join(tmp, profile)
        shutil.copytree(src, trace_dir)
        out_dir = os.path.join(tmp, "out")
        os.makedirs(out_dir)
        analysis = TraceAnalysis(trace_dir=trace_dir)
        ranks = sorted(analysis.t.get_ranks())
        from hta.common.trace_call_graph import CallGraph

        self_parented: dict[str, list[str]] = {}
        sym = analysis.t.symbol_table.get_sym_table()
        for rank in ranks:
            graph = CallGraph(analysis.t, ranks=[rank])
            trace = analysis.t.get_trace(rank)
            found = {int(i) for cs in graph.call_stacks for i, n in cs.nodes.items() if i >= 0 and n.parent == i}
            self_parented[str(rank)] = sorted(sym[int(trace.loc[i, "name"])] for i in found)
        sequences: dict[str, dict[str, Any]] = {}
        for op in FIXTURES.get(profile, OPERATORS):
            sequences[op] = {}
            for rank in ranks:
                df = analysis.get_frequent_cuda_kernel_sequences(operator_name=op, output_dir=out_dir,
                                                                 min_pattern_len=3, rank=rank, visualize=False)
                if "pattern_indices" in df.columns:
                    df = df.drop(columns=["pattern_indices"])
                sequences[op][str(rank)] = _records(df.reset_index(drop=True)) if len(df) else []
        return {"hta_version": _hta_version(), "profile": profile, "ranks": ranks, "kernel_sequences": sequences,
                "self_parented": self_parented}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", nargs="*", default=[*PROFILES, *FIXTURES])
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    for profile in args.profiles:
        data = golden(profile)
        path = os.path.join(HERE, "hta", f"{profile}.callgraph.json")
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
