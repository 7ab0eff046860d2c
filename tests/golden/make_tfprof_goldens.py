"""Golden numbers for tbprof's tfprof views, produced by TensorFlow's own tfprof.

Runs ``tf.compat.v1.profiler``'s C++ core (``_pywrap_tfprof``, what ``Profiler`` calls) on
``demo_logs/tf1_timeline/profile.pb`` for every case of ``CASES`` and writes what
TensorFlow computed into ``tests/golden/tf1_timeline/``:

* ``tfprof_views.json``: per case (view + options) the displayed nodes in display order
  with their depth and statistics (self and total);
* ``tfprof_advice.json``: the reports of ``Profiler.advise()``;
* ``tfprof_timeline_<view>.json``: tfprof's Chrome trace timeline of a view;
* ``tfprof_pprof_code.json``: the samples of tfprof's pprof output of the code view.

Run with the Python that has TensorFlow (2.21 here), from the repository root:

    python tests/golden/make_tfprof_goldens.py [--out DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
from tensorflow.core.profiler import tfprof_output_pb2
from tensorflow.python.profiler import model_analyzer
from tensorflow.python.util import _pywrap_tfprof as tfprof

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TBPROF_SAMPLE_PROFILES", REPO / "demo_logs"))
PROFILE = SHARED / "tf1_timeline" / "profile.pb"
OUT = REPO / "tests" / "golden" / "tf1_timeline"

# tfprof's command line defaults widened to show everything; each case overrides some.
BASE: dict[str, Any] = {
    "max_depth": 10000, "min_bytes": 0, "min_peak_bytes": 0, "min_residual_bytes": 0, "min_output_bytes": 0,
    "min_micros": 0, "min_accelerator_micros": 0, "min_cpu_micros": 0, "min_params": 0, "min_float_ops": 0,
    "min_occurrence": 0, "step": -1, "order_by": "name", "account_type_regexes": [".*"],
    "start_name_regexes": [".*"], "trim_name_regexes": [], "show_name_regexes": [".*"], "hide_name_regexes": [],
    "account_displayed_op_only": False, "select": ["micros"],
}

# (case id, view, options that differ from BASE). Every documented option appears at least once.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("scope_default", "scope", {}),
    ("graph_default", "graph", {}),
    ("op_default", "op", {}),
    ("code_default", "code", {}),
    ("scope_time_and_memory", "scope", {"min_bytes": 1, "min_micros": 1, "order_by": "micros",
                                        "account_displayed_op_only": True}),
    ("scope_max_depth_2", "scope", {"max_depth": 2}),
    ("scope_max_depth_3", "scope", {"max_depth": 3}),
    ("graph_max_depth_3", "graph", {"max_depth": 3}),
    ("op_max_depth_3", "op", {"max_depth": 3, "order_by": "micros"}),
    ("code_max_depth_4", "code", {"max_depth": 4}),
    ("scope_min_bytes", "scope", {"min_bytes": 1000}),
    ("scope_min_peak_bytes", "scope", {"min_peak_bytes": 1000}),
    ("scope_min_residual_bytes", "scope", {"min_residual_bytes": 500}),
    ("scope_min_output_bytes", "scope", {"min_output_bytes": 1000}),
    ("scope_min_micros", "scope", {"min_micros": 10}),
    ("op_min_micros", "op", {"min_micros": 100, "order_by": "micros"}),
    ("scope_min_accelerator_micros", "scope", {"min_accelerator_micros": 1}),
    ("scope_min_cpu_micros", "scope", {"min_cpu_micros": 20}),
    ("scope_min_params", "scope", {"min_params": 1}),
    ("scope_min_float_ops", "scope", {"min_float_ops": 1000}),
    ("code_min_float_ops", "code", {"min_float_ops": 1000}),
    ("scope_min_occurrence", "scope", {"min_occurrence": 1}),
    ("op_min_occurrence", "op", {"min_occurrence": 3}),
    ("scope_step_3", "scope", {"step": 3}),
    ("op_step_0", "op", {"step": 0}),
    ("graph_step_5", "graph", {"step": 5, "min_micros": 1}),
    ("scope_order_micros", "scope", {"order_by": "micros"}),
    ("scope_order_bytes", "scope", {"order_by": "bytes"}),
    ("scope_order_peak_bytes", "scope", {"order_by": "peak_bytes"}),
    ("scope_order_residual_bytes", "scope", {"order_by": "residual_bytes"}),
    ("scope_order_output_bytes", "scope", {"order_by": "output_bytes"}),
    ("scope_order_cpu_micros", "scope", {"order_by": "cpu_micros"}),
    ("scope_order_float_ops", "scope", {"order_by": "float_ops"}),
    ("op_order_bytes", "op", {"order_by": "bytes"}),
    ("op_order_occurrence", "op", {"order_by": "occurrence"}),
    ("code_order_micros", "code", {"order_by": "micros", "min_micros": 1}),
    ("scope_account_types", "scope", {"account_type_regexes": ["MatMul", "Sum"]}),
    ("graph_account_types", "graph", {"account_type_regexes": ["MatMul", "Relu", "_arg_.*"]}),
    ("op_account_types_overlap", "op", {"account_type_regexes": ["Mat.*", "MatMul", "Relu"]}),
    ("code_account_types", "code", {"account_type_regexes": ["MatMul"], "min_micros": 1}),
    ("scope_start_name", "scope", {"start_name_regexes": ["gradients/mlp/.*_grad"]}),
    ("graph_start_name", "graph", {"start_name_regexes": ["GradientDescent/update_.*"]}),
    ("op_start_name", "op", {"start_name_regexes": ["Sum"], "order_by": "micros"}),
    ("code_start_name", "code", {"start_name_regexes": [".*tf1_variant"], "min_micros": 1}),
    ("scope_trim_name", "scope", {"trim_name_regexes": ["gradients/mlp", "GradientDescent"]}),
    ("graph_trim_name", "graph", {"trim_name_regexes": ["gradients/.*"]}),
    ("op_trim_name", "op", {"trim_name_regexes": ["Sum"], "order_by": "micros"}),
    ("code_trim_name", "code", {"trim_name_regexes": ["variable_scope.py.*"], "min_micros": 1}),
    ("scope_show_name", "scope", {"show_name_regexes": ["mlp/.*", ".*Sum"]}),
    ("op_show_name", "op", {"show_name_regexes": ["Mat.*", "Relu"]}),
    ("scope_hide_name", "scope", {"hide_name_regexes": ["gradients/.*"]}),
    ("code_hide_name", "code", {"hide_name_regexes": ["ops.py.*"], "min_micros": 1}),
    ("scope_displayed_only", "scope", {"show_name_regexes": ["mlp/.*", ".*Sum"], "account_displayed_op_only": True}),
    ("graph_displayed_only", "graph", {"min_micros": 10, "account_displayed_op_only": True}),
    ("op_displayed_only", "op", {"min_micros": 100, "order_by": "micros", "account_displayed_op_only": True}),
]

GRAPH_FIELDS = ("run_count", "exec_micros", "accelerator_exec_micros", "cpu_exec_micros", "requested_bytes",
                "peak_bytes", "residual_bytes", "output_bytes", "parameters", "float_ops")
TOTAL_FIELDS = ("total_run_count", "total_exec_micros", "total_accelerator_exec_micros", "total_cpu_exec_micros",
                "total_requested_bytes", "total_peak_bytes", "total_residual_bytes", "total_output_bytes",
                "total_parameters", "total_float_ops", "total_definition_count")


def _options(overrides: dict[str, Any], output: str = "none") -> bytes:
    opts = dict(BASE, **overrides, output=output)
    return model_analyzer._build_options(opts).SerializeToString()


def _fresh() -> None:
    """A new profiler per case: tfprof keeps per-view state between calls."""
    tfprof.DeleteProfiler()
    tfprof.ProfilerFromFile(str(PROFILE).encode())


# Golden rows are lists; the full field set for the *_default cases, the ones options move
# for the others (keeps the file small).
FULL_FIELDS = ("name", "depth", "graph_nodes", *GRAPH_FIELDS, *TOTAL_FIELDS)
SHORT_FIELDS = ("name", "depth", "run_count", "exec_micros", "total_exec_micros", "total_requested_bytes",
                "total_peak_bytes", "total_parameters", "total_float_ops")


def _row(node: Any, depth: int, fields: tuple[str, ...]) -> list[Any]:
    values: dict[str, Any] = {"name": node.name, "depth": depth}
    for f in (*GRAPH_FIELDS, *TOTAL_FIELDS):
        if any(fd.name == f for fd in node.DESCRIPTOR.fields):
            values[f] = getattr(node, f)
    if node.DESCRIPTOR.name == "MultiGraphNodeProto":
        # tfprof's occurrence of a multi node: its graph nodes and their summed run count.
        values["graph_nodes"] = len(node.graph_nodes)
        values["run_count"] = sum(g.run_count for g in node.graph_nodes)
    return [values.get(f) for f in fields]


def _flatten(node: Any, view: str, fields: tuple[str, ...]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    stack = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        rows.append(_row(n, depth, fields))
        # The op view nests its list as a chain (each row the only child of the previous);
        # tbprof shows it flat under the root.
        child_depth = 1 if view == "op" else depth + 1
        for c in reversed(n.children):
            stack.append((c, child_depth))
    return rows


def view_cases() -> list[dict[str, Any]]:
    out = []
    for case_id, view, overrides in CASES:
        _fresh()
        raw = tfprof.Profile(view.encode(), _options(overrides))
        proto = (tfprof_output_pb2.MultiGraphNodeProto() if view in ("op", "code")
                 else tfprof_output_pb2.GraphNodeProto())
        proto.ParseFromString(raw)
        fields = FULL_FIELDS if case_id.endswith("_default") else SHORT_FIELDS
        out.append({"id": case_id, "view": view, "options": overrides, "fields": list(fields),
                    "rows": _flatten(proto, view, fields)})
    return out


def advice() -> dict[str, list[str]]:
    _fresh()
    opts = model_analyzer._build_advisor_options(model_analyzer.ALL_ADVICE)
    proto = tfprof_output_pb2.AdviceProto()
    proto.ParseFromString(tfprof.Profile(b"advise", opts.SerializeToString()))
    return {name: list(c.reports) for name, c in sorted(proto.checkers.items())}


def timelines(tmp: Path) -> dict[str, Any]:
    out = {}
    for view, overrides in (("graph", {"step": 3}), ("scope", {}), ("code", {})):
        _fresh()
        base = tmp / f"timeline_{view}"
        tfprof.Profile(view.encode(), _options(overrides, output=f"timeline:outfile={base}"))
        step = overrides.get("step", -1)
        out[view] = {"options": overrides, "trace": json.loads((tmp / f"timeline_{view}_{step}").read_text())}
    return out


def pprof_code(tmp: Path) -> dict[str, Any]:
    from tensorflow.core.profiler import profile_pb2

    _fresh()
    path = tmp / "code.pprof.gz"
    tfprof.Profile(b"code", _options({"select": ["micros"]}, output=f"pprof:outfile={path}"))
    prof = profile_pb2.Profile()
    prof.ParseFromString(gzip.decompress(path.read_bytes()))
    strings = list(prof.string_table)
    functions = {f.id: strings[f.name] for f in prof.function}
    locations = {loc.id: [functions[line.function_id] for line in loc.line] for loc in prof.location}
    samples = []
    for s in prof.sample:
        label = {strings[lb.key]: strings[lb.str] for lb in s.label}
        samples.append({"graph_node": label.get("graph node:", ""), "values": list(s.value),
                        "stack": [locations[i][0] for i in s.location_id]})
    return {"options": {"select": ["micros"]},
            "sample_types": [[strings[t.type], strings[t.unit]] for t in prof.sample_type],
            "samples": samples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    out = parser.parse_args().out
    if not PROFILE.is_file():
        print(f"{PROFILE} is missing", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    meta = {"generator": "tests/golden/make_tfprof_goldens.py", "tensorflow": tf.__version__,
            "profile": "tf1_timeline/profile.pb", "base_options": BASE}
    cases = view_cases()
    text = json.dumps({**meta, "cases": cases}, separators=(",", ":"))
    # One case per line keeps diffs readable.
    text = text.replace(',{"id":', ',\n{"id":')
    (out / "tfprof_views.json").write_text(text + "\n")
    (out / "tfprof_advice.json").write_text(json.dumps({**meta, "checkers": advice()}, indent=1) + "\n")
    with tempfile.TemporaryDirectory() as d:
        for view, entry in timelines(Path(d)).items():
            (out / f"tfprof_timeline_{view}.json").write_text(json.dumps({**meta, **entry}) + "\n")
        (out / "tfprof_pprof_code.json").write_text(json.dumps({**meta, **pprof_code(Path(d))}) + "\n")
    print(f"wrote goldens for {len(CASES)} view cases to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
