"""tfprof_views: tfprof's scope / graph / op / code views of a tfprof ProfileProto run.

One table, ``nodes``, lists the displayed nodes in display order (root first, children
after their parent, ``depth`` for indentation) with each node's own statistics and its
totals (itself plus its accounted descendants; in the op view, the row plus all rows below
it, tfprof's accumulated column). Options are tfprof's own, parsed as its command line
does (regex lists comma-separated); see ``tfprof_engine`` for their semantics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from tbprof.analyses.results.tf1_tfprof import TfprofViewOptions, TfprofViewsResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tfprof.tfprof_engine import (
    METRICS,
    ORDER_BY,
    SELECTABLE,
    VIEWS,
    ViewError,
    ViewOptions,
    ViewResult,
    show_view,
    shown_name,
)
from tbprof.analyses.tool import SCHEMA_VERSION, Option, OptionError, Tool, parse_bool
from tbprof.store.tfprof import TfprofProfile

TOOL = "tfprof_views"
DEFAULTS = ViewOptions(select=("bytes", "peak_bytes", "residual_bytes", "output_bytes", "micros",
                               "accelerator_micros", "cpu_micros", "params", "float_ops", "occurrence"))


def _regex_list(text: str) -> tuple[str, ...]:
    return tuple(p for p in (s.strip() for s in text.split(",")) if p)


def _int(text: str) -> int:
    return int(text.strip())


def _choice(allowed: Sequence[str]) -> Any:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return parse


def _select(text: str) -> tuple[str, ...]:
    values = _regex_list(text)
    bad = [v for v in values if v not in SELECTABLE]
    if bad:
        raise ValueError(f"unknown attribute(s) {', '.join(bad)}; choose from {', '.join(SELECTABLE)}")
    return values


_HELP = {
    "max_depth": "show nodes at most this many levels below the start (op view: list length)",
    "min_bytes": "hide nodes whose total requested bytes are below this",
    "min_peak_bytes": "hide nodes whose total peak bytes are below this",
    "min_residual_bytes": "hide nodes whose total residual bytes are below this",
    "min_output_bytes": "hide nodes whose total output bytes are below this",
    "min_micros": "hide nodes whose total execution time (µs) is below this",
    "min_accelerator_micros": "hide nodes whose total accelerator time (µs) is below this",
    "min_cpu_micros": "hide nodes whose total CPU time (µs) is below this",
    "min_params": "hide nodes with fewer parameters",
    "min_float_ops": "hide nodes with fewer float operations",
    "min_occurrence": "hide nodes that ran (op view: exist) fewer times",
    "step": "traced step to show; -1 averages over the steps",
    "order_by": "order of siblings: " + "|".join(ORDER_BY),
    "account_type_regexes": "comma-separated regexes: account only nodes with a matching op type (or device)",
    "start_name_regexes": "comma-separated regexes: start showing from matching nodes",
    "trim_name_regexes": "comma-separated regexes: hide what is below matching nodes",
    "show_name_regexes": "comma-separated regexes: show only matching nodes",
    "hide_name_regexes": "comma-separated regexes: hide matching nodes",
    "account_displayed_op_only": "true: totals count displayed nodes only",
    "select": "comma-separated attributes to show: " + "|".join(SELECTABLE),
}


def _option_for(name: str, default: Any) -> Option:
    """tfprof's option as a control: thresholds (``min_*``) and the regex lists beyond show/hide
    sit under "More options"; the rest are grouped as tfprof's documentation groups them."""
    choices: tuple[str, ...] = ()
    min_value: float | None = None
    if isinstance(default, bool):
        parse: Any = parse_bool
    elif isinstance(default, int):
        parse = _int
        min_value = -1 if name == "step" else 0
    elif name == "order_by":
        parse = _choice(tuple(ORDER_BY))
        choices = tuple(ORDER_BY)
    elif name == "select":
        parse = _select
    else:
        parse = _regex_list
    group = ("thresholds" if name.startswith("min_") else
             "names" if name.endswith("_regexes") else "view")
    advanced = name.startswith("min_") or name in ("account_type_regexes", "start_name_regexes",
                                                   "trim_name_regexes", "account_displayed_op_only")
    return Option(name, parse, default, _HELP.get(name, ""), choices=choices, min_value=min_value,
                  max_value=None if min_value is None else 2**53, group=group,
                  advanced=advanced)


OPTIONS: tuple[Option, ...] = (
    Option("view", _choice(VIEWS), "scope", "scope | graph | op | code", choices=VIEWS, group="view"),
    *(_option_for(f.name, getattr(DEFAULTS, f.name)) for f in fields(ViewOptions)),
)


def view_options(options: Mapping[str, Any]) -> ViewOptions:
    return ViewOptions(**{f.name: options.get(f.name, getattr(DEFAULTS, f.name)) for f in fields(ViewOptions)})


def run_view(profile: TfprofProfile, options: Mapping[str, Any]) -> ViewResult:
    """The view the options ask for; tfprof's refusals become option errors."""
    view = str(options.get("view", "scope"))
    opts = view_options(options)
    try:
        # Not memoised here: Profiles memoises tool results, and a view takes milliseconds.
        return show_view(profile, view, opts)
    except ViewError as e:
        raise OptionError(str(e)) from e


# Metric columns per tfprof attribute: (attribute, METRICS slot, column stem, label, unit).
_METRIC_COLUMNS = (
    ("bytes", "requested_bytes", "requested_bytes", "Requested bytes", "bytes"),
    ("peak_bytes", "peak_bytes", "peak_bytes", "Peak bytes", "bytes"),
    ("residual_bytes", "residual_bytes", "residual_bytes", "Residual bytes", "bytes"),
    ("output_bytes", "output_bytes", "output_bytes", "Output bytes", "bytes"),
    ("micros", "exec_micros", "exec_time_us", "Execution time", "us"),
    ("accelerator_micros", "accelerator_exec_micros", "accelerator_time_us", "Accelerator time", "us"),
    ("cpu_micros", "cpu_exec_micros", "cpu_time_us", "CPU time", "us"),
    ("params", "parameters", "parameters", "Parameters", ""),
    ("float_ops", "float_ops", "float_ops", "Float ops", ""),
    ("occurrence", "run_count", "occurrence", "Runs", ""),
)


def _selected(select: Sequence[str]) -> set[str]:
    chosen = set(select)
    # As tfprof: "micros" shows total, accelerator and CPU time together.
    if "micros" in chosen:
        chosen |= {"accelerator_micros", "cpu_micros"}
    return chosen


def _input_shapes(profile: TfprofProfile, g: int) -> str:
    if g < 0:
        return ""
    parts = []
    for slot, (name, src) in enumerate(zip(profile.input_names[g], profile.input_src_output[g], strict=False)):
        j = profile.index(name)
        shape = profile.output_shapes[j].get(src) if j >= 0 else None
        parts.append(f"{slot}:{'x'.join(str(d) for d in shape) if shape else 'unknown'}")
    return "|".join(parts)


def view_table(profile: TfprofProfile, result: ViewResult) -> Table:
    chosen = _selected(result.options.select)
    rows = result.rows
    columns = [Column("name", "Name", "str", description="name scope, op name, op type or call site"),
               Column("depth", "Depth", "int", description="display depth; the root is 0"),
               Column("accounted", "Accounted", "bool", description="matches account_type_regexes")]
    values: dict[str, Any] = {"name": [r.name for r in rows], "depth": [r.depth for r in rows],
                              "accounted": [r.accounted for r in rows]}
    for attr, metric, stem, label, unit in _METRIC_COLUMNS:
        if attr not in chosen:
            continue
        slot = METRICS.index(metric)
        columns.append(Column(stem, f"{label} (self)", "int", unit))
        columns.append(Column(f"total_{stem}", f"{label} (total)", "int", unit))
        values[stem] = [r.self_stats[slot] for r in rows]
        values[f"total_{stem}"] = [r.total_stats[slot] for r in rows]
    multi = result.view in ("op", "code")
    if "occurrence" in chosen:
        if multi:
            columns.append(Column("graph_nodes", "Graph nodes", "int", description="graph nodes in the row"))
            values["graph_nodes"] = [r.node_count for r in rows]
        else:
            slot = METRICS.index("definition_count")
            columns.append(Column("total_definitions", "Definitions (total)", "int",
                                  description="graph nodes accounted in the subtree"))
            values["total_definitions"] = [r.total_stats[slot] for r in rows]
    if "device" in chosen:
        columns.append(Column("devices", "Devices", "str"))
        values["devices"] = ["|".join(r.devices) for r in rows]
    if "op_types" in chosen:
        columns.append(Column("op_types", "Op types", "str"))
        values["op_types"] = ["|".join(r.op_types) for r in rows]
    if "input_shapes" in chosen and not multi:
        columns.append(Column("input_shapes", "Input shapes", "str"))
        values["input_shapes"] = [_input_shapes(profile, r.node) for r in rows]
    if result.view == "code":
        columns.append(Column("file", "File", "str"))
        columns.append(Column("line", "Line", "int"))
        values["file"] = [shown_name(r.trace[0]) if r.trace else "" for r in rows]
        values["line"] = [r.trace[1] if r.trace else 0 for r in rows]
    table = Table.from_columns(columns, values, default_sort=None)
    table.meta = {"view": result.view, "tree": result.view != "op"}
    return table


def _totals(result: ViewResult) -> dict[str, int]:
    root = result.root
    out = {f"total_{m}": root.total_stats[i] for i, m in enumerate(METRICS)}
    if result.view in ("op", "code"):
        out.pop("total_definition_count")
    return out


def _options_json(o: ViewOptions) -> TfprofViewOptions:
    """The options the view ran with (every ViewOptions field: tests/analyses/test_result_types.py)."""
    return {
        "max_depth": o.max_depth, "min_bytes": o.min_bytes, "min_peak_bytes": o.min_peak_bytes,
        "min_residual_bytes": o.min_residual_bytes, "min_output_bytes": o.min_output_bytes,
        "min_micros": o.min_micros, "min_accelerator_micros": o.min_accelerator_micros,
        "min_cpu_micros": o.min_cpu_micros, "min_params": o.min_params, "min_float_ops": o.min_float_ops,
        "min_occurrence": o.min_occurrence, "step": o.step, "order_by": o.order_by,
        "account_type_regexes": list(o.account_type_regexes), "start_name_regexes": list(o.start_name_regexes),
        "trim_name_regexes": list(o.trim_name_regexes), "show_name_regexes": list(o.show_name_regexes),
        "hide_name_regexes": list(o.hide_name_regexes), "account_displayed_op_only": o.account_displayed_op_only,
        "select": list(o.select),
    }


def compute(stores: Sequence[Any], options: Mapping[str, Any]) -> TfprofViewsResult:
    profile: TfprofProfile = stores[0]
    result = run_view(profile, options)
    opts = result.options
    notes = []
    if result.view == "code" and not profile.has_trace:
        notes.append("the profile has no Python call stacks (no OpLogProto code traces): the code view is empty")
    if result.view == "code" and opts.account_displayed_op_only:
        notes.append("the code view ignores account_displayed_op_only, as tfprof does")
    if "tensor_value" in opts.select:
        notes.append("tensor_value needs a checkpoint, which a ProfileProto does not carry")
    if profile.miss_accelerator_stream:
        notes.append("tfprof found accelerator ops without accelerator stream records: accelerator times "
                     "may be missing (a GPU tracing problem when the profile was taken)")
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": TOOL,
        "view": result.view,
        "step": opts.step,
        "steps": profile.steps,
        "has_trace": profile.has_trace,
        "node_count": profile.n_nodes,
        "options": _options_json(opts),
        "root": _totals(result),
        "displayed_rows": len(result.rows),
        "notes": notes,
        "warnings": list(profile.warnings),
        "tables": {"nodes": view_table(profile, result)},
    }


TOOLS = (
    Tool(
        name=TOOL, title="tfprof views", compute=compute, options=OPTIONS,
        description="tfprof's scope, graph, op and code views with its options.",
        result=TfprofViewsResult, needs=frozenset({"tfprof"}),
        requires="a tfprof ProfileProto (Profiler.serialize_to_string() / ProfileContext dump).",
        how_to=("Write one with tf.compat.v1.profiler.Profiler(...).serialize_to_string().",),
    ),
)
