"""Steps of one host or of all hosts, as the step pages show them: rows, summaries, verdict.

One host: its steps (``steps.steps_of``). Several hosts ("all hosts"): steps are aligned by
step number (by position when the hosts number them differently) and only steps every host
ran are kept; a step's time is its slowest host's time (the one that sets the pace of a
data-parallel step) and its breakdown is that host's breakdown, so the categories still add up
to the step time. XProf instead shows the first host's rows and takes the per-step maximum only
for the step-time summary (see docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tbprof.analyses.results.common import Stat, StepsInfo
from tbprof.analyses.steps import breakdown as sb
from tbprof.analyses.steps.assignment import CONFIDENCES, Steps, step_confidence, steps_of
from tbprof.analyses.table import Column, Table
from tbprof.store.arrays import sorted_unique
from tbprof.store.view import StoreView


@dataclass
class StepTable:
    hosts: list[str]
    per_host: list[Steps]
    source: str
    method: str
    detail: str
    diagnosis: str
    notes: list[str]
    has_device: bool
    names: list[str]
    step_nums: np.ndarray
    step_time_ms: np.ndarray
    critical_host: list[str]
    category_ms: dict[str, np.ndarray]  # per step, from the critical host
    host_index: np.ndarray  # per step: index into hosts of the critical host
    step_index: np.ndarray  # (n_hosts, n_steps): index of the aligned step in each host's Steps
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        return int(self.step_time_ms.shape[0])

    @property
    def confidence(self) -> str:
        """The weakest host's step confidence ("none" without steps): an all-hosts step is only as
        sure as its least sure host."""
        if not self.n_steps:
            return "none"
        if self.method == "timeline_file" or not self.per_host:
            return step_confidence(self.source, self.method)
        return max((s.confidence for s in self.per_host), key=CONFIDENCES.index)

    def steps_json(self) -> StepsInfo:
        return {"step_source": self.source, "method": self.method, "step_confidence": self.confidence,
                "detail": self.detail,
                "diagnosis": self.diagnosis, "step_count": self.n_steps, "notes": self.notes,
                "per_host": [{"host": h, **s.to_json()} for h, s in zip(self.hosts, self.per_host, strict=False)]}


def _align(per_host: list[Steps]) -> np.ndarray:
    """(n_hosts, n_aligned) index of each aligned step in each host's steps."""
    if len(per_host) == 1:
        return np.arange(per_host[0].n_steps)[None, :]
    first = per_host[0].step_nums
    if all(s.n_steps == per_host[0].n_steps and np.array_equal(s.step_nums, first) for s in per_host[1:]):
        # Every host numbers its steps alike (a data-parallel pod's hosts): what the general case
        # below computes, once for one host instead of once per host.
        common = np.intersect1d(first, first)
        if len(common) and len(sorted_unique(first)) == per_host[0].n_steps:
            row = _positions(first, common)
        else:
            row = np.arange(per_host[0].n_steps)
        return np.tile(row, (len(per_host), 1))
    common = per_host[0].step_nums
    for s in per_host[1:]:
        common = np.intersect1d(common, s.step_nums)
    unique_nums = all(len(sorted_unique(s.step_nums)) == s.n_steps for s in per_host)
    if len(common) and unique_nums:
        return np.stack([_positions(s.step_nums, common) for s in per_host])
    n = min(s.n_steps for s in per_host)
    return np.stack([np.arange(n) for _ in per_host])


def _positions(nums: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(nums, kind="stable")
    return order[np.searchsorted(nums[order], wanted)]


def _combined_source(per_host: list[Steps]) -> str:
    sources = {s.source for s in per_host}
    if sources == {"markers"}:
        return "markers"
    if sources <= {"none"}:
        return "none"
    return "inferred" if "inferred" in sources else "markers"


def step_table(stores: Sequence[StoreView]) -> StepTable:
    hosts = [s.host for s in stores]
    per_host = [steps_of(s) for s in stores]
    if len(per_host) > 1 and all(s.method == "timeline_file" for s in per_host):
        return _files_as_steps(hosts, per_host)
    idx = _align(per_host)
    n_steps = idx.shape[1]
    n_hosts = len(stores)
    times = np.zeros((n_hosts, n_steps))
    for h, s in enumerate(per_host):
        times[h] = s.duration_ps[idx[h]] / 1e9
    crit = np.argmax(times, axis=0) if n_steps else np.zeros(0, np.int64)
    # A step's breakdown is its critical host's: the categories of those hosts only (and of the
    # first, whose keys name them), not of every host of a pod.
    critical = sorted({0, *map(int, crit)})
    cats = {h: sb.categories_ms(per_host[h].type_ps[idx[h]]) for h in critical}
    step_time = times[crit, np.arange(n_steps)] if n_steps else np.zeros(0)
    if critical == [0]:  # one host sets every step's pace (one host's run): its columns as they are
        cat_ms = {k: np.asarray(v, dtype=np.float64) for k, v in cats[0].items()}
        names = [per_host[0].names[j] for j in idx[0].tolist()]
        nums = np.asarray(per_host[0].step_nums[idx[0]], dtype=np.int64)
    else:
        cat_ms = {k: np.array([cats[int(crit[j])][k][j] for j in range(n_steps)], dtype=np.float64)
                  for k in cats[0]}
        names = [per_host[int(crit[j])].names[int(idx[int(crit[j]), j])] for j in range(n_steps)]
        nums = np.array([per_host[int(crit[j])].step_nums[int(idx[int(crit[j]), j])] for j in range(n_steps)],
                        dtype=np.int64)
    diagnosis = "; ".join(f"{h}: {s.diagnosis}" if n_hosts > 1 else s.diagnosis
                          for h, s in zip(hosts, per_host, strict=False) if s.diagnosis)
    notes = sorted({n for s in per_host for n in s.notes})
    if n_hosts > 1:
        counts = [s.n_steps for s in per_host]
        if len(set(counts)) > 1 or n_steps < min(counts):
            notes.append(f"hosts have {counts} steps; {n_steps} steps that every host ran are compared")
    first = next((s for s in per_host if s.source != "none"), per_host[0])
    source = _combined_source(per_host) if n_steps else "none"
    if not n_steps and n_hosts > 1 and not diagnosis:
        diagnosis = "The hosts have no step in common, so no all-hosts step can be compared; look at each host."
    return StepTable(hosts=hosts, per_host=per_host, source=source, method=first.method,
                     detail=first.detail, diagnosis=diagnosis, notes=notes,
                     has_device=any(s.has_device for s in per_host), names=names, step_nums=nums,
                     step_time_ms=step_time, critical_host=[hosts[int(c)] for c in crit], category_ms=cat_ms,
                     host_index=crit.astype(np.int64), step_index=idx)


def _files_as_steps(hosts: list[str], per_host: list[Steps]) -> StepTable:
    """A TF1 timeline run: its hosts are its steps (a file per step), in step order, not replicas
    to align. ``step_index[h, j]`` is 0 where step j is host h's file and -1 elsewhere."""
    order = sorted(range(len(hosts)), key=lambda h: (int(per_host[h].step_nums[0]), hosts[h]))
    n = len(order)
    idx = np.full((len(hosts), n), -1, dtype=np.int64)
    for j, h in enumerate(order):
        idx[h, j] = 0
    cats = {k: np.array([sb.categories_ms(per_host[h].type_ps[:1])[k][0] for h in order], dtype=np.float64)
            for k in sb.categories_ms(per_host[order[0]].type_ps[:1])}
    first = per_host[order[0]]
    return StepTable(hosts=hosts, per_host=per_host, source="markers", method=first.method,
                     detail=f"{n} timeline files, one step each", diagnosis="",
                     notes=sorted({x for s in per_host for x in s.notes}),
                     has_device=any(s.has_device for s in per_host), names=[hosts[h] for h in order],
                     step_nums=np.array([int(per_host[h].step_nums[0]) for h in order], dtype=np.int64),
                     step_time_ms=np.array([per_host[h].duration_ps[0] / 1e9 for h in order]),
                     critical_host=[hosts[h] for h in order], category_ms=cats,
                     host_index=np.array(order, dtype=np.int64), step_index=idx)


STEP_COLUMNS = (
    Column("step", "Step", "str"),
    Column("step_num", "Step number", "int"),
    Column("host", "Host", "str", description="the host whose step took longest (all-hosts view)"),
    Column("step_time_ms", "Step time", "float", "ms"),
    *(Column(k, label, "float", "ms") for k, label, _ in sb.CATEGORIES),
    Column("host_wait_input_ms", "Host waiting for input", "float", "ms"),
    Column("host_to_device_ms", "Host to device (and device waiting for host)", "float", "ms"),
    Column("device_compute_16bit_ms", "Device compute 16-bit", "float", "ms"),
    Column("device_compute_32bit_ms", "Device compute 32-bit", "float", "ms"),
    Column("device_compute_unknown_precision_ms", "Device compute, precision unknown", "float", "ms",
           "PyTorch: device work whose operator records no input types and whose kernel name does not tell"),
    Column("input_percent", "Input", "float", "%"),
)


def steps_table(st: StepTable) -> Table:
    values: dict[str, Any] = {"step": st.names, "step_num": st.step_nums, "host": st.critical_host,
                              "step_time_ms": st.step_time_ms}
    for c in STEP_COLUMNS[4:-1]:
        values[c.name] = st.category_ms.get(c.name, np.zeros(st.n_steps))
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = np.where(st.step_time_ms > 0, 100.0 * values["input_ms"] / np.where(st.step_time_ms > 0,
                                                                                   st.step_time_ms, 1), 0.0)
    values["input_percent"] = pct
    return Table.from_columns(list(STEP_COLUMNS), values, default_sort=None)


def summaries(st: StepTable) -> dict[str, Stat]:
    """avg/stddev/min/max of the step time and of each category over the steps."""
    out = {"step_time_ms": sb.summary_stats(st.step_time_ms)}
    for k in (*sb.CATEGORY_KEYS, "host_wait_input_ms", "host_to_device_ms"):
        out[k] = sb.summary_stats(st.category_ms.get(k, np.zeros(0)))
    return out


def analysis(st: StepTable, tf_data_used: bool = False, input_advice: str = "") -> dict[str, Any]:
    return sb.bottleneck_analysis(st.category_ms or {k: np.zeros(0) for k in sb.CATEGORY_KEYS},
                                  st.step_time_ms, tf_data_used, input_advice)
