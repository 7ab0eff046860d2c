"""``operators_by_shape`` against torch-tb-profiler 0.4.3's operator view grouped by input shape.

Golden: ``operators_by_shape`` of ``tests/golden/tb_profiler/<profile>.json``
(make_tb_profiler_goldens.py) on the demo PyTorch traces, the real ``tests/data/torch_compile`` and
``torch_gpu_lag`` traces, and ``tests/data/kineto_op_rules`` (written from Kineto's documented
fields: same-name nesting, annotations, PyTorch 1.8 ``Runtime`` calls; its ``make_traces.py`` says
which). Every (operator, input shape) group of the plugin is in tbprof's table and none else; calls
exact, host and self host durations within 0.01 us or 2 float64 ulps per call (the plugin's float
microseconds near 4.8e12-5.7e12; tbprof's are exact to the text). Device columns: equal where the
plugin reads the runtime calls (PyTorch 1.8's ``Runtime``); on Kineto's ``cuda_runtime`` traces the
plugin shows none, and tbprof's are derived in the test from the trace. TensorCore-eligible: equal,
but where tbprof sees a TensorCore kernel launched through ``cuda_runtime`` (docs/differences.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tbprof.analyses.ops import op_shapes
from tbprof.readers.chrome_trace import read_chrome_trace

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tb_profiler"
DATA = Path(__file__).resolve().parent.parent / "data"
# torch_compile, torch_gpu_lag: real traces of PyTorch 2.11 on an H100 (tests/data/<name>/README.md).
PROFILES = ("torch_cnn", "torch_ddp", "kineto_op_rules", "torch_compile", "torch_gpu_lag")
US_TOL = 0.01
# The plugin computes each duration from float64 microseconds near 5.7e12 (one ulp: 2^-10 us), so a
# group's sum may differ from tbprof's exact one by about 2 ulps per call.
ULP_US = 2.0 ** -10


def _tol(calls: int) -> float:
    return max(US_TOL, 2 * ULP_US * calls)


def _folder(sample_profiles: Path, profile: str) -> Path:
    return DATA / profile if (DATA / profile).is_dir() else sample_profiles / profile


@pytest.mark.parametrize("profile", PROFILES)
def test_groups_equal_torch_tb_profiler(sample_profiles: Path, profile: str) -> None:
    golden = json.loads((GOLDEN / f"{profile}.json").read_text())
    compared = 0
    for file_name, want in golden["files"].items():
        store = read_chrome_trace(_folder(sample_profiles, profile) / file_name)
        got = {(g[0], g[1]): g for g in op_shapes.operator_groups(store)}
        expected = {(w[0], w[1]): w for w in want["operators_by_shape"]}
        assert set(got) == set(expected)
        runtime_18 = "pt18" in file_name
        for key, w in expected.items():
            g = got[key]
            assert g[3] == w[2], key
            assert g[4] == pytest.approx(w[3], abs=_tol(w[2])) and g[5] == pytest.approx(w[4], abs=_tol(w[2])), key
            if runtime_18:
                assert (g[6], g[7]) == pytest.approx((w[5], w[6]), abs=US_TOL), key
                assert g[8] == w[7]
                # The plugin's ratios are 0 where there is no device time; tbprof's null.
                assert (g[9] or 0.0, g[10] or 0.0) == pytest.approx((100 * w[8], 100 * w[9])), key
            elif g[8] != w[7]:
                # tbprof reads cuda_runtime launches: an operator it calls eligible and the plugin
                # not ran a TensorCore kernel (itself or below).
                assert g[8] and not w[7] and (g[10] or 0.0) > 0, key
            compared += 1
    assert compared >= 25


def _group(store: Any, name: str, rows: int | None = None) -> op_shapes.Group:
    found = [g for g in op_shapes.operator_groups(store, "operator" if rows is None else "input_shape")
             if g[0] == name and (rows is None or f"[{rows}, " in g[1])]
    assert len(found) == 1, (name, found)
    return found[0]


def test_device_columns_from_cuda_runtime_launches() -> None:
    """tests/data/kineto_op_rules/eager.pt.trace.json (make_traces.py): each operator's device time
    is the kernels its ``cuda_runtime`` launches ran (their correlation), its children's included
    in the total; derived here from the durations the generator writes."""
    store = read_chrome_trace(DATA / "kineto_op_rules" / "eager.pt.trace.json")
    layer_norm_kernel, gemm, nccl, elementwise = 40.0, 150.0, 300.0, 20.0
    native = _group(store, "aten::native_layer_norm", 8)
    assert (native[6], native[7]) == (layer_norm_kernel, layer_norm_kernel)
    # aten::layer_norm -> aten::layer_norm -> aten::native_layer_norm: one call, its device time is
    # the child's, none of its own.
    outer = _group(store, "aten::layer_norm", 8)
    assert (outer[3], outer[6], outer[7]) == (1, layer_norm_kernel, 0.0)
    addmm, linear = _group(store, "aten::addmm", 8), _group(store, "aten::linear", 8)
    assert (addmm[6], addmm[7], addmm[9]) == (gemm, gemm, 100.0)  # an xmma_gemm kernel: TensorCore
    assert (linear[6], linear[7], linear[9], linear[10]) == (gemm, 0.0, None, 100.0)
    comms = _group(store, "record_param_comms")
    assert (comms[3], comms[7]) == (2, 2 * nccl)
    # aten::add_ with two aten::add_ children (not merged: two children), one of which launches.
    add = _group(store, "aten::add_")
    assert (add[3], add[6], add[7]) == (6, 2 * (elementwise + 0 + elementwise), 2 * elementwise)
    # Backward thread: evaluate_function -> AddmmBackward0 -> aten::mm (an 80 us h884 kernel) and
    # aten::div -> aten::div (one call, its elementwise kernel).
    h884 = 80.0
    assert _group(store, "autograd::engine::evaluate_function: AddmmBackward0")[6] == 2 * (h884 + elementwise)
    div = _group(store, "aten::div")
    assert (div[3], div[6], div[7]) == (2, 2 * elementwise, 2 * elementwise)


def test_tool_rows(sample_profiles: Path) -> None:
    stores = [read_chrome_trace(p) for p in sorted((sample_profiles / "torch_ddp").glob("*.pt.trace.json"))]
    result = op_shapes.compute(stores, {})
    assert result["group_count"] == sum(len(op_shapes.operator_groups(s)) for s in stores)
    assert op_shapes.has_input_shapes(stores[0])


def test_tensor_core_shares_not_determined_without_known_kernels() -> None:
    """nosteps.pt.trace.json runs only volta_sgemm_128x64_nn (no TensorCore name of the plugin's
    list): aten::mm has device time, but its TensorCore share is not determined (the plugin: 0)."""
    store = read_chrome_trace(DATA / "kineto_op_rules" / "nosteps.pt.trace.json")
    mm = _group(store, "aten::mm")
    sgemm_us = 120.0 + 120.0 + 320.0
    assert (mm[3], mm[6], mm[7]) == (3, sgemm_us, sgemm_us)
    assert (mm[9], mm[10]) == (None, None)


@pytest.mark.parametrize("profile", PROFILES)
def test_by_operator_equals_torch_tb_profiler(sample_profiles: Path, profile: str) -> None:
    golden = json.loads((GOLDEN / f"{profile}.json").read_text())
    for file_name, want in golden["files"].items():
        store = read_chrome_trace(_folder(sample_profiles, profile) / file_name)
        got = {g[0]: (g[3], g[4], g[5]) for g in op_shapes.operator_groups(store, "operator")}
        expected = {w[0]: tuple(w[1:4]) for w in want["operators_by_name"]}
        assert set(got) == set(expected)
        for n, (c, h, sh) in expected.items():
            assert got[n][0] == c and got[n][1:] == pytest.approx((h, sh), abs=_tol(c)), n


def test_by_call_stack_equals_torch_tb_profiler() -> None:
    """tests/data/kineto_with_stack: a trace written from Kineto's documented fields with
    ``Call stack`` args (no shared profile was recorded with_stack); the plugin's own answer on it
    is the golden. Operators without a call stack (aten::sum) are left out, as in the plugin."""
    data = Path(__file__).resolve().parent.parent / "data" / "kineto_with_stack"
    golden = json.loads((GOLDEN / "kineto_with_stack.json").read_text())
    for file_name, want in golden["files"].items():
        store = read_chrome_trace(data / file_name)
        got = {(g[0], g[2]): g[3:6] for g in op_shapes.operator_groups(store, "call_stack")}
        expected = {(n, st): (c, h, sh) for n, st, c, h, sh in want["operators_by_stack"]}
        assert set(got) == set(expected)
        for key, (c, h, sh) in expected.items():
            assert got[key][0] == c
            assert got[key][1] == pytest.approx(h, abs=US_TOL) and got[key][2] == pytest.approx(sh, abs=US_TOL)
        both = op_shapes.operator_groups(store, "input_shape_and_call_stack")
        assert {(g[0], g[2]) for g in both} == set(expected)  # one input shape per stack here


def test_group_by_is_checked() -> None:
    from tbprof.analyses.tool import OptionError

    with pytest.raises(OptionError):
        op_shapes.TOOLS[0].parse_options({"group_by": "module"})
