"""Device-op bytes accessed from our HLO cost analysis against XProf 2.24.2's goldens.

op_profile: every HLO op XProf lists under a category (depth 2 of "group_by_category") has
our HBM bytes (per-execution HBM bytes x occurrences) exactly equal to XProf's
``bytes_accessed[0]`` (the HBM entry of its memory breakdown).
framework_op_stats: the measured memory bandwidth of every device framework op is within 1 %
of XProf's, and so is its operational intensity (FLOPs per byte). Both columns are GiB/s
(XProf's unit for bandwidths, which every tbprof page shows). The goldens are XProf's output;
nothing here is regenerated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.ops import framework_op_stats as tf_stats
from tbprof.analyses.ops import op_metrics, op_profile
from tbprof.domain import hlo_cost, roofline
from tbprof.service import tools as registry
from tests.helpers import golden, store_of
from tests.hlo_parity import (
    JAX_2HOSTS_MERGED_OP,
    PROFILES,
    XPROF_DUPLICATES,
    XPROF_MERGED_PROGRAM,
    op_profile_leaves_vs_xprof,
    xprof_hlo_ops,
)

SECOND_NORMAL_PROGRAM = 15909  # jax_2hosts: the second jit__normal, merged by XProf into 15245


def _hbm(x: dict[str, Any]) -> int:
    """XProf's HBM bytes of an op-profile node (first entry of its per-memory-space list)."""
    return int(x["bytes_accessed"][0])


@pytest.mark.parametrize("profile", PROFILES)
def test_hlo_op_bytes_match_xprof_op_profile(profiles_root: Path, profile: str) -> None:
    """Per op within its own program: per-execution HBM bytes x XProf's occurrences. XProf
    shows one op for same-named ops of several programs ("and its duplicate(s)") with their
    bytes summed: those are compared as the sum of our device ops of that name."""
    store = store_of(profiles_root, profile)
    db = op_metrics.device_op_metrics(store)
    xprof = xprof_hlo_ops(profile)
    assert xprof
    for x in xprof:
        name = x["name"].removesuffix(XPROF_DUPLICATES)
        if x["name"].endswith(XPROF_DUPLICATES):
            same = [float(b) for n, b in zip(db.name, db.hbm, strict=True) if n == name]
            assert len(same) > 1, name
            assert sum(same) == _hbm(x), name
            continue
        per_run = hlo_cost.hlo_op_bytes(store, int(x["program_id"])).get(name)
        assert per_run is not None, name
        assert per_run.hbm * x["occurrences"] == _hbm(x), name  # exact: integer byte counts


@pytest.mark.parametrize("profile", PROFILES)
def test_op_profile_leaf_bytes_match_xprof(profiles_root: Path, profile: str) -> None:
    """The op_profile tool's HLO op leaves show XProf's HBM bytes; on jax_2hosts the op whose
    occurrences XProf merges across two programs has XProf's bytes per execution."""
    pairs, merged = op_profile_leaves_vs_xprof(profiles_root, profile, "bytes_accessed", _hbm)
    for key, leaf, x in pairs:
        if key in merged:
            assert leaf["bytes_accessed"] / leaf["occurrences"] == x["bytes_accessed"] / x["occurrences"], key
            continue
        assert leaf["bytes_accessed"] == x["bytes_accessed"], key
    assert merged == ({("loop_multiply_fusion", XPROF_MERGED_PROGRAM)} if profile.startswith("jax_2hosts") else set())


def _device_rows(stores: list[Any], profile: str, skip_merged: bool) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    rows = tf_stats.compute(stores, {"include_idle": True})["tables"]["ops"]
    names = [c.name for c in rows.columns]
    ours = {(r["type"], r["operation"]): r for r in (dict(zip(names, v, strict=True)) for v in rows.rows())
            if r["host_or_device"] == "Device"}
    table = golden(profile, "framework_op_stats")["include_idle"]
    device = [x for x in (dict(zip(table["columns"], r, strict=True)) for r in table["rows"])
              if x["host_or_device"] == "Device" and x["type"] != "IDLE"
              and not (skip_merged and x["operation"] == JAX_2HOSTS_MERGED_OP)]
    return [(ours[(x["type"], x["operation"])], x) for x in device]


def _check_memory_columns(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for o, x in pairs:
        assert o["measured_memory_bw_gibibytes_per_sec"] == pytest.approx(
            x["measured_memory_bw_gibibytes_per_sec"], rel=0.01, abs=1e-12), x["operation"]
        assert o["operational_intensity_flops_per_byte"] == pytest.approx(
            x["operational_intensity_flops_per_byte"], rel=0.01, abs=1e-12), x["operation"]


@pytest.mark.parametrize("profile", PROFILES)
def test_framework_op_memory_bw_matches_xprof(profiles_root: Path, profile: str) -> None:
    """Memory bandwidth (bytes / total time; gemms count their result here, unlike the op
    profile's HBM bytes) and operational intensity of every device framework op within 1 % of
    XProf's, except on jax_2hosts the op whose occurrences XProf merges across two programs."""
    pairs = _device_rows([store_of(profiles_root, profile)], profile, profile.startswith("jax_2hosts"))
    assert len(pairs) >= 5
    assert any(x["measured_memory_bw_gibibytes_per_sec"] > 0 for _, x in pairs)
    _check_memory_columns(pairs)


def test_all_hosts_framework_op_memory_bw_matches_xprof(profiles_root: Path) -> None:
    """jax_2hosts on both hosts: bytes summed over the hosts."""
    stores = [store_of(profiles_root, "jax_2hosts_worker0"), store_of(profiles_root, "jax_2hosts_worker1")]
    pairs = _device_rows(stores, "jax_2hosts", skip_merged=True)
    assert len(pairs) >= 5
    _check_memory_columns(pairs)


@pytest.mark.parametrize("profile", PROFILES)
def test_peak_hbm_bandwidth_matches_xprof(profiles_root: Path, profile: str) -> None:
    """XProf's op profile divides each op's HBM bandwidth by the device's peak: its
    bandwidth_utilization_fractions give the peak back (bytes / time / fraction)."""
    env = roofline.perf_env([store_of(profiles_root, profile)])
    checked = 0
    for x in xprof_hlo_ops(profile):
        fraction = x["bandwidth_utilization_fractions"][0]
        if fraction > 1e-3:
            peak_gbps = _hbm(x) / x["time_ps"] * 1e3 / fraction
            assert env.peak_hbm_gbps == pytest.approx(peak_gbps, rel=1e-6), x["name"]
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("profile", PROFILES)
def test_framework_op_bound_by_matches_xprof(profiles_root: Path, profile: str) -> None:
    """Every row's bound_by (device ops, IDLE and host rows) equals XProf's."""
    rows = tf_stats.compute([store_of(profiles_root, profile)], {"include_idle": True})["tables"]["ops"]
    names = [c.name for c in rows.columns]
    ours = {(r["host_or_device"], r["type"], r["operation"]): r["bound_by"]
            for r in (dict(zip(names, v, strict=True)) for v in rows.rows())}
    table = golden(profile, "framework_op_stats")["include_idle"]
    xprof = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    assert any(x["bound_by"] == roofline.HBM for x in xprof)
    for x in xprof:
        assert ours[(x["host_or_device"], x["type"], x["operation"])] == x["bound_by"], x["operation"]


def test_bound_by_rule() -> None:
    """Compute wins when its utilization is strictly higher; ties go to the earlier resource;
    nothing used is Unknown. Peaks: 100 TFLOP/s, 1000 GB/s HBM, 10000 GB/s shared memory."""
    env = roofline.PerfEnv(peak_tflops=100.0, peak_hbm_gbps=1000.0, peak_shm_gbps=10000.0)
    time_ps = np.array([1e6, 1e6, 1e6, 1e6])
    # 1 us: 50e6 FLOPs = 50 TFLOP/s (0.5); 0.4e6 bytes = 400 GB/s (0.4) -> Compute.
    # 0.6e6 bytes -> 0.6 > 0.5 -> HBM. Equal 0.5 / 0.5 -> Compute. Nothing -> Unknown.
    flops = np.array([50e6, 50e6, 50e6, 0.0])
    hbm = np.array([0.4e6, 0.6e6, 0.5e6, 0.0])
    assert roofline.bound_by(env, flops, hbm, time_ps).tolist() == ["Compute", "HBM", "Compute", "Unknown"]
    assert roofline.bound_by(roofline.PerfEnv(), flops, hbm, time_ps).tolist() == ["Unknown"] * 4


@pytest.mark.parametrize("profile", PROFILES)
def test_op_profile_category_bytes_match_xprof(profiles_root: Path, profile: str) -> None:
    """Categories and root sum their ops' HBM bytes as XProf does. On jax_2hosts the loop
    fusion category (and so the root) differs by the merged op only: XProf prices the 10
    executions of program 15909's loop_multiply_fusion with 15245's bytes."""
    tool = registry.get("op_profile")
    assert tool is not None
    store = store_of(profiles_root, profile)
    result = op_profile.compute([store], tool.parse_options({}))["by_category"]
    ours = {c["name"]: c["bytes_accessed"] for c in result["children"]}
    xprof = golden(profile, "op_profile")["group_by_category:byCategory"]
    merged_gap = 0.0
    if profile.startswith("jax_2hosts"):
        name = "loop_multiply_fusion"
        per_run = {pid: hlo_cost.hlo_op_bytes(store, pid)[name].hbm
                   for pid in (XPROF_MERGED_PROGRAM, SECOND_NORMAL_PROGRAM)}
        db = op_metrics.device_op_metrics(store)
        runs = sum(int(o) for n, p, o in zip(db.name, db.program_id, db.occurrences, strict=True)
                   if n == name and p == SECOND_NORMAL_PROGRAM)
        merged_gap = runs * (per_run[XPROF_MERGED_PROGRAM] - per_run[SECOND_NORMAL_PROGRAM])
    for c in xprof["children"]:
        gap = merged_gap if c["name"] == "loop fusion" else 0.0
        assert ours[c["name"]] + gap == _hbm(c), c["name"]
    assert result["bytes_accessed"] + merged_gap == _hbm(xprof)
