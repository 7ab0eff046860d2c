"""The vocabulary of PyTorch profiler (Kineto) traces, every version's, in one place: the reader
normalises a trace's categories to it and the analyses select events by it.

PyTorch 1.8 wrote ``Operator``, ``Kernel``, ``Runtime``, ``Memcpy``, ``Memset`` and ``Python``;
1.9 kept some capitalised names; 1.10+ write ``cpu_op``, ``kernel``, ``cuda_runtime``,
``gpu_memcpy``, ``gpu_memset``, ``python_function``. ROCm builds reuse the CUDA categories with
HIP call names; MTIA writes ``mtia_runtime`` launches and ``mtia_ccp_events`` device work.
"""

from __future__ import annotations

OPERATOR = "cpu_op"
KERNEL = "kernel"
MEMCPY = "gpu_memcpy"
MEMSET = "gpu_memset"
USER_ANNOTATION = "user_annotation"
GPU_USER_ANNOTATION = "gpu_user_annotation"
PYTHON_FUNCTION = "python_function"
MEMORY_EVENT = "[memory]"

# Work that runs on a device (a stream of a GPU / MTIA process).
DEVICE_CATEGORIES = (KERNEL, MEMCPY, MEMSET, "mtia_ccp_events")
# Host calls of a device runtime or driver (launches, synchronisation).
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime", "privateuse1_driver")
# Categories that only a device process holds (its events are never host work).
DEVICE_PROCESS_CATEGORIES = (*DEVICE_CATEGORIES, GPU_USER_ANNOTATION, "cuda_sync")

# Categories only PyTorch's profiler writes (1.8 to 2.x), lower-cased: one of them makes a trace
# Kineto's (with its metadata keys, the only content test: file names say nothing).
MARKER_CATEGORIES = frozenset(("cpu_op", "operator", "cuda_runtime", "runtime", "cuda_driver", "kernel", "memcpy",
                               "memset", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "python_function",
                               "cpu_instant_event", "mtia_runtime", "mtia_ccp_events", "privateuse1_runtime"))

# Every version's category name, lower-cased -> today's name. Categories not listed are kept.
CANONICAL_CATEGORY: dict[str, str] = {
    "operator": OPERATOR, "cpu_op": OPERATOR,
    "kernel": KERNEL,
    "memcpy": MEMCPY, "gpu_memcpy": MEMCPY,
    "memset": MEMSET, "gpu_memset": MEMSET,
    "runtime": "cuda_runtime", "cuda_runtime": "cuda_runtime", "cuda_driver": "cuda_driver",
    "python": PYTHON_FUNCTION, "python_function": PYTHON_FUNCTION,
    "user_annotation": USER_ANNOTATION, "gpu_user_annotation": GPU_USER_ANNOTATION,
    "cpu_instant_event": "cpu_instant_event", "cuda_sync": "cuda_sync",
    "mtia_runtime": "mtia_runtime", "mtia_ccp_events": "mtia_ccp_events",
}

# Host calls whose device work HTA 0.5.0's kernel launch statistics measure (CUDA and MTIA;
# HTA lists no HIP call there), name for name.
LAUNCH_CALLS = frozenset(("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                          "runFunction - job_prep_and_submit_for_execution"))

# c10::DeviceType of a ``[memory]`` event's ``Device Type``: the kind of memory it counts.
# 1 CUDA and 6 HIP are both a GPU's memory (ROCm builds report HIP); 19 is MTIA.
MEMORY_DEVICE_KIND = {0: "CPU", 1: "GPU", 6: "GPU", 12: "XPU", 13: "MPS", 19: "MTIA", 20: "Device"}

# A collective's own span: ProcessGroup backends name it ``<backend>:<op>`` (ProcessGroupNCCL's
# profiling titles: ``nccl:all_reduce``, ``nccl:_all_gather_base`` and ``nccl:_reduce_scatter_base``
# (FSDP and FSDP2), ``nccl:all_gather_into_tensor_coalesced``, ``nccl:reduce_scatter_tensor_coalesced``,
# ``nccl:all_to_all``, ``nccl:_broadcast_oop``, ``nccl:send 0->1``, ``nccl:recv 0<-1``, ``nccl:coalesced``,
# ...; ROCm builds keep ``nccl:``), written as a ``user_annotation`` on the calling thread, a
# ``gpu_user_annotation`` over its kernels, or a ``cpu_op`` in older versions.
COLLECTIVE_BACKENDS = ("nccl", "gloo", "ucc", "mpi", "xccl")


def is_collective_name(name: str) -> bool:
    """Whether ``name`` is a ProcessGroup collective's span (``nccl:_all_gather_base``); plain
    string tests, no regex on profile text."""
    backend, sep, op = name.partition(":")
    return bool(sep) and backend in COLLECTIVE_BACKENDS and bool(op) and not op.startswith(":")


def is_collective_kernel(name: str) -> bool:
    """Whether a device event is a NCCL/RCCL collective kernel: ``ncclKernel_*`` (NCCL < 2.19),
    ``ncclDevKernel_*`` (NCCL >= 2.19; RCCL's ``ncclDevKernel_Generic_*``)."""
    return name.startswith("nccl") and "Kernel" in name[4:]

def runtime_is_pytorch_18(metadata: object) -> bool:
    """Whether a trace's ``cuda_runtime`` calls were PyTorch 1.8's ``Runtime`` events (the reader
    lists its renamings in ``metadata["kineto_categories"]``)."""
    renamed = metadata.get("kineto_categories") if isinstance(metadata, dict) else None
    return isinstance(renamed, dict) and any(isinstance(k, str) and k.lower() == "runtime" for k in renamed)
