#!/usr/bin/env python3
"""Writes the two traces of this folder (run it to regenerate them; the goldens then come from
tests/golden/make_tb_profiler_goldens.py).

Written from the fields Kineto documents and writes (``ph``/``cat``/``name``/``pid``/``tid``/``ts``/
``dur`` in µs; ``args``: ``External id`` / ``external id``, ``correlation``, ``Input Dims`` /
``Input dims``, ``device``, ``stream``, ``blocks per SM``, ``est. achieved occupancy %``), for the
rules of torch-tb-profiler 0.4.3's operator tree that no shared profile exercises:

* ``eager.pt.trace.json`` (PyTorch >= 1.10 categories: ``cpu_op``, ``user_annotation``,
  ``cuda_runtime``, ``kernel``, ``gpu_user_annotation``): ``aten::layer_norm`` whose only child is
  ``aten::layer_norm`` (and a chain of three ``aten::reshape``), an ``aten::add_`` with two
  ``aten::add_`` children (not merged), ``aten::div`` calling ``aten::div`` on the backward
  thread; ``user_annotation`` ranges (``CompiledFunction``, ``Optimizer.step#SGD.step``, the
  data loader's ``enumerate(DataLoader)#...__next__``) and ``nccl:all_reduce``; a ``cpu_op``
  data-loader event; an operator that starts inside its step and ends after it; ``nn.Module``
  calls (``python_function`` with ``Python id`` / ``Python parent id`` / ``Python module id``)
  around the nested ``aten::layer_norm`` and inside the ``CompiledFunction`` annotation;
* ``pt18.pt.trace.json`` (PyTorch 1.8's categories ``Operator``, ``Runtime``, ``Kernel``,
  ``Memcpy``, ``Input dims``, ``external id``): runtime calls inside operators (their time
  leaves the operator's self time), a runtime call with external id 0, an ``aten::add_`` whose
  launch is on its same-name child, TensorCore kernels (``h884gemm``), a kernel launched before the
  first step that runs inside it, and a last step that launches far fewer kernels than the one
  before (the plugin drops it from the steps), whose kernels run after the host step ends;
* ``nosteps.pt.trace.json`` (PyTorch >= 1.10 categories, no ``ProfilerStep``): operators and
  kernels, one kernel running after the last operator ends (the plugin's window is then its
  operators' span).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOST, GPU, MAIN, BWD, STREAM = 100, 0, 1, 2, 7


class Trace:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.ext = 0
        self.corr = 0
        # A stream runs its work in launch order, one at a time (traces whose launches are written
        # in time order keep to it; eager() places its kernels by hand).
        self.fifo = False
        self.stream_free = 0.0

    def x(self, cat: str, name: str, ts: float, dur: float, tid: int = MAIN, pid: int = HOST,
          **args: Any) -> dict[str, Any]:
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}
        self.events.append(e)
        return e

    def op(self, cat: str, name: str, ts: float, dur: float, dims: Any = None, tid: int = MAIN,
           ext_key: str = "External id", dims_key: str = "Input Dims") -> int:
        self.ext += 1
        args: dict[str, Any] = {ext_key: self.ext}
        if dims is not None:
            args[dims_key] = dims
        self.x(cat, name, ts, dur, tid, **args)
        return self.ext

    def launch(self, runtime_cat: str, kernel_cat: str, ext: int, ts: float, kernel: str, k_ts: float,
               k_dur: float, tid: int = MAIN, ext_key: str = "External id", name: str = "cudaLaunchKernel",
               **kernel_args: float) -> None:
        self.corr += 1
        if self.fifo:
            k_ts = max(k_ts, self.stream_free + 1.0)
            self.stream_free = k_ts + k_dur
        self.x(runtime_cat, name, ts, 5.0, tid, **{ext_key: ext, "correlation": self.corr})
        self.x(kernel_cat, kernel, k_ts, k_dur, STREAM, GPU, **{ext_key: ext, "correlation": self.corr,
                                                                "device": 0, "stream": STREAM, **kernel_args})

    def write(self, name: str, metadata: dict[str, Any]) -> None:
        meta = [{"ph": "M", "name": "process_name", "pid": GPU, "tid": 0, "args": {"name": "GPU 0"}},
                {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "python3"}}]
        body = {**metadata, "traceEvents": self.events + meta}
        (HERE / name).write_text(json.dumps(body, indent=1) + "\n")


def eager() -> None:
    t = Trace()
    k: dict[str, Any] = {"blocks per SM": 0.5, "est. achieved occupancy %": 40}
    for step, base in ((1, 1000.0), (2, 4000.0)):
        step_ext = t.op("user_annotation", f"ProfilerStep#{step}", base, 3000.0)
        if step == 1:
            t.op("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base + 10, 100.0)
        else:
            t.op("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base + 10, 100.0, [])
        t.op("cpu_op", "aten::stack", base + 20, 60.0, [[], []])
        t.op("user_annotation", "CompiledFunction", base + 200, 700.0)
        py = 10 * step
        t.x("python_function", "train.py(5): <module>", base + 1, 2900.0, **{"Python id": py, "Python parent id": 0})
        t.x("python_function", "nn.Module: Block_0", base + 205, 685.0,
            **{"Python id": py + 1, "Python parent id": py, "Python module id": 1})
        t.x("python_function", "nn.Module: LayerNorm_0", base + 208, 294.0,
            **{"Python id": py + 2, "Python parent id": py + 1, "Python module id": 2})
        rows = 8 * step
        t.op("cpu_op", "aten::layer_norm", base + 210, 290.0, [[rows, 64], [], [64], [64], [], []])
        t.op("cpu_op", "aten::layer_norm", base + 220, 270.0, [[rows, 64], [], [64], [64], [], []])
        ext = t.op("cpu_op", "aten::native_layer_norm", base + 230, 250.0, [[rows, 64], [], [64], [64], []])
        t.launch("cuda_runtime", "kernel", ext, base + 240, "vectorized_layer_norm_kernel", base + 300, 40.0, **k)
        t.op("cpu_op", "aten::linear", base + 510, 290.0, [[rows, 64], [32, 64], [32]])
        ext = t.op("cpu_op", "aten::addmm", base + 520, 270.0, [[32], [rows, 64], [64, 32], [], []])
        t.launch("cuda_runtime", "kernel", ext, base + 530,
                 "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage3", base + 550, 150.0, **k)
        t.op("cpu_op", "aten::reshape", base + 920, 60.0, [[rows, 32], []])
        t.op("cpu_op", "aten::reshape", base + 925, 50.0, [[rows, 32], []])
        t.op("cpu_op", "aten::reshape", base + 930, 40.0, [[rows, 32], []])
        t.op("cpu_op", "aten::view", base + 935, 20.0, [[rows, 32], []])
        t.op("user_annotation", "nccl:all_reduce", base + 1000, 200.0)
        ext = t.op("cpu_op", "record_param_comms", base + 1010, 180.0, [[32]])
        t.launch("cuda_runtime", "kernel", ext, base + 1020, "ncclKernel_AllReduce_RING_LL_Sum_float", base + 1300,
                 300.0)
        t.op("cpu_op", "aten::add_", base + 1300, 100.0, [[32], [32], []])
        t.op("cpu_op", "aten::add_", base + 1310, 30.0, [[32], [32], []])
        ext = t.op("cpu_op", "aten::add_", base + 1350, 30.0, [[32], [32], []])
        t.launch("cuda_runtime", "kernel", ext, base + 1355, "vectorized_elementwise_kernel", base + 1700, 20.0, **k)
        t.op("cpu_op", "aten::to", base + 1500, 100.0, [[32], [], [], [], [], [], [], []])
        t.op("cpu_op", "aten::to", base + 1510, 80.0, [[32], [], [], [], [], [], [], []])
        t.op("cpu_op", "aten::_to_copy", base + 1520, 60.0, [[32], [], [], [], [], [], []])
        t.op("user_annotation", "Optimizer.step#SGD.step", base + 1700, 200.0)
        ext = t.op("cpu_op", "aten::mul_", base + 1710, 40.0, [[32], []])
        t.launch("cuda_runtime", "kernel", ext, base + 1720, "vectorized_elementwise_kernel", base + 1800, 20.0, **k)
        # Backward thread.
        t.op("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", base + 900, 600.0, [], BWD)
        t.op("cpu_op", "AddmmBackward0", base + 910, 580.0, [[rows, 32]], BWD)
        ext = t.op("cpu_op", "aten::mm", base + 920, 200.0, [[rows, 32], [32, 64]], BWD)
        t.launch("cuda_runtime", "kernel", ext, base + 930, "volta_h884gemm_64x64_ldg8_nn", base + 1200, 80.0,
                 tid=BWD, **k)
        t.op("cpu_op", "aten::div", base + 1200, 100.0, [[32], []], BWD)
        ext = t.op("cpu_op", "aten::div", base + 1210, 80.0, [[32], []], BWD)
        t.launch("cuda_runtime", "kernel", ext, base + 1220, "vectorized_elementwise_kernel", base + 1650, 20.0,
                 tid=BWD, **k)
        t.x("gpu_user_annotation", f"ProfilerStep#{step}", base + 300, 1520.0 if step == 1 else 2500.0, STREAM, GPU,
            **{"External id": step_ext})
    # Starts inside the last step, ends after it: the plugin drops it from its tree.
    t.op("cpu_op", "aten::empty", 6950.0, 100.0, [[], [], [], [], [], []])
    # The last step's last kernel ends after every step marker.
    ext = t.op("cpu_op", "aten::mul", 6960.0, 30.0, [[32], []])
    t.launch("cuda_runtime", "kernel", ext, 6965.0, "vectorized_elementwise_kernel", 6990.0, 300.0, **k)
    t.write("eager.pt.trace.json", {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100"}]})


def pt18() -> None:
    t = Trace()
    t.fifo = True
    k: dict[str, Any] = {"blocks per SM": 1.5, "est. achieved occupancy %": 25}

    def op(name: str, ts: float, dur: float, dims: Any) -> int:
        return t.op("Operator", name, ts, dur, dims, ext_key="external id", dims_key="Input dims")

    def launch(ext: int, ts: float, kernel: str, k_ts: float, k_dur: float, cat: str = "Kernel",
               name: str = "cudaLaunchKernel") -> None:
        t.launch("Runtime", cat, ext, ts, kernel, k_ts, k_dur, ext_key="external id", name=name,
                 **(k if cat == "Kernel" else {}))

    # Launched before the first step; runs during it.
    ext = op("aten::zeros", 900.0, 50.0, [[64], [], [], [], []])
    launch(ext, 910.0, "vectorized_elementwise_kernel", 1000.0, 50.0)
    per_step = {1: 3, 2: 3, 3: 1}
    for step, base in ((1, 1000.0), (2, 2000.0), (3, 3000.0)):
        op(f"ProfilerStep#{step}", base, 1000.0 if step < 3 else 500.0, [])
        for i in range(per_step[step]):
            at = base + 10 + 300 * i
            if i == 0:
                op("aten::linear", at, 200.0, [[16, 64], [32, 64], [32]])
                ext = op("aten::addmm", at + 10, 180.0, [[32], [16, 64], [64, 32], [], []])
                launch(ext, at + 20, "volta_h884gemm_64x64_ldg8_nn", at + 100, 150.0 + 100 * (step == 2))
                launch(ext, at + 40, "Memcpy HtoD (Pageable -> Device)", at + 260, 10.0, "Memcpy",
                       "cudaMemcpyAsync")
            elif i == 1:
                op("aten::add_", at, 100.0, [[32], [32], []])
                ext = op("aten::add_", at + 10, 80.0, [[32], [32], []])
                launch(ext, at + 20, "vectorized_elementwise_kernel", at + 400, 30.0)
            else:
                ext = op("aten::relu", at, 60.0, [[16, 32]])
                launch(ext, at + 10, "vectorized_elementwise_kernel", at + 900 if step == 2 else at + 100, 40.0)
    t.corr += 1
    t.x("Runtime", "cudaDeviceSynchronize", 3700.0, 100.0, MAIN, **{"external id": 0, "correlation": t.corr})
    t.write("pt18.pt.trace.json", {"schemaVersion": 1})


def nosteps() -> None:
    t = Trace()
    k: dict[str, Any] = {"blocks per SM": 2.0, "est. achieved occupancy %": 50}
    for i in range(3):
        at = 1000.0 + 400 * i
        t.op("python_function", "train.py(10): <module>", at - 5, 390.0)
        ext = t.op("cpu_op", "aten::mm", at, 100.0, [[64, 64], [64, 64]])
        t.launch("cuda_runtime", "kernel", ext, at + 10, "volta_sgemm_128x64_nn", at + 50, 120.0 + 200 * (i == 2), **k)
    t.write("nosteps.pt.trace.json", {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Tesla V100"}]})


if __name__ == "__main__":
    eager()
    pt18()
    nosteps()
