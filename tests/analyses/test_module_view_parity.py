"""``module_view`` against torch-tb-profiler 0.4.3's module view, on
``tests/data/kineto_with_modules`` (a Kineto trace written from its documented ``with_modules``
fields: ``python_function`` events with ``Python id``, ``Python parent id`` and ``Python module
id``; no shared profile was recorded with modules). Golden ``module_view`` of
``tests/golden/tb_profiler/kineto_with_modules.json`` (make_tb_profiler_goldens.py): the same
modules at the same depths with equal counts and durations (the trace's whole microseconds).
The operator view on the same trace must ignore the plain Python functions between an operator
and its module (they are not nodes of the plugin's call tree)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbprof.analyses.ops import modules, op_shapes
from tbprof.readers.chrome_trace import read_chrome_trace

DATA = Path(__file__).resolve().parent.parent / "data" / "kineto_with_modules"
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tb_profiler" / "kineto_with_modules.json"


def test_modules_over_the_operator_tree() -> None:
    """tests/data/kineto_op_rules/eager.pt.trace.json (its make_traces.py): a module around the
    nested aten::layer_norm, inside a CompiledFunction annotation the plugin does not read."""
    folder = DATA.parent / "kineto_op_rules"
    golden = json.loads((GOLDEN.parent / "kineto_op_rules.json").read_text())
    want = golden["files"]["eager.pt.trace.json"]["module_view"]
    got = modules.module_rows(read_chrome_trace(folder / "eager.pt.trace.json"))
    assert len(want) == 2
    assert [r[:5] for r in got] == [tuple(w[:5]) for w in want]
    assert [r[5:] for r in got] == [pytest.approx(tuple(w[5:])) for w in want]


def test_modules_equal_torch_tb_profiler() -> None:
    golden = json.loads(GOLDEN.read_text())
    for file_name, want in golden["files"].items():
        store = read_chrome_trace(DATA / file_name)
        got = {(d, n, mid): rest for d, n, mid, *rest in modules.module_rows(store)}
        expected = {(d, n, mid): rest for d, n, mid, *rest in want["module_view"]}
        assert set(got) == set(expected)
        for k, (occ, ops, host, self_host, avg) in expected.items():
            assert got[k][0] == occ and got[k][1] == ops
            assert got[k][2:] == pytest.approx([host, self_host, avg])
        # The operator view on this trace: equal to the plugin's too (calls, host times,
        # TensorCore eligibility; no device work here, so tbprof's device columns are null).
        ops_got = {(g[0], g[1]): [*g[3:6], g[8]] for g in op_shapes.operator_groups(store)}
        ops_want = {(w[0], w[1]): [*w[2:5], w[7]] for w in want["operators_by_shape"]}
        assert ops_got == pytest.approx(ops_want)
        assert all(g[6] is None and g[7] is None for g in op_shapes.operator_groups(store))


def test_tool_and_availability(sample_profiles: Path) -> None:
    store = read_chrome_trace(DATA / "cpu.pt.trace.json")
    result = modules.compute([store], {})
    assert result["module_count"] == 4 and modules.has_modules(store)
    cnn = read_chrome_trace(next((sample_profiles / "torch_cnn").glob("*.pt.trace.json")))
    assert not modules.has_modules(cnn)  # recorded without with_modules
