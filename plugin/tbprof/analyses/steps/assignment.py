"""Steps of a profile: found from step markers, or inferred when a program writes none.

``steps_of(store)`` is the one step assignment every step tool shares (memoised per store):

1. **Markers** (``step_source: "markers"``), as XProf finds them: root events
   (``tf.profiler.experimental.Trace(name, step_num=..., _r=1)``, JAX ``StepTraceAnnotation``)
   group the events they reach (see ``event_groups``). On a GPU run a step spans the device work
   of its group (the longest run of the group's events on one device, XProf's derived ``Steps``
   line) and is broken down from device events only; on a CPU-only run it spans the longest host
   marker (``train...``/``test...`` events, user roots) and is broken down from host events.
   Groups without device compute (GPU) or host compute (CPU) are not steps.
2. **Inferred** (``step_source: "inferred"``) when no marker makes a step, first that applies:
   ``step_num_annotation`` - events that carry a ``step_num`` stat but no ``_r`` root flag
   (Keras 3's ``TensorBoard(profile_batch=...)`` writes "Profiled batch" events like this);
   ``repeated_function`` - the host function that runs again and again at the top of a thread
   and covers most of it (a ``tf.function`` per ``fit`` step);
   ``repeated_module`` - repeated launches of the XLA module that takes most device time.
3. **None** (``step_source: "none"``) with a diagnosis saying what to add to the code.

An inferred step is kept only where the evidence is good (``weak_evidence``, the rule and its
bounds in docs/formulas.md "Step inference"): never the profiler's own annotations
(``$profiler.py:226 trace``), never in a profile of inference requests (``request_id`` markers),
the candidates cover at least ``MIN_BUSY_COVERAGE`` of the busy time of the plane they come from,
and at least ``MIN_SIMILAR_SHARE`` of the kept steps last within ``STEP_SPREAD_FACTOR`` of their
median. Otherwise the profile has no steps and the diagnosis says in one sentence why.
``step_confidence`` says how a step was found: "markers" (the program marked it), "annotated"
(a ``step_num`` annotation without the root flag), "inferred" (a repeated unit that passed the
rule), "none".

Boundary rule (XProf's, applied to every source): with more than 5 steps the first and the
last are dropped, because a profile window usually cuts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from tbprof._core.kernels import counting_order, span_index
from tbprof._core.wire import default_threads
from tbprof.analyses.steps import breakdown as sb
from tbprof.domain.event_groups import event_groups
from tbprof.domain.kineto_links import (
    PRECISION_16,
    PRECISION_32,
    category_mask,
    device_precision,
    prefetch_link_stats,
)
from tbprof.domain.planes import HOST_PLANE, device_planes_of, on_device_side
from tbprof.domain.tf1_planes import is_tf1_timeline, op_planes
from tbprof.store import kineto_names as kn
from tbprof.store.arrays import sorted_unique
from tbprof.store.markers import step_of
from tbprof.store.tables import Plane, ProfileStore
from tbprof.store.view import CarriedValue, StoreView

if TYPE_CHECKING:  # a type only: the results' module imports the tables' (a pod's worker needs neither)
    from tbprof.analyses.results.common import StepFacts

DROP_BOUNDARY_ABOVE = 5  # XProf's kDropIncomplteteStepThreshold
MIN_INFERRED_STEPS = 2
MIN_COVERAGE = 0.5  # a candidate step function must cover this share of the host's traced time
# The evidence an inferred step needs (docs/formulas.md "Step inference"): a training loop repeats
# one unit of work back to back, so its steps fill the busy time and last about as long as each
# other; an inference server's calls or a one-off annotation do neither.
MIN_BUSY_COVERAGE = 0.8  # the candidates' union / the busy time (union of the plane's events)
STEP_SPREAD_FACTOR = 2.0  # a step is "similar" when median / 2 <= duration <= 2 * median
MIN_SIMILAR_SHARE = 0.9  # this share of the kept steps must be similar
# Inference request markers (TensorFlow Serving, XLA inference runtimes): the repeated unit of such
# a profile is a request, not a training step (the stat inference_profile reads).
REQUEST_STAT = "request_id"
# Source files of the profilers' own Python API: a Python-tracer event ``$<file>:<line> <function>``
# from these is the profiler's annotation (``$profiler.py:226 trace`` spans the whole capture).
_PROFILER_SOURCE_FILES = ("profiler.py", "profiler_v2.py", "trace.py", "traceme.py")
CONFIDENCES = ("markers", "annotated", "inferred", "none")  # strongest first

MARK_STEPS_ADVICE = (
    "Mark each training step in "
    "your code: TensorFlow `with tf.profiler.experimental.Trace('train', step_num=step, _r=1):` around "
    "the step body; JAX `with jax.profiler.StepTraceAnnotation('train', step_num=step):`; Keras "
    "`model.fit` marks nothing - wrap the body of a custom train_step or use a custom loop. Also make "
    "sure the profile is longer than a few steps."
)
NO_STEPS_DIAGNOSIS = "No step markers were found and no repeated step could be inferred. " + MARK_STEPS_ADVICE
KINETO_NO_STEPS_DIAGNOSIS = (
    "No step time measured: this PyTorch trace has no ProfilerStep#N markers (a benchmark, an inference "
    "server or a trace without a profiler schedule). To measure steps, call `prof.step()` after each "
    "training step inside `torch.profiler.profile(schedule=...)`."
)


@dataclass
class Steps:
    """The step assignment of one store."""

    source: str  # "markers" | "inferred" | "none"
    method: str  # how: "xprof_groups", "step_num_annotation", "repeated_function", "repeated_module", ""
    detail: str  # human explanation of how the steps were found
    diagnosis: str  # non-empty when something is odd (no steps, one step, all zero-length...)
    has_device: bool
    names: list[str]
    step_nums: np.ndarray  # int64 (group id, step_num or sequence number)
    begin_ps: np.ndarray  # int64, relative to store.origin_ps
    end_ps: np.ndarray
    type_ps: np.ndarray  # (n_steps, sb.N_TYPES) ps per event type, non-overlapped
    device_planes: list[int]  # plane indexes of the devices (columns of the pod viewer)
    per_device_type_ps: np.ndarray  # (n_devices, n_steps, N_TYPES)
    dropped_boundary_steps: int = 0
    candidate_count: int = 0  # steps before the boundary rule and the well-formed check
    notes: list[str] = field(default_factory=list)
    planes: list[Plane] = field(default_factory=list, repr=False)
    # Marker steps: group id of each event per plane, and group id -> step index.
    group_of: Sequence[np.ndarray] | None = field(default=None, repr=False)
    group_to_step: np.ndarray | None = field(default=None, repr=False)
    _event_step: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def event_step(self, plane_index: int) -> np.ndarray:
        """Step index of each event of a plane (-1: in no step), computed on first use.

        Events of a marked step's group belong to it; other events belong to the step whose
        span contains their start (tf.data threads, host threads on a GPU run, ...).
        """
        got = self._event_step.get(plane_index)
        if got is None:
            plane = self.planes[plane_index]
            got = _event_step_by_time(plane, self.begin_ps, self.end_ps)
            if self.group_of is not None and self.group_to_step is not None and plane.n_events:
                g = self.group_of[plane_index]
                gs = np.where(g >= 0, self.group_to_step[np.clip(g, 0, None)], -1)
                got = np.where(g >= 0, gs, got)
            self._event_step[plane_index] = got
        return got

    @property
    def n_steps(self) -> int:
        return int(self.begin_ps.shape[0])

    @property
    def duration_ps(self) -> np.ndarray:
        return self.end_ps - self.begin_ps

    @property
    def confidence(self) -> str:
        return step_confidence(self.source, self.method)

    def to_json(self) -> StepFacts:
        return {"step_source": self.source, "method": self.method, "step_confidence": self.confidence,
                "detail": self.detail, "diagnosis": self.diagnosis, "step_count": self.n_steps,
                "candidate_step_count": self.candidate_count,
                "dropped_boundary_steps": self.dropped_boundary_steps, "notes": self.notes}



def step_confidence(source: str, method: str) -> str:
    """How a step was found (``CONFIDENCES``): marked by the program, numbered by an annotation
    without the root flag, inferred from a repeated unit, or no step."""
    if source == "markers":
        return "markers"
    if source == "inferred":
        return "annotated" if method == "step_num_annotation" else "inferred"
    return "none"


def is_profiler_annotation(name: str) -> bool:
    """Whether ``name`` is a Python-tracer event of the profiler's own API (``$profiler.py:226 trace``):
    it spans the capture, not a step."""
    if not name.startswith("$"):
        return False
    source = name[1:].split(":", 1)[0].replace("\\", "/").rsplit("/", 1)[-1]
    return source in _PROFILER_SOURCE_FILES


def _union_ps(start: np.ndarray, end: np.ndarray) -> float:
    """Length of the union of the intervals [start, end)."""
    if len(start) == 0:
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = start[order].astype(np.int64), end[order].astype(np.int64)
    reach = np.maximum.accumulate(e)
    # An interval adds what reaches past everything before it.
    prev = np.concatenate([[s[0]], reach[:-1]])
    return float(np.sum(np.clip(e - np.maximum(s, prev), 0, None) * (e > prev)))


def weak_evidence(store: ProfileStore, method: str, name: str, begin: np.ndarray, end: np.ndarray,
                   kept_dur_ps: np.ndarray, devices: list[int]) -> str:
    """Why an inferred step is not believable, in one sentence; "" when the evidence is good."""
    if is_profiler_annotation(name):
        return (f"The only repeated span, '{name}', is the profiler's own annotation, not a step of the "
                "program.")
    host = store.plane(HOST_PLANE)
    sid = store.stat_id(REQUEST_STAT)
    if host is not None and sid >= 0 and host.stat_column(sid).rows.shape[0] > 0:
        return (f"This profile records inference requests (request_id markers): the repeated '{name}' "
                "serves requests and is not a training step.")
    plane = store.planes[devices[0]] if method == "repeated_module" and devices else host
    if plane is not None and plane.n_events:
        busy_ps = _union_ps(plane.start_ps, plane.start_ps + plane.dur_ps)
        covered_ps = _union_ps(begin, end)
        if busy_ps > 0 and covered_ps < MIN_BUSY_COVERAGE * busy_ps:
            return (f"The repeated '{name}' covers only {100.0 * covered_ps / busy_ps:.0f}% of the busy time "
                    f"(a step loop covers at least {100.0 * MIN_BUSY_COVERAGE:.0f}%), so it is not a step.")
    if len(kept_dur_ps):
        median = float(np.median(kept_dur_ps))
        similar = ((kept_dur_ps >= median / STEP_SPREAD_FACTOR) & (kept_dur_ps <= median * STEP_SPREAD_FACTOR))
        share = float(np.mean(similar))
        if share < MIN_SIMILAR_SHARE:
            return (f"The {len(kept_dur_ps)} runs of '{name}' last {float(np.min(kept_dur_ps)) / 1e9:.3g} ms to "
                    f"{float(np.max(kept_dur_ps)) / 1e9:.3g} ms: only {100.0 * share:.0f}% are within "
                    f"{STEP_SPREAD_FACTOR:g}x of their median (steps need {100.0 * MIN_SIMILAR_SHARE:.0f}%), "
                    "so they are not steps.")
    return ""


def _types_by_name(store: ProfileStore, plane: Plane, rows: np.ndarray, gpu: bool,
                   has_device: bool = False) -> np.ndarray:
    """Event type (priority value) of ``rows`` of ``plane``, classified once per distinct name."""
    if len(rows) == 0:
        return np.zeros(0, np.int64)
    names = plane.name_id[rows]
    extra = np.zeros(len(rows), np.int64)
    if gpu:
        shapes_id = store.stat_id("tensor_shapes")
        if shapes_id >= 0:
            extra = plane.dense_str_ids(shapes_id)[rows].astype(np.int64) + 1
    else:
        corr = store.stat_id("correlation_id")
        if corr >= 0:
            has = np.zeros(plane.n_events, bool)
            has[plane.event_stat(corr).rows] = True
            extra = has[rows].astype(np.int64)
    keys = names.astype(np.int64) * (1 << 32) + extra
    uniq, inv = np.unique(keys, return_inverse=True)
    out = np.empty(len(uniq), np.int64)
    for k, key in enumerate(uniq.tolist()):
        name = store.strings[key >> 32]
        ex = key & 0xFFFFFFFF
        if gpu:
            shapes = store.strings[ex - 1] if ex > 0 else ""
            out[k] = sb.classify_gpu_event(name, shapes)
        else:
            out[k] = sb.classify_cpu_event(name, has_device, bool(ex)) if sb.is_real_cpu_compute(name) else -1
    return out[inv.reshape(-1)]


def _longest_runs(groups: np.ndarray, start: np.ndarray, end: np.ndarray, n_groups: int) -> tuple[np.ndarray, ...]:
    """Per group, the longest run of consecutive (in time) events of that group: XProf's device step marker."""
    order = _by_start_longest_first(start, end - start)
    g, s, e = groups[order], start[order], end[order]
    if len(g) == 0:
        return np.full(n_groups, -1, np.int64), np.full(n_groups, -1, np.int64)
    new_run = np.ones(len(g), bool)
    new_run[1:] = g[1:] != g[:-1]
    run_id = np.cumsum(new_run) - 1
    heads = np.nonzero(new_run)[0]
    run_group = g[heads]
    run_begin = s[heads]
    run_end = np.maximum.reduceat(e, heads)
    dur = run_end - run_begin
    best_begin = np.full(n_groups, -1, np.int64)
    best_end = np.full(n_groups, -1, np.int64)
    # Longest run per group (first of equals): sort runs by (group, -dur).
    o = np.lexsort((np.arange(len(dur)), -dur, run_group))
    first = np.ones(len(o), bool)
    first[1:] = run_group[o][1:] != run_group[o][:-1]
    pick = o[first]
    best_begin[run_group[pick]] = run_begin[pick]
    best_end[run_group[pick]] = run_end[pick]
    del run_id
    return best_begin, best_end


def _by_start_longest_first(start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """The order of events by start, then longest first, then as given: ``np.lexsort((-dur,
    start))``. A plane's events come by line, each line by (start, -dur): a stable sort by start
    merges those runs, and is that order wherever no two events of one start are left shorter
    before longer (else the lexsort decides)."""
    order = np.argsort(start, kind="stable")
    s, d = start[order], dur[order]
    if bool(np.any((s[1:] == s[:-1]) & (d[1:] > d[:-1]))):
        return np.lexsort((-dur, start))
    return order


@dataclass
class _TypedEvents:
    """Typed events that make up step breakdowns: where they are and which step they belong to."""

    plane: list[np.ndarray] = field(default_factory=list)  # plane index per chunk
    start: list[np.ndarray] = field(default_factory=list)
    end: list[np.ndarray] = field(default_factory=list)
    type: list[np.ndarray] = field(default_factory=list)
    key: list[np.ndarray] = field(default_factory=list)  # group id or step index per event

    def add(self, plane_idx: int, start: np.ndarray, end: np.ndarray, types: np.ndarray, key: np.ndarray) -> None:
        self.plane.append(np.full(len(start), plane_idx, np.int32))
        self.start.append(start)
        self.end.append(end)
        self.type.append(types)
        self.key.append(key)

    def arrays(self) -> tuple[np.ndarray, ...]:
        if not self.start:
            z = np.zeros(0, np.int64)
            return np.zeros(0, np.int32), z, z, z, z
        out = []
        for name in ("plane", "start", "end", "type", "key"):  # each column's parts dropped once joined
            out.append(np.concatenate(getattr(self, name)))
            setattr(self, name, [])
        return tuple(out)


def _breakdown(step_idx: np.ndarray, start: np.ndarray, end: np.ndarray, types: np.ndarray,
               begin_ps: np.ndarray, end_ps: np.ndarray, subset: np.ndarray | None = None) -> np.ndarray:
    """Per step and type, the time of the typed events (those of ``subset``, a mask, or all)."""
    # The kernel reads the columns through ``order`` (a trace streamed to disk has tens of
    # millions of typed events: no gathered copies).
    kept = np.flatnonzero(step_idx >= 0 if subset is None else (step_idx >= 0) & subset)
    order = kept[counting_order(step_idx[kept], begin_ps.shape[0])]
    del kept
    return sb.nonoverlapped_type_ps(step_idx, start, end, types, begin_ps, end_ps, sb.N_TYPES, rows=order,
                                    type_divisor=10, threads=default_threads())


def _marker_steps(store: ProfileStore, devices: list[int]) -> tuple[Any, ...] | None:
    """XProf's StepEvents from the grouping: (group ids, begin, end, typed events keyed by group)."""
    groups = event_groups(store)
    if groups.n_groups == 0:
        return None
    ng = groups.n_groups
    typed = _TypedEvents()
    best_b = np.full(ng, -1, np.int64)
    best_e = np.full(ng, -1, np.int64)
    well_formed = np.zeros(ng, bool)
    if devices:
        corr = store.stat_id("correlation_id")
        for pi in devices:
            p = store.planes[pi]
            g = groups.group_of[pi]
            grouped = np.nonzero(g >= 0)[0]
            b, e = _longest_runs(g[grouped], p.start_ps[grouped], p.start_ps[grouped] + p.dur_ps[grouped], ng)
            longer = (e - b) > (best_e - best_b)
            best_b[longer], best_e[longer] = b[longer], e[longer]
            has_corr = np.zeros(p.n_events, bool)
            if corr >= 0:
                has_corr[p.event_stat(corr).rows] = True
            rows = np.nonzero((g >= 0) & has_corr)[0]
            types = _types_by_name(store, p, rows, gpu=True)
            typed.add(pi, p.start_ps[rows], p.start_ps[rows] + p.dur_ps[rows], types, g[rows])
            compute = np.isin(types, sb.DEVICE_COMPUTE_TYPES)
            well_formed[g[rows][compute]] = True
    else:
        host = store.plane(HOST_PLANE)
        if host is None:
            return None
        pi = store.planes.index(host)
        g = groups.group_of[pi]
        rows = np.nonzero(g >= 0)[0]
        if len(rows) == 0:
            return None
        names = host.name_id[rows]
        uniq, inv = np.unique(names, return_inverse=True)
        explicit = np.array([sb.is_explicit_host_step_marker(store.strings[int(u)]) for u in uniq], bool)[inv]
        # Implicit markers: roots of user-defined (not FunctionRun-like) groups carry a step name.
        root_mask = np.zeros(host.n_events, bool)
        user_roots = groups.root_row[(groups.root_plane == pi) & ~groups.root_is_implicit]
        root_mask[user_roots] = True
        marker = explicit | root_mask[rows]
        mr = rows[marker]
        dur = host.dur_ps[mr]
        o = np.lexsort((-dur, g[mr]))
        first = np.ones(len(o), bool)
        first[1:] = g[mr][o][1:] != g[mr][o][:-1]
        pick = mr[o][first]
        best_b[g[pick]] = host.start_ps[pick]
        best_e[g[pick]] = host.start_ps[pick] + host.dur_ps[pick]
        other = rows[~marker]
        types = _types_by_name(store, host, other, gpu=False, has_device=False)
        ok = types >= 0
        other, types = other[ok], types[ok]
        typed.add(pi, host.start_ps[other], host.start_ps[other] + host.dur_ps[other], types, g[other])
        well_formed[g[other][types == sb.HOST_COMPUTE]] = True
    has_span = (best_b >= 0) & (best_e > best_b)
    candidates = np.nonzero(best_b >= 0)[0]
    keep = np.nonzero(has_span & well_formed)[0]
    return groups, candidates, keep, best_b, best_e, typed


def _step_by_time(start_ps: np.ndarray, begin: np.ndarray, end: np.ndarray,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """Step index of each start (of ``rows``, else all) that lies inside a step span (spans
    sorted, disjoint), -1 if none."""
    if begin.shape[0] > 1 and bool(np.any(begin[1:] < begin[:-1])):  # not sorted: numpy's rule
        t = start_ps if rows is None else start_ps[rows]
        k = np.searchsorted(begin, t, side="right") - 1
        return np.where((k >= 0) & (t < end[np.clip(k, 0, None)]), k, -1).astype(np.int64)
    return span_index(begin, end, start_ps, rows)


def _event_step_by_time(plane: Plane, begin: np.ndarray, end: np.ndarray,
                        rows: np.ndarray | None = None) -> np.ndarray:
    """Step index of each event (of ``rows``, else all) whose start lies inside a step span."""
    return _step_by_time(plane.start_ps, begin, end, rows)


def _assemble(store: ProfileStore, source: str, method: str, detail: str, names: list[str], nums: np.ndarray,
              begin: np.ndarray, end: np.ndarray, devices: list[int], typed: _TypedEvents,
              key_to_step: np.ndarray | None, candidate_count: int, group_of: Sequence[np.ndarray] | None) -> Steps:
    n = len(begin)
    dropped = 0
    if n > DROP_BOUNDARY_ABOVE:
        sel = np.arange(1, n - 1)
        dropped = 2
    else:
        sel = np.arange(n)
    remap = np.full(n, -1, np.int64)
    remap[sel] = np.arange(len(sel))
    names = [names[i] for i in sel.tolist()]
    nums, begin, end = nums[sel], begin[sel], end[sel]
    plane_of, st, en, ty, key = typed.arrays()
    step_idx = key_to_step[key] if key_to_step is not None else key
    step_idx = np.where(step_idx >= 0, remap[np.clip(step_idx, 0, None)], -1) if len(step_idx) else step_idx
    del key
    type_ps = _breakdown(step_idx, st, en, ty, begin, end)
    per_dev = np.zeros((len(devices), len(begin), sb.N_TYPES), np.int64)
    # A device's column: its own events plus the host's (host compute, input, kernel launch serve
    # every device of the host), so a one-device host's column equals its "all devices" one and
    # both name the same bottleneck (else one PyTorch rank could read "Host compute" in one and
    # "All others" in the other).
    on_host = ~np.isin(plane_of, np.asarray(devices, dtype=plane_of.dtype)) if len(plane_of) else plane_of.astype(bool)
    for d, pi in enumerate(devices):
        mine = (plane_of == pi) | on_host
        # A host's only device sees every typed event: its column is the "all devices" one.
        per_dev[d] = type_ps if mine.all() else _breakdown(step_idx, st, en, ty, begin, end, mine)
    group_to_step = None
    if group_of is not None and key_to_step is not None:
        group_to_step = np.where(key_to_step >= 0, remap[np.clip(key_to_step, 0, None)], -1)
    if dropped:
        detail += (f"; the first and the last of the {n} are dropped (boundary rule: more than "
                   f"{DROP_BOUNDARY_ABOVE} steps), {len(begin)} remain")
    diagnosis = ""
    dur = end - begin
    if len(begin) == 1:
        diagnosis = ("Only one step was found, so there is no step-to-step variation to show; profile more "
                     "steps for stable averages.")
    elif len(begin) and np.all(dur == 0):
        diagnosis = "Every step has zero length: the step markers hold no time, so no breakdown is possible."
    return Steps(source=source, method=method, detail=detail, diagnosis=diagnosis, has_device=bool(devices),
                 names=names, step_nums=nums.astype(np.int64), begin_ps=begin.astype(np.int64),
                 end_ps=end.astype(np.int64), type_ps=type_ps, device_planes=devices, per_device_type_ps=per_dev,
                 dropped_boundary_steps=dropped, candidate_count=candidate_count, planes=store.planes,
                 group_of=group_of, group_to_step=group_to_step)


def _typed_by_time(store: ProfileStore, devices: list[int], begin: np.ndarray, end: np.ndarray,
                   marker_rows: np.ndarray | None) -> _TypedEvents:
    """Typed events for inferred steps: device events on a GPU run, host events otherwise, by time.

    The host events that define the steps (``marker_rows``) are markers, not work, as in XProf.
    """
    typed = _TypedEvents()
    if devices:
        for pi in devices:
            p = store.planes[pi]
            k = _event_step_by_time(p, begin, end)
            rows = np.nonzero(k >= 0)[0]
            typed.add(pi, p.start_ps[rows], p.start_ps[rows] + p.dur_ps[rows],
                      _types_by_name(store, p, rows, gpu=True), k[rows])
    else:
        host = store.plane(HOST_PLANE)
        if host is not None:
            pi = store.planes.index(host)
            k = _event_step_by_time(host, begin, end)
            if marker_rows is not None:
                k[marker_rows] = -1
            rows = np.nonzero(k >= 0)[0]
            types = _types_by_name(store, host, rows, gpu=False)
            ok = types >= 0
            rows = rows[ok]
            typed.add(pi, host.start_ps[rows], host.start_ps[rows] + host.dur_ps[rows], types[ok], k[rows])
    return typed


def _infer_step_num_annotation(store: ProfileStore) -> tuple[Any, ...] | None:
    """Events with a ``step_num`` stat but no ``_r`` flag: annotated steps XProf does not pick up."""
    sid = store.stat_id("step_num")
    host = store.plane(HOST_PLANE)
    if sid < 0 or host is None:
        return None
    col = host.event_stat(sid)
    if len(col.rows) < MIN_INFERRED_STEPS:
        return None
    rows = col.rows
    names, counts = np.unique(host.name_id[rows], return_counts=True)
    name_id = int(names[np.argmax(counts)])
    pick = rows[host.name_id[rows] == name_id]
    nums = col.as_int()[host.name_id[rows] == name_id]
    order = np.argsort(host.start_ps[pick], kind="stable")
    pick, nums = pick[order], nums[order]
    begin = host.start_ps[pick]
    end = begin + host.dur_ps[pick]
    if len(pick) < MIN_INFERRED_STEPS or np.any(begin[1:] < end[:-1]) or np.any(end <= begin):
        return None
    name = store.strings[name_id]
    return begin, end, nums, name, (f"{len(pick)} '{name}' events carry a step_num stat but no _r=1 root flag "
                                    "(XProf ignores them); each is taken as one step"), pick


def _non_nested_occurrences(plane: Plane, rows: np.ndarray) -> np.ndarray:
    """Drop occurrences that start inside an earlier occurrence (recursion, nested calls)."""
    if len(rows) == 0:
        return rows
    rows = rows[np.lexsort((-plane.dur_ps[rows], plane.start_ps[rows]))]
    ends = plane.start_ps[rows] + plane.dur_ps[rows]
    running = np.maximum.accumulate(ends)
    keep = np.ones(len(rows), bool)
    keep[1:] = plane.start_ps[rows][1:] >= running[:-1]
    return rows[keep]


def _infer_repeated_function(store: ProfileStore, skipped: list[str] | None = None) -> tuple[Any, ...] | None:
    """The host function that runs again and again and covers most of its thread: one run = one step.
    The profiler's own annotations are never candidates (their names go to ``skipped``)."""
    host = store.plane(HOST_PLANE)
    if host is None or host.n_events == 0:
        return None
    best: tuple[float, int, int] | None = None  # (covered ps, line, name id)
    # A step function must cover most of the host's traced time, not just of its own thread
    # (a worker pool's per-element function repeats too, but covers little of the profile).
    active_ps = float(np.max(host.start_ps + host.dur_ps) - np.min(host.start_ps))
    if active_ps <= 0:
        return None
    for li in range(host.n_lines):
        sl = host.line_rows(li)
        if sl.stop - sl.start < MIN_INFERRED_STEPS:
            continue
        dur, depth = host.dur_ps[sl], host.depth[sl]
        # Candidates: names that occur >= 2 times in the top 4 levels of the thread.
        shallow = np.nonzero(depth <= 3)[0]
        names, inv, counts = np.unique(host.name_id[sl][shallow], return_inverse=True, return_counts=True)
        total = np.bincount(inv, weights=dur[shallow].astype(np.float64), minlength=len(names))
        for k in np.argsort(-total)[:20].tolist():
            if counts[k] < MIN_INFERRED_STEPS or total[k] < MIN_COVERAGE * active_ps:
                continue
            name = store.strings[int(names[k])]
            if not sb.is_real_cpu_compute(name) and not name.startswith(("FunctionRun", "EagerExecute")):
                continue
            if is_profiler_annotation(name):
                if skipped is not None and name not in skipped:
                    skipped.append(name)
                continue
            rows = _non_nested_occurrences(host, shallow[inv == k] + sl.start)
            if len(rows) < MIN_INFERRED_STEPS:
                continue
            covered = float(np.sum(host.dur_ps[rows]))
            if covered < MIN_COVERAGE * active_ps:
                continue
            # Prefer the outermost candidate: on ties in coverage, the lower depth wins.
            score = covered - float(np.min(host.depth[rows]))
            if best is None or score > best[0]:
                best = (score, li, int(names[k]))
            break
    if best is None:
        return None
    _, li, name_id = best
    sl = host.line_rows(li)
    rows = np.nonzero(host.name_id[sl] == name_id)[0] + sl.start
    rows = rows[host.depth[rows] <= 3]
    rows = _non_nested_occurrences(host, rows)
    begin = host.start_ps[rows]
    end = begin + host.dur_ps[rows]
    name = store.strings[name_id]
    return begin, end, np.arange(len(rows), dtype=np.int64), name, (
        f"'{name}' runs {len(rows)} times on thread '{host.line_names[li]}' and covers most of it; each run is "
        "taken as one step (a tf.function per training step, as Keras model.fit runs it)"), rows


def _infer_repeated_module(store: ProfileStore, devices: list[int]) -> tuple[Any, ...] | None:
    """Repeated launches of the XLA module with the most device time: one launch = one step."""
    sid = store.stat_id("hlo_module")
    if sid < 0 or not devices:
        return None
    p = store.planes[devices[0]]
    mod = p.dense_str_ids(sid)
    rows = np.nonzero(mod >= 0)[0]
    if len(rows) == 0:
        return None
    mods, inv = np.unique(mod[rows], return_inverse=True)
    total = np.bincount(inv, weights=p.dur_ps[rows].astype(np.float64))
    top = int(mods[np.argmax(total)])
    r = rows[mod[rows] == top]
    r = r[np.argsort(p.start_ps[r], kind="stable")]
    # Consecutive events of the module without another module's event between them = one launch.
    all_sorted = rows[np.argsort(p.start_ps[rows], kind="stable")]
    is_top = mod[all_sorted] == top
    new_launch = is_top & ~np.concatenate([[False], is_top[:-1]])
    launch_id = np.cumsum(new_launch) - 1
    sel = all_sorted[is_top]
    lid = launch_id[is_top]
    heads = np.nonzero(np.concatenate([[True], lid[1:] != lid[:-1]]))[0]
    begin = p.start_ps[sel][heads]
    end = np.maximum.reduceat(p.start_ps[sel] + p.dur_ps[sel], heads)
    if len(begin) < MIN_INFERRED_STEPS:
        return None
    name = store.strings[top]
    return begin, end, np.arange(len(begin), dtype=np.int64), name, (
        f"XLA module '{name}' was launched {len(begin)} times and takes the most device time; each launch is "
        "taken as one step"), None


# PyTorch profiler (Kineto) step markers: ``ProfilerStep#<n>`` record_function spans.
_PROFILER_STEP = re.compile(r"ProfilerStep#(\d{1,18})")
# PyTorch's DataLoader iteration span: the step waits for its next batch inside it.
DATALOADER_PREFIX = "enumerate(DataLoader)"
_DEVICE_CATEGORIES = kn.DEVICE_CATEGORIES
_LAUNCH_CATEGORIES = kn.LAUNCH_CATEGORIES


def _with_precision(store: ProfileStore, plane: Plane, rows: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Device compute typed by its precision (``domain/kineto_links.py``), not by XProf's
    name rule (``half``/``fp16`` in the name): cuBLASLt's bf16 kernels say neither."""
    compute = np.nonzero(np.isin(kinds, sb.DEVICE_COMPUTE_TYPES))[0]
    if compute.shape[0] == 0:
        return kinds
    prec = device_precision(store, plane, rows[compute])
    out = kinds.copy()
    out[compute] = np.select([prec == PRECISION_16, prec == PRECISION_32],
                             [sb.DEVICE_COMPUTE_16, sb.DEVICE_COMPUTE_32], sb.DEVICE_COMPUTE_UNKNOWN)
    return out


def _kineto_gpu_type(name: str) -> int:
    """XProf's device event type of a Kineto device event (``Memcpy HtoD (Pageable -> Device)``)."""
    if name.startswith("Memcpy "):
        name = "Memcpy" + name[len("Memcpy "):]
    return sb.classify_gpu_event(name, "")


def _in_gpu_step_marker(plane: Plane, anno: np.ndarray, anno_step: np.ndarray, rows: np.ndarray,
                        key: np.ndarray) -> np.ndarray:
    """``key`` (step index per device event ``rows``, -1: not linked) with the unlinked events
    inside a GPU ``ProfilerStep#N`` annotation of ``plane`` (``anno``, of step ``anno_step``) in
    that step: the device's own marker of the step that launched them."""
    todo = np.nonzero(key < 0)[0]
    if anno.shape[0] == 0 or todo.shape[0] == 0:
        return key
    order = np.argsort(plane.start_ps[anno], kind="stable")
    a_start = plane.start_ps[anno][order]
    a_end = a_start + plane.dur_ps[anno][order]
    start = plane.start_ps[rows[todo]]
    pos = np.searchsorted(a_start, start, side="right") - 1
    inside = (pos >= 0) & (start < a_end[np.clip(pos, 0, None)])
    out = key.copy()
    out[todo[inside]] = anno_step[order][pos[inside]]
    return out


def _end_of_earlier_work(typed: _TypedEvents, launched: list[tuple[int, np.ndarray, np.ndarray]]) -> int:
    """End of the last device event linked to no step that ends before the first step's own
    device work starts (torch-tb-profiler's start of the first step); -1 when none."""
    keyed = [(typed.start[i], typed.end[i], key) for i, (_, _, key) in enumerate(launched)]
    firsts = [int(st[key == 0].min()) for st, _, key in keyed if np.any(key == 0)]
    if not firsts:
        return -1
    first = min(firsts)
    ends = [en[(key < 0) & (en < first)] for _, en, key in keyed]
    found = [int(e.max()) for e in ends if e.shape[0]]
    return max(found) if found else -1


def _split_early_device_work(typed: _TypedEvents, begin: np.ndarray) -> None:
    """Device work of a step that starts before the step does (on another stream, while the
    previous step's device work still runs): the part before the step's start goes by time (to the
    previous step), the rest stays in its step, so no device time is lost or counted twice."""
    for i in range(len(typed.key)):
        key, start, end = typed.key[i], typed.start[i], typed.end[i]
        step_begin = begin[np.clip(key, 0, None)]
        early = np.nonzero((key >= 0) & (start < step_begin))[0]
        if early.shape[0] == 0:
            continue
        head_end = np.minimum(end[early], step_begin[early])
        typed.add(int(typed.plane[i][0]), start[early], head_end, typed.type[i][early],
                  np.full(early.shape[0], -1, np.int64))
        # The rest (empty where all of it ran before the step) stays in the step.
        start = start.copy()
        start[early] = np.minimum(np.maximum(start[early], step_begin[early]), end[early])
        typed.start[i] = start


def _with_launch_steps(steps: Steps, n_found: int, launched: list[tuple[int, np.ndarray, np.ndarray]]) -> Steps:
    """``steps`` whose ``event_step`` of each device plane puts the events linked to a step (by
    launch or GPU marker; ``launched``: plane, rows, step index among the ``n_found``) in it, the
    others by time, as the breakdown counted them."""
    remap = np.full(n_found, -1, np.int64)
    first = 1 if steps.dropped_boundary_steps else 0
    remap[first:first + steps.n_steps] = np.arange(steps.n_steps)
    for pi, rows, key in launched:
        out = steps.event_step(pi).copy()
        linked = key >= 0
        out[rows[linked]] = remap[key[linked]]
        steps._event_step[pi] = out
    return steps


# Above this many events (and with three threads or more), a PyTorch trace's device and host events
# are typed on threads beside the steps' linking (numpy's sorts, searches and gathers release the GIL).
ASIDE_MIN_EVENTS = 1 << 20

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
# A device's typed events: their rows and XProf's type of each (device compute by precision).
_Typed = tuple[np.ndarray, np.ndarray]
# The host's typed events: their rows (in row order), the type of each, whether any DataLoader span.
_HostTyped = tuple[np.ndarray, np.ndarray, bool]


class _Result(Protocol[T_co]):
    def result(self) -> T_co: ...


class _Done(Generic[T]):
    """A result computed at once (``_Aside`` without threads)."""

    def __init__(self, value: T) -> None:
        self.value = value

    def result(self) -> T:
        return self.value


class _Aside:
    """Calls run on threads beside the caller for a store of at least ``ASIDE_MIN_EVENTS`` (its
    columns in memory or mapped: two threads may read them; the store's memo is single-flight)
    with three threads or more, else at once: with two, the headline's second thread takes the
    other core already, and the temporaries held at once would only raise the peak of memory."""

    def __init__(self, store: ProfileStore) -> None:
        threads = default_threads()
        big = store.format == "chrome_trace" and sum(p.n_events for p in store.planes) >= ASIDE_MIN_EVENTS
        self.pool = ThreadPoolExecutor(threads - 2, thread_name_prefix="tbprof-steps") if big and threads > 2 \
            else None

    def __enter__(self) -> _Aside:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, fn: Callable[..., T], *args: Any) -> _Result[T]:
        return self.pool.submit(fn, *args) if self.pool is not None else _Done(fn(*args))


def _device_typed(store: ProfileStore, p: Plane) -> _Typed:
    """A device plane's events of Kineto's device categories, each typed by XProf's GPU rules
    (device compute by its precision)."""
    drows = np.nonzero(category_mask(store, p, _DEVICE_CATEGORIES))[0]
    if drows.shape[0] == 0:
        return drows, np.zeros(0, np.int64)
    uniq, inv = np.unique(p.name_id[drows], return_inverse=True)
    kinds = np.array([_kineto_gpu_type(n) for n in store.strings.lookup(uniq)], dtype=np.int64)[inv.reshape(-1)]
    return drows, _with_precision(store, p, drows, kinds)


def _host_typed(store: ProfileStore, host: Plane, is_launch: np.ndarray, is_step_marker: np.ndarray,
                has_devices: bool) -> _HostTyped:
    """The host's events of a breakdown type: DataLoader spans wait for input, launches prepare
    device work (compute on a host without devices), other operators compute; step markers none."""
    host_names = store.strings.lookup(sorted_unique(host.name_id))
    loader_ids = np.array([store.strings.id(n) for n in host_names if n.startswith(DATALOADER_PREFIX)], np.int64)
    is_loader = np.isin(host.name_id, loader_ids)
    is_op = category_mask(store, host, ("cpu_op",))
    htype = np.full(host.n_events, -1, np.int64)
    htype[is_op] = sb.HOST_COMPUTE
    htype[is_launch] = sb.HOST_PREPARE if has_devices else sb.HOST_COMPUTE
    htype[is_loader] = sb.HOST_WAIT_INPUT
    htype[is_step_marker] = -1
    hrows = np.nonzero(htype >= 0)[0]
    return hrows, htype[hrows], bool(np.any(is_loader))


def _kineto_steps(store: ProfileStore, devices: list[int]) -> Steps | None:
    """Steps of a PyTorch profiler trace from its ``ProfilerStep#<n>`` markers.

    A device event belongs to the step whose host marker holds its launch (linked by
    ``correlation``), even when it runs during a later step's host marker (a GPU running a step
    behind its CPU). A step ends at the latest of its host marker's end, the end of the device work
    launched in it and the end of the GPU's own marker (Kineto's ``gpu_user_annotation`` of the same
    name); it starts at its host marker or, when the previous step's device work is still running
    then, where that step ends (torch-tb-profiler's rule; for the first step, the device work
    launched before it), so steps never overlap and each spans its own device work. Other events go
    to the step whose span holds their start (the host work of a step the GPU lags behind overlaps
    the previous step's device work, where device time outranks it); a device event whose launch is
    not in the trace belongs to the step whose GPU marker holds its start; the part of a step's
    device work that runs before the step starts (another stream, during the previous step's device
    work) counts in the previous step. Breakdown (XProf's event types): device events by XProf's GPU
    rules (NCCL kernels are collectives, memcpys by direction), the host's DataLoader spans
    (``enumerate(DataLoader)#...``) are input (waiting for input), CUDA runtime/driver calls that
    launch device work are kernel launch, other operators host compute; overlapping time counts once
    for the highest-priority type, as in XProf.
    """
    if store.format != "chrome_trace":
        return None
    step_ids: dict[int, int] = {}
    for sid, text in enumerate(store.strings.as_list()):
        m = _PROFILER_STEP.fullmatch(text)
        if m:
            step_ids[sid] = int(m.group(1))
    if not step_ids:
        return None
    prefetch_link_stats(store)
    ids = np.fromiter(step_ids, dtype=np.int64)
    host = store.plane(HOST_PLANE)
    if host is not None and host.n_events == 0:
        host = None
    # The markers: the host's; a GPU-only trace (no host events) has the GPU annotations of them.
    marker_masks: dict[int, np.ndarray] = {}
    # By string id, one gather per plane instead of isin's sort; an id out of range (clipped to the
    # last slot or to id 0, the empty name) is no marker, as isin has it.
    is_step_name = np.zeros(len(store.strings) + 1, bool)
    is_step_name[ids] = True

    def is_marker(plane: Plane) -> np.ndarray:
        """Whether each event of ``plane`` is a step marker (tested once a plane)."""
        got = marker_masks.get(id(plane))
        if got is None:
            got = marker_masks[id(plane)] = np.take(is_step_name, plane.name_id, mode="clip")
        return got

    marked = [p for p in ([host] if host is not None else []) + [store.planes[d] for d in devices]
              if is_marker(p).any()]
    if not marked:
        return None
    mplane = marked[0]
    rows = np.nonzero(is_marker(mplane))[0]
    nums_all = np.array([step_ids[int(i)] for i in mplane.name_id[rows].tolist()], dtype=np.int64)
    # One marker per step number (the longest, should a trace repeat one).
    o = np.lexsort((-mplane.dur_ps[rows], nums_all))
    first = np.ones(o.shape[0], bool)
    first[1:] = nums_all[o][1:] != nums_all[o][:-1]
    rows, nums = rows[o][first], nums_all[o][first]
    by_start = np.argsort(mplane.start_ps[rows], kind="stable")
    rows, nums = rows[by_start], nums[by_start]
    begin = mplane.start_ps[rows].astype(np.int64)
    host_end = begin + mplane.dur_ps[rows]
    end = host_end.copy()
    by_num = np.argsort(nums, kind="stable")  # the steps by number (one marker per number)
    corr_sid = store.stat_id("correlation")

    # Launch correlation -> step (by where the launch starts), as sorted arrays.
    launch_corr = launch_k = np.zeros(0, np.int64)
    is_launch_host = category_mask(store, host, _LAUNCH_CATEGORIES) if host is not None else np.zeros(0, bool)
    if host is not None and corr_sid >= 0:
        corr = host.event_stat(corr_sid).dense_int(host.n_events)
        lrows = np.nonzero(is_launch_host & (corr >= 0))[0]
        k = _event_step_by_time(host, begin, host_end, lrows)
        order = np.argsort(corr[lrows][k >= 0], kind="stable")
        launch_corr, launch_k = corr[lrows][k >= 0][order], k[k >= 0][order]
        del corr, lrows, k, order  # per host event: not kept while the devices are read
    with _Aside(store) as aside:
        # The device events' types and the host events' need no step: made beside the linking.
        device_typed = {pi: aside.submit(_device_typed, store, store.planes[pi]) for pi in devices}
        host_typed = (aside.submit(_host_typed, store, host, is_launch_host, is_marker(host), bool(devices))
                      if host is not None else None)
        return _kineto_linked(store, devices, host, mplane, step_ids, is_marker, nums, begin, end, by_num, corr_sid,
                              launch_corr, launch_k, device_typed, host_typed)


def _kineto_linked(store: ProfileStore, devices: list[int], host: Plane | None, mplane: Plane,
                   step_ids: dict[int, int], is_marker: Callable[[Plane], np.ndarray], nums: np.ndarray,
                   begin: np.ndarray, end: np.ndarray, by_num: np.ndarray, corr_sid: int,
                   launch_corr: np.ndarray, launch_k: np.ndarray, device_typed: dict[int, _Result[_Typed]],
                   host_typed: _Result[_HostTyped] | None) -> Steps:
    """``_kineto_steps`` once its markers are found: the device events linked to the steps that
    launched them, the steps' spans, the host events typed and the breakdown."""
    typed = _TypedEvents()
    launched: list[tuple[int, np.ndarray, np.ndarray]] = []  # per device: its events, their step (-1: by time)
    for pi in devices:
        p = store.planes[pi]
        # The GPU-side marker of step n spans the device work launched in it.
        anno = np.nonzero(is_marker(p))[0]
        anno_num = np.array([step_ids[i] for i in p.name_id[anno].tolist()], dtype=np.int64)
        pos = np.minimum(np.searchsorted(nums, anno_num, sorter=by_num), nums.shape[0] - 1)
        anno_step = np.where(nums[by_num[pos]] == anno_num, by_num[pos], -1)
        hit = anno_step >= 0
        np.maximum.at(end, anno_step[hit], (p.start_ps[anno] + p.dur_ps[anno])[hit])
        drows, kinds = device_typed[pi].result()
        if drows.shape[0] == 0:
            continue
        key = np.full(drows.shape[0], -1, np.int64)
        if corr_sid >= 0 and launch_corr.shape[0]:
            dcorr = p.event_stat(corr_sid).dense_int(p.n_events)[drows]
            pos = np.minimum(np.searchsorted(launch_corr, dcorr), launch_corr.shape[0] - 1)
            hit = (dcorr >= 0) & (launch_corr[pos] == dcorr)
            key[hit] = launch_k[pos[hit]]
        key = _in_gpu_step_marker(p, anno[anno_step >= 0], anno_step[anno_step >= 0], drows, key)
        linked = key >= 0
        d_start = p.start_ps[drows]
        d_end = d_start + p.dur_ps[drows]
        np.maximum.at(end, key[linked], d_end[linked])
        typed.add(pi, d_start, d_end, kinds, key)
        launched.append((pi, drows, key))
    # Steps never overlap and keep the device work launched in them: where the GPU runs behind
    # the CPU, a step starts when the previous step's device work ends (torch-tb-profiler's rule),
    # so each step spans its own kernels even when they run during the next host marker.
    end = np.maximum.accumulate(end)
    begin[1:] = np.maximum(begin[1:], end[:-1])
    # Likewise the first step starts after the device work launched before it (before the
    # profiled steps) that ends before the first step's own device work starts.
    begin[0] = min(max(int(begin[0]), _end_of_earlier_work(typed, launched)), int(end[0]))
    _split_early_device_work(typed, begin)
    # Device events launched outside every step, or whose launch is not in the trace, go by time.
    for i, key in enumerate(typed.key):
        typed.key[i] = np.where(key >= 0, key, _step_by_time(typed.start[i], begin, end))
    names = [f"ProfilerStep#{int(n)}" for n in nums.tolist()]
    detail = (f"{len(names)} PyTorch profiler steps (ProfilerStep#N markers); a step runs from its "
              f"{'host marker' if mplane is host else 'GPU annotation'}"
              f"{' (or the end of the previous step, if later)' if devices else ''} to the end of the "
              f"{'device work launched in it' if devices else 'marker'}")
    if host is None:  # a GPU-only trace: device work alone
        return _with_launch_steps(_assemble(store, "markers", "profiler_step", detail, names, nums, begin, end,
                                            devices, typed, None, len(names), None), len(names), launched)
    # Host side: DataLoader waits, launches, operators.
    assert host_typed is not None
    hrows, htype, has_loader = host_typed.result()
    k_host = _event_step_by_time(host, begin, end, hrows)
    in_step = k_host >= 0
    hrows, htype, k_host = hrows[in_step], htype[in_step], k_host[in_step]
    h_start = host.start_ps[hrows]
    typed.add(store.planes.index(host), h_start, h_start + host.dur_ps[hrows], htype, k_host)
    del h_start, k_host, htype, hrows, in_step  # per host event
    steps = _with_launch_steps(_assemble(store, "markers", "profiler_step", detail, names, nums, begin, end, devices,
                                         typed, None, len(names), None), len(names), launched)
    if not has_loader:
        steps.notes.append("no DataLoader spans (enumerate(DataLoader)#...) in the trace: input time is 0")
    return steps


def _tf1_file_step(store: ProfileStore) -> Steps | None:
    """A TF1 timeline file is one step (``tf.estimator.ProfilerHook`` writes one per traced step).

    The step spans its ops (first op start to last op end, as ``tf1_steps``), numbered by the
    file name (``timeline-3`` -> 3). Breakdown: device-side ops by XProf's GPU rules, host ops
    by its CPU rules on the op type (``IteratorGetNext`` waits for input, ``*HtoD`` memcpys are
    host to device, ...); gaps between ops are "all others".
    """
    if not is_tf1_timeline(store):
        return None
    ops = [op for op in op_planes(store) if op.rows.shape[0]]
    if not ops:
        return None
    begin = min(int(op.plane.start_ps[op.rows].min()) for op in ops)
    end = max(int((op.plane.start_ps[op.rows] + op.plane.dur_ps[op.rows]).max()) for op in ops)
    # One device per GPU, whatever processes hold its work: its events count under its first plane.
    device_plane: dict[str, int] = {}
    for op in ops:
        if op.side == "Device":
            device_plane.setdefault(op.device, store.planes.index(op.plane))
    devices = list(device_plane.values())
    typed = _TypedEvents()
    type_sid = store.stat_id("op")
    for op in ops:
        plane, rows = op.plane, op.rows
        kind = plane.dense_str_ids(type_sid)[rows] if type_sid >= 0 else \
            np.full(rows.shape[0], -1, np.int32)
        label = np.where(kind >= 0, kind, plane.name_id[rows]).astype(np.int64)
        uniq, inv = np.unique(label, return_inverse=True)
        if op.side == "Device":
            types = np.array([sb.classify_gpu_event(n, "") for n in store.strings.lookup(uniq)], np.int64)
        else:
            types = np.array([sb.classify_cpu_event(n, bool(devices), False) for n in store.strings.lookup(uniq)],
                             np.int64)
        label_plane = device_plane[op.device] if op.side == "Device" else store.planes.index(plane)
        typed.add(label_plane, plane.start_ps[rows], plane.start_ps[rows] + plane.dur_ps[rows],
                  types[inv.reshape(-1)], np.zeros(rows.shape[0], np.int64))
    num = step_of(store.host)
    steps = _assemble(store, "markers", "timeline_file", f"one step per timeline file: {store.host}", [store.host],
                      np.array([num if num is not None else 0], np.int64), np.array([begin], np.int64),
                      np.array([end], np.int64), devices, typed, None, 1, None)
    steps.diagnosis = ""  # one step per file is what a timeline run is, not a problem
    return steps


def compute_steps(store: ProfileStore) -> Steps:
    devices = device_planes_of(store)
    kineto = _kineto_steps(store, devices)
    if kineto is not None:
        return kineto
    tf1 = _tf1_file_step(store)
    if tf1 is not None:
        return tf1
    if _is_kineto(store):
        # PyTorch marks its steps (ProfilerStep#N, from torch.profiler's schedule or
        # prof.step()); a trace without them (a benchmark, an inference server, a
        # torch.compile run) has none, and repeated calls are not guessed into steps.
        return _no_steps(store, devices, KINETO_NO_STEPS_DIAGNOSIS)
    found = _marker_steps(store, devices)
    if found is not None:
        groups, candidates, keep, best_b, best_e, typed = found
        if len(keep):
            key_to_step = np.full(groups.n_groups, -1, np.int64)
            key_to_step[keep] = np.arange(len(keep))
            where = "device work of each marked step" if devices else "the host step markers"
            detail = (f"{len(keep)} marked steps (root events with _r=1, e.g. "
                      f"tf.profiler.experimental.Trace or jax.profiler.StepTraceAnnotation); step time from "
                      f"{where}")
            names = [groups.group_names[int(g)] for g in keep]
            nums = np.array([_num_of(groups.group_names[int(g)], int(g)) for g in keep], np.int64)
            steps = _assemble(store, "markers", "xprof_groups", detail, names, nums, best_b[keep], best_e[keep],
                              devices, typed, key_to_step, len(candidates), groups.group_of)
            if len(candidates) > len(keep):
                steps.notes.append(f"{len(candidates) - len(keep)} marked groups were not counted as steps: they "
                                   f"hold no {'device' if devices else 'host'} compute or have zero length")
            return steps
    annotations: list[str] = []  # the profiler's own annotations repeated_function passed over
    inferences: list[tuple[str, Callable[[], tuple[Any, ...] | None]]] = [
        ("step_num_annotation", lambda: _infer_step_num_annotation(store)),
        ("repeated_function", lambda: _infer_repeated_function(store, annotations)),
        ("repeated_module", lambda: _infer_repeated_module(store, devices)),
    ]
    if devices:
        # A GPU step is the device's work (as for marked steps): module launches before host functions.
        inferences[1], inferences[2] = inferences[2], inferences[1]
    rejected = ""
    for method, infer in inferences:
        got = infer()
        if got is None:
            continue
        begin, end, nums, fn_name, detail, marker_rows = got
        order = np.argsort(begin, kind="stable")
        begin, end, nums = begin[order], end[order], nums[order]
        kept = (end - begin)[1:-1] if len(begin) > DROP_BOUNDARY_ABOVE else end - begin
        why = weak_evidence(store, method, fn_name, begin, end, kept, devices)
        if why:
            rejected = rejected or why
            continue
        typed = _typed_by_time(store, devices, begin, end, marker_rows)
        names = [f"{fn_name} {int(x)}" for x in nums.tolist()]
        steps = _assemble(store, "inferred", method, detail, names, nums, begin, end, devices, typed, None,
                          len(begin), None)
        steps.notes.append("XProf reports no steps for this profile (it needs step markers); these steps are "
                           "inferred by tbprof")
        if found is not None and len(found[1]):
            steps.notes.append(f"{len(found[1])} step markers were found but none holds "
                               f"{'device compute' if devices else 'host compute'} or time (zero-length?), "
                               "so steps were inferred instead")
        return steps
    empty = np.zeros(0, np.int64)
    if not rejected and annotations:
        rejected = weak_evidence(store, "repeated_function", annotations[0], empty, empty, empty, devices)
    diagnosis = f"No steps: {rejected[0].lower()}{rejected[1:]} {MARK_STEPS_ADVICE}" if rejected else NO_STEPS_DIAGNOSIS
    if found is not None and len(found[1]):
        diagnosis = (f"{len(found[1])} step markers were found but none holds "
                     f"{'device compute' if devices else 'host compute'} or time. " + NO_STEPS_DIAGNOSIS)
    return _no_steps(store, devices, diagnosis)


def _is_kineto(store: ProfileStore) -> bool:
    return store.format == "chrome_trace" and store.metadata.get("producer") == "pytorch"


def _no_steps(store: ProfileStore, devices: list[int], diagnosis: str) -> Steps:
    empty = np.zeros(0, np.int64)
    return Steps(source="none", method="", detail="", diagnosis=diagnosis, has_device=bool(devices), names=[],
                 step_nums=empty, begin_ps=empty, end_ps=empty, type_ps=np.zeros((0, sb.N_TYPES), np.int64),
                 device_planes=devices, per_device_type_ps=np.zeros((len(devices), 0, sb.N_TYPES), np.int64),
                 candidate_count=0, planes=store.planes)


def _num_of(name: str, default: int) -> int:
    tail = name.rsplit(" ", 1)[-1]
    try:
        return int(tail)
    except ValueError:
        return default


def has_steps_data(store: Any) -> bool:
    """Whether the step pages have anything to show for a store: any XSpace with events; any
    PyTorch trace with host operators or device work (with ``ProfilerStep#<n>`` markers or
    without: then the pages say there are no steps, as XProf does); a TF1 timeline file with
    ops (one step)."""
    fmt = getattr(store, "format", "")
    if fmt == "xspace":
        return bool(store.n_events > 0)
    if fmt != "chrome_trace":
        return False
    if is_tf1_timeline(store):
        return any(op.rows.shape[0] for op in op_planes(store))
    if _is_kineto(store):  # with steps or without (the pages then say there are none)
        return any(p.n_events > 0 for p in store.planes if p.name == HOST_PLANE or on_device_side(p))
    if store.plane(HOST_PLANE) is None:
        return False
    return any(_PROFILER_STEP.fullmatch(text) for text in store.strings.as_list())


# The memo key of a store's step assignment (analyses/partials.py carries it to the server).
STEPS_KEY = ("tbprof.steps", 2)


STEPS: CarriedValue[Steps] = CarriedValue(STEPS_KEY, compute_steps)


def steps_of(store: StoreView) -> Steps:
    """The step assignment of ``store``, computed once and shared by every step tool."""
    return store.derive(STEPS)


def warm_steps(store: ProfileStore) -> None:
    """Derives the step assignment in the background once a store is loaded (``service/tools.warmups``)."""
    fmt = getattr(store, "format", "")
    if fmt == "xspace" or (fmt == "chrome_trace" and has_steps_data(store)):
        steps_of(store)
