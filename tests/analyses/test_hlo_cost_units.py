"""hlo_cost rules on small hand-built HLO modules; every expected count is derived in a comment."""

from __future__ import annotations

from tests.hlo_builder import F32, U32, HloBuilder, scalar_add


def test_elementwise_ops_cost_table_cycles_or_three_per_element() -> None:
    b = HloBuilder()
    entry = b.computation("main")
    p = b.add(entry, "p", "parameter", [4, 8])
    b.add(entry, "a", "add", [4, 8], (p, p))
    b.add(entry, "l", "log-plus-one", [4, 8], (p,))
    b.add(entry, "d", "divide", [4, 8], (p, p), element_type=U32)
    got = b.flops(entry)
    # f32 add: not in the sm_86 table -> 3 x 32; f32 log-plus-one: 262 x 32; u32 divide: 115 x 32.
    assert (got["a"], got["l"], got["d"], got["p"]) == (96, 8384, 3680, 0)


def test_fusion_weights_fused_ops_by_utilization() -> None:
    b = HloBuilder()
    fused = b.computation("fused")
    p0 = b.add(fused, "p0", "parameter", [100])
    a = b.add(fused, "a", "add", [100], (p0, p0))
    s = b.add(fused, "s", "slice", [10], (a,))
    c = b.add(fused, "c", "parameter", [4])
    x = b.add(fused, "x", "multiply", [4], (c, c))
    b1 = b.add(fused, "b1", "broadcast", [4, 10], (x,), dimensions=[0])
    b2 = b.add(fused, "b2", "broadcast", [4, 10], (x,), dimensions=[0])
    bs = b.add(fused, "bs", "broadcast", [4, 10], (s,), dimensions=[1])
    m = b.add(fused, "m", "add", [4, 10], (b1, b2))
    b.add(fused, "root", "subtract", [4, 10], (m, bs))
    entry = b.computation("main")
    q0 = b.add(entry, "q0", "parameter", [100])
    q1 = b.add(entry, "q1", "parameter", [4])
    b.add(entry, "fusion", "fusion", [4, 10], (q0, q1), fusion_kind=b"kLoop", called_computation_ids=[fused.id])
    # root subtract and m: utilization 1, 3 x 40 each = 240. The slice reads 10 of a's 100
    # elements: a has utilization 0.1 -> 0.1 x 300 = 30. x is read by two broadcasts (each
    # counts it once, whatever it broadcasts to): utilization 2 -> 2 x 12 = 24. Total 294.
    assert b.flops(entry)["fusion"] == 294


def test_reduce_and_all_reduce_use_the_reducer() -> None:
    b = HloBuilder()
    add = scalar_add(b)
    entry = b.computation("main")
    p = b.add(entry, "p", "parameter", [16, 8])
    z = b.add(entry, "z", "constant", [])
    b.add(entry, "r", "reduce", [8], (p, z), dimensions=[0], called_computation_ids=[add.id])
    b.add(entry, "ar", "all-reduce", [16, 8], (p,), called_computation_ids=[add.id])
    got = b.flops(entry)
    # reduce: (128 - 8) reductions x 3 (one f32 add); all-reduce: add priced over 128 elements.
    assert (got["r"], got["ar"]) == (360, 384)


def test_dot_and_cublas_gemm() -> None:
    b = HloBuilder()
    entry = b.computation("main")
    lhs = b.add(entry, "lhs", "parameter", [32, 64])
    rhs = b.add(entry, "rhs", "parameter", [64, 16])
    dot = b.add(entry, "dot", "dot", [32, 16], (lhs, rhs))
    dot.dot_dimension_numbers.lhs_contracting_dimensions.append(1)
    dot.dot_dimension_numbers.rhs_contracting_dimensions.append(0)
    gemm = b.add(entry, "gemm", "custom-call", [], (lhs, rhs), element_type=13,
                 custom_call_target=b"__cublas$lt$matmul",
                 backend_config=b'{"gemm_backend_config":{"dot_dimension_numbers":'
                                b'{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}')
    out = gemm.shape.tuple_shapes.add(element_type=F32)
    out.dimensions.extend([32, 16])
    gemm.shape.tuple_shapes.add(element_type=2).dimensions.append(1024)  # workspace
    b.add(entry, "other", "custom-call", [32, 16], (lhs,), custom_call_target=b"my_kernel")
    got = b.flops(entry)
    # 2 x 512 outputs x 64 contracted = 65536 for both; unknown custom-calls count 0.
    assert (got["dot"], got["gemm"], got["other"]) == (65536, 65536, 0)


def test_concatenate_flops() -> None:
    b = HloBuilder()
    entry = b.computation("main")
    x = b.add(entry, "x", "parameter", [4, 20])
    y = b.add(entry, "y", "parameter", [4, 64])
    b.add(entry, "major", "concatenate", [8, 20], (x, x), dimensions=[0])
    b.add(entry, "aligned", "concatenate", [4, 128], (y, y), dimensions=[1])
    b.add(entry, "straddling", "concatenate", [4, 84], (x, y), dimensions=[1])
    got = b.flops(entry)
    # 6 per element; 400 per element when dim > 0 and the first operand's extent (20) is not
    # a multiple of 32.
    assert (got["major"], got["aligned"], got["straddling"]) == (6 * 160, 6 * 512, 400 * 336)


def test_convolution_counts_valid_window_positions() -> None:
    b = HloBuilder()
    entry = b.computation("main")
    lhs = b.add(entry, "lhs", "parameter", [1, 4, 5, 5])  # batch, feature, h, w
    rhs = b.add(entry, "rhs", "parameter", [8, 4, 3, 3])  # out feature, in feature, h, w
    conv = b.add(entry, "conv", "convolution", [1, 8, 5, 5], (lhs, rhs), feature_group_count=1, batch_group_count=1)
    dn = conv.convolution_dimension_numbers
    dn.input_batch_dimension, dn.input_feature_dimension = 0, 1
    dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension = 0, 1
    dn.output_batch_dimension, dn.output_feature_dimension = 0, 1
    dn.input_spatial_dimensions.extend([2, 3])
    dn.kernel_spatial_dimensions.extend([2, 3])
    dn.output_spatial_dimensions.extend([2, 3])
    for _ in range(2):
        conv.window.dimensions.add(size=3, stride=1, padding_low=1, padding_high=1, window_dilation=1,
                                   base_dilation=1)
    # Per spatial dim, (kernel k, output o) pairs with 0 <= o - 1 + k < 5: 4 + 5 + 4 = 13.
    # FMAs = 4 in features x 8 out features x 1 batch x 13 x 13 = 5408 -> 10816 FLOPs.
    assert b.flops(entry)["conv"] == 10816


def test_reduce_window_sort_and_while() -> None:
    b = HloBuilder()
    add = scalar_add(b)
    body = b.computation("body")
    bp = b.add(body, "bp", "parameter", [10])
    b.add(body, "inc", "add", [10], (bp, bp))
    cond = b.computation("cond")
    cp = b.add(cond, "cp", "parameter", [10])
    b.add(cond, "lt", "compare", [], (cp, cp), element_type=1)
    entry = b.computation("main")
    p = b.add(entry, "p", "parameter", [4, 4])
    z = b.add(entry, "z", "constant", [])
    rw = b.add(entry, "rw", "reduce-window", [2, 2], (p, z), called_computation_ids=[add.id])
    for _ in range(2):
        rw.window.dimensions.add(size=2, stride=2, window_dilation=1, base_dilation=1)
    v = b.add(entry, "v", "parameter", [8])
    b.add(entry, "sort", "sort", [8], (v,))
    w = b.add(entry, "w", "parameter", [10])
    b.add(entry, "loop", "while", [10], (w,), called_computation_ids=[body.id, cond.id])
    got = b.flops(entry)
    # reduce-window: (4 - 1) reductions x 4 outputs x 3 = 36; sort: 8 x ceil(log2 8) = 24;
    # while: one body (add over 10 = 30) plus one condition (compare, 1 pred element = 3).
    assert (got["rw"], got["sort"], got["loop"]) == (36, 24, 33)
