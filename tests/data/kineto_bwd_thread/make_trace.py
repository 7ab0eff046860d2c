#!/usr/bin/env python3
"""Writes ``bwd.pt.trace.json`` of this folder (run it to regenerate; the HTA goldens then come
from tests/golden/make_hta_callgraph_goldens.py).

Written from the fields Kineto documents and writes (``ph``/``cat``/``name``/``pid``/``tid``/``ts``/
``dur`` in µs; ``args``: ``External id``, ``correlation``, ``device``, ``stream``): a training
step's forward operators on the main thread (``ProfilerStep#N`` with ``aten::cross_entropy_loss``
and a ``torch.compile`` ``CompiledFunction``) and autograd's backward thread, whose top-level
events are ``autograd::engine::evaluate_function: ...`` nodes and an ``aten::zeros`` (as
PyTorch's backward thread runs them), each launching kernels through ``cudaLaunchKernel``. No
shared profile has a backward thread whose top level holds the operator names searched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOST, GPU, MAIN, BWD, STREAM = 100, 0, 1, 2, 7


def main() -> None:
    events: list[dict[str, Any]] = []
    ids = {"ext": 0, "corr": 0}
    gpu_free = [0.0]

    def x(cat: str, name: str, ts: float, dur: float, tid: int, pid: int = HOST, **args: Any) -> None:
        events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                       "args": args})

    def op(name: str, ts: float, dur: float, tid: int = MAIN, kernels: tuple[str, ...] = ()) -> None:
        ids["ext"] += 1
        ext = ids["ext"]
        x("cpu_op", name, ts, dur, tid, **{"External id": ext})
        for i, k in enumerate(kernels):
            ids["corr"] += 1
            at = ts + 2 + 6 * i
            x("cuda_runtime", "cudaLaunchKernel", at, 4.0, tid, **{"External id": ext, "correlation": ids["corr"]})
            k_start = max(at + 10, gpu_free[0] + 1)
            gpu_free[0] = k_start + 20
            x("kernel", k, k_start, 20.0, STREAM, GPU, **{"External id": ext, "correlation": ids["corr"],
                                                            "device": 0, "stream": STREAM})

    for step, base in ((1, 1000.0), (2, 3000.0), (3, 5000.0)):
        x("user_annotation", f"ProfilerStep#{step}", base, 2000.0, MAIN, **{"External id": 0})
        op("aten::cross_entropy_loss", base + 10, 290.0)
        op("aten::log_softmax", base + 20, 100.0, kernels=("softmax_warp_forward", "softmax_warp_forward"))
        op("aten::nll_loss", base + 160, 100.0, kernels=("nll_loss_forward_reduce_cuda_kernel_2d", "fill_kernel"))
        op("CompiledFunction", base + 400, 300.0, kernels=("triton_poi_fused_0", "triton_red_fused_1",
                                                           "triton_poi_fused_2"))
        op("aten::zeros", base + 800, 40.0, BWD, kernels=("fill_kernel",))
        op("autograd::engine::evaluate_function: CompiledFunctionBackward", base + 900, 600.0, BWD)
        op("CompiledFunctionBackward", base + 910, 580.0, BWD, kernels=("triton_poi_fused_3", "triton_red_fused_4",
                                                                       "triton_poi_fused_5"))
        op("autograd::engine::evaluate_function: NllLossBackward0", base + 1520, 300.0, BWD)
        op("NllLossBackward0", base + 1530, 280.0, BWD)
        op("aten::nll_loss_backward", base + 1540, 260.0, BWD,
           kernels=("fill_kernel", "nll_loss_backward_reduce_cuda_kernel_2d", "elementwise_kernel"))
    meta = [{"ph": "M", "name": "process_name", "pid": GPU, "tid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "python3"}},
            {"ph": "M", "name": "thread_name", "pid": HOST, "tid": BWD, "args": {"name": "autograd thread"}}]
    body = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}],
            "distributedInfo": {"rank": 0}, "traceEvents": events + meta}
    (HERE / "bwd.pt.trace.json").write_text(json.dumps(body, indent=1) + "\n")


if __name__ == "__main__":
    main()
