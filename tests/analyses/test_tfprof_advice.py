"""tfprof_advice against the reports of TensorFlow's own advisor on the same profile."""

from __future__ import annotations

import re
from typing import Any

from tbprof.analyses.tfprof.tfprof_advice import compute
from tests.tfprof_data import golden, profile


def _format_time(us: int) -> str:
    """tfprof's FormatTime (tfprof_utils.cc), to compare with its report text."""
    if us >= 1_000_000:
        return f"{us / 1e6:.2f}sec"
    if us >= 1000:
        return f"{us / 1e3:.2f}ms"
    return f"{us}us"


def test_expensive_operations_match_tensorflow() -> None:
    reports = golden("tfprof_advice.json")["checkers"]["ExpensiveOperationChecker"]
    op_report, scope_report, code_report = reports
    result = compute([profile()], {})
    findings: Any = next(c for c in result["checks"] if c["check"] == "expensive_operations")["findings"]

    want_ops = re.findall(r"top \d operation type: (\S+), cpu: (\S+), accelerator: (\S+), total: (\S+) \(([\d.]+)%\)",
                          op_report)
    got_ops = [(o["op_type"], _format_time(o["cpu_us"]), _format_time(o["accelerator_us"]),
                _format_time(o["exec_us"]), f"{100 * o['share']:.2f}") for o in findings["op_types"]]
    assert got_ops == [tuple(w) for w in want_ops]

    # TensorFlow reports each scope's own time (0 for a pure name scope); tbprof reports the
    # scope's total. The scopes and their order are the same.
    want_scopes = re.findall(r"top \d graph node: ([^,]+),", scope_report)
    assert [s["scope"] for s in findings["scopes"]] == want_scopes

    want_sites = re.findall(r"^( *)(.+), cpu: (\S+), accelerator: (\S+), total: (\S+)$", code_report, re.M)
    got_sites = [(" " * 2 * s["depth"], s["call_site"], _format_time(s["total_cpu_us"]),
                  _format_time(s["total_accelerator_us"]), _format_time(s["total_exec_us"]))
                 for s in findings["call_sites"]]
    assert got_sites == [tuple(w) for w in want_sites]


def test_checks_without_findings_agree_with_tensorflow() -> None:
    checkers = golden("tfprof_advice.json")["checkers"]
    result = {c["check"]: c for c in compute([profile()], {})["checks"]}
    # A CPU-only profile: TensorFlow's utilisation checker reports nothing, tbprof says why.
    assert checkers["AcceleratorUtilizationChecker"] == []
    assert result["accelerator_utilization"]["status"] == "not_applicable"
    assert checkers["OperationChecker"] == []
    assert result["faster_alternatives"]["findings"] == []


def test_advice_table_has_a_line_per_sentence() -> None:
    result = compute([profile()], {})
    table = result["tables"]["advice"]
    assert table.n_rows == sum(len(c["text"]) for c in result["checks"])
    assert set(table.data["check"].tolist()) == {"accelerator_utilization", "expensive_operations",
                                                 "faster_alternatives"}
