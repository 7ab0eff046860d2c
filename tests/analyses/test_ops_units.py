"""Rules of the op analyses: op-name parsing, kernel launch parameters, TensorCore rules,
peak-preserving downsampling, op_profile trees and options on real profiles."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.memory import memory_profile
from tbprof.analyses.ops import framework_op_stats as tf_stats
from tbprof.analyses.ops import kernel_stats, op_profile
from tbprof.analyses.tool import OptionError
from tbprof.domain import tf_op
from tbprof.readers.xplane import read_xspace
from tbprof.service import tools as registry
from tests.conftest import xplane_of

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.mark.parametrize(("fullname", "category", "name", "op_type"), [
    ("dense/MatMul:MatMul", tf_op.CATEGORY_TENSORFLOW, "dense/MatMul", "MatMul"),
    ("a/b/_MklNativeFusedConv2D:_MklNativeFusedConv2D", tf_op.CATEGORY_TENSORFLOW, "a/b/_MklNativeFusedConv2D",
     "_MklNativeFusedConv2D"),
    # JAX: empty type, derived from the last segment without its numeric suffix.
    ("jit(train_step)/sub:", tf_op.CATEGORY_JAX, "jit(train_step)/sub", "sub"),
    ("jit(f)/transpose[permutation=(1, 0)]:", tf_op.CATEGORY_JAX, "jit(f)/transpose[permutation=(1, 0)]",
     "transpose"),
    ("model/add_1:", tf_op.CATEGORY_JAX, "model/add_1", "add"),
    ("XlaModule:", tf_op.CATEGORY_TENSORFLOW, "XlaModule", "XlaModule"),
    ("Iterator::Root::Prefetch", tf_op.CATEGORY_TF_DATA, "Iterator::Root::Prefetch", "Dataset"),
    ("MemcpyHToD", tf_op.CATEGORY_MEMCPY, "MemcpyHToD", "MemcpyHToD"),
    ("$profiler.py:151 start_trace", tf_op.CATEGORY_UNKNOWN, "$profiler.py:151 start_trace", ""),
    ("random_uniform/RandomUniform", tf_op.CATEGORY_UNKNOWN, "random_uniform/RandomUniform", ""),
])
def test_parse_tf_op(fullname: str, category: str, name: str, op_type: str) -> None:
    assert tf_op.parse_tf_op(fullname) == tf_op.TfOp(category, name, op_type)


def test_name_scopes_keep_parenthesised_jax_scopes_whole() -> None:
    assert tf_op.name_scopes("sequential/conv2d/Conv2D") == ["sequential", "conv2d"]
    assert tf_op.name_scopes("jit(f)/(transpose(jvp())/reduce_sum:jvp()/x):") == ["jit(f)"]


def test_kernel_details_parse() -> None:
    lp = kernel_stats.parse_kernel_details(
        "regs:58 static_shared:0 dynamic_shared:8192 grid:128,1,1 block:128,1,1 occ_pct:50")
    assert lp == kernel_stats.LaunchParams(58, 0, 8192, (128, 1, 1), (128, 1, 1), 50.0)
    # Newline separators, unknown and malformed tokens keep the defaults (XProf's parser).
    lp = kernel_stats.parse_kernel_details("regs:16\nfoo:1 grid:2,1 block:x,1,1 occ_pct:")
    assert lp == kernel_stats.LaunchParams(16, 0, 0, (1, 1, 1), (1, 1, 1), 0.0)


def test_tensorcore_rules() -> None:
    assert kernel_stats.kernel_uses_tensorcore("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_tn")
    assert kernel_stats.kernel_uses_tensorcore("sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x256x32")
    assert not kernel_stats.kernel_uses_tensorcore("nvjet_sm90_tst_128x128_64x6_1x2_h_bz_NTT")
    assert kernel_stats.op_tensorcore_eligible("model/dense/MatMul")
    assert kernel_stats.op_tensorcore_eligible("gradient_tape/conv/Conv2DBackpropFilter")
    assert kernel_stats.op_tensorcore_eligible("x/BatchMatMulV2")
    assert not kernel_stats.op_tensorcore_eligible("model/MatMulLike")  # MatMul needs "/MatMul" at the end
    assert kernel_stats.einsum_tensorcore_eligible("ab,bc->ac")
    assert not kernel_stats.einsum_tensorcore_eligible("abc->ab")


def test_downsample_keeps_the_peak() -> None:
    values = np.array([5, 1, 9, 9, 2, 3, 7, 8, 0, 4])
    # 10 points into 3 buckets ([0..3], [4..6], [7..9]): the max of each, the peak's bucket picks
    # the peak index even when an equal value comes first.
    assert memory_profile.downsample(values, 3, keep=3).tolist() == [3, 6, 7]
    assert memory_profile.downsample(values, 3, keep=2).tolist() == [2, 6, 7]
    assert memory_profile.downsample(values, 20, keep=2).tolist() == list(range(10))


def test_memory_timeline_keeps_peak_when_downsampled(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "custom_loop"))
    result = memory_profile.compute([store], {"max_points": 50})
    assert result["memory_id"] is not None
    peak = result["allocators"][result["memory_id"]]
    timeline = result["tables"]["timeline"]
    assert timeline.n_rows == 50 and result["timeline_is_downsampled"]
    assert int(timeline.data["in_use_bytes"].max()) == peak["peak_bytes_in_use"]
    at = int(np.argmax(timeline.data["in_use_bytes"]))
    assert timeline.data["time_ms"][at] == pytest.approx(peak["peak_time_ms"])
    assert np.all(np.diff(timeline.data["time_ms"]) >= 0)
    # The breakdown explains the whole heap at the peak: live allocations + unexplained rest.
    breakdown = result["tables"]["breakdown"]
    assert int(breakdown.data["total_allocation_bytes"].sum()) == peak["peak_heap_bytes"] + peak["peak_stack_bytes"]


def test_op_profile_jax_matches_xprof_categories_and_programs(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    tool = registry.get("op_profile")
    assert tool is not None
    result: Mapping[str, Any] = op_profile.compute([store], tool.parse_options({}))
    golden = json.loads((GOLDEN / "jax_mlp" / "op_profile.json").read_text())
    for ours_tree, xprof_key in (("by_category", "group_by_category:byCategory"),
                                 ("by_program", "group_by_program:byProgram")):
        ours = {c["name"]: c for c in result[ours_tree]["children"]}
        xprof = {c["name"]: c for c in golden[xprof_key]["children"]}
        assert set(ours) == set(xprof)
        for name, x in xprof.items():
            assert ours[name]["self_time_us"] == pytest.approx(x["time_ps"] / 1e6, rel=1e-9), name
            if name != "IDLE":
                assert ours[name]["occurrences"] == sum(c["occurrences"] for c in x["children"]), name


def test_op_profile_name_scopes_sum_the_op_table(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "custom_loop"))
    tool = registry.get("op_profile")
    assert tool is not None
    result = op_profile.compute([store], tool.parse_options({"include_idle": "false"}))
    ops = tf_stats.compute([store], {"include_idle": False})["tables"]["ops"].data
    scope = next(c for c in result["by_name_scope"]["children"] if c["name"] == "gradient_tape")
    want = sum(t for op, t in zip(ops["operation"], ops["total_self_time_us"], strict=True)
               if op.startswith("gradient_tape/"))
    assert scope["self_time_us"] == pytest.approx(want)
    assert result["by_name_scope"]["self_time_us"] == pytest.approx(float(ops["total_self_time_us"].sum()))


def test_op_profile_options(profiles_root: Path) -> None:
    store = read_xspace(xplane_of(profiles_root, "custom_loop"))
    tool = registry.get("op_profile")
    assert tool is not None
    base = op_profile.compute([store], tool.parse_options({}))
    cut = op_profile.compute([store], tool.parse_options({"max_depth": "1", "order_by": "occurrences"}))
    assert all(c["children"] == [] and c["num_children"] >= 0 for c in cut["by_category"]["children"])
    occ = [c["occurrences"] for c in cut["by_category"]["children"]]
    assert occ == sorted(occ, reverse=True)
    shown = op_profile.compute([store], tool.parse_options({"show_name_regex": "^gradient_tape/"}))
    assert 0 < shown["shown_op_count"] < base["shown_op_count"]
    assert all(op.startswith("gradient_tape/") for op in shown["tables"]["ops"].data["operation"])
    hidden = op_profile.compute([store], tool.parse_options({"hide_name_regex": "^gradient_tape/"}))
    assert hidden["shown_op_count"] + shown["shown_op_count"] == base["shown_op_count"]
    big = op_profile.compute([store], tool.parse_options({"min_self_time_us": "1000"}))
    assert min(big["tables"]["ops"].data["self_time_us"]) >= 1000
    with pytest.raises(OptionError, match=r"regex '\[' does not compile"):
        tool.parse_options({"hide_name_regex": "["})
    with pytest.raises(OptionError, match="order_by"):
        tool.parse_options({"order_by": "color"})


@pytest.mark.parametrize("size_bytes,label", [
    (1, "≤1 B"), (1000, "≤1 KiB"), (1024, "≤1 KiB"), (1025, "≤2 KiB"),
    (83_886_080, "≤128 MiB"),  # 80 MiB: 2^26 < it <= 2^27 = 128 MiB
    (3 << 30, "≤4 GiB"),
])
def test_memory_size_classes(size_bytes: int, label: str) -> None:
    assert memory_profile.size_class(size_bytes) == label


def test_unnamed_jax_allocations_are_labelled(profiles_root: Path) -> None:
    tool = registry.get("memory_profile")
    assert tool is not None
    store = read_xspace(xplane_of(profiles_root, "jax_mlp"))
    table = memory_profile.compute([store], tool.parse_options({}))["tables"]["breakdown"]
    rows = [dict(zip([c.name for c in table.columns], r, strict=True)) for r in table.rows()]
    unnamed = [r for r in rows if r["operation"] == ""]
    assert unnamed and all(r["label"].startswith("(unnamed, ≤") for r in unnamed)
    assert all(r["label"] == r["operation"] for r in rows if r["operation"])


def _gpu_memory_xspace(path: Path, marker_level: int | None) -> Path:
    """A GPU run's host plane: thread 1 has a step marker ``train`` over 0..10 us (``_r`` =
    ``marker_level``; None: no ``_r`` stat at all) holding an allocation at 2 us; thread 2 frees
    it at 5 us (outside every marker, no consumer event). One GPU event makes it a GPU run."""
    from tbprof.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    dev = space.planes.add(id=2, name=b"/device:GPU:0")
    dev.event_metadata[1].id = 1
    dev.event_metadata[1].name = b"kernel"
    dev.lines.add(id=1, name=b"stream", timestamp_ns=0).events.add(metadata_id=1, offset_ps=0, duration_ps=1_000_000)
    host = space.planes.add(id=1, name=b"/host:CPU")
    names = ("_r", "allocator_name", "bytes_allocated", "allocation_bytes", "addr", "GPU_0_bfc")
    for i, name in enumerate(names, start=1):
        host.stat_metadata[i].id = i
        host.stat_metadata[i].name = name.encode()
    for i, name in enumerate(("train", "MemoryAllocation", "MemoryDeallocation"), start=1):
        host.event_metadata[i].id = i
        host.event_metadata[i].name = name.encode()
    main = host.lines.add(id=1, name=b"python3", timestamp_ns=0)
    train = main.events.add(metadata_id=1, offset_ps=0, duration_ps=10_000_000)
    if marker_level is not None:
        train.stats.add(metadata_id=1, int64_value=marker_level)
    other = host.lines.add(id=2, name=b"py_xla_callback", timestamp_ns=0)
    for line, meta, at_ps, in_use in ((main, 2, 2_000_000, 1024), (other, 3, 5_000_000, 0)):
        ev = line.events.add(metadata_id=meta, offset_ps=at_ps, duration_ps=0)
        ev.stats.add(metadata_id=2, ref_value=6)
        ev.stats.add(metadata_id=3, int64_value=in_use)
        ev.stats.add(metadata_id=4, int64_value=1024)
        ev.stats.add(metadata_id=5, int64_value=4096)
    path.write_bytes(space.SerializeToString())
    return path


@pytest.mark.parametrize(("marker_level", "steps"), [
    (1, [0, 1]),  # the marker holds the allocation (step 0); the free is outside: previous + 1
    (0, [0, 0]),  # _r = 0 is no root: no step anywhere, every event takes previous + 1 = 0
    (None, [0, 0]),  # no _r stat at all: likewise
])
def test_gpu_memory_steps_from_markers_on_the_thread(tmp_path: Path, marker_level: int | None,
                                                     steps: list[int]) -> None:
    store = read_xspace(_gpu_memory_xspace(tmp_path / "vm.xplane.pb", marker_level))
    ev = memory_profile.memory_events(store)["GPU_0_bfc"]
    assert ev.is_alloc.tolist() == [True, False]
    assert ev.step_id.tolist() == steps
