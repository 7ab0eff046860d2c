"""The TensorCore headline of kernel stats and the overview (#29 §3, §4), against XProf 2.24.2.

Per kernel, ``kernel_uses_tensorcore`` and ``op_tensorcore_eligible`` are XProf's rules (the
row-by-row parity is test_ops_parity.test_kernel_stats_matches_xprof); the page's shares are the
kernel time of those rows over all kernel time, so on jax_mlp they equal the shares computed
from XProf's own rows. On jax_2hosts XProf's rules recognise no op and no kernel (JAX op
names, nvjet/Triton GEMMs), and a 0 % there would be false: the shares are null (shown as
"not determined", with the reason) and the overview's TensorCore column is empty.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tbprof.analyses.ops import kernel_stats
from tbprof.analyses.overview import overview
from tests.helpers import golden, store_of


def _xprof_share(profile: str, column: str) -> tuple[float, int]:
    g = golden(profile, "kernel_stats")
    rows = [dict(zip(g["columns"], r, strict=True)) for r in g["rows"]]
    total = sum(r["total_duration_us"] for r in rows)
    hit = [r for r in rows if r[column]]
    return sum(r["total_duration_us"] for r in hit) / total, len(hit)


def test_shares_equal_xprofs_rows_on_jax_mlp(profiles_root: Path) -> None:
    result = kernel_stats.compute([store_of(profiles_root, "jax_mlp")], {})
    eligible, n_eligible = _xprof_share("jax_mlp", "op_tensorcore_eligible")
    using, n_using = _xprof_share("jax_mlp", "kernel_uses_tensorcore")
    assert n_eligible == n_using == 4  # XProf's four cuBLAS xmma_gemm rows
    assert result["tensorcore_eligible_fraction"] == pytest.approx(eligible, rel=1e-3)
    assert result["tensorcore_fraction"] == pytest.approx(using, rel=1e-3)
    assert result["tensorcore_note"] == ""


def test_no_share_where_xprofs_rules_see_nothing(profiles_root: Path) -> None:
    stores = [store_of(profiles_root, "jax_2hosts_worker0"), store_of(profiles_root, "jax_2hosts_worker1")]
    assert _xprof_share("jax_2hosts", "op_tensorcore_eligible")[1] == 0
    assert _xprof_share("jax_2hosts", "kernel_uses_tensorcore")[1] == 0
    result = kernel_stats.compute(stores, {})
    assert result["has_gpu_kernels"]
    assert result["tensorcore_fraction"] is None and result["tensorcore_eligible_fraction"] is None
    assert "XProf's TensorCore rules" in result["tensorcore_note"]
    # The overview's top device ops: unknown (NaN), not 0 %.
    top = overview.compute(stores, {})["tables"]["top_ops"]
    assert top.n_rows > 0
    assert all(math.isnan(v) for v in top.data["tensor_core_utilization_percent"].tolist())


def test_overview_keeps_the_share_where_the_rules_match(profiles_root: Path) -> None:
    top = overview.compute([store_of(profiles_root, "jax_mlp")], {})["tables"]["top_ops"]
    shares = [v for v in top.data["tensor_core_utilization_percent"].tolist() if not math.isnan(v)]
    # XProf's overview marks its first top device op as using TensorCores.
    xprof_top = golden("jax_mlp", "overview_page")["top_device_ops"]
    assert xprof_top[0]["using_tensorcore"] is True
    assert shares and max(shares) > 0
