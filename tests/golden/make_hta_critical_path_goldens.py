#!/usr/bin/env python3
"""Write HTA 0.5.0 golden files for tbprof's ``critical_path`` parity test.

HOW TO REGENERATE
-----------------
HTA 0.5.0's ``critical_path_analysis`` does not run with pandas 3 (``DataFrame.drop`` with both
``axis`` and ``columns``), so these goldens come from a separate Python with pandas 2, as the
call-graph goldens do (``make_hta_callgraph_goldens.py``)::

    python -m venv /tmp/hta2 && /tmp/hta2/bin/pip install "holistictraceanalysis==0.5.0" "pandas<3"
    HTA_DISABLE_NS_ROUNDING=1 /tmp/hta2/bin/python tests/golden/make_hta_critical_path_goldens.py
    /tmp/hta2/bin/python tests/golden/make_hta_critical_path_goldens.py

``HTA_DISABLE_NS_ROUNDING=1`` keeps the events' nanoseconds, as tbprof's critical path does by
default (``<profile>.critical_path.json``); without it HTA rounds every event inward to whole
microseconds, which drops the sub-microsecond runtime calls from the graph, as tbprof's
``times=us`` does (``<profile>.critical_path_us.json``).

For each PyTorch profile of ``demo_logs/``, each rank and each instance of the ``ProfilerStep``
annotation, it writes to ``tests/golden/hta/<profile>.critical_path.json`` exactly what HTA
returned from ``TraceAnalysis.critical_path_analysis(rank, "ProfilerStep", instance)``:

* ``step`` / ``step_category``: the annotation event HTA took (past the complete host steps,
  HTA's ``instance_id`` reaches the GPU-side copies: docs/differences.md);
* ``nodes`` / ``edges``: the size of HTA's graph;
* ``bound_by_us``: ``get_critical_path_breakdown()``'s durations summed by ``bound_by`` (the
  numbers behind ``CPGraph.summary()``, which divides them by their total);
* ``path``: the path's edges in path order: edge type, ``bound_by``, weight (us), the names of
  the events of its two nodes and whether each node is the event's start.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from make_hta_goldens import PROFILES, _hta_version  # noqa: E402

ANNOTATION = "ProfilerStep"
# Besides the demo profiles: traces written from Kineto's documented fields with GPU-side
# ``cuda_sync`` events (no shared profile records them), for HTA's sync edges: a ``Context Sync``;
# a ``Stream Wait Event`` and an ``Event Sync`` on CUDA events recorded by ``cudaEventRecord``.
FIXTURES = {name: os.path.join(REPO, "tests", "data", name)
            for name in ("kineto_cuda_sync", "kineto_event_sync", "kineto_cuda_graph")}


def golden(profile: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _golden(profile)


def _golden(profile: str) -> dict[str, Any]:
    from hta.analyzers.critical_path_analysis import bound_by
    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    src = FIXTURES.get(profile, os.path.join(REPO, "demo_logs", profile))
    with tempfile.TemporaryDirectory() as tmp:
        trace_dir = os.path.join(tmp, profile)
        shutil.copytree(src, trace_dir)
        analysis = TraceAnalysis(trace_dir=trace_dir)
        sym = analysis.t.symbol_table.get_sym_table()
        ranks = sorted(analysis.t.get_ranks())
        out: dict[str, Any] = {}
        for rank in ranks:
            df = analysis.t.get_trace(rank)
            # As many instances as the profile has host-side annotations.
            host = df[(df.stream == -1) & df.name.map(lambda n: ANNOTATION in sym[n])
                      & df.cat.map(lambda c: sym[c] != "gpu_user_annotation")]
            per_rank = []
            for instance in range(len(host)):
                graph, ok = analysis.critical_path_analysis(rank=rank, annotation=ANNOTATION, instance_id=instance)
                bd = graph.get_critical_path_breakdown()
                sums = bd.groupby("bound_by").duration.sum()
                path = []
                for u, v in zip(graph.critical_path_nodes, graph.critical_path_nodes[1:], strict=False):
                    e = graph.edges[u, v]["object"]
                    nu, nv = graph.node_list[u], graph.node_list[v]
                    attributed = graph.get_event_attribution_for_edge(e)
                    row = {"type": e.type.value, "s_name": None, "stream": -1}
                    if attributed is not None and attributed >= 0:
                        row["s_name"] = sym[int(graph.trace_df.name.loc[attributed])]
                        row["stream"] = int(graph.trace_df.stream.loc[attributed])
                    path.append({
                        "type": e.type.value.removeprefix("critical_path_"),
                        "bound_by": bound_by(row) if row["s_name"] is not None or not e.type.value.endswith(
                            ("operator",)) else None,
                        "weight_us": float(e.weight),  # as get_critical_path_breakdown() sums it
                        "attributed": row["s_name"],
                        "src": sym[int(graph.trace_df.name.loc[nu.ev_idx])], "src_is_start": bool(nu.is_start),
                        "dst": sym[int(graph.trace_df.name.loc[nv.ev_idx])], "dst_is_start": bool(nv.is_start),
                    })
                # The annotation HTA took: its instance_id counts the rows of its (last-step
                # filtered) frame whose name contains the annotation, in frame order.
                chosen = df[df.name.map(lambda n: ANNOTATION in sym[n])].iloc[instance]
                per_rank.append({
                    "instance": instance, "ok": bool(ok), "step": sym[int(chosen["name"])],
                    "step_category": sym[int(chosen["cat"])],
                    "nodes": graph.number_of_nodes(), "edges": graph.number_of_edges(),
                    "total_us": float(bd.duration.sum()),
                    "bound_by_us": {str(k): float(v) for k, v in sums.items() if k},
                    "path": path,
                })
            out[str(rank)] = per_rank
        return {"hta_version": _hta_version(), "profile": profile, "annotation": ANNOTATION, "ranks": ranks,
                "critical_path": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", nargs="*", default=[*PROFILES, *FIXTURES])
    args = parser.parse_args(argv)
    # Without HTA_DISABLE_NS_ROUNDING=1: HTA's default, times rounded inward to whole
    # microseconds (tbprof's option times=us), written to <profile>.critical_path_us.json.
    rounded = os.environ.get("HTA_DISABLE_NS_ROUNDING") != "1"
    for profile in args.profiles:
        data = golden(profile)
        data["times"] = "us" if rounded else "ns"
        path = os.path.join(HERE, "hta", f"{profile}.critical_path{'_us' if rounded else ''}.json")
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
