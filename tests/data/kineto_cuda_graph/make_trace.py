#!/usr/bin/env python3
"""Writes ``graph.pt.trace.json`` of this folder (run it to regenerate; the HTA goldens then come
from tests/golden/make_hta_critical_path_goldens.py).

Written from the fields Kineto documents and writes for CUDA graphs: ``cudaGraphLaunch`` is a
``cuda_runtime`` call with a ``correlation``, and every kernel the graph runs is a ``kernel``
event carrying that same ``correlation`` (CUPTI attributes a graph's kernel nodes to its launch).
Three ``ProfilerStep#N``, each: an ``aten::mm`` launching one kernel through ``cudaLaunchKernel``,
then a ``cudaGraphLaunch`` whose graph runs four kernels back to back on the same stream, and a
``cudaDeviceSynchronize``. No shared profile was recorded with CUDA graphs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOST, GPU, MAIN, STREAM = 100, 0, 1, 7
GRAPH_KERNELS = ("triton_poi_fused_add_0", "triton_red_fused_sum_1", "ampere_sgemm_64x64_nn",
                 "triton_poi_fused_relu_2")


def main() -> None:
    events: list[dict[str, Any]] = []
    corr = 0

    def x(cat: str, name: str, ts: float, dur: float, tid: int, pid: int = HOST, **args: Any) -> None:
        events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                       "args": args})

    def kernel(name: str, ts: float, dur: float, c: int, ext: int) -> None:
        x("kernel", name, ts, dur, STREAM, GPU, **{"External id": ext, "correlation": c, "device": 0,
                                                   "stream": STREAM, "context": 1})

    for step, base in ((1, 1000.0), (2, 2000.0), (3, 3000.0)):
        x("user_annotation", f"ProfilerStep#{step}", base, 900.0, MAIN, **{"External id": 10 * step})
        x("cpu_op", "aten::mm", base + 10, 40.0, MAIN, **{"External id": 10 * step + 1})
        corr += 1
        x("cuda_runtime", "cudaLaunchKernel", base + 20, 8.0, MAIN, **{"External id": 10 * step + 1,
                                                                       "correlation": corr})
        kernel("ampere_sgemm_128x64_nn", base + 35, 60.0, corr, 10 * step + 1)
        corr += 1
        x("cuda_runtime", "cudaGraphLaunch", base + 60, 30.0, MAIN, **{"External id": 0, "correlation": corr})
        at = base + 100
        for i, name in enumerate(GRAPH_KERNELS):
            dur = 50.0 + 25 * i
            kernel(name, at, dur, corr, 0)
            at += dur + 3
        corr += 1
        x("cuda_runtime", "cudaDeviceSynchronize", base + 100, at - base - 95, MAIN,
          **{"External id": 0, "correlation": corr})
    meta = [{"ph": "M", "name": "process_name", "pid": GPU, "tid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "python3"}}]
    body = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}],
            "distributedInfo": {"rank": 0}, "traceEvents": events + meta}
    (HERE / "graph.pt.trace.json").write_text(json.dumps(body, indent=1) + "\n")


if __name__ == "__main__":
    main()
