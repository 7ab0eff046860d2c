"""LLM training runs (#33): GPU work in the step that launched it where the GPU runs a step
behind the CPU, FSDP2's collectives recognised, NCCL kernels attributed to their collective.

The two-rank fixture (tests/kineto_llm.py, written from Kineto's documented fields) has rank 1's
GPU one step behind its CPU and FSDP2's collective names; the expected numbers are derived from
its events by correlation (``launched_device_us``) or from its layout constants. The real
torch_ddp trace (demo_logs) checks the kernel attribution on PyTorch 2.11's own output.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.gpu import distributed, stragglers
from tbprof.analyses.input import input_pipeline
from tbprof.analyses.ops import headline, kineto_ops
from tbprof.analyses.overview import overview, smart_suggestion
from tbprof.analyses.pod import pod_viewer
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.steps.assignment import steps_of
from tbprof.readers.chrome_trace import read_chrome_trace
from tbprof.store import kineto_names as kn
from tbprof.store.tables import ProfileStore
from tests import kineto_llm as fx

DEMO = Path(__file__).resolve().parents[2] / "demo_logs"
DATA = Path(__file__).resolve().parents[1] / "data"
_PS_PER_US = 1_000_000


@pytest.fixture()
def run(tmp_path: Path) -> list[ProfileStore]:
    return [read_chrome_trace(p) for p in fx.write_run(tmp_path / "fsdp2")]


def _rows(table: Any) -> list[dict[str, Any]]:
    names = [c.name for c in table.columns]
    return [dict(zip(names, r, strict=True)) for r in table.rows()]


@pytest.mark.parametrize("step_category", ["user_annotation", "cpu_op"])
@pytest.mark.parametrize("rank", [0, 1])
def test_every_step_carries_the_device_time_launched_in_it(tmp_path: Path, rank: int, step_category: str) -> None:
    want = fx.launched_device_us(fx.rank_trace(rank, step_category))
    run = [read_chrome_trace(p) for p in fx.write_run(tmp_path / "fsdp2", step_category)]
    store = run[rank]
    steps = steps_of(store)
    assert steps.names == [f"ProfilerStep#{n}" for n in fx.STEPS]
    cats = sb.categories_ms(steps.type_ps)
    for i, n in enumerate(fx.STEPS):
        assert want[n]["compute"] == fx.MM_US > 0
        assert cats["device_compute_ms"][i] * 1e3 == pytest.approx(want[n]["compute"], abs=1e-9), n
        assert cats["device_collectives_ms"][i] * 1e3 == pytest.approx(want[n]["collectives"], abs=1e-9), n
    # Steps never overlap and never run backwards: each ends where the next starts or before.
    assert np.all(steps.end_ps > steps.begin_ps)
    assert np.all(steps.begin_ps[1:] >= steps.end_ps[:-1])
    # The overview, the pod viewer and the input pipeline read the same steps.
    graph = overview.TOOLS[0].compute([store], {})["step_time_graph"]
    assert np.asarray(graph["device_compute_ms"]) * 1e3 == pytest.approx([want[n]["compute"] for n in fx.STEPS])
    assert np.asarray(graph["device_collectives_ms"]) * 1e3 == pytest.approx(
        [want[n]["collectives"] for n in fx.STEPS])
    pod = pod_viewer.compute(run, {"step": -1})
    column = next(c for c in pod["cores"] if c["host"] == store.host and c["device"] != "all devices")
    for i, n in enumerate(fx.STEPS):
        assert column["breakdown_us"]["Device compute"][i] == pytest.approx(want[n]["compute"], abs=1e-6)
        assert column["breakdown_us"]["Device collective communication"][i] == pytest.approx(
            want[n]["collectives"], abs=1e-6)
    ipa = input_pipeline.TOOLS[0].compute([store], {})
    table = _rows(ipa["tables"]["steps"])
    assert [r["device_compute_ms"] * 1e3 for r in table] == pytest.approx(
        [want[n]["compute"] for n in fx.STEPS], abs=1e-9)


def _launched_device_us_of(trace: dict[str, Any]) -> tuple[dict[str, float], float]:
    """Per host ``ProfilerStep#N``: the device time (us) of the device events (kernels, memcpys,
    memsets) whose launch (same ``correlation``) starts in it; and that of the device events whose
    launch is not in the trace. Plain Python over the JSON, independent of tbprof."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in events
             if e["cat"] in ("user_annotation", "cpu_op") and e["name"].startswith("ProfilerStep#")]
    launches = {e["args"]["correlation"]: e["ts"] for e in events
                if e["cat"] in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    out = {name: 0.0 for _, _, name in steps}
    unlaunched = 0.0
    for e in events:
        if e["cat"] not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        at = launches.get(e["args"].get("correlation"))
        if at is None:
            unlaunched += e["dur"]
            continue
        name = next(n for b, end, n in steps if b <= at < end)
        out[name] += e["dur"]
    return out, unlaunched


def test_real_gpu_lag_trace_steps_carry_their_device_work() -> None:
    """tests/data/torch_gpu_lag (PyTorch 2.11, H100): the GPU runs a step behind the CPU, and work
    launched before the profiled steps still runs at the first one's start. Each step's device
    compute is the device time launched in it (about 64 ms each; the GPU's ``ProfilerStep#N``
    annotation alone covers about 22 ms), the earlier work in no step. Tolerance 1 us: the
    ``ts``/``dur`` decimals are read as floats (a few ns per event), and a stream's back-to-back
    events may touch."""
    path = DATA / "torch_gpu_lag" / "torch_gpu_lag.pt.trace.json.gz"
    want, unlaunched = _launched_device_us_of(json.loads(gzip.decompress(path.read_bytes())))
    assert unlaunched > 0 and all(v > 0 for v in want.values())
    steps = steps_of(read_chrome_trace(path))
    assert steps.names == sorted(want, key=lambda n: int(n.split("#")[1]))
    cats = sb.categories_ms(steps.type_ps)
    assert cats["device_compute_ms"] * 1e3 == pytest.approx([want[n] for n in steps.names], abs=1.0)
    assert np.all(steps.begin_ps[1:] >= steps.end_ps[:-1]) and np.all(steps.end_ps > steps.begin_ps)


def test_without_launches_the_gpu_step_marker_holds_the_step(tmp_path: Path) -> None:
    """Rank 1 without its runtime calls (no correlation to follow): the GPU's own
    ``ProfilerStep#N`` annotation still puts each kernel in its step."""
    trace = fx.rank_trace(1)
    want = fx.launched_device_us(trace)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") not in ("cuda_runtime", "cuda_driver")]
    path = tmp_path / "rank1.1.pt.trace.json"
    path.write_text(json.dumps(trace))
    steps = steps_of(read_chrome_trace(path))
    cats = sb.categories_ms(steps.type_ps)
    assert cats["device_compute_ms"] * 1e3 == pytest.approx([want[n]["compute"] for n in fx.STEPS], abs=1e-9)
    assert cats["device_collectives_ms"] * 1e3 == pytest.approx([want[n]["collectives"] for n in fx.STEPS],
                                                                abs=1e-9)


def test_a_lagging_gpu_step_spans_its_own_kernels(run: list[ProfileStore]) -> None:
    """Rank 1: step N's kernels run during step N+1's host marker; the step runs from the end of
    step N-1's device work (or its host marker, for the first) to the end of its own."""
    steps = steps_of(run[1])
    lag, first_kernel, last_kernel_end = fx.LAG_US[1], 120, 680 + fx.RS_US[1]
    for i, n in enumerate(fx.STEPS):
        host_begin = (n - 1) * fx.STEP_US  # the store's origin is the first step's host start
        assert steps.end_ps[i] == (host_begin + lag + last_kernel_end) * _PS_PER_US
        expected_begin = host_begin if i == 0 else host_begin - fx.STEP_US + lag + last_kernel_end
        assert steps.begin_ps[i] == expected_begin * _PS_PER_US
        assert steps.begin_ps[i] <= (host_begin + lag + first_kernel) * _PS_PER_US


def test_fsdp2_collectives_are_recognised(run: list[ProfileStore]) -> None:
    assert all(distributed.has_collectives(s) for s in run)
    result = distributed.compute(run, {})
    assert result["matched_across_ranks"]
    rows = {(r["rank"], r["name"]): r for r in _rows(result["tables"]["collectives"])}
    assert sorted({name for _, name in rows}) == ["nccl:_all_gather_base", "nccl:_reduce_scatter_base"]
    n = len(fx.STEPS)
    for name, per_rank in (("nccl:_all_gather_base", fx.AG_US), ("nccl:_reduce_scatter_base", fx.RS_US)):
        # A collective's range is its GPU annotation (the kernel's span); the transfer part is as long as
        # the shortest rank's; the rest is waiting.
        for rank in (0, 1):
            row = rows[(rank, name)]
            assert row["calls"] == n
            assert row["total_latency_us"] == pytest.approx(n * per_rank[rank])
            assert row["transfer_us"] == pytest.approx(n * min(per_rank))
            assert row["synchronizing_us"] == pytest.approx(n * (per_rank[rank] - min(per_rank)))
        assert rows[(1, name)]["slowest"] and not rows[(0, name)]["slowest"]


def test_stragglers_name_the_rank_the_others_wait_for(run: list[ProfileStore]) -> None:
    result = stragglers.compute(run, {"num_candidates": 1})
    ranks = {r["rank"]: r for r in _rows(result["tables"]["ranks"])}
    n = len(fx.STEPS)
    waits = {rank: n * ((fx.AG_US[rank] - min(fx.AG_US)) + (fx.RS_US[rank] - min(fx.RS_US))) for rank in (0, 1)}
    for rank, wait in waits.items():
        assert ranks[rank]["synchronizing_us"] == pytest.approx(wait)
    assert result["waited_for"] == 1 and ranks[1]["waited_for"] and not ranks[0]["waited_for"]


def _device_ops(store: ProfileStore) -> dict[str, tuple[float, str]]:
    db = kineto_ops.device_ops(store)
    return {str(n): (float(t), str(ty)) for n, t, ty in zip(db["name"], db["time_ps"], db["type"], strict=True)}


@pytest.mark.parametrize("rank", [0, 1])
def test_nccl_kernels_belong_to_their_collective(run: list[ProfileStore], rank: int) -> None:
    ops = _device_ops(run[rank])
    assert "record_param_comms" not in ops
    n = len(fx.STEPS)
    assert ops["nccl:_all_gather_base"][0] == n * fx.AG_US[rank] * _PS_PER_US
    assert ops["nccl:_reduce_scatter_base"][0] == n * fx.RS_US[rank] * _PS_PER_US
    assert ops["aten::mm"][0] == n * fx.MM_US * _PS_PER_US


def test_without_launches_the_collective_gpu_annotation_names_the_kernel(tmp_path: Path) -> None:
    """A trace without the launching runtime calls (a device-only capture): the kernel's enclosing
    ``nccl:*`` GPU annotation names it, not the ``record_param_comms`` its External id points to."""
    trace = fx.rank_trace(0)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") not in ("cuda_runtime", "cuda_driver")]
    path = tmp_path / "rank0.1.pt.trace.json"
    path.write_text(json.dumps(trace))
    ops = _device_ops(read_chrome_trace(path))
    assert "record_param_comms" not in ops
    assert ops["nccl:_all_gather_base"][0] == len(fx.STEPS) * fx.AG_US[0] * _PS_PER_US


def test_by_external_id_the_collective_inside_record_param_comms_names_the_kernel(tmp_path: Path) -> None:
    """No launches and no GPU annotations (a trace without ``gpu_user_annotation``): the kernel's
    External id is ``record_param_comms``'s, and the collective span inside it names the kernel."""
    trace = fx.rank_trace(0)
    trace["traceEvents"] = [e for e in trace["traceEvents"]
                            if e.get("cat") not in ("cuda_runtime", "cuda_driver", "gpu_user_annotation")]
    path = tmp_path / "rank0.1.pt.trace.json"
    path.write_text(json.dumps(trace))
    ops = _device_ops(read_chrome_trace(path))
    assert "record_param_comms" not in ops
    assert ops["nccl:_all_gather_base"][0] == len(fx.STEPS) * fx.AG_US[0] * _PS_PER_US
    assert ops["nccl:_reduce_scatter_base"][0] == len(fx.STEPS) * fx.RS_US[0] * _PS_PER_US


def test_real_ddp_nccl_kernels_belong_to_their_collective() -> None:
    """torch_ddp (PyTorch 2.11, NCCL 2.2x): each ``ncclDevKernel_*`` is launched inside
    ``record_param_comms`` > ``nccl:all_reduce`` / ``nccl:broadcast``; the device time of each
    collective is the sum of its kernels, derived here from the JSON by the kernels' names."""
    for path in sorted((DEMO / "torch_ddp").glob("*.pt.trace.json")):
        events = json.loads(path.read_text())["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel" and kn.is_collective_kernel(e["name"])]
        want = {"nccl:all_reduce": sum(e["dur"] for e in kernels if "AllReduce" in e["name"]),
                "nccl:broadcast": sum(e["dur"] for e in kernels if "Broadcast" in e["name"])}
        assert all(v > 0 for v in want.values()) and len(kernels) == 24
        ops = _device_ops(read_chrome_trace(path))
        assert "record_param_comms" not in ops
        for name, us in want.items():
            assert ops[name][0] == pytest.approx(us * _PS_PER_US, abs=len(kernels) * 1000), name


@pytest.mark.parametrize("name", [
    "nccl:all_reduce", "nccl:_all_gather_base", "nccl:_reduce_scatter_base", "nccl:all_gather_into_tensor_coalesced",
    "nccl:reduce_scatter_tensor_coalesced", "nccl:all_to_all", "nccl:_broadcast_oop", "nccl:send 0->1",
    "nccl:recv 0<-1", "nccl:coalesced", "gloo:all_reduce",
])
def test_collective_names(name: str) -> None:
    assert kn.is_collective_name(name)


@pytest.mark.parametrize("name", ["c10d::allreduce_", "record_param_comms", "nccl:", "nccl::x", "ProfilerStep#1",
                                  "ncclDevKernel_AllGather_RING_LL", "aten::mm"])
def test_not_collective_names(name: str) -> None:
    assert not kn.is_collective_name(name)


@pytest.mark.parametrize(("name", "is_comm"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", True),  # NCCL < 2.19
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", True),  # NCCL >= 2.19
    ("ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)", True),  # RCCL
    ("nccl_copy_helper", False), ("void at::native::vectorized_elementwise_kernel<4>", False),
])
def test_collective_kernels(name: str, is_comm: bool) -> None:
    assert kn.is_collective_kernel(name) is is_comm



@pytest.mark.parametrize("rank", [0, 1])
def test_collectives_headline_counts_pytorch_collectives(run: list[ProfileStore], rank: int) -> None:
    """Framework op stats' "Collectives" metric: the collectives' device time over all device op time
    (the fixture's kernels never overlap: op self time is kernel time)."""
    comm = fx.AG_US[rank] + fx.RS_US[rank]
    got = headline.collectives_metric([run[rank]])["value_percent"]
    assert got == pytest.approx(100.0 * comm / (comm + fx.MM_US))


def test_collectives_suggestion_opens_the_collectives_page(run: list[ProfileStore]) -> None:
    """Both ranks' collectives are over the suggestion's 20 % of device op time; a PyTorch run has no
    HLO, so the suggestion points at the Collectives page."""
    comm = sum(fx.AG_US) + sum(fx.RS_US)
    assert 100.0 * comm / (comm + 2 * fx.MM_US) >= smart_suggestion.COLLECTIVES_PERCENT
    found = [s for s in smart_suggestion.TOOLS[0].compute(run, {})["suggestions"] if s["rule"] == "collectives_share"]
    assert len(found) == 1 and found[0]["page"] == "collectives"


@pytest.mark.parametrize("rank", [0, 1])
def test_event_step_of_device_work_is_its_launching_step(run: list[ProfileStore], rank: int) -> None:
    """``Steps.event_step`` (op time per step, ``tbprof check --op``) agrees with the breakdown: a
    kernel is in the step it was launched in. The fixture launches every kernel within 330 us of its
    step's start and runs it ``LAG_US[rank]`` after (times from the first step's host start)."""
    store = run[rank]
    steps = steps_of(store)
    plane = next(p for p in store.planes if p.name.startswith("/device:GPU:"))
    kernels = np.nonzero(plane.dur_ps > 0)[0]
    kernels = kernels[np.isin(plane.name_id[kernels], [store.strings.id(n) for n in (fx.AG_KERNEL, fx.RS_KERNEL,
                                                                                      fx.MM_KERNEL)])]
    assert kernels.shape[0] == 3 * len(fx.STEPS)
    launched_in = (plane.start_ps[kernels] // _PS_PER_US - fx.LAG_US[rank]) // fx.STEP_US
    np.testing.assert_array_equal(steps.event_step(store.planes.index(plane))[kernels], launched_in)


def _union_us(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def test_device_work_started_before_its_step_is_not_lost(tmp_path: Path) -> None:
    """Rank 1 with FSDP2-style prefetch: each all-gather after the first starts 500 us early, on its
    own stream, while the previous step's reduce-scatter still runs. Its part before its step starts
    counts in the previous step, the rest in its own; over the steps, device time is the union of
    the kernels (no overlap counted twice, nothing dropped)."""
    trace = fx.rank_trace(1, prefetch_us=500)
    path = tmp_path / "rank1.1.pt.trace.json"
    path.write_text(json.dumps(trace))
    steps = steps_of(read_chrome_trace(path))
    cats = sb.categories_ms(steps.type_ps)
    kernels = [(e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    device_us = (cats["device_compute_ms"] + cats["device_collectives_ms"]).sum() * 1e3
    assert device_us == pytest.approx(_union_us(kernels), abs=1e-6)
    assert cats["device_compute_ms"] * 1e3 == pytest.approx([fx.MM_US] * len(fx.STEPS), abs=1e-9)
