"""A two-rank FSDP2-style PyTorch profiler (Kineto) trace whose second rank's GPU runs one step
behind its CPU, written from Kineto's documented Chrome-trace fields (no real run: the real
traces of such runs are not in this repository).

Fields used, as PyTorch >= 2.1's ``torch.profiler`` writes them (``libkineto/src/output_json.cpp``
and PyTorch's ``profiler/_utils``/``ProcessGroupNCCL`` naming):

* host (``pid`` the process, ``tid`` the thread): ``ProfilerStep#N`` spans (``user_annotation``
  since PyTorch 2.x, ``cpu_op`` before: ``step_category``);
  ``cpu_op`` events with ``External id`` (and ``Input type`` from ``record_shapes``);
  ``record_param_comms`` (the ``cpu_op`` every c10d call runs in, with ``Collective name``)
  holding the collective's own span, a ``user_annotation`` ``nccl:_all_gather_base`` /
  ``nccl:_reduce_scatter_base`` (FSDP2's ``all_gather_into_tensor`` / ``reduce_scatter_tensor``);
  ``cuda_runtime`` ``cudaLaunchKernel`` and ``cuda_driver`` ``cuLaunchKernelEx`` launches with
  ``correlation`` and ``External id``;
* device (``pid`` the GPU index, ``tid`` the CUDA stream): ``kernel`` events with ``device``,
  ``stream``, ``correlation`` and ``External id`` (a NCCL kernel carries ``record_param_comms``'s,
  as PyTorch 2.11 writes it); NCCL >= 2.19's ``ncclDevKernel_*`` names; ``gpu_user_annotation``
  ``ProfilerStep#N`` over the device work launched in step N and ``nccl:*`` over each collective's
  kernel (the host annotation's ``External id``);
* ``ac2g`` flow pairs (``ph`` ``s`` at the launch, ``f`` at the kernel, ``id`` the correlation);
* trace metadata: ``distributedInfo`` (``backend``, ``rank``, ``world_size``), ``deviceProperties``,
  ``baseTimeNanoseconds``.

Per step (times in us from the step's host start; host steps last ``STEP_US`` back to back): an
all-gather launched at 100 (kernel at 120 on its stream, ``AG_US[rank]`` long), a GEMM launched
at 320 (kernel at 340, ``MM_US`` long, on the compute stream), a reduce-scatter launched at 650
(kernel at 680 on its stream, ``RS_US[rank]`` long). Rank 1's kernels run ``LAG_US[1]`` = one
step later than their launches' step: during the next step's host marker (the last step's after
the host ends).
Rank 0 waits in both collectives for rank 1 (its collective kernels are longer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STEPS = (1, 2, 3, 4)
STEP_US = 1000
T0_US = 1_700_000_000  # Kineto's ts: us on the host clock
MM_US = 300
AG_US = (200, 150)  # per rank: all-gather kernel
RS_US = (100, 80)  # per rank: reduce-scatter kernel
LAG_US = (0, STEP_US)  # per rank: how long after its step's launch window a kernel runs
COMPUTE_STREAM, RS_STREAM, AG_STREAM = 7, 20, 21  # FSDP2 all-gathers and reduce-scatters on streams of their own
AG_KERNEL = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
RS_KERNEL = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
MM_KERNEL = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel"


def _x(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def rank_trace(rank: int, step_category: str = "user_annotation", prefetch_us: int = 0) -> dict[str, Any]:
    """One rank's trace (a ``*.pt.trace.json`` document); ``prefetch_us``: every all-gather but the
    first starts that much earlier (its launch unchanged), as FSDP2's prefetch on its own stream."""
    pid, tid = 4000 + rank, 4000 + rank
    events: list[dict[str, Any]] = []
    ext = corr = 0

    def launch(name: str, cat: str, at: float, ext_id: int) -> int:
        nonlocal corr
        corr += 1
        events.append(_x(cat, name, pid, tid, at, 10, **{"External id": ext_id, "correlation": corr}))
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": pid, "tid": tid, "ts": at})
        return corr

    def kernel(name: str, stream: int, at: float, dur: float, ext_id: int, corr_id: int) -> None:
        events.append(_x("kernel", name, rank, stream, at, dur, **{
            "External id": ext_id, "device": rank, "stream": stream, "correlation": corr_id,
            "grid": [132, 1, 1], "block": [256, 1, 1], "registers per thread": 128, "shared memory": 0}))
        events.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr_id, "pid": rank,
                       "tid": stream, "ts": at})

    def collective(title: str, c10d_name: str, kernel_name: str, stream: int, at: float, kernel_at: float,
                   kernel_us: float) -> None:
        nonlocal ext
        ext += 2
        events.append(_x("cpu_op", "record_param_comms", pid, tid, at, 200, **{
            "External id": ext - 1, "Collective name": c10d_name, "Group size": 2, "dtype": "BFloat16",
            "Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Rank": rank}))
        events.append(_x("user_annotation", title, pid, tid, at + 10, 180, **{"External id": ext}))
        c = launch("cuLaunchKernelEx", "cuda_driver", at + 50, ext - 1)
        kernel(kernel_name, stream, kernel_at, kernel_us, ext - 1, c)
        events.append(_x("gpu_user_annotation", title, rank, stream, kernel_at, kernel_us,
                         **{"External id": ext}))

    lag = LAG_US[rank]
    for n in STEPS:
        hb = T0_US + (n - 1) * STEP_US
        ext += 1
        events.append(_x(step_category, f"ProfilerStep#{n}", pid, tid, hb, STEP_US, **{"External id": ext}))
        ag_at = hb + 120 + lag - (prefetch_us if n > STEPS[0] else 0)
        collective("nccl:_all_gather_base", "_allgather_base", AG_KERNEL, AG_STREAM, hb + 50, ag_at, AG_US[rank])
        ext += 1
        events.append(_x("cpu_op", "aten::mm", pid, tid, hb + 300, 200, **{
            "External id": ext, "Input type": ["c10::BFloat16", "c10::BFloat16"],
            "Input Dims": [[4096, 4096], [4096, 4096]]}))
        c = launch("cudaLaunchKernel", "cuda_runtime", hb + 320, ext)
        kernel(MM_KERNEL, COMPUTE_STREAM, hb + 340 + lag, MM_US, ext, c)
        collective("nccl:_reduce_scatter_base", "_reduce_scatter_base", RS_KERNEL, RS_STREAM, hb + 600,
                   hb + 680 + lag, RS_US[rank])
        first, last = ag_at, hb + 680 + lag + RS_US[rank]
        events.append(_x("gpu_user_annotation", f"ProfilerStep#{n}", rank, COMPUTE_STREAM, first, last - first))
    events += [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": "thread 1 (python)"}},
        {"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": rank, "tid": 0, "args": {"labels": f"GPU {rank}"}},
        {"ph": "M", "name": "thread_name", "pid": rank, "tid": COMPUTE_STREAM, "args": {"name": "stream 7"}},
        {"ph": "M", "name": "thread_name", "pid": rank, "tid": RS_STREAM, "args": {"name": "stream 20"}},
        {"ph": "M", "name": "thread_name", "pid": rank, "tid": AG_STREAM, "args": {"name": "stream 21"}},
    ]
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": rank, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
                              "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "record_shapes": 1,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "traceEvents": events,
        "traceName": f"rank{rank}.pt.trace.json",
    }


def write_run(logdir: Path, step_category: str = "user_annotation") -> list[Path]:
    """Both ranks' traces under ``logdir`` (a run of ``tensorboard_trace_handler``'s shape)."""
    logdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in (0, 1):
        path = logdir / f"rank{rank}.1.pt.trace.json"
        path.write_text(json.dumps(rank_trace(rank, step_category)))
        paths.append(path)
    return paths


def launched_device_us(trace: dict[str, Any]) -> dict[int, dict[str, float]]:
    """Per step number: the device time (us) of the kernels whose launch lies in the step's host
    ``ProfilerStep#N``, split into collective kernels (``nccl...Kernel``) and the rest; derived
    from the trace's events by correlation, independently of tbprof."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
             if e["cat"] in ("user_annotation", "cpu_op") and e["name"].startswith("ProfilerStep#")}
    launches = {e["args"]["correlation"]: e["ts"] for e in events if e["cat"] in ("cuda_runtime", "cuda_driver")}
    out = {n: {"collectives": 0.0, "compute": 0.0} for n in steps}
    for k in (e for e in events if e["cat"] == "kernel"):
        at = launches[k["args"]["correlation"]]
        step = next(n for n, (b, e) in steps.items() if b <= at < e)
        out[step]["collectives" if k["name"].startswith("nccl") else "compute"] += k["dur"]
    return out
