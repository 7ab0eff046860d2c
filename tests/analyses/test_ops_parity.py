"""Op analyses against XProf 2.24.2 goldens (tests/golden, produced by make_goldens.py).

framework_op_stats: same (host/device, type, operation) keys as XProf's table (XProf keeps the
top 500 per side; these profiles have fewer, so every XProf row must be ours and vice versa),
equal occurrences, total self time within 1 %. kernel_stats: same row keys, order and
durations. memory_profile: same peak bytes and allocation counts per allocator, same peak step;
the breakdown at the peak (XProf's "step" scope) equals XProf's on every allocator, and so does
every event's step id where XProf's timeline is not downsampled.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import framework_op_stats as tf_stats
from tbprof.analyses.ops import kernel_stats, op_profile
from tbprof.domain.event_groups import event_groups
from tbprof.service import tools as registry
from tbprof.store.tables import ProfileStore
from tests.helpers import golden, store_of

PARITY_PROFILES = ("custom_loop", "keras_cnn", "jax_mlp", "tpu_inference")
XPROF_ROWS_PER_SIDE = 500


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


def _xprof_op_rows(profile: str, idle: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    g = golden(profile, "framework_op_stats")
    table = g[idle]
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]
    return {(r["host_or_device"], r.get("type", ""), r["operation"]): r for r in rows}


@pytest.mark.parametrize("profile", PARITY_PROFILES)
def test_framework_op_stats_matches_xprof(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    ours = {(r["host_or_device"], r["type"], r["operation"]): r
            for r in _rows(tf_stats.compute([store], {"include_idle": True})["tables"]["ops"])}
    xprof = _xprof_op_rows(profile, "include_idle")
    # XProf shows at most 500 rows per side: every one of them is ours, and below the cap the sets are equal.
    per_side = golden(profile, "framework_op_stats")["rows_per_side_include_idle"]
    assert set(xprof) <= set(ours)
    for side, n in per_side.items():
        if n < XPROF_ROWS_PER_SIDE:
            assert {k for k in ours if k[0] == side} == {k for k in xprof if k[0] == side}
    for key, x in xprof.items():
        o = ours[key]
        assert o["occurrences"] == x["occurrences"], key
        assert o["total_self_time_us"] == pytest.approx(x["total_self_time_us"], rel=0.01, abs=1e-3), key
        assert o["total_time_us"] == pytest.approx(x["total_time_us"], rel=0.01, abs=1e-3), key
        for col in ("device_self_time_fraction", "host_self_time_fraction"):
            assert o[col] == pytest.approx(x[col], rel=0.01, abs=1e-6), (key, col)


@pytest.mark.parametrize("profile", PARITY_PROFILES)
def test_framework_op_stats_without_idle_matches_xprof(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    ours = {(r["host_or_device"], r["operation"]): r
            for r in _rows(tf_stats.compute([store], {"include_idle": False})["tables"]["ops"])}
    g = golden(profile, "framework_op_stats")["exclude_idle"]
    xprof = {(r[1], r[2]): dict(zip(g["columns"], r, strict=True)) for r in g["rows"]}
    assert set(ours) == set(xprof)
    for key, x in xprof.items():
        for col in ("device_self_time_fraction", "device_cumulative_self_time_fraction",
                    "host_self_time_fraction"):
            assert ours[key][col] == pytest.approx(x[col], rel=0.01, abs=1e-6), (key, col)


@pytest.mark.parametrize("profile", ("jax_2hosts_worker0", "jax_2hosts_worker1"))
def test_framework_op_stats_two_host_keys_and_self_time(profiles_root: Path, profile: str) -> None:
    """Same keys and self times; occurrences of one op differ (see docs/differences.md)."""
    store = store_of(profiles_root, profile)
    ours = {(r["host_or_device"], r["type"], r["operation"]): r
            for r in _rows(tf_stats.compute([store], {"include_idle": True})["tables"]["ops"])}
    xprof = _xprof_op_rows(profile, "include_idle")
    assert set(ours) == set(xprof)
    for key, x in xprof.items():
        assert ours[key]["total_self_time_us"] == pytest.approx(x["total_self_time_us"], rel=0.01, abs=1e-3)


@pytest.mark.parametrize("profile", (*PARITY_PROFILES, "jax_2hosts_worker0", "jax_2hosts_worker1"))
def test_kernel_stats_matches_xprof(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    result = kernel_stats.compute([store], {})
    ours = _rows(result["tables"]["kernels"])
    g = golden(profile, "kernel_stats")
    xprof = [dict(zip(g["columns"], r, strict=True)) for r in g["rows"]]
    assert len(ours) == len(xprof) == g["row_count"]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["kernel_name"], r["registers_per_thread"], r["shmem_bytes"], r["block_dim"], r["grid_dim"],
                r["op_tensorcore_eligible"], r["kernel_uses_tensorcore"], r["op_name"])

    # Same rows in the same order (XProf: total duration descending, then the report key).
    assert [key(r) for r in ours] == [key(r) for r in xprof]
    for o, x in zip(ours, xprof, strict=True):
        assert o["occurrences"] == x["occurrences"]
        for col in ("total_duration_us", "avg_duration_us", "min_duration_us", "max_duration_us"):
            assert o[col] == pytest.approx(x[col], rel=0.01), (key(o), col)
        assert o["occupancy_pct"] == pytest.approx(x["occupancy_percent"])
    if not xprof:
        assert result["has_gpu_kernels"] is False and "no GPU kernels" in result["message"]


@pytest.mark.parametrize("profile", (*PARITY_PROFILES, "jax_2hosts_worker0", "jax_2hosts_worker1"))
def test_memory_profile_matches_xprof(profiles_root: Path, profile: str) -> None:
    store = store_of(profiles_root, profile)
    result = memory_profile.compute([store], {})
    g = golden(profile, "memory_profile")
    assert result["memory_ids"] == g["memory_ids"]
    for memory_id, x in g["allocators"].items():
        o = result["allocators"][memory_id]
        assert o["peak_bytes_in_use"] == x["peak_bytes_in_use"]
        assert o["peak_heap_bytes"] == x["peak_heap_allocated_bytes"]
        assert o["peak_stack_bytes"] == x["peak_stack_reserved_bytes"]
        assert o["peak_free_bytes"] == x["peak_free_memory_bytes"]
        assert o["memory_capacity_bytes"] == x["memory_capacity_bytes"]
        assert o["peak_fragmentation_fraction"] == pytest.approx(x["peak_fragmentation_fraction"])
        assert o["peak_bytes_usage_lifetime"] == x["peak_bytes_usage_lifetime"]
        assert o["num_allocations"] == x["num_allocations"]
        assert o["num_deallocations"] == x["num_deallocations"]
        assert o["peak_step_id"] == x["peak_step_id"]


# Every allocator with its own breakdown: on CPU runs the allocations reach the peak's step
# through XProf's event grouping (tf.data and unnamed 256-byte allocations included; Keras fit's
# FunctionRun roots are its steps); on GPU runs through the grouped events they nest in (jax_mlp
# GPU_0: the 1 MiB buffer freed on a py_xla_callback thread, outside every group, stays live).
@pytest.mark.parametrize(("profile", "memory_id"), [
    ("custom_loop", "bfc_cpu_allocator_for_gpu"), ("keras_cnn", "bfc_cpu_allocator_for_gpu"),
    ("jax_mlp", "GPU_0_bfc"), ("jax_mlp", "GPU_1_bfc"), ("jax_mlp", "xla_gpu_host_bfc"),
    ("jax_2hosts_worker0", "GPU_0_bfc"), ("jax_2hosts_worker0", "xla_gpu_host_bfc"),
    ("jax_2hosts_worker1", "GPU_0_bfc"), ("jax_2hosts_worker1", "xla_gpu_host_bfc"),
    ("tpu_inference", "0"), ("tpu_inference", "1"), ("tpu_inference", "2"), ("tpu_inference", "3"),
])
def test_memory_breakdown_matches_xprof(profiles_root: Path, profile: str, memory_id: str) -> None:
    store = store_of(profiles_root, profile)
    table = memory_profile.compute([store], {"memory_id": memory_id})["tables"]["breakdown"]
    ours = [(r["operation"], r["allocation_bytes"], r["requested_bytes"], r["occurrences"], r["region_type"],
             r["data_type"], r["shape"]) for r in _rows(table)]
    x = golden(profile, "memory_profile")["allocators"][memory_id]["active_allocations"]
    assert ours == [(a["tf_op_name"], a["allocation_bytes"], a["requested_bytes"], a["num_occurrences"],
                     a["region_type"], a["data_type"], a["tensor_shape"]) for a in x]


@pytest.mark.parametrize("profile", ("jax_mlp", "jax_2hosts_worker0", "jax_2hosts_worker1", "tpu_inference"))
def test_memory_step_of_every_event_matches_xprof(profiles_root: Path, profile: str) -> None:
    """Each allocator event's step id equals XProf's (its whole timeline, < 1000 events, is in the
    golden). XProf orders events by their time within their own line, so events of different
    threads may interleave differently: compare each address's events in time order."""
    store = store_of(profiles_root, profile)
    events = memory_profile.memory_events(store)
    allocators = golden(profile, "memory_profile")["allocators"]
    assert {m for m, x in allocators.items() if "timeline_steps" in x} == set(allocators)
    for memory_id, x in allocators.items():
        ev = events[memory_id]
        ours: dict[int, list[tuple[bool, int]]] = {}
        for address, is_alloc, step in zip(ev.address.tolist(), ev.is_alloc.tolist(), ev.step_id.tolist(),
                                           strict=True):
            ours.setdefault(address, []).append((is_alloc, step))
        xprof: dict[int, list[tuple[bool, int]]] = {}
        for address, is_alloc, step in x["timeline_steps"]:
            xprof.setdefault(address, []).append((bool(is_alloc), step))
        assert ours == xprof, memory_id


def _both_hosts(root: Path) -> list[ProfileStore]:
    return [store_of(root, "jax_2hosts_worker0"), store_of(root, "jax_2hosts_worker1")]


# The one op whose device occurrences differ from XProf on jax_2hosts (docs/differences.md,
# "Device occurrences"): XProf counts the ops of two programs both named jit__normal as one.
_JAX_2HOSTS_MERGED_OP = "jit(_normal)/jit(_normal_real)/mul"


def test_framework_op_stats_all_hosts_matches_xprof(profiles_root: Path) -> None:
    """XProf's all-hosts table sums each op over the hosts; shares are of the summed totals."""
    result = tf_stats.compute(_both_hosts(profiles_root), {"include_idle": True})
    assert result["hosts"] == ["worker0", "worker1"]
    ours = {(r["host_or_device"], r["type"], r["operation"]): r for r in _rows(result["tables"]["ops"])}
    xprof = _xprof_op_rows("jax_2hosts", "include_idle")
    assert set(ours) == set(xprof)
    for key, x in xprof.items():
        o = ours[key]
        if key[2] != _JAX_2HOSTS_MERGED_OP:
            assert o["occurrences"] == x["occurrences"], key
        for col in ("total_self_time_us", "total_time_us"):
            assert o[col] == pytest.approx(x[col], rel=0.01, abs=1e-3), (key, col)
        for col in ("device_self_time_fraction", "host_self_time_fraction"):
            assert o[col] == pytest.approx(x[col], rel=0.01, abs=1e-6), (key, col)


def test_kernel_stats_all_hosts_matches_xprof(profiles_root: Path) -> None:
    """XProf keeps one row per host and kernel (84 = 42 + 42 here), by total duration."""
    result = kernel_stats.compute(_both_hosts(profiles_root), {})
    ours = _rows(result["tables"]["kernels"])
    g = golden("jax_2hosts", "kernel_stats")
    xprof = [dict(zip(g["columns"], r, strict=True)) for r in g["rows"]]
    assert len(ours) == len(xprof) == g["row_count"]
    for o, x in zip(ours, xprof, strict=True):
        assert (o["kernel_name"], o["op_name"], o["grid_dim"], o["block_dim"], o["occurrences"]) == (
            x["kernel_name"], x["op_name"], x["grid_dim"], x["block_dim"], x["occurrences"])
        for col in ("total_duration_us", "min_duration_us", "max_duration_us"):
            assert o[col] == pytest.approx(x[col], rel=0.01), col
    assert {r["host"] for r in ours} == {"worker0", "worker1"}
    assert result["kernel_event_count"] == sum(
        kernel_stats.compute([s], {})["kernel_event_count"] for s in _both_hosts(profiles_root))


def test_op_profile_all_hosts_matches_xprof(profiles_root: Path) -> None:
    tool = registry.get("op_profile")
    assert tool is not None
    result: Mapping[str, Any] = op_profile.compute(_both_hosts(profiles_root), tool.parse_options({}))
    xprof_result = golden("jax_2hosts", "op_profile")
    ours = {c["name"]: c for c in result["by_category"]["children"]}
    xprof = {c["name"]: c for c in xprof_result["group_by_category:byCategory"]["children"]}
    assert set(ours) == set(xprof)
    for name, x in xprof.items():
        assert ours[name]["self_time_us"] == pytest.approx(x["time_ps"] / 1e6, rel=1e-9), name
        if name != "IDLE":
            assert ours[name]["occurrences"] == sum(c["occurrences"] for c in x["children"]), name
    # By program: equal except the two jit__normal programs XProf reports as one (15245).
    ours_p = {c["name"]: c for c in result["by_program"]["children"]}
    xprof_p = {c["name"]: c for c in xprof_result["group_by_program:byProgram"]["children"]}
    assert set(ours_p) == set(xprof_p) | {"jit__normal(15909)"}
    for name, x in xprof_p.items():
        got = ours_p[name]["self_time_us"]
        if name == "jit__normal(15245)":
            got += ours_p["jit__normal(15909)"]["self_time_us"]
        assert got == pytest.approx(x["time_ps"] / 1e6, rel=1e-9), name


@pytest.mark.parametrize("profile", ("jax_mlp", "jax_2hosts_worker0"))
def test_gpu_memory_steps_equal_the_full_grouping(profiles_root: Path, profile: str) -> None:
    """GPU runs decide memory steps from step markers and one consumer link; the full grouping
    (every linked event grouped, then each memory event takes its nearest grouped ancestor's
    group: the path GPU runs with TensorFlow's implicit roots take) must agree event by event."""
    store = store_of(profiles_root, profile)
    events = memory_profile.memory_events(store)
    plane = next(iter(events.values())).plane
    rows = np.sort(np.concatenate([ev.rows for ev in events.values()]))
    groups = event_groups(store)
    group = memory_profile._groups_of_rows(plane, groups.group_of[store.planes.index(plane)], rows)
    # Only step markers root these profiles: group ids are the markers' order in time.
    assert not groups.root_is_implicit.any()
    starts = [store.planes[int(p)].start_ps[int(r)] for p, r in zip(groups.root_plane, groups.root_row, strict=True)]
    assert starts == sorted(starts)
    fast = memory_profile._marker_step_ids(store, plane, rows)
    assert fast is not None
    assert (fast >= 0).any() and (fast < 0).any()  # both kinds occur: marked/linked, and outside every step
    np.testing.assert_array_equal(fast, group)
