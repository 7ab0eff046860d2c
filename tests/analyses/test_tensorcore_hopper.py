"""TensorCore use of Hopper kernels, and "not determined" instead of 0 % (#33).

Kineto fixtures (tests/kineto_fixtures.py) of a PyTorch run whose ``aten::mm`` / attention
operators launch the kernels that cuBLASLt (``nvjet_sm90_*``), CUTLASS / cuDNN (``wgmma``,
``sm90_xmma``) and flash-attention run on an H100, next to element-wise kernels. XProf's
name list knows none of the Hopper names, so its rule alone reads 0 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview
from tests import kineto_fixtures as kf

# (operator, kernel, kernel duration µs)
HOPPER = [("aten::mm", "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNT", 300),
          ("aten::_flash_attention_forward", "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>", 200),
          ("aten::addmm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 100),
          ("aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", 400)]


def _events(ops: list[tuple[str, str, int]]) -> list[kf.Event]:
    events = [kf.x("user_annotation", "ProfilerStep#1", 1000, 10_000)]
    t = 1010
    for k, (op, kernel, dur) in enumerate(ops):
        events += [kf.x("cpu_op", op, t, 20, **{"External id": k + 1}),
                   kf.launch("cudaLaunchKernel", t + 5, 5, 100 + k),
                   kf.kernel(kernel, t + 50, dur, 100 + k)]
        t += 1000
    return events


def test_hopper_gemm_and_attention_kernels_use_tensorcores(tmp_path: Path) -> None:
    store = kf.write(tmp_path, kf.trace(_events(HOPPER)))
    result = kernel_stats.compute([store], {})
    total = sum(d for _, _, d in HOPPER)
    matrix = sum(d for op, _, d in HOPPER if op != "aten::add")
    assert result["tensorcore_fraction"] == pytest.approx(matrix / total)
    assert result["tensorcore_eligible_fraction"] == pytest.approx(matrix / total)
    assert result["tensorcore_note"] == ""
    # The rows keep XProf's own rule: of these names it knows only sm90_xmma_gemm ("xmma_gemm").
    kernels = result["tables"]["kernels"].data
    xprof_rule = dict(zip(kernels["kernel_name"].tolist(), kernels["kernel_uses_tensorcore"].tolist(), strict=True))
    assert xprof_rule == {kernel: "xmma_gemm" in kernel for _, kernel, _ in HOPPER}
    # The overview's top device ops: each matrix operator's kernel time is all TensorCore time.
    top = overview.compute([store], {})["tables"]["top_ops"].data
    shares = dict(zip(top["name"].tolist(), top["tensor_core_utilization_percent"].tolist(), strict=True))
    assert shares == {op: (0.0 if op == "aten::add" else 100.0) for op, _, _ in HOPPER}

def test_unknown_matrix_kernels_are_not_determined(tmp_path: Path) -> None:
    """An ``aten::mm`` whose kernel is a Triton GEMM: whether it used TensorCores is not in its name."""
    ops = [("aten::mm", "triton_tem_fused_mm_0", 300), HOPPER[3]]
    result = kernel_stats.compute([kf.write(tmp_path, kf.trace(_events(ops)))], {})
    assert result["tensorcore_fraction"] is None and result["tensorcore_eligible_fraction"] is None
    assert result["tensorcore_note"].startswith("Not determined")


def test_a_simt_gemm_is_a_true_zero(tmp_path: Path) -> None:
    """cuBLAS's fp32 SIMT GEMM is known not to use TensorCores: 0 % is then a finding."""
    ops = [("aten::mm", "ampere_sgemm_128x64_nn", 300), HOPPER[3]]
    result = kernel_stats.compute([kf.write(tmp_path, kf.trace(_events(ops)))], {})
    assert result["tensorcore_fraction"] == 0.0
    assert result["tensorcore_eligible_fraction"] == pytest.approx(300 / (300 + HOPPER[3][2]))
