"""Device-op FLOPs from our HLO cost analysis against XProf 2.24.2's goldens.

op_profile: every HLO op XProf lists under a category (depth 2 of "group_by_category") has
our total FLOPs (per-execution FLOPs x occurrences) exactly equal to XProf's ``flops``.
framework_op_stats: the measured FLOP rate of every device framework op is within 1 % of
XProf's. The goldens are XProf's output; nothing here is regenerated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tbprof.analyses.ops import framework_op_stats as tf_stats
from tbprof.analyses.ops import op_metrics
from tbprof.analyses.overview import overview
from tbprof.domain import hlo_cost
from tests.helpers import golden, store_of
from tests.hlo_parity import (
    JAX_2HOSTS_MERGED_OP,
    PROFILES,
    XPROF_DUPLICATES,
    XPROF_MERGED_PROGRAM,
    op_profile_leaves_vs_xprof,
    xprof_hlo_ops,
)


@pytest.mark.parametrize("profile", PROFILES)
def test_hlo_op_flops_match_xprof_op_profile(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    xprof = xprof_hlo_ops(profile)
    assert xprof
    for x in xprof:
        name = x["name"].removesuffix(XPROF_DUPLICATES)
        per_run = hlo_cost.hlo_op_flops(store, int(x["program_id"])).get(name)
        assert per_run is not None, name
        assert per_run * x["occurrences"] == x["flops"], name  # exact: integer FLOP counts


@pytest.mark.parametrize("profile", PROFILES)
def test_device_op_metrics_carry_xprof_flops(profiles_root: Path, profile: str) -> None:
    """The device op table (what op_profile and the op stats tools read) has XProf's FLOPs
    wherever its occurrences are XProf's."""
    db = op_metrics.device_op_metrics(store_of(profiles_root, profile))
    ours = {(int(p), str(n)): (int(o), float(f))
            for n, p, o, f in zip(db.name, db.program_id, db.occurrences, db.flops, strict=True)}
    for x in xprof_hlo_ops(profile):
        key = (int(x["program_id"]), x["name"].removesuffix(XPROF_DUPLICATES))
        occurrences, flops = ours[key]
        if occurrences == x["occurrences"]:
            assert flops == x["flops"], key


@pytest.mark.parametrize("profile", PROFILES)
def test_op_profile_leaf_flops_match_xprof(profiles_root: Path, profile: str) -> None:
    """The op_profile tool's HLO op leaves show XProf's FLOPs. On jax_2hosts XProf counts the
    ops of the second jit__normal program (15909) under the first (15245) (docs/differences.md,
    "Device occurrences"), so there loop_multiply_fusion of 15245 has half XProf's occurrences
    and FLOPs, and the loop fusion category total differs by that op."""
    pairs, merged = op_profile_leaves_vs_xprof(profiles_root, profile, "flops", lambda x: x["flops"])
    for key, leaf, x in pairs:
        if key in merged:
            # Same per-execution FLOPs: the difference is only in what XProf counts as one op.
            assert leaf["flops"] / leaf["occurrences"] == x["flops"] / x["occurrences"], key
            continue
        assert leaf["flops"] == x["flops"], key
    assert merged == ({("loop_multiply_fusion", XPROF_MERGED_PROGRAM)} if profile.startswith("jax_2hosts") else set())





@pytest.mark.parametrize("profile", PROFILES)
def test_framework_op_flop_rate_matches_xprof(profiles_root: Path, profile: str) -> None:
    """Measured FLOP rate (FLOPs / total time) of every device framework op within 1 % of
    XProf's, except on jax_2hosts the op whose occurrences XProf merges across two programs."""
    store = store_of(profiles_root, profile)
    rows = tf_stats.compute([store], {"include_idle": True})["tables"]["ops"]
    names = [c.name for c in rows.columns]
    ours = {(r["type"], r["operation"]): r for r in (dict(zip(names, v, strict=True)) for v in rows.rows())
            if r["host_or_device"] == "Device"}
    table = golden(profile, "framework_op_stats")["include_idle"]
    xprof = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    device = [x for x in xprof if x["host_or_device"] == "Device" and x["type"] != "IDLE"]
    assert device
    compared = 0
    for x in device:
        if profile.startswith("jax_2hosts") and x["operation"] == JAX_2HOSTS_MERGED_OP:
            continue
        o = ours[(x["type"], x["operation"])]
        assert o["measured_flop_rate_gflops_per_sec"] == pytest.approx(
            x["measured_flop_rate_gflops_per_sec"], rel=0.01, abs=1e-9), x["operation"]
        compared += 1
    assert compared == len(device) - (1 if profile.startswith("jax_2hosts") else 0)


@pytest.mark.parametrize("profile", PROFILES)
def test_overview_top_device_op_flop_rate_matches_xprof(profiles_root: Path, profile: str) -> None:
    """The overview's top device ops show XProf's FLOP rate wherever XProf's is non-zero (an op
    with 0 FLOPs shows an empty rate in tbprof, 0 in XProf), except the merged jax_2hosts op."""
    table = overview.compute([store_of(profiles_root, profile)], {})["tables"]["top_ops"]
    names = [c.name for c in table.columns]
    ours = {r["name"]: r for r in (dict(zip(names, v, strict=True)) for v in table.rows())}
    compared = 0
    for x in golden(profile, "overview_page")["top_device_ops"]:
        if x["flop_rate_gflops_per_sec"] == 0 or (profile.startswith("jax_2hosts")
                                                 and x["operation"] == JAX_2HOSTS_MERGED_OP):
            continue
        assert ours[x["operation"]]["flop_rate_gflops_per_sec"] == pytest.approx(
            x["flop_rate_gflops_per_sec"], rel=0.01), x["operation"]
        compared += 1
    assert compared >= 4


def test_all_hosts_framework_op_flop_rate_matches_xprof(profiles_root: Path) -> None:
    """jax_2hosts on both hosts: FLOPs summed over the hosts, rate within 1 % of XProf's."""
    stores = [store_of(profiles_root, "jax_2hosts_worker0"), store_of(profiles_root, "jax_2hosts_worker1")]
    rows = tf_stats.compute(stores, {"include_idle": True})["tables"]["ops"]
    names = [c.name for c in rows.columns]
    ours = {(r["type"], r["operation"]): r for r in (dict(zip(names, v, strict=True)) for v in rows.rows())
            if r["host_or_device"] == "Device"}
    table = golden("jax_2hosts", "framework_op_stats")["include_idle"]
    device = [x for x in (dict(zip(table["columns"], r, strict=True)) for r in table["rows"])
              if x["host_or_device"] == "Device" and x["type"] != "IDLE" and x["operation"] != JAX_2HOSTS_MERGED_OP]
    assert len(device) >= 5
    for x in device:
        assert ours[(x["type"], x["operation"])]["measured_flop_rate_gflops_per_sec"] == pytest.approx(
            x["measured_flop_rate_gflops_per_sec"], rel=0.01, abs=1e-9), x["operation"]
