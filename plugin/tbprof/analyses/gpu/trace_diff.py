"""HTA's op-level trace diff: operators and kernels of two runs by count and duration.

As HTA 0.5.0's ``TraceDiff.compare_traces`` / ``ops_diff`` (docs/formulas.md, "Trace diff (HTA)"),
on one rank and one or more iterations per side (HTA's defaults: the first rank, the first
``ProfilerStep``; ``iterations`` chooses others, as HTA's ``control_iteration`` /
``test_iteration``):

* the events are the trace's complete events with a category (not ``Trace``, not instants),
  times rounded inward to whole microseconds as HTA reads Kineto JSON (an event that this
  makes end before it starts lasts 0 us, where HTA counts -1 us);
* a host event belongs to the ``ProfilerStep#N`` whose [start, end) holds its start (a GPU
  annotation of the step wins over the host marker where both do: Kineto writes GPU activity
  after the host events and HTA keeps the last match); a device event (integer ``stream`` > 0 on
  a device's process) to the iteration of its launch (the host event with its ``correlation``);
  a host operator carrying a ``stream`` argument (Inductor's Triton launchers) is a host event,
  where HTA, reading every row with a stream as a kernel, finds it no launch and drops it;
* per name: count and total duration (us); then per name of either side the difference and the
  change: ``added`` (only in the candidate), ``deleted`` (only in the baseline), ``increased`` /
  ``decreased`` / ``unchanged`` count.

``tbprof compare`` runs it for two PyTorch runs (``service/comparisons.py``); the compare page
shows its table. XSpace profiles have no ``ProfilerStep`` iterations: not applicable there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tbprof.analyses.gpu.activity import _int_column, _inward_us
from tbprof.analyses.table import Column, Table
from tbprof.domain.planes import on_device_side
from tbprof.errors import BadParameter
from tbprof.store.derived import Derived
from tbprof.store.markers import is_counter_line
from tbprof.store.tables import ProfileStore

_PS_PER_US = 1_000_000
_STEP_PREFIX = "ProfilerStep#"
# Categories HTA drops (its parser: "Trace"; instants have no duration in the JSON).
_DROPPED_CATEGORIES = ("Trace", "cpu_instant_event")
CHANGES = ("added", "deleted", "increased", "decreased", "unchanged")


@dataclass(frozen=True)
class OpSummary:
    """Per name: count and total duration (us) of one side's events in its iterations."""

    iterations: tuple[int, ...]  # empty: the trace has no ProfilerStep iteration
    counts: dict[str, int]
    total_us: dict[str, float]

    @property
    def iteration(self) -> int | None:
        """The first iteration compared (None: none)."""
        return self.iterations[0] if self.iterations else None


def _iteration_of(name: str) -> int | None:
    rest = name[len(_STEP_PREFIX):].strip() if name.startswith(_STEP_PREFIX) else ""
    return int(rest) if rest.isdigit() else None


def op_summary(store: ProfileStore, iterations: int | Sequence[int] | None = None) -> OpSummary:
    """The events of ``iterations`` (ProfilerStep numbers; default: the first) by name (memoised).
    A number the trace has no ProfilerStep for raises BadParameter (HTA: ValueError)."""
    wanted = () if iterations is None else (iterations,) if isinstance(iterations, int) else tuple(iterations)
    return store.memo(("trace_diff_summary", wanted), lambda: _summary(store, wanted))


@dataclass(frozen=True)
class EventTable:
    """HTA's view of a Kineto trace's events: times rounded inward (ps from the store origin),
    integer stream (-1: host), correlation, name, and the ProfilerStep iteration of each (-1: none)."""

    start_ps: np.ndarray
    end_ps: np.ndarray
    stream: np.ndarray
    correlation: np.ndarray
    name_id: np.ndarray
    iteration: np.ndarray
    is_step: np.ndarray  # a ProfilerStep marker or GPU annotation
    step_numbers: tuple[int, ...]  # every N of a ProfilerStep#N name, ascending


EVENT_TABLE: Derived[EventTable | None] = Derived(("hta_event_table",), lambda s: _event_table(s))


def event_table(store: ProfileStore) -> EventTable | None:
    """The table (memoised); None without ProfilerStep names."""
    return store.derive(EVENT_TABLE)


def _event_table(store: ProfileStore) -> EventTable | None:
    names = store.strings.as_list()
    step_number = {i: n for i, name in enumerate(names) if (n := _iteration_of(name)) is not None}
    if not step_number:
        return None
    cat_sid = store.stat_id("cat")
    dropped = np.asarray([i for i in (store.strings.id(c) for c in _DROPPED_CATEGORIES) if i >= 0], np.int64)
    parts = []  # (rows, start, end, stream, correlation, name_id, on a device plane)
    for plane in store.planes:
        if plane.n_events == 0 or cat_sid < 0:
            continue
        cat = plane.dense_str_ids(cat_sid)
        keep = (cat >= 0) & ~np.isin(cat, dropped)
        for line in range(plane.n_lines):
            if is_counter_line(plane, line):
                sl = plane.line_rows(line)
                keep[sl.start:sl.stop] = False
        rows = np.nonzero(keep)[0]
        if rows.shape[0] == 0:
            continue
        start, end = _inward_us(store, plane.start_ps[rows], plane.dur_ps[rows])
        stream = _int_column(store, plane, "stream")[rows] if on_device_side(plane) else np.full(rows.shape[0], -1)
        parts.append((rows, start, end, stream,
                      _int_column(store, plane, "correlation")[rows], plane.name_id[rows],
                      np.full(rows.shape[0], on_device_side(plane), bool)))
    steps = tuple(sorted(set(step_number.values())))
    if not parts:
        z = np.zeros(0, np.int64)
        return EventTable(z, z, z, z, z, z, np.zeros(0, bool), steps)
    start = np.concatenate([p[1] for p in parts])
    end = np.concatenate([p[2] for p in parts])
    stream = np.concatenate([p[3] for p in parts])
    corr = np.concatenate([p[4] for p in parts])
    name_id = np.concatenate([p[5] for p in parts])
    on_device = np.concatenate([p[6] for p in parts])
    host = stream < 0
    # Steps: host markers first, then GPU annotations (stream-less events of a device plane's
    # annotation lines look the same here; Kineto writes them later, so they win).
    is_step = host & np.isin(name_id, np.fromiter(step_number, np.int64))
    iteration_of = np.full(start.shape[0], -1, np.int64)
    step_rows = np.nonzero(is_step)[0]
    gpu_annotation = on_device[step_rows]
    for row in np.concatenate([step_rows[~gpu_annotation], step_rows[gpu_annotation]]).tolist():
        inside = host & (start >= start[row]) & (start < end[row])
        iteration_of[inside] = step_number[int(name_id[row])]
    # Device events: their launch's iteration (HTA's index_correlation).
    dev = np.nonzero(stream > 0)[0]
    launches = np.nonzero(host & (corr >= 0))[0]
    order = np.argsort(corr[launches], kind="stable")
    sorted_corr = corr[launches][order]
    pos = np.searchsorted(sorted_corr, corr[dev])
    if sorted_corr.shape[0]:
        found = (pos < sorted_corr.shape[0]) & (sorted_corr[np.minimum(pos, sorted_corr.shape[0] - 1)] == corr[dev])
        iteration_of[dev[found]] = iteration_of[launches[order][pos[found]]]
    return EventTable(start, end, stream, corr, name_id.astype(np.int64), iteration_of, is_step, steps)


def _summary(store: ProfileStore, iterations: tuple[int, ...]) -> OpSummary:
    table = event_table(store)
    if table is None:
        if iterations:
            raise BadParameter(f"iterations {', '.join(map(str, iterations))}: the trace has no ProfilerStep")
        return OpSummary((), {}, {})
    missing = [n for n in iterations if n not in table.step_numbers]
    if missing:
        raise BadParameter(f"iteration {', '.join(map(str, missing))} is not a ProfilerStep of the trace "
                           f"(it has {', '.join(map(str, table.step_numbers))})")
    wanted = tuple(sorted(set(iterations))) or table.step_numbers[:1]
    start, end, name_id, iteration_of = table.start_ps, table.end_ps, table.name_id, table.iteration
    sel = np.nonzero(np.isin(iteration_of, np.asarray(wanted, np.int64)))[0]
    # An event inside one microsecond, rounded inward, ends before it starts: HTA counts it
    # -1 us; its time here is 0 (never a negative time; docs/differences.md).
    dur_us = np.maximum(end[sel] - start[sel], 0) / _PS_PER_US
    uniq, inv = np.unique(name_id[sel], return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.bincount(inv, minlength=uniq.shape[0])
    totals = np.bincount(inv, weights=dur_us, minlength=uniq.shape[0])
    labels = store.strings.lookup(uniq)
    out_counts: dict[str, int] = {}
    out_totals: dict[str, float] = {}
    for label, c, t in zip(labels, counts.tolist(), totals.tolist(), strict=True):
        out_counts[label] = out_counts.get(label, 0) + int(c)
        out_totals[label] = out_totals.get(label, 0.0) + float(t)
    return OpSummary(wanted, out_counts, out_totals)


COLUMNS = [
    Column("name", "Operator or kernel", "str"),
    Column("change", "Change", "str", "", "added, deleted, increased, decreased or unchanged count"),
    Column("baseline_count", "Baseline count", "int"), Column("candidate_count", "Candidate count", "int"),
    Column("diff_count", "Δ count", "int", "", "candidate - baseline"),
    Column("baseline_total_us", "Baseline time", "float", "us"),
    Column("candidate_total_us", "Candidate time", "float", "us"),
    Column("diff_duration_us", "Δ time", "float", "us", "candidate - baseline"),
]


def change_of(base_count: int, cand_count: int) -> str:
    """HTA's ``ops_diff`` category of one name."""
    if base_count == 0:
        return "added"
    if cand_count == 0:
        return "deleted"
    return "increased" if cand_count > base_count else "decreased" if cand_count < base_count else "unchanged"


def diff(base: OpSummary, cand: OpSummary) -> tuple[Table, dict[str, int]]:
    """The joined table (ordered by |Δ time|) and the number of names per change."""
    names = sorted(set(base.counts) | set(cand.counts))
    rows = []
    for n in names:
        bc, cc = base.counts.get(n, 0), cand.counts.get(n, 0)
        bt, ct = base.total_us.get(n, 0.0), cand.total_us.get(n, 0.0)
        rows.append((n, change_of(bc, cc), bc, cc, cc - bc, bt, ct, ct - bt))
    rows.sort(key=lambda r: (-abs(r[7]), r[0]))
    table = Table.from_columns(COLUMNS, {c.name: [r[i] for r in rows] for i, c in enumerate(COLUMNS)})
    summary = {c: sum(1 for r in rows if r[1] == c) for c in CHANGES}
    return table, summary
