"""Per-step time breakdown in XProf's categories, and the bottleneck verdict built on it.

Every event of a step gets an *event type* (XProf's ``EventType``: a bigger number wins where
events overlap), the step's events are flattened so each picosecond of the step counts once for
its highest-priority type, and the types are summed into the generic categories users see:
input, output, device compute (16/32-bit), device-to-device, device collectives, host compute,
kernel launch, compile and all others (time no event explains).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

# Compiled: a sweep per step that numpy cannot express (re-exported for the step assignment).
from tbprof._core.kernels import nonoverlapped_type_ps as nonoverlapped_type_ps

if TYPE_CHECKING:  # types only: the results' module imports the tables' (a pod's worker needs neither)
    from tbprof.analyses.results.common import InputThresholds, Stat

# XProf's EventType values (xprof/utils/event_span.h): the value is the priority.
UNKNOWN_TIME = 0
HOST_COMPUTE = 10
HOST_PREPROCESS = 20
HOST_POSTPROCESS = 30
HOST_BATCH_FORMATION = 40
HOST_RUNTIME = 50
HOST_COMPILE = 60
HOST_TO_HOST = 70
HOST_TO_DEVICE = 80
HOST_PREPARE = 90
DEVICE_COLLECTIVES = 100
HOST_WAIT_INPUT = 110
DEVICE_TO_DEVICE = 120
DEVICE_TO_HOST = 130
DEVICE_COMPUTE_32 = 140
DEVICE_COMPUTE_16 = 150
DEVICE_WAIT_DEVICE = 160
DEVICE_WAIT_HOST = 170
# tbprof's own: device compute whose precision neither the launching operator's input types nor
# the kernel's name tell (PyTorch traces; XProf calls such work 32-bit). Its value is past
# XProf's because values are priorities and theirs are all taken; only PyTorch steps produce
# it, and they produce no device wait types, so it only outranks the other compute types.
DEVICE_COMPUTE_UNKNOWN = 180
N_TYPES = 19  # type value // 10
DEVICE_COMPUTE_TYPES = (DEVICE_COMPUTE_16, DEVICE_COMPUTE_32, DEVICE_COMPUTE_UNKNOWN)

# Generic categories (columns of the step table), in XProf's order, with the event types they sum.
CATEGORIES: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("device_compute_ms", "Device compute", DEVICE_COMPUTE_TYPES),
    ("device_to_device_ms", "Device to device", (DEVICE_TO_DEVICE, DEVICE_WAIT_DEVICE)),
    ("device_collectives_ms", "Device collective communication", (DEVICE_COLLECTIVES,)),
    ("host_compute_ms", "Host compute", (HOST_COMPUTE,)),
    ("kernel_launch_ms", "Kernel launch", (HOST_PREPARE,)),
    ("input_ms", "Input", (HOST_WAIT_INPUT, HOST_TO_DEVICE, DEVICE_WAIT_HOST)),
    ("output_ms", "Output", (DEVICE_TO_HOST,)),
    ("compile_ms", "Compilation", (HOST_COMPILE,)),
    ("all_others_ms", "All others", (UNKNOWN_TIME,)),
)
CATEGORY_KEYS = tuple(c[0] for c in CATEGORIES)
# Finer input split the input-pipeline page shows.
INPUT_PARTS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("host_wait_input_ms", (HOST_WAIT_INPUT,)),
    ("host_to_device_ms", (HOST_TO_DEVICE, DEVICE_WAIT_HOST)),
)

# XProf's thresholds (op_stats_to_input_pipeline_analysis.cc), percent of total step time.
INPUT_HIGH_PERCENT = 20.0
INPUT_MODERATE_PERCENT = 5.0
INPUT_THRESHOLDS_PERCENT: InputThresholds = {"high": INPUT_HIGH_PERCENT, "moderate": INPUT_MODERATE_PERCENT}
ALL_OTHER_POTENTIAL_PERCENT = 3.0
HIGH_PERCENT = 15.0  # kernel launch, all others, device collectives
MODERATE_PERCENT = 3.0



def _starts_ci(name: str, prefix: str) -> bool:
    return name[:len(prefix)].lower() == prefix.lower()


def _memcpy_kind(name: str) -> str:
    """"h2d" | "d2h" | "d2d" | "h2h" | "" from a memcpy event or TF op name.

    XProf matches only ``MemcpyHToD``-style names; CUDA activity names are ``MemcpyH2D``,
    ``MemcpyD2H``, ``MemcpyD2D`` and ``MemcpyP2P`` (peer to peer), which XProf counts as device
    compute. We recognise both spellings (a documented difference).
    """
    op_type = name.rsplit(":", 1)[-1] if ":" in name else name
    for text in (op_type, name):
        low = text.lower()
        if low.startswith(("memcpyhtod", "memcpyh2d")):
            return "h2d"
        if low.startswith(("memcpydtoh", "memcpyd2h")):
            return "d2h"
        if low.startswith(("memcpydtod", "memcpyd2d", "memcpyp2p")):
            return "d2d"
        if low.startswith(("memcpyhtoh", "memcpyh2h")):
            return "h2h"
    return ""


def is_explicit_host_step_marker(name: str) -> bool:
    return name.startswith(("train", "test", "TraceContext")) and "/" not in name


def is_real_cpu_compute(name: str) -> bool:
    return not (name.startswith(("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun"))
                or is_explicit_host_step_marker(name))


def classify_cpu_event(name: str, has_device: bool, has_correlation_id: bool) -> int:
    op_type = name.rsplit(":", 1)[-1]
    kind = _memcpy_kind(name)
    if op_type.startswith("InfeedEnqueue") or kind == "h2d":
        return HOST_TO_DEVICE
    if kind == "h2h":
        return HOST_TO_HOST
    if has_device and (has_correlation_id or _starts_ci(name, "ExecutorState::Process")):
        return HOST_PREPARE
    if _starts_ci(name, "IteratorGetNext"):
        return HOST_WAIT_INPUT
    return HOST_COMPUTE


def classify_gpu_event(name: str, tensor_shapes: str) -> int:
    kind = _memcpy_kind(name)
    if kind == "h2d":
        return HOST_TO_DEVICE
    if kind == "d2h":
        return DEVICE_TO_HOST
    if kind == "d2d":
        return DEVICE_TO_DEVICE
    if _starts_ci(name, "nccl"):
        return DEVICE_COLLECTIVES
    text = tensor_shapes if tensor_shapes else name
    if "half" in text or (not tensor_shapes and "fp16" in name):
        return DEVICE_COMPUTE_16
    return DEVICE_COMPUTE_32


def categories_ms(type_ps: np.ndarray) -> dict[str, np.ndarray]:
    """Generic category columns (ms per step) from a (steps, N_TYPES) ps matrix."""
    out = {}
    for key, _, types in CATEGORIES:
        out[key] = type_ps[:, [t // 10 for t in types]].sum(axis=1) / 1e9
    for key, types in INPUT_PARTS:
        out[key] = type_ps[:, [t // 10 for t in types]].sum(axis=1) / 1e9
    out["device_compute_16bit_ms"] = type_ps[:, DEVICE_COMPUTE_16 // 10] / 1e9
    out["device_compute_32bit_ms"] = type_ps[:, DEVICE_COMPUTE_32 // 10] / 1e9
    out["device_compute_unknown_precision_ms"] = type_ps[:, DEVICE_COMPUTE_UNKNOWN // 10] / 1e9
    return out


def summary_stats(values: Sequence[float] | np.ndarray) -> Stat:
    """avg, sample stddev (n-1, as XProf's tsl::Stat), min, max; null when there are no values."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return {"avg": None, "stddev": None, "min": None, "max": None}
    sd = float(np.std(v, ddof=1)) if v.size > 1 else 0.0
    return {"avg": float(v.mean()), "stddev": sd, "min": float(v.min()), "max": float(v.max())}


def _one_digit(x: float) -> str:
    return f"{x:.1f}"


def _level(percent: float, high: float, moderate: float) -> str:
    if percent >= high:
        return "high"
    if percent >= moderate:
        return "moderate"
    return "no"


def bottleneck_analysis(step_ms: dict[str, np.ndarray], step_time_ms: np.ndarray,
                        tf_data_used: bool = False, input_advice: str = "") -> dict[str, Any]:
    """XProf's generic BottleneckAnalysis: percentages of total step time and the verdicts.

    ``causes``: each cause found (input, collectives, kernel launch, all others) with its share of
    the step time and its statement, largest share first, so that a page leads with what costs
    the most (a 0.1 % input wait does not lead ahead of 40 % collectives). ``input_advice`` (the
    framework's, steps/advice.py) follows an input-bound statement.

    ``input_bound`` condenses XProf's input classification: "high" (host, input >= 20 %),
    "moderate" (both, input >= 5 %), "potential" (both, because all-others >= 3 %), "no"
    (device), "unknown" (no step time).
    """
    total = float(np.sum(step_time_ms))
    if total <= 0 or not math.isfinite(total):
        return {
            "input_classification": "unknown", "input_bound": "unknown", "input_bound_reason": "",
            "input_statement": "No steps were found, so there is no step time to break down and no "
                               "bottleneck verdict.",
            "percent": {k.removesuffix("_ms") + "_percent": 0.0 for k in CATEGORY_KEYS} | {"idle_percent": 0.0},
            "kernel_launch_bottleneck": "no", "kernel_launch_statement": "",
            "all_other_bottleneck": "no", "all_other_statement": "",
            "device_collectives_bottleneck": "no", "device_collectives_statement": "",
            "causes": [],
        }
    pct = {k.removesuffix("_ms") + "_percent": 100.0 * float(np.sum(step_ms[k])) / total for k in CATEGORY_KEYS}
    input_pct = pct["input_percent"]
    idle_pct = max(0.0, 100.0 - input_pct - pct["output_percent"] - pct["device_compute_percent"]
                   - pct["device_collectives_percent"])
    pct["idle_percent"] = idle_pct
    all_other_pct = pct["all_others_percent"]
    all_other_reported = False
    if input_pct >= INPUT_HIGH_PERCENT:
        cls, bound = "host", "high"
        stmt = (f"Input-bound (high): steps wait for input {_one_digit(input_pct)}% of the time. Speed up the "
                "input pipeline before anything else.")
        input_share = input_pct
    elif input_pct >= INPUT_MODERATE_PERCENT:
        cls, bound = "both", "moderate"
        stmt = (f"Input-bound (moderate): steps wait for input {_one_digit(input_pct)}% of the time. Both the "
                "input pipeline and the rest of the step are worth speeding up.")
        input_share = input_pct
    elif all_other_pct >= ALL_OTHER_POTENTIAL_PERCENT:
        cls, bound = "both", "potential"
        all_other_reported = True
        stmt = (f"Possibly input-bound: {_one_digit(all_other_pct)}% of the step time is 'all others' "
                "(time that is neither device work nor recognised input), often file I/O or Python overhead.")
        input_share = all_other_pct
    else:
        cls, bound = "device", "no"
        stmt = (f"Not input-bound: steps wait for input only {_one_digit(input_pct)}% of the time. Look at "
                "device and host compute instead.")
        input_share = input_pct
    if bound != "no" and input_advice:
        stmt = f"{stmt} {input_advice}"
    coll_pct = pct["device_collectives_percent"]
    coll = _level(coll_pct, HIGH_PERCENT, MODERATE_PERCENT)
    coll_stmt = "" if coll == "no" else (f"Device collectives (all-reduce, all-gather, ...) take "
                                         f"{_one_digit(coll_pct)}% of the step time.")
    kl_pct = pct["kernel_launch_percent"]
    kl = _level(kl_pct, HIGH_PERCENT, MODERATE_PERCENT)
    kl_stmt = "" if kl == "no" else f"Launching kernels takes {_one_digit(kl_pct)}% of the step time."
    if kl != "no" and tf_data_used:
        kl_stmt += (" tf.data threads may be competing with the launching thread for the CPU; setting "
                    "TF_GPU_THREAD_MODE=gpu_private gives GPU launches their own threads.")
    ao = "no" if all_other_reported else _level(all_other_pct, HIGH_PERCENT, MODERATE_PERCENT)
    ao_stmt = "" if ao == "no" else (f"'All others' takes {_one_digit(all_other_pct)}% of the step time, "
                                     "often Python overhead between device launches.")
    # What the verdict rests on, in a few words for the card beside the input percentage: a
    # "possibly input-bound" verdict next to "0.0 % waiting for input" needs its reason.
    reason = {"high": f"input {_one_digit(input_pct)}% of step time",
              "moderate": f"input {_one_digit(input_pct)}% of step time",
              "potential": f"'all others' {_one_digit(all_other_pct)}% of step time (neither device work nor "
                           "recognised input; often file I/O or Python)"}.get(bound, "")
    found = [("input", input_share, stmt), ("device_collectives", coll_pct, coll_stmt),
             ("kernel_launch", kl_pct, kl_stmt), ("all_others", all_other_pct, ao_stmt)]
    # Largest share first; at equal shares the order above (a stable sort).
    ranked = sorted(((c, p, s) for c, p, s in found if s), key=lambda cps: -cps[1])
    causes = [{"cause": c, "percent": p, "statement": s} for c, p, s in ranked]
    return {
        "input_classification": cls, "input_bound": bound, "input_bound_reason": reason, "input_statement": stmt,
        "percent": pct, "causes": causes,
        "kernel_launch_bottleneck": kl, "kernel_launch_statement": kl_stmt,
        "all_other_bottleneck": ao, "all_other_statement": ao_stmt,
        "device_collectives_bottleneck": coll, "device_collectives_statement": coll_stmt,
    }
