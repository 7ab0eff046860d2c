"""compare on real pairs: expected numbers come from the single-run analyses of each side.

keras_cnn against custom_loop (the same CNN, Keras fit vs a custom loop), a run against itself,
jax_mlp against a subset of its own steps, the two hosts of jax_2hosts; the interval's U
quantiles are checked against a brute-force enumeration of rank arrangements.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.compare import stats as cs
from tbprof.analyses.compare.report import IDLE
from tbprof.analyses.ops.op_step_time import match_op
from tbprof.analyses.results.compare import CompareResult, StepTimeChange
from tbprof.analyses.table import Table
from tbprof.errors import BadParameter, NotFound
from tbprof.service.comparisons import SideSpec, compare_pair, gather, op_step_series
from tbprof.service.profiles import Profiles
from tbprof.service.selection import select_hosts


def _step_time(result: CompareResult) -> StepTimeChange:
    """The step-time change of a comparison whose both sides have steps."""
    st = result["step_time"]
    assert st is not None
    return st


@pytest.fixture(scope="module")
def profiles(profiles_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Profiles:
    return Profiles(profiles_root, cache_dir=tmp_path_factory.mktemp("cache"))


def _run(profiles: Profiles, prefix: str) -> str:
    return next(name for name in profiles.index.runs() if name.startswith(prefix))


def _tool(profiles: Profiles, run: str, tool: str, host: str | None = None, **options: str) -> dict[str, Any]:
    r = profiles.run(run)
    return profiles.compute(r, select_hosts(r, host), profiles.tool(tool), options)


def _rows(t: Table) -> list[dict[str, Any]]:
    names = [c.name for c in t.columns]
    return [dict(zip(names, row, strict=True)) for row in t.rows()]


def _brute_u_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u): every placement of n baseline ranks among n + m, U = pairs a candidate wins."""
    counts = np.zeros(n * m + 1)
    for base in itertools.combinations(range(n + m), n):
        chosen = set(base)
        cand = [j for j in range(n + m) if j not in chosen]
        counts[sum(1 for i in base for j in cand if j > i)] += 1
    return np.cumsum(counts) / counts.sum()


@pytest.mark.parametrize(("n", "m"), [(1, 3), (3, 4), (4, 5), (6, 8)])
def test_u_distribution_matches_enumeration(n: int, m: int) -> None:
    assert np.allclose(cs.u_null_cdf(n, m), _brute_u_cdf(n, m))


def test_u_rank_exact_and_normal_agree_near_the_switch() -> None:
    # 8 vs 8 at 95 %: the tabulated two-sided critical U is 13, so the interval starts at d_(14).
    assert cs.u_rank(8, 8, 0.95) == 14
    # Too few steps for 95 %: 2 vs 2 has P(U = 0) = 1/6 > 2.5 %.
    assert cs.u_rank(2, 2, 0.95) == 0
    # 50 x 50 is the last exact size; the normal approximation is within one rank of it there.
    exact = cs.u_rank(50, 50, 0.95)
    z = 1.959963984540054
    normal = math.floor(50 * 50 / 2 - z * math.sqrt(50 * 50 * 101 / 12) + 0.5)
    assert abs(exact - normal) <= 1


def test_keras_cnn_against_custom_loop(profiles: Profiles) -> None:
    keras, custom = _run(profiles, "keras_cnn/"), _run(profiles, "custom_loop/")
    result = compare_pair(profiles, SideSpec(keras), SideSpec(custom))
    ov_b, ov_c = _tool(profiles, keras, "overview_page"), _tool(profiles, custom, "overview_page")
    b = np.asarray(ov_b["tables"]["steps"].data["step_time_ms"])
    c = np.asarray(ov_c["tables"]["steps"].data["step_time_ms"])
    st = _step_time(result)
    assert st["baseline"]["count"] == len(b) and st["candidate"]["count"] == len(c)
    assert st["baseline"]["median_ms"] == pytest.approx(np.median(b))
    assert st["candidate"]["p90_ms"] == pytest.approx(np.percentile(c, 90))
    assert st["baseline"]["stddev_ms"] == pytest.approx(np.std(b, ddof=1))
    # Hodges-Lehmann on log times: median of all pairwise log ratios; the interval's ends are
    # the k-th smallest/largest of them with k from the enumerated U distribution.
    logd = np.sort((np.log(c)[None, :] - np.log(b)[:, None]).ravel())
    cdf = _brute_u_cdf(len(b), len(c))
    k = int(np.sum(cdf <= 0.025 + 1e-12))
    ch = st["change"]
    assert ch["change_percent"] == pytest.approx(100 * math.expm1(np.median(logd)))
    assert ch["ci_low_percent"] == pytest.approx(100 * math.expm1(logd[k - 1]))
    assert ch["ci_high_percent"] == pytest.approx(100 * math.expm1(logd[len(logd) - k]))
    assert ch["median_delta_ms"] == pytest.approx(np.median(c) - np.median(b))
    # The custom loop is faster beyond the noise: every ratio in the interval is below 1.
    assert ch["ci_high_percent"] is not None and ch["ci_high_percent"] < 0 and ch["direction"] == "faster"
    assert result["verdict"]["kind"] == "faster" and result["verdict"]["summary"].startswith("step time -")

    # Breakdown: each side's share equals that run's own overview percentages.
    bd = {r["category"]: r for r in _rows(result["tables"]["breakdown"])}
    for key in ("host_compute", "input", "all_others"):
        assert bd[f"{key}_ms"]["base_percent"] == pytest.approx(ov_b["performance_summary"]["percent_of_step_time"]
                                                                [f"{key}_percent"])
        assert bd[f"{key}_ms"]["cand_percent"] == pytest.approx(ov_c["performance_summary"]["percent_of_step_time"]
                                                                [f"{key}_percent"])
        assert bd[f"{key}_ms"]["cand_ms"] == pytest.approx(np.mean(ov_c["tables"]["steps"].data[f"{key}_ms"]))

    # Ops: each side's framework_op_stats rows (IDLE aside) joined by (side, type, name).
    ops_b = [r for r in _rows(_tool(profiles, keras, "framework_op_stats")["tables"]["ops"]) if r["type"] != IDLE]
    ops_c = [r for r in _rows(_tool(profiles, custom, "framework_op_stats")["tables"]["ops"]) if r["type"] != IDLE]
    kb = {(r["host_or_device"], r["type"], r["operation"]) for r in ops_b}
    kc = {(r["host_or_device"], r["type"], r["operation"]) for r in ops_c}
    joined = _rows(result["tables"]["ops"])
    status = {(r["host_or_device"], r["type"], r["operation"]): r["status"] for r in joined}
    assert {k for k, s in status.items() if s == "both"} == kb & kc
    assert {k for k, s in status.items() if s == "added"} == kc - kb
    assert {k for k, s in status.items() if s == "removed"} == kb - kc
    # Different model scopes: few names match, so the op-type table carries the comparison.
    types = {r["type"]: r for r in _rows(result["tables"]["op_types"]) if r["host_or_device"] == "Host"}
    t = "_MklNativeConv2DBackpropFilterWithBias"
    steps_b = ov_b["steps"]["per_host"][0]["step_count"] + ov_b["steps"]["per_host"][0]["dropped_boundary_steps"]
    tot_b = sum(r["total_self_time_us"] for r in ops_b if r["type"] == t)
    occ_c = sum(r["occurrences"] for r in ops_c if r["type"] == t)
    assert types[t]["base_total_self_time_us"] == pytest.approx(tot_b)
    assert types[t]["base_per_step_us"] == pytest.approx(tot_b / steps_b)
    assert types[t]["cand_occurrences"] == occ_c and types[t]["status"] == "both"
    # Rows are ordered by their contribution: |delta per step| never grows down the table.
    d = np.abs(np.nan_to_num(np.array([r["delta_per_step_us"] for r in joined], float)))
    assert np.all(np.diff(d) <= 1e-9)

    # Memory: the peak of each side is its memory_profile's.
    mem = _rows(result["tables"]["memory_allocators"])[0]
    mp_b = _tool(profiles, keras, "memory_profile")["allocators"][mem["memory_id"]]
    mp_c = _tool(profiles, custom, "memory_profile")["allocators"][mem["memory_id"]]
    assert mem["base_peak_bytes"] == mp_b["peak_bytes_in_use"]
    assert mem["cand_peak_fragmentation_fraction"] == pytest.approx(mp_c["peak_fragmentation_fraction"])
    allocs = _rows(result["tables"]["allocations"])
    assert allocs[0]["delta_bytes"] == max(r["delta_bytes"] for r in allocs)  # grows most first
    assert "kernels" in result["unavailable"]  # CPU runs: no GPU kernels on either side


@pytest.mark.parametrize("prefix", ["custom_loop/", "jax_mlp/"])
def test_run_against_itself_changes_nothing(profiles: Profiles, prefix: str) -> None:
    run = _run(profiles, prefix)
    result = compare_pair(profiles, SideSpec(run), SideSpec(run))
    assert result["identical"] is True
    assert result["verdict"]["kind"] == "no change"
    assert result["verdict"]["summary"].startswith("no change")
    ch = _step_time(result)["change"]
    assert ch["change_percent"] == 0 and ch["shift_ms"] == 0 and ch["median_delta_ms"] == 0
    assert ch["ci_low_percent"] is not None and ch["ci_high_percent"] is not None
    assert ch["ci_low_percent"] < 0 < ch["ci_high_percent"]
    expected_tables = {"steps", "breakdown", "ops", "op_types", "memory_allocators", "allocations"}
    if prefix == "jax_mlp/":
        expected_tables.add("kernels")
    assert expected_tables <= set(result["tables"])
    for name, table in result["tables"].items():
        assert table.n_rows > 0, name
        if "status" in table.data:
            assert set(table.data["status"]) == {"both"}, name
        for col in table.columns:
            if col.name.startswith("delta_"):
                assert np.all(np.nan_to_num(np.asarray(table.data[col.name], float)) == 0), (name, col.name)


def test_jax_mlp_against_a_subset_of_its_steps(profiles: Profiles) -> None:
    run = _run(profiles, "jax_mlp/")
    steps = _tool(profiles, run, "overview_page")["tables"]["steps"]
    nums = np.asarray(steps.data["step_num"])
    times = np.asarray(steps.data["step_time_ms"])
    lo, hi = int(nums[2]), int(nums[5])  # 4 of the 8 steps
    sel = (nums >= lo) & (nums <= hi)
    result = compare_pair(profiles, SideSpec(run), SideSpec(run, steps=f"{lo}:{hi}"))
    st = _step_time(result)
    assert st["candidate"]["count"] == 4 and st["baseline"]["count"] == len(times)
    assert st["change"]["median_delta_ms"] == pytest.approx(np.median(times[sel]) - np.median(times))
    assert st["change"]["mean_delta_ms"] == pytest.approx(times[sel].mean() - times.mean())
    assert st["candidate"]["max_ms"] == pytest.approx(times[sel].max())
    bd = {r["category"]: r for r in _rows(result["tables"]["breakdown"])}
    for key in ("device_compute_ms", "device_collectives_ms", "all_others_ms"):
        col = np.asarray(steps.data[key])
        assert bd[key]["cand_ms"] == pytest.approx(col[sel].mean())
        assert bd[key]["delta_ms"] == pytest.approx(col[sel].mean() - col.mean())
        assert bd[key]["cand_percent"] == pytest.approx(100 * col[sel].sum() / times[sel].sum())
    # Ops and memory cover each whole profile: the same profile twice, so nothing moves.
    for name in ("ops", "kernels", "memory_allocators"):
        assert np.all(np.nan_to_num(result["tables"][name].data[next(
            c.name for c in result["tables"][name].columns if c.name.startswith("delta_"))]) == 0)
    assert any("step selection" in n for n in result["notes"])
    # A subset of the same run is no evidence of a change.
    assert result["verdict"]["kind"] == "no change"
    st_rows = _rows(result["tables"]["steps"])
    assert [r["cand_step_num"] for r in st_rows if r["cand_step_num"] >= 0] == nums[sel].tolist()


def test_two_hosts_of_one_run(profiles: Profiles) -> None:
    """worker1 sleeps 3 ms in its input step; data-parallel steps wait for it, so both hosts'
    step times are the same within noise while worker0's time goes to the all-reduce."""
    run = _run(profiles, "jax_2hosts/")
    result = compare_pair(profiles, SideSpec(run, "worker1"), SideSpec(run, "worker0"))
    assert _step_time(result)["change"]["direction"] == "no change"
    bd = {r["category"]: r for r in _rows(result["tables"]["breakdown"])}
    assert bd["device_collectives_ms"]["delta_percent_points"] > 20
    assert "device collective communication rose" in result["verdict"]["summary"]
    ops = _rows(result["tables"]["ops"])
    top = ops[0]
    assert "reduce_sum" in top["operation"] and top["delta_per_step_us"] > 0
    # The op's per-step series: one all-reduce launch per step, so each step's value lies
    # within that kernel's min..max duration (kernel_stats of worker0).
    spec = SideSpec(run, "worker0")
    match = match_op(gather(profiles, spec).op_stats, "reduce_sum")
    assert match is not None and match.names == [top["operation"]]
    series = op_step_series(profiles, spec, match.names)
    assert series is not None and len(series) == _step_time(result)["candidate"]["count"]
    kern = next(r for r in _rows(_tool(profiles, run, "kernel_stats", "worker0")["tables"]["kernels"])
                if r["op_name"] == top["operation"])
    assert kern["occurrences"] == top["cand_occurrences"]
    assert np.all(series >= kern["min_duration_us"] - 1e-6) and np.all(series <= kern["max_duration_us"] + 1e-6)


def test_all_hosts_against_one_host(profiles: Profiles) -> None:
    run = _run(profiles, "jax_2hosts/")
    result = compare_pair(profiles, SideSpec(run, "__all__"), SideSpec(run, "worker0"))
    assert result["baseline"]["hosts"] == ["worker0", "worker1"]
    both = _tool(profiles, run, "framework_op_stats", "worker0")["tables"]["ops"]
    w1 = _tool(profiles, run, "framework_op_stats", "worker1")["tables"]["ops"]
    name = "jit(step)/sub"
    rows = {r["operation"]: r for r in _rows(result["tables"]["ops"])}
    tot = lambda t: sum(r["total_self_time_us"] for r in _rows(t) if r["operation"] == name)  # noqa: E731
    assert rows[name]["base_total_self_time_us"] == pytest.approx(tot(both) + tot(w1))
    assert rows[name]["cand_total_self_time_us"] == pytest.approx(tot(both))


def test_memo_per_pair(profiles: Profiles) -> None:
    run = _run(profiles, "jax_mlp/")
    first = compare_pair(profiles, SideSpec(run), SideSpec(run, steps="5:7"))
    assert compare_pair(profiles, SideSpec(run), SideSpec(run, steps="5:7")) is first
    assert compare_pair(profiles, SideSpec(run), SideSpec(run, steps="5:6")) is not first


@pytest.mark.parametrize(("spec", "error"), [
    (SideSpec("no/such/run"), NotFound),
    (SideSpec("jax_2hosts/"), NotFound),  # prefix is not a run name
    (SideSpec("@jax_2hosts", host=None), BadParameter),  # several hosts, none chosen
    (SideSpec("@jax_mlp", steps="1000:2000"), BadParameter),
    (SideSpec("@jax_mlp", steps="three"), BadParameter),
])
def test_bad_sides(profiles: Profiles, spec: SideSpec, error: type[Exception]) -> None:
    if spec.run.startswith("@"):
        spec = SideSpec(_run(profiles, spec.run[1:] + "/"), spec.host, spec.steps)
    other = SideSpec(_run(profiles, "jax_mlp/"))
    with pytest.raises(error):
        compare_pair(profiles, other, spec)


@pytest.fixture(scope="module")
def mixed(profiles_root: Path, sample_profiles: Path, tmp_path_factory: pytest.TempPathFactory) -> Profiles:
    """A logdir with a TF1 timeline run, a PyTorch run and two XSpace runs."""
    import shutil

    root = tmp_path_factory.mktemp("mixed")
    (root / "tf1").mkdir()
    timelines = sorted((sample_profiles / "tf1_timeline").glob("timeline-*.json"))
    assert timelines and (sample_profiles / "torch_cnn").is_dir()
    for f in timelines:
        shutil.copy(f, root / "tf1" / f.name)
    shutil.copytree(sample_profiles / "torch_cnn", root / "torch")
    (root / "tfprof").mkdir()
    shutil.copy(sample_profiles / "tf1_timeline" / "profile.pb", root / "tfprof" / "profile.pb")
    for name in ("custom_loop", "jax_mlp"):
        shutil.copytree(profiles_root / name, root / name)
    return Profiles(root, cache_dir=tmp_path_factory.mktemp("mixed_cache"))


def test_tf1_timeline_against_xspace(mixed: Profiles) -> None:
    custom = _run(mixed, "custom_loop/")
    result = compare_pair(mixed, SideSpec("tf1"), SideSpec(custom))
    assert result["baseline"]["kind"] == "tf1_timeline" and len(result["baseline"]["hosts"]) == len(timelines_of(mixed))
    steps = _tool(mixed, "tf1", "tf1_steps", "__all__")["tables"]["steps"]
    times = np.asarray(steps.data["step_time_ms"])
    assert _step_time(result)["baseline"]["median_ms"] == pytest.approx(np.median(times))
    assert _step_time(result)["baseline"]["count"] == len(times)
    # TF1 timelines have step times but no step breakdown, and no GPU kernels here.
    assert "breakdown" in result["unavailable"] and "breakdown" not in result["tables"]
    assert "tf1_timeline" in result["unavailable"]["kernels"]
    # Op types: tf1_op_stats totals over the run's steps, per step = total / step count.
    ops = _tool(mixed, "tf1", "tf1_op_stats", "__all__")
    t = "_MklMatMul"
    total = sum(r["total_self_time_us"] for r in _rows(ops["tables"]["ops"]) if r["type"] == t)
    row = next(r for r in _rows(result["tables"]["op_types"]) if r["type"] == t and r["host_or_device"] == "Host")
    assert row["base_total_self_time_us"] == pytest.approx(total)
    assert row["base_per_step_us"] == pytest.approx(total / ops["step_count"])
    # Memory: each allocator's highest peak over the steps; no allocation list on the TF1 side.
    mem = _tool(mixed, "tf1", "tf1_memory", "__all__")["tables"]["allocators"]
    peaks = {a: max(p for n, p in zip(mem.data["allocator"], mem.data["peak_bytes"], strict=True) if n == a)
             for a in set(mem.data["allocator"].tolist())}
    alloc = {r["memory_id"]: r for r in _rows(result["tables"]["memory_allocators"])}
    assert {k: alloc[k]["base_peak_bytes"] for k in peaks} == peaks
    assert "allocations" not in result["tables"]


def timelines_of(profiles: Profiles) -> list[str]:
    return sorted(profiles.run("tf1").hosts)


def test_pytorch_against_xspace(mixed: Profiles) -> None:
    jax = _run(mixed, "jax_mlp/")
    torch = _run(mixed, "torch")
    result = compare_pair(mixed, SideSpec(torch), SideSpec(jax))
    # PyTorch runs have steps (ProfilerStep#N): step times compare like any other run's.
    steps = _tool(mixed, torch, "overview_page")["tables"]["steps"]
    assert result["step_time"] is not None
    assert _step_time(result)["baseline"]["count"] == steps.n_rows
    assert _step_time(result)["baseline"]["median_ms"] == pytest.approx(np.median(steps.data["step_time_ms"]))
    kernels = _tool(mixed, torch, "kernel_stats")["tables"]["kernels"]
    joined = _rows(result["tables"]["kernels"])
    assert sum(r["base_total_duration_us"] for r in joined) == pytest.approx(kernels.data["total_duration_us"].sum())
    assert sum(r["base_occurrences"] for r in joined) == kernels.data["occurrences"].sum()
    ops = _rows(_tool(mixed, torch, "framework_op_stats")["tables"]["ops"])
    host = {r["operation"]: r for r in _rows(result["tables"]["ops"]) if r["host_or_device"] == "Host"}
    for want in [r for r in ops if r["host_or_device"] == "Host" and r["operation"] != "IDLE"][:5]:
        assert host[want["operation"]]["base_occurrences"] == want["occurrences"]
        assert host[want["operation"]]["base_total_self_time_us"] == pytest.approx(want["total_self_time_us"])


def test_a_kind_without_step_or_op_analyses(mixed: Profiles) -> None:
    """A tfprof ProfileProto has none of the analyses compare reads: every part is named as
    unavailable and nothing is joined (a join against nothing would call every op "added")."""
    result = compare_pair(mixed, SideSpec(_run(mixed, "tfprof")), SideSpec(_run(mixed, "custom_loop/")))
    assert result["step_time"] is None and result["verdict"]["kind"] == "unknown"
    assert set(result["tables"]) == {"steps"}
    for section in ("step_time", "ops", "kernels", "memory"):
        assert "tfprof runs" in result["unavailable"][section]
