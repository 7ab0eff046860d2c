"""tfprof views against TensorFlow's own profiler, and each option's documented effect.

Goldens: tests/golden/make_tfprof_goldens.py ran TensorFlow 2.21's tfprof on the same
profile.pb for every case (view + options) and stored the rows it displayed, in order,
with their statistics. tbprof must display the same rows with the same numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.tfprof.tfprof_engine import ViewError, show_view
from tbprof.analyses.tfprof.tfprof_views import compute
from tbprof.analyses.tool import OptionError
from tbprof.protos import tfprof_log_pb2
from tbprof.service import tools as registry
from tests.tfprof_data import PROFILE_PB, golden, options, profile, rows_as_golden

CASES = golden("tfprof_views.json")["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_view_equals_tensorflow(case: dict[str, Any]) -> None:
    result = show_view(profile(), case["view"], options(case["options"]))
    got = rows_as_golden(result)
    want = [dict(zip(case["fields"], row, strict=True)) for row in case["rows"]]
    assert [r["name"] for r in got] == [r["name"] for r in want]
    for mine, theirs in zip(got, want, strict=True):
        for field, value in theirs.items():
            if value is None:  # a field TensorFlow's proto does not have for this view
                continue
            assert mine[field] == value, (theirs["name"], field)


def test_golden_covers_every_documented_option() -> None:
    documented = {"max_depth", "min_bytes", "min_peak_bytes", "min_residual_bytes", "min_output_bytes",
                  "min_micros", "min_accelerator_micros", "min_cpu_micros", "min_params", "min_float_ops",
                  "min_occurrence", "step", "order_by", "account_type_regexes", "start_name_regexes",
                  "trim_name_regexes", "show_name_regexes", "hide_name_regexes", "account_displayed_op_only"}
    assert documented <= {k for c in CASES for k in c["options"]}
    assert {c["view"] for c in CASES} == {"scope", "graph", "op", "code"}


# --- each option changes the output as tfprof documents it (options.md) ----------------------


def _independent_average(metric: str) -> dict[str, int]:
    """Per node, the integer mean over its traced steps, decoded with plain protobuf."""
    proto = tfprof_log_pb2.ProfileProto.FromString(PROFILE_PB.read_bytes())
    out = {}
    for n in proto.nodes.values():
        if not n.execs:
            continue
        if metric == "cpu":
            values = [sum(t.int64_values[1] for ts in e.cpu_execs.values() for t in ts.times) for e in n.execs.values()]
        else:  # requested bytes
            values = [sum(m.requested_bytes for m in e.memory_execs) for e in n.execs.values()]
        out[n.name.decode()] = sum(values) // len(values)
    return out


def _step_cpu(step: int) -> int:
    proto = tfprof_log_pb2.ProfileProto.FromString(PROFILE_PB.read_bytes())
    return sum(t.int64_values[1] for n in proto.nodes.values() if step in n.execs
               for ts in n.execs[step].cpu_execs.values() for t in ts.times)


def _rows(view: str, **overrides: Any) -> list[dict[str, Any]]:
    return rows_as_golden(show_view(profile(), view, options(overrides)))


Check = Callable[[list[dict[str, Any]], list[dict[str, Any]]], bool]


def _all_below_root(pred: Callable[[dict[str, Any]], bool]) -> Check:
    return lambda rows, base: all(pred(r) for r in rows[1:]) and not all(pred(r) for r in base[1:])


def _siblings_descending(key: str) -> Check:
    def check(rows: list[dict[str, Any]], base: list[dict[str, Any]]) -> bool:
        # Consecutive rows at one depth under one parent must not increase.
        for i in range(1, len(rows)):
            for j in range(i + 1, len(rows)):
                if rows[j]["depth"] < rows[i]["depth"]:
                    break
                if rows[j]["depth"] == rows[i]["depth"]:
                    if rows[j][key] > rows[i][key]:
                        return False
                    break
        return rows != base
    return check


def _names_fullmatch(regexes: list[str], negate: bool = False) -> Check:
    def hit(name: str) -> bool:
        return any(re.fullmatch(r, name) for r in regexes)
    return _all_below_root(lambda r: hit(r["name"]) != negate)


def _root_total(metric: str, expected: Callable[[], int]) -> Check:
    return lambda rows, base: rows[0][f"total_{metric}"] == expected() != base[0][f"total_{metric}"]


def _matmul_sum_cpu() -> int:
    avg = _independent_average("cpu")
    proto = tfprof_log_pb2.ProfileProto.FromString(PROFILE_PB.read_bytes())
    return sum(avg.get(n.name.decode(), 0) for n in proto.nodes.values() if b"MatMul" in n.op_types)


def _shown_self_sum(rows: list[dict[str, Any]], base: list[dict[str, Any]]) -> bool:
    return rows[0]["total_exec_micros"] == sum(r["exec_micros"] for r in rows[1:]) < base[0]["total_exec_micros"]


def _start_rows(rows: list[dict[str, Any]], base: list[dict[str, Any]]) -> bool:
    tops = [r["name"] for r in rows if r["depth"] == 1]
    return bool(tops) and all(re.fullmatch("gradients/mlp/.*_grad", n) for n in tops)


def _trimmed(rows: list[dict[str, Any]], base: list[dict[str, Any]]) -> bool:
    # A trimmed node is shown, but nothing below it.
    for i, r in enumerate(rows):
        if r["name"] in ("gradients/mlp", "GradientDescent"):
            if i + 1 < len(rows) and rows[i + 1]["depth"] > r["depth"]:
                return False
    return any(r["name"] == "gradients/mlp" for r in rows) and len(rows) < len(base)


OPTION_TABLE: list[tuple[str, str, dict[str, Any], Check]] = [
    ("max_depth", "scope", {"max_depth": 2}, lambda rows, base: max(r["depth"] for r in rows) == 1
     < max(r["depth"] for r in base)),
    ("max_depth_op_list_length", "op", {"max_depth": 3}, lambda rows, base: len(rows) == 1 + 4 < len(base)),
    ("min_bytes", "scope", {"min_bytes": 1000}, _all_below_root(lambda r: r["total_requested_bytes"] >= 1000)),
    ("min_peak_bytes", "scope", {"min_peak_bytes": 1000}, _all_below_root(lambda r: r["total_peak_bytes"] >= 1000)),
    ("min_residual_bytes", "scope", {"min_residual_bytes": 500},
     _all_below_root(lambda r: r["total_residual_bytes"] >= 500)),
    ("min_output_bytes", "scope", {"min_output_bytes": 1000},
     _all_below_root(lambda r: r["total_output_bytes"] >= 1000)),
    ("min_micros", "scope", {"min_micros": 10}, _all_below_root(lambda r: r["total_exec_micros"] >= 10)),
    ("min_accelerator_micros", "scope", {"min_accelerator_micros": 1},
     lambda rows, base: len(rows) == 1 < len(base)),  # a CPU-only profile: only the root stays
    ("min_cpu_micros", "scope", {"min_cpu_micros": 20}, _all_below_root(lambda r: r["total_cpu_exec_micros"] >= 20)),
    ("min_params", "scope", {"min_params": 1}, _all_below_root(lambda r: r["parameters"] >= 1)),
    ("min_float_ops", "scope", {"min_float_ops": 1000}, _all_below_root(lambda r: r["float_ops"] >= 1000)),
    ("min_occurrence", "scope", {"min_occurrence": 1}, _all_below_root(lambda r: r["run_count"] >= 1)),
    ("min_occurrence_op", "op", {"min_occurrence": 3}, _all_below_root(lambda r: r["graph_nodes"] >= 3)),
    ("step", "scope", {"step": 3}, _root_total("cpu_exec_micros", lambda: _step_cpu(3))),
    ("step_average", "scope", {"step": 3},
     lambda rows, base: base[0]["total_cpu_exec_micros"] == sum(_independent_average("cpu").values())),
    ("order_by_micros", "scope", {"order_by": "micros"}, _siblings_descending("total_exec_micros")),
    ("order_by_bytes", "scope", {"order_by": "bytes"}, _siblings_descending("total_requested_bytes")),
    ("order_by_float_ops_op", "op", {"order_by": "float_ops"}, _siblings_descending("float_ops")),
    ("account_type_regexes", "scope", {"account_type_regexes": ["MatMul"]},
     _root_total("cpu_exec_micros", _matmul_sum_cpu)),
    ("start_name_regexes", "scope", {"start_name_regexes": ["gradients/mlp/.*_grad"]}, _start_rows),
    ("trim_name_regexes", "scope", {"trim_name_regexes": ["gradients/mlp", "GradientDescent"]}, _trimmed),
    ("show_name_regexes", "scope", {"show_name_regexes": ["mlp/.*", ".*Sum"]}, _names_fullmatch(["mlp/.*", ".*Sum"])),
    ("hide_name_regexes", "scope", {"hide_name_regexes": ["gradients/.*"]},
     _names_fullmatch(["gradients/.*"], negate=True)),
    ("account_displayed_op_only", "scope", {"show_name_regexes": ["mlp/.*", ".*Sum"],
                                            "account_displayed_op_only": True}, _shown_self_sum),
]


@pytest.mark.parametrize("name,view,overrides,check", OPTION_TABLE, ids=[t[0] for t in OPTION_TABLE])
def test_option_changes_output_as_documented(name: str, view: str, overrides: dict[str, Any],
                                             check: Check) -> None:
    base = _rows(view)
    rows = _rows(view, **overrides)
    assert rows[0]["name"] == "_TFProfRoot"
    assert check(rows, base)


def test_step_average_is_the_default() -> None:
    # With step=-1 the root's CPU total is the sum of the per-node integer means.
    rows = _rows("scope")
    assert rows[0]["total_cpu_exec_micros"] == sum(_independent_average("cpu").values())
    assert rows[0]["total_requested_bytes"] == sum(_independent_average("bytes").values())


def test_select_picks_the_columns() -> None:
    p = profile()
    only_bytes = compute([p], {"view": "scope", "select": ("bytes",)})["tables"]["nodes"]
    names = [c.name for c in only_bytes.columns]
    assert "requested_bytes" in names and "total_requested_bytes" in names
    assert "exec_time_us" not in names and "float_ops" not in names
    micros = compute([p], {"view": "scope", "select": ("micros", "op_types", "device")})["tables"]["nodes"]
    names = [c.name for c in micros.columns]
    # tfprof's "micros" shows total, accelerator and CPU time together.
    assert {"exec_time_us", "accelerator_time_us", "cpu_time_us", "op_types", "devices"} <= set(names)
    assert "requested_bytes" not in names


def test_tool_result_shape() -> None:
    result = compute([profile()], {"view": "op", "order_by": "micros"})
    assert result["schema_version"] == 1 and result["tool"] == "tfprof_views"
    table = result["tables"]["nodes"]
    want = next(c for c in CASES if c["id"] == "op_default")
    assert table.n_rows == len(want["rows"])
    assert result["root"]["total_exec_micros"] == want["rows"][0][want["fields"].index("total_exec_micros")]
    # The first op row under the root is the costliest op type.
    exec_us = np.asarray(table.data["exec_time_us"][1:])
    assert exec_us[0] == exec_us.max()


@pytest.mark.parametrize("raw,match", [
    ({"order_by": "depth"}, "order_by"),
    ({"select": "bytes,colour"}, "select"),
    ({"step": "7"}, "step=7 is not in the profile"),
    ({"show_name_regexes": "mlp/(.*"}, "regex"),
    ({"view": "tree"}, "view"),
    ({"max_depth": "ten"}, "max_depth"),
])
def test_bad_options_are_option_errors(raw: dict[str, str], match: str) -> None:
    tool = registry.get("tfprof_views")
    assert tool is not None
    with pytest.raises(OptionError, match=match):
        tool.compute([profile()], tool.parse_options(raw))


def test_view_error_is_a_value_error() -> None:
    with pytest.raises(ViewError):
        show_view(profile(), "scope", options({"order_by": "colour"}))
