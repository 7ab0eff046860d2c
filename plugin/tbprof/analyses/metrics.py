"""The headline metrics that several pages show: one key, one name that says its denominator,
one definition, one formula.

The same word ("device idle", "collectives") can mean three different fractions (of step
time, of the device op time, of HTA's kernel timeline), which a reader takes for three
contradicting numbers. Each meaning is a ``Metric`` here; a tool result carries the ones it
shows as ``"metrics": [MetricJson, ...]`` (built by ``metric_json``), and the dashboard draws
the label, the denominator and the tooltip from that entry, never its own text, so a page that
shows a key shows the same value as every other page that shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tbprof.analyses.results.common import MetricJson


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    of: str  # the denominator, shown under the value ("of step time")
    definition: str  # the tooltip: what is divided by what, and whose convention it is


METRICS: tuple[Metric, ...] = (
    Metric("device_idle_of_step_time", "Device idle", "of step time",
           "Step time in which the device does no input, output, compute or collective work, "
           "averaged over the steps (XProf's overview: 100 % minus those categories)."),
    Metric("device_idle_of_device_time", "Device idle", "of the profiled device time",
           "Per device, the span from its first op start to its last op end minus the time an op "
           "runs, summed over devices, divided by the summed spans (XProf's IDLE op in framework op "
           "stats and op profile)."),
    Metric("device_idle_of_kernel_timeline", "Device idle (HTA)", "of the GPU kernel timeline, mean over GPUs",
           "Per GPU, the time no kernel or memory operation runs between its first kernel start and "
           "its last kernel end, divided by that span, then averaged over GPUs (HTA's temporal "
           "breakdown)."),
    Metric("host_idle_of_thread_time", "Host idle", "of host thread time, summed over threads",
           "Per host thread, the span from its first op start to its last op end minus the time an op "
           "runs, summed over threads, divided by the summed spans. Threads run side by side, so the "
           "summed span can be many times the profile's duration."),
    Metric("device_collectives_of_step_time", "Device collectives", "of step time",
           "Step time spent in device collectives (all-reduce, all-gather, ...) not hidden under "
           "compute, averaged over the steps (XProf's step-time breakdown)."),
    Metric("communication_of_kernel_timeline", "Communication (HTA)", "of the GPU kernel timeline, mean over GPUs",
           "Per GPU, the time a communication kernel (NCCL) runs, overlapped or not, between its "
           "first kernel start and its last kernel end, divided by that span, then averaged over "
           "GPUs."),
    Metric("collectives_of_device_op_time", "Collectives", "of device op time (idle excluded)",
           "Self time of collective ops (all-reduce, all-gather, reduce-scatter, all-to-all, send, "
           "recv, ...) divided by the self time of every device op."),
)

BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


def percent(part: float, whole: float) -> float | None:
    """``100 * part / whole``; None (shown "–") when there is no denominator."""
    if not whole or not math.isfinite(whole) or not math.isfinite(part):
        return None
    return 100.0 * part / whole


def metric_json(key: str, value_percent: float | None) -> MetricJson:
    """The wire entry of a metric (KeyError for a key not in ``METRICS``: no ad-hoc labels)."""
    m = BY_KEY[key]
    value = None if value_percent is None or not math.isfinite(value_percent) else float(value_percent)
    return {"key": m.key, "label": m.label, "of": m.of, "definition": m.definition, "value_percent": value}
