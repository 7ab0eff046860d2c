"""One op's self time per step (``tbprof check --op``): which ops a selector names, and their
self time in each step of a side's hosts, as numpy over the store columns.

The service (``service/comparisons.op_step_series``) resolves a side to its stores and applies
the step selection; everything here reads stores and tool results only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.ops import op_metrics
from tbprof.analyses.steps.assignment import Steps
from tbprof.analyses.steps.table import step_table
from tbprof.analyses.table import Table
from tbprof.domain import tf_op
from tbprof.domain.regex import RegexError, searcher
from tbprof.store.tables import ProfileStore


@dataclass
class OpMatch:
    """Which rows of a side's op table an op selector names."""

    how: str  # "operation" | "type" | "regex"
    names: list[str]  # matched operation names


def match_op(results: Sequence[dict[str, Any]], selector: str) -> OpMatch | None:
    """Exact operation name, else exact op type, else a regex searched in operation names, over
    the ``ops`` tables of framework_op_stats results (IDLE rows are no op)."""
    names: set[str] = set()
    types: dict[str, set[str]] = {}
    for r in results:
        t = r.get("tables", {}).get("ops")
        if not isinstance(t, Table):
            continue
        for name, typ in zip(t.data["operation"].tolist(), t.data["type"].tolist(), strict=False):
            if typ == op_metrics.IDLE:
                continue
            names.add(str(name))
            types.setdefault(str(typ), set()).add(str(name))
    if selector in names:
        return OpMatch("operation", [selector])
    if selector in types:
        return OpMatch("type", sorted(types[selector]))
    try:
        found = searcher(selector, what="op selector")
    except RegexError:
        return None
    hits = sorted(n for n in names if found(n))
    return OpMatch("regex", hits) if hits else None


@dataclass(frozen=True)
class OpStepTime:
    """Self time of the named ops in each step of the combined step table."""

    step_nums: np.ndarray  # the step table's step numbers
    self_time_ps: np.ndarray  # float64, one per step, summed over the hosts


def op_step_time(stores: Sequence[ProfileStore], op_names: Collection[str]) -> OpStepTime | None:
    """Self time per step of the named framework ops, summed over the stores' hosts.

    Device ops: the duration of each device event of the op (a device op's self time) summed
    over the events of each step. Host ops: the events of the op on the host threads by step,
    scaled so that their total equals the op's total self time (nested host ops are rare;
    exact per-event self time is not kept by the op analysis). Steps are the step analysis's.
    None when the hosts have no steps.
    """
    st = step_table(stores)
    if st.n_steps == 0:
        return None
    wanted = set(op_names)
    total = np.zeros(st.n_steps)
    for hi, store in enumerate(stores):
        steps = st.per_host[hi]
        per_step = np.zeros(steps.n_steps)
        per_step += _device_op_per_step(store, steps, wanted)
        per_step += _host_op_per_step(store, steps, wanted)
        total += per_step[st.step_index[hi]]
    return OpStepTime(step_nums=st.step_nums, self_time_ps=total)


def _device_op_per_step(store: ProfileStore, steps: Steps, wanted: set[str]) -> np.ndarray:
    ev = op_metrics.device_op_events(store)
    out = np.zeros(steps.n_steps)
    if ev.row.shape[0] == 0:
        return out
    # framework_op_stats names a device op by its framework op (provenance), else by itself.
    fw = np.array([(tf_op.parse_tf_op(p).name if p else n) in wanted
                   for n, p in zip(ev.op_name, ev.op_provenance, strict=False)], dtype=bool)
    planes = op_metrics.device_planes(store)
    for pi, plane in enumerate(planes):
        sel = np.nonzero((ev.plane_index == pi) & fw[ev.op])[0]
        if sel.shape[0] == 0:
            continue
        rows = ev.row[sel]
        step = steps.event_step(store.planes.index(plane))[rows]
        ok = step >= 0
        out += np.bincount(step[ok], weights=plane.dur_ps[rows][ok].astype(np.float64), minlength=steps.n_steps)
    return out


def _host_op_per_step(store: ProfileStore, steps: Steps, wanted: set[str]) -> np.ndarray:
    out = np.zeros(steps.n_steps)
    db = op_metrics.host_op_metrics(store)
    hit = np.isin(db.name, list(wanted))
    if not hit.any():
        return out
    self_ps = float(db.self_time_ps[hit].sum())
    plane = store.plane(op_metrics.HOST_PLANE)
    if plane is None or plane.n_events == 0:
        return out
    uniq, inv = np.unique(plane.name_id, return_inverse=True)
    parsed = [tf_op.parse_tf_op(store.strings[int(u)]) for u in uniq.tolist()]
    is_op = np.array([p.is_op and p.name in wanted for p in parsed], bool)
    rows = np.nonzero(is_op[inv.reshape(-1)])[0]
    if rows.shape[0] == 0:
        return out
    dur = plane.dur_ps[rows].astype(np.float64)
    step = steps.event_step(store.planes.index(plane))[rows]
    ok = step >= 0
    per_step_ps = np.bincount(step[ok], weights=dur[ok], minlength=steps.n_steps)
    all_dur = float(dur.sum())
    return per_step_ps * (self_ps / all_dur) if all_dur > 0 else per_step_ps
