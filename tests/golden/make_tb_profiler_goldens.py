#!/usr/bin/env python3
"""Write torch-tb-profiler 0.4.3 golden files for tbprof's ``gpu_utilization`` parity tests.

HOW TO REGENERATE
-----------------
torch-tb-profiler (PyTorch's retired TensorBoard plugin) is not a tbprof dependency; use a
separate Python::

    python -m venv /tmp/tbp && /tmp/tbp/bin/pip install "torch-tb-profiler==0.4.3" "pandas<3"
    /tmp/tbp/bin/python tests/golden/make_tb_profiler_goldens.py

For each PyTorch profile of ``demo_logs/`` and each trace file it runs torch-tb-profiler's own
``RunProfileData.from_json(...).process()`` and writes ``tests/golden/tb_profiler/<profile>.json``:

* ``devices``: per GPU id, ``gpu_metrics_parser.gpu_utilization`` (0..1),
  ``avg_approximated_sm_efficiency_per_device`` (0..1), ``avg_occupancy_per_device`` (%);
* ``kernels``: ``kernel_stat`` (per kernel name: count, sum, mean, blocks_per_sm, occupancy);
* ``operators_by_shape``: ``op_list_groupby_name_input`` as [name, input_shape, calls,
  host_duration, self_host_duration, device_duration, self_device_duration, tc_eligible,
  tc_self_ratio, tc_total_ratio]; ``operators_by_name``: ``op_list_groupby_name`` as [name,
  calls, host_duration, self_host_duration, device_duration, self_device_duration];
  ``operators_by_stack``: ``stack_lists_group_by_name`` as [name, call stack, calls,
  host_duration, self_host_duration];

* ``module_view``: ``aggegate_module_view`` (the module view) as [depth, name, module id,
  occurrences, operators, host_duration, self_host_duration, avg_duration] in its order;

and the same for the real traces ``tests/data/torch_compile`` and ``torch_gpu_lag`` (gzip; PyTorch
2.11 on an H100), for ``tests/data/kineto_with_stack``, ``kineto_with_modules`` and
``kineto_op_rules`` (traces written from Kineto's documented fields with ``Call stack`` /
``Python module id`` args, and with the operator tree's same-name nesting, annotations and
PyTorch 1.8 ``Runtime`` calls: the shared profiles were recorded without ``with_stack`` and
``with_modules``, and by PyTorch >= 1.10).
* ``distributed`` (profiles with several ranks): the distributed view as it loads a run
  (``RunLoader._process_distributed_profiles(...)``): ``comm_ops`` ("Communication Operations
  Stats" per worker) and ``overlap`` ("Computation/Communication Overview": per step name and
  ``all``, per worker [computation, overlapping, communication, other] us).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import logging
import math
import os
import sys
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROFILES = ("torch_cnn", "torch_ddp")
FIXTURES = ("kineto_with_stack", "kineto_with_modules", "kineto_op_rules",  # under tests/data/
            "torch_compile", "torch_gpu_lag")  # real traces (H100, PyTorch 2.11), gzip


def _clean(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _walk_modules(stats: Any, depth: int) -> list[list[Any]]:
    """The module view's tree as rows [depth, name, id, occurrences, operators, host, self host, avg]."""
    rows: list[list[Any]] = []
    for m in stats or []:
        rows.append([depth, m.name, m.id, m.occurences, m.operators, _clean(m.host_duration),
                     _clean(m.self_host_duration), _clean(m.avg_duration)])
        rows.extend(_walk_modules(m.children, depth + 1))
    return rows


def golden(profile: str) -> dict[str, Any]:
    from importlib.metadata import version

    from torch_tb_profiler.profiler.data import RunProfileData

    out: dict[str, Any] = {"torch_tb_profiler_version": version("torch-tb-profiler"), "profile": profile,
                           "files": {}}
    folder = os.path.join(REPO, "tests", "data", profile) if profile in FIXTURES else os.path.join(REPO, "demo_logs",
                                                                                                    profile)
    paths = glob.glob(os.path.join(folder, "*.pt.trace.json")) + glob.glob(os.path.join(folder, "*.pt.trace.json.gz"))
    for path in sorted(paths):
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            data = RunProfileData.from_json("worker", "span", json.load(f))
        data.process()
        p = data.gpu_metrics_parser
        devices = [{"device": int(i), "gpu_utilization": _clean(p.gpu_utilization[i]),
                    "sm_efficiency": _clean(p.avg_approximated_sm_efficiency_per_device[i]),
                    "occupancy": _clean(p.avg_occupancy_per_device[i])} for i in sorted(p.gpu_ids)]
        kernels = [] if data.kernel_stat is None else [
            {k: _clean(r[k]) for k in ("name", "count", "sum", "mean", "blocks_per_sm", "occupancy")}
            for r in data.kernel_stat.reset_index().to_dict("records")]
        ops = sorted([a.name, a.input_shape, a.calls, _clean(a.host_duration), _clean(a.self_host_duration),
                      _clean(a.device_duration), _clean(a.self_device_duration), bool(a.tc_eligible),
                      _clean(a.tc_self_ratio), _clean(a.tc_total_ratio)]
                     for a in data.op_list_groupby_name_input)
        by_name = sorted([a.name, a.calls, _clean(a.host_duration), _clean(a.self_host_duration),
                          _clean(a.device_duration), _clean(a.self_device_duration)]
                         for a in data.op_list_groupby_name)
        by_stack = sorted([a.name, next(iter(a.callstacks)), a.calls, _clean(a.host_duration),
                           _clean(a.self_host_duration)] for aggs in data.stack_lists_group_by_name.values()
                          for a in aggs)
        from torch_tb_profiler.profiler.module_op import aggegate_module_view

        modules = _walk_modules(aggegate_module_view(data.tid2tree, data.events), 0)
        out["files"][os.path.basename(path)] = {"devices": devices, "kernels": kernels, "operators_by_shape": ops,
                                                "operators_by_name": by_name, "operators_by_stack": by_stack,
                                                "module_view": modules}
    out["distributed"] = _distributed(profile) if profile not in FIXTURES else None
    return out


def _distributed(profile: str) -> dict[str, Any] | None:
    from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
    from torch_tb_profiler.profiler.loader import RunLoader
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    paths = sorted(glob.glob(os.path.join(REPO, "demo_logs", profile, "*.pt.trace.json")))
    if len(paths) < 2:
        return None
    profiles = []
    for path in paths:
        with open(path) as f:
            data = RunProfileData.from_json(os.path.basename(path), None, json.load(f))
        data.process()
        data.analyze()
        RunGenerator(data.worker, None, data).generate_run_profile()
        profiles.append(DistributedRunProfileData(data))
    loader = RunLoader(profile, os.path.join(REPO, "demo_logs", profile), None)
    run = loader._process_distributed_profiles(profiles, None)
    if run is None:
        return None
    ops = run.comm_ops["data"]
    return {
        "comm_ops": {worker: {"columns": [c["name"] for c in t["columns"]],
                              "rows": [[_clean(v) for v in r] for r in t["rows"]]} for worker, t in ops.items()},
        "overlap": run.steps_to_overlap["data"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", nargs="*", default=list(PROFILES + FIXTURES))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    for profile in args.profiles:
        path = os.path.join(HERE, "tb_profiler", f"{profile}.json")
        with open(path, "w") as f:
            json.dump(golden(profile), f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
