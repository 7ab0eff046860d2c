"""The TensorCore headline of kernel stats and the overview (#29 §3, §4, #33), against XProf 2.24.2.

Per kernel, ``kernel_uses_tensorcore`` and ``op_tensorcore_eligible`` are XProf's rules (the
row-by-row parity is test_ops_parity.test_kernel_stats_matches_xprof). The page's shares count
XProf's TensorCore rows plus the Hopper kernels its list lacks (cuBLASLt's ``nvjet_sm90_*``,
which both JAX profiles run): computed here from XProf's own rows and the kernel names. On
jax_2hosts XProf's rules recognise no op and no kernel, and its 0 % is false: the nvjet GEMMs
are its TensorCore time. Where no kernel's TensorCore use can be told from its name, the
shares are null (test_tensorcore_hopper.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview
from tests.helpers import golden, store_of


def _xprof_share(profile: str, column: str, hopper: bool = False) -> tuple[float, int]:
    """The share of XProf's kernel time in rows where ``column`` holds (or, with ``hopper``, whose
    kernel is a cuBLASLt nvjet GEMM), and how many rows."""
    g = golden(profile, "kernel_stats")
    rows = [dict(zip(g["columns"], r, strict=True)) for r in g["rows"]]
    total = sum(r["total_duration_us"] for r in rows)
    hit = [r for r in rows if r[column] or (hopper and r["kernel_name"].startswith("nvjet_sm90_"))]
    return sum(r["total_duration_us"] for r in hit) / total, len(hit)


def test_shares_equal_xprofs_rows_on_jax_mlp(profiles_root: Path) -> None:
    result = kernel_stats.compute([store_of(profiles_root, "jax_mlp")], {})
    assert _xprof_share("jax_mlp", "op_tensorcore_eligible")[1] == 4  # XProf's four cuBLAS xmma_gemm rows
    eligible, n_eligible = _xprof_share("jax_mlp", "op_tensorcore_eligible", hopper=True)
    using, n_using = _xprof_share("jax_mlp", "kernel_uses_tensorcore", hopper=True)
    assert n_eligible == n_using == 4 + 3  # and three nvjet_sm90 GEMMs
    assert result["tensorcore_eligible_fraction"] == pytest.approx(eligible, rel=1e-3)
    assert result["tensorcore_fraction"] == pytest.approx(using, rel=1e-3)
    assert result["tensorcore_note"] == ""


def test_hopper_share_where_xprofs_rules_see_nothing(profiles_root: Path) -> None:
    stores = [store_of(profiles_root, "jax_2hosts_worker0"), store_of(profiles_root, "jax_2hosts_worker1")]
    assert _xprof_share("jax_2hosts", "op_tensorcore_eligible")[1] == 0
    assert _xprof_share("jax_2hosts", "kernel_uses_tensorcore")[1] == 0
    using, n_using = _xprof_share("jax_2hosts", "kernel_uses_tensorcore", hopper=True)
    assert n_using > 0
    result = kernel_stats.compute(stores, {})
    assert result["has_gpu_kernels"] and result["tensorcore_note"] == ""
    assert result["tensorcore_fraction"] == pytest.approx(using, rel=1e-3)
    assert result["tensorcore_eligible_fraction"] == pytest.approx(using, rel=1e-3)
    # The overview's top device ops: known (NaN only for an op without kernels), some on TensorCores.
    top = overview.compute(stores, {})["tables"]["top_ops"]
    known = [v for v in top.data["tensor_core_utilization_percent"].tolist() if not math.isnan(v)]
    assert known and max(known) > 0


def test_overview_keeps_the_share_where_the_rules_match(profiles_root: Path) -> None:
    top = overview.compute([store_of(profiles_root, "jax_mlp")], {})["tables"]["top_ops"]
    shares = [v for v in top.data["tensor_core_utilization_percent"].tolist() if not math.isnan(v)]
    # XProf's overview marks its first top device op as using TensorCores.
    xprof_top = golden("jax_mlp", "overview_page")["top_device_ops"]
    assert xprof_top[0]["using_tensorcore"] is True
    assert shares and max(shares) > 0
