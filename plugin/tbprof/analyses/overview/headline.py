"""A run's headline numbers (``ProfileHeadline``): the ``profile_summary`` tool's ``headline``,
which ``tbprof summary``, the Python API's ``summary()`` and the agent's ``summary`` print.

Typed on ``StoreView`` (store/view.py), so a pod's per-host partials serve it as well as the
stores, partials holding only ``HEADLINE_PARTS`` of theirs (analyses/partial_formats.py) too;
a tfprof run's store (no events) adds its graph's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np

from tbprof._core.wire import default_threads
from tbprof.analyses.ops.op_time import op_times
from tbprof.analyses.overview.environment import run_environment
from tbprof.analyses.results.whole_run import ProfileHeadline
from tbprof.analyses.steps.table import analysis, step_table, summaries
from tbprof.domain.kineto_links import op_by_correlation
from tbprof.domain.planes import device_planes_of, on_device_side
from tbprof.store.tables import ProfileStore
from tbprof.store.tfprof import TfprofProfile
from tbprof.store.view import StoreView

TOP_OPS = 10

Host = StoreView | TfprofProfile


def headline(hosts: Sequence[Host]) -> ProfileHeadline:
    """The headline of the hosts (stores, partials or a tfprof profile), in the key order
    ``tbprof summary`` prints."""
    # A tfprof profile reads as a profile without planes (store/tfprof.py), which the step and
    # op analyses answer with "no steps" and an empty op list; it derives nothing.
    views = cast(Sequence[StoreView], hosts)
    stores = [h for h in views if not isinstance(h, TfprofProfile)]
    # The devices' shares read no step: computed beside the steps where that pays, after the
    # operator links the steps' precision reads (single flight: the steps wait for those rather
    # than derive them twice).
    # With three threads or more, the operators' times (they read no step either) beside them
    # too, on the side the steps will name (a Chrome trace's steps have a device where it has
    # device planes; checked after them).
    pool = ThreadPoolExecutor(2, thread_name_prefix="tbprof-headline") if _side_by_side(views) else None
    try:
        devices = pool.submit(_links_then_device_values, stores) if pool is not None else None
        guess = "device" if any(device_planes_of(h) for h in stores) else "host"
        # Names, types, self times and occurrences only: no HLO cost analysis.
        ops_aside = (pool.submit(op_times, views, guess, costs=False) if pool is not None and default_threads() > 2
                     else None)
        st = step_table(views)
        summ = summaries(st)
        ana = analysis(st)
        env = run_environment(views)
        side = "device" if st.has_device else "host"
        ops = ops_aside.result() if ops_aside is not None and side == guess else op_times(views, side, costs=False)
        device_values = devices.result() if devices is not None else _device_values(stores)
    finally:
        if pool is not None:
            pool.shutdown()
    no_steps = st.n_steps == 0
    out: ProfileHeadline = {
        "host_count": env["host_count"],
        "device_type": env["device_type"],
        "device_count": env["device_count"],
        "event_count": sum(h.n_events for h in hosts),
        "span_ms": max((h.span_ps for h in hosts), default=0) / 1e9,
        "step_source": st.source,
        "step_method": st.method,
        "step_confidence": st.confidence,
        "step_count": st.n_steps,
        "avg_step_time_ms": None if no_steps else summ["step_time_ms"]["avg"],
        "stddev_step_time_ms": None if no_steps else summ["step_time_ms"]["stddev"],
        "input_percent": None if no_steps else ana["percent"]["input_percent"],
        "input_bound": ana["input_bound"],
        "step_diagnosis": st.diagnosis,
        "top_ops_side": ops.side,
        "top_ops": [{"name": str(ops.name[i]), "type": str(ops.type[i]),
                     "self_time_us": float(ops.self_time_ps[i]) / 1e6, "occurrences": int(ops.occurrences[i])}
                    for i in range(min(TOP_OPS, ops.n_ops))],
    }
    _add_tfprof(out, [h for h in hosts if isinstance(h, TfprofProfile)])
    _add_devices(out, device_values)
    return out


# Above this many events, a Chrome trace's device shares and operator times run on threads beside its steps.
SIDE_BY_SIDE_EVENTS = 1 << 20


def _side_by_side(views: Sequence[StoreView]) -> bool:
    """Whether the device shares and the operators' times are worth threads of their own: Chrome
    traces (their stores are whole in memory or mapped: nothing read lazily, so two threads may
    read one), large enough that the overlap of the parts' numpy work (the GIL released in large
    array operations) outweighs a thread's start, and threads allowed (``$TBPROF_THREADS``)."""
    return (default_threads() > 1
            and all(isinstance(h, ProfileStore) and h.format == "chrome_trace" for h in views)
            and sum(h.n_events for h in views) >= SIDE_BY_SIDE_EVENTS)


def _add_tfprof(out: ProfileHeadline, profiles: Sequence[TfprofProfile]) -> None:
    """A tfprof run's graph nodes, traced steps, and time and memory per step (its first host's)."""
    if not profiles:
        return
    p = profiles[0]
    stats = p.node_stats(-1)
    out["tfprof_nodes"] = p.n_nodes
    out["tfprof_steps"] = len(p.steps)
    out["tfprof_exec_us_per_step"] = int(stats["exec_micros"].sum())
    out["tfprof_requested_bytes_per_step"] = int(stats["requested_bytes"].sum())


# Whether any host has device activity, and per GPU its idle % and communication %.
_DeviceValues = tuple[bool, list[float], list[float]]


def _links_then_device_values(stores: Sequence[StoreView]) -> _DeviceValues:
    for h in stores:
        op_by_correlation(cast(ProfileStore, h))
    return _device_values(stores)


def _device_values(hosts: Sequence[StoreView]) -> _DeviceValues:
    if not any(on_device_side(p) for h in hosts for p in h.planes):
        return False, [], []
    # Imported only for a run with devices: a CPU profile's summary loads no GPU analysis.
    from tbprof.analyses.gpu.shares import summary_values

    idle: list[float] = []
    comm: list[float] = []
    any_active = False
    for h in hosts:
        active, i, c = summary_values(h)
        any_active = any_active or active
        idle.extend(i)
        comm.extend(c)
    return any_active, idle, comm


def _add_devices(out: ProfileHeadline, values: _DeviceValues) -> None:
    """The mean idle % of the hosts' GPUs (and their mean communication % with several GPUs)."""
    any_active, idle, comm = values
    if not any_active:
        return
    out["device_idle_percent"] = round(float(np.mean(idle)), 2)
    if len(idle) > 1:
        out["communication_percent"] = round(float(np.nanmean(comm)), 2) if not np.isnan(comm).all() else None
