"""HTA's straggler analysis over the ranks of a run: ``stragglers``.

As HTA 0.5.0's ``get_potential_stragglers`` with its metric ``find_stragglers_with_late_start_
comm_kernels`` (docs/formulas.md, "Stragglers (HTA)"), on HTA's view of each rank's events
(``trace_diff.event_table``: inward-rounded times, ProfilerStep iterations) after its last-step
filter, all ranks on one clock:

* the iterations are the ProfilerStep numbers; ``mean_iter_time`` = (last end - first start of
  the selected events) / iterations;
* the candidates are communication kernels (HTA's kernel type: ``nccl…Kernel``; HTA 0.5.0 looks
  for names starting ``ncclKernel`` only, which NCCL >= 2.19's ``ncclDevKernel_*`` are not)
  lasting at least 1 % of ``mean_iter_time``; per rank, stream, iteration and name the last one;
* the metric kernel is the (stream, name) whose duration varies most across ranks (the mean over
  iterations of the standard deviation across ranks); per iteration, the ``num_candidates``
  ranks whose metric kernel starts latest (normalized start = (start - first start) /
  ``mean_iter_time``) are flagged; the ranks flagged most often are the stragglers.

The evidence table lists each rank's metric kernel per iteration; the ranks table each rank's
flag count, mean step time and, from torch-tb-profiler's distributed view (``collectives``), the
time it waits in collectives: the rank the others wait for (``waited_for``) is the straggler even
where HTA's metric finds nothing (with two ranks, the late rank's collective kernels are short,
so no kernel is long on both). XSpace pods: XProf's pod viewer; not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof.analyses import recording as rec
from tbprof.analyses.gpu.activity import COMMUNICATION, kernel_kind
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.gpu.distributed import compute as collectives
from tbprof.analyses.gpu.trace_diff import event_table
from tbprof.analyses.results.gpu import StragglersResult
from tbprof.analyses.table import Column, Table
from tbprof.analyses.tool import SCHEMA_VERSION, Option, Tool, parse_nonneg_int
from tbprof.store import kineto_names as kn
from tbprof.store.tables import ProfileStore

TOOL = "stragglers"
_PS_PER_US = 1e6
MIN_NORMALIZED_DURATION = 0.01  # HTA's default: kernels under 1 % of an iteration cannot make a straggler


def has_steps_and_collectives(store: object) -> bool:
    strings = getattr(store, "strings", None)
    if getattr(store, "format", "") != "chrome_trace" or strings is None:
        return False
    names = strings.as_list()
    return any(n.startswith("ProfilerStep#") for n in names) and any(kn.is_collective_kernel(n) for n in names)


def _rank_events(store: ProfileStore, offset_ps: int) -> dict[str, np.ndarray] | None:
    """One rank's events after HTA's last-step filter, times on the common clock."""
    t = event_table(store)
    if t is None or t.start_ps.shape[0] == 0:
        return None
    host = t.stream < 0
    keep = np.ones(t.start_ps.shape[0], bool)
    if len(t.step_numbers) >= 2 and t.is_step.any():
        last = int(t.start_ps[t.is_step].max())
        keep = host & (t.start_ps < last)
        dev = np.nonzero(~host)[0]
        launches = np.nonzero(keep & (t.correlation >= 0))[0]
        kept = np.isin(t.correlation[dev], t.correlation[launches])
        keep[dev[kept]] = True
    return {"start": t.start_ps[keep] + offset_ps, "end": t.end_ps[keep] + offset_ps, "stream": t.stream[keep],
            "name": t.name_id[keep], "iteration": t.iteration[keep], "is_step": t.is_step[keep]}


def analyse(stores: Sequence[tuple[int, ProfileStore]], num_candidates: int) -> dict[str, Any] | None:
    """The metric kernel, the evidence rows and the flag count per rank; None when HTA would have none."""
    base = min(int(s.origin_ps) for _, s in stores)
    per_rank = {rank: _rank_events(s, int(s.origin_ps) - base) for rank, s in stores}
    names = {rank: s.strings.as_list() for rank, s in stores}
    iterations = sorted({int(i) for ev in per_rank.values() if ev is not None
                         for i in ev["iteration"][ev["is_step"]].tolist() if i != -1})
    if not iterations:
        return None
    selected = {r: {k: v[np.isin(ev["iteration"], iterations)] for k, v in ev.items()}
                for r, ev in per_rank.items() if ev is not None}
    t_min = min(int(ev["start"].min()) for ev in selected.values() if ev["start"].shape[0])
    t_max = max(int(ev["end"].max()) for ev in selected.values() if ev["end"].shape[0])
    mean_iter_ps = (t_max - t_min) / len(iterations)
    # Last long communication kernel per (rank, stream, iteration, name).
    last: dict[tuple[int, int, int, str], tuple[int, int]] = {}
    for rank, ev in selected.items():
        dur = ev["end"] - ev["start"]
        long = (ev["stream"] > 0) & (ev["iteration"] > 0) & (dur >= mean_iter_ps * MIN_NORMALIZED_DURATION)
        for i in np.nonzero(long)[0].tolist():
            name = names[rank][int(ev["name"][i])]
            if kernel_kind(name) != COMMUNICATION:
                continue
            key = (rank, int(ev["stream"][i]), int(ev["iteration"][i]), name)
            cand = (int(ev["start"][i]), int(ev["end"][i]))
            if key not in last or cand >= last[key]:
                last[key] = cand
    if not last:
        return None
    # The (stream, name) whose duration differs most across ranks, on average over iterations.
    spread: dict[tuple[int, str], list[float]] = {}
    groups: dict[tuple[int, int, str], list[float]] = {}
    for (_, stream, it, name), (s, e) in last.items():
        groups.setdefault((stream, it, name), []).append((e - s) / mean_iter_ps)
    for (stream, _, name), durs in groups.items():
        if len(durs) > 1:
            spread.setdefault((stream, name), []).append(float(np.std(durs, ddof=1)))
    if not spread:
        return None
    metric = max(spread, key=lambda k: (float(np.mean(spread[k])), k))
    evidence = sorted(((rank, it, (s - t_min) / mean_iter_ps, (e - s) / mean_iter_ps, s - t_min, stream, name)
                       for (rank, stream, it, name), (s, e) in last.items() if (stream, name) == metric),
                      key=lambda r: (r[1], r[0]))
    flagged: dict[int, int] = {rank: 0 for rank, _ in stores}
    flags: dict[tuple[int, int], bool] = {}
    its = sorted({r[1] for r in evidence})
    k = max(num_candidates, 1)
    for it in its:
        rows = [r for r in evidence if r[1] == it]
        starts = sorted((r[2] for r in rows), reverse=True)
        threshold = starts[min(k, len(starts)) - 1]
        for r in rows:
            flags[(r[0], it)] = r[2] >= threshold
            flagged[r[0]] += int(r[2] >= threshold)
    stragglers = [r for r, _ in sorted(flagged.items(), key=lambda kv: (-kv[1], kv[0]))][:k]
    return {"metric_kernel": metric[1], "metric_stream": metric[0], "mean_iteration_us": mean_iter_ps / _PS_PER_US,
            "evidence": evidence, "flags": flags, "flagged": flagged, "stragglers": stragglers}


EVIDENCE_COLUMNS = [
    Column("rank", "Rank", "int"), Column("iteration", "Iteration", "int"),
    Column("normalized_start", "Normalized start", "float", "", "(start - first start) / mean iteration time"),
    Column("normalized_duration", "Normalized duration", "float", "", "duration / mean iteration time"),
    Column("start_us", "Start", "float", "us", "from the first selected event of all ranks"),
    Column("stream", "Stream", "int"), Column("kernel", "Kernel", "str"),
    Column("late", "Among the latest", "bool", "", "flagged in this iteration"),
]
RANK_COLUMNS = [
    Column("rank", "Rank", "int"), Column("host", "Host", "str"),
    Column("flagged_iterations", "Iterations flagged", "int"), Column("straggler", "Straggler", "bool"),
    Column("mean_step_time_ms", "Mean step time", "float", "ms", "of the host ProfilerStep markers"),
    Column("synchronizing_us", "Waiting in collectives", "float", "us",
           "torch-tb-profiler's synchronizing time, all collectives (the `collectives` tool)"),
    Column("waited_for", "Waited for", "bool", "", "least waiting in collectives: the rank the others wait for"),
]


def _mean_step_ms(store: ProfileStore) -> float | None:
    plane = store.plane("/host:CPU")
    if plane is None:
        return None
    names = store.strings.lookup(plane.name_id)
    durs = [int(plane.dur_ps[i]) for i, n in enumerate(names) if n.startswith("ProfilerStep#")]
    return float(np.mean(durs)) / 1e9 if durs else None


def compute(stores: Sequence[ProfileStore], options: Mapping[str, Any]) -> StragglersResult:
    num_candidates = int(options.get("num_candidates", 2))
    ranked = sorted(((rank_of(s, i), s) for i, s in enumerate(stores)), key=lambda rs: rs[0])
    found = analyse(ranked, num_candidates) if len(ranked) > 1 else None
    ev_rows = [] if found is None else [(r, it, ns, nd, s / _PS_PER_US, st, name, found["flags"][(r, it)])
                                        for r, it, ns, nd, s, st, name in found["evidence"]]
    # torch-tb-profiler's evidence: the time each rank waits in collectives for the others.
    sync: dict[int, float] = {}
    if len(ranked) > 1:
        table = collectives([s for _, s in ranked], {})["tables"]["collectives"]
        for r, v in zip(table.data["rank"].tolist(), table.data["synchronizing_us"].tolist(), strict=True):
            if v == v:  # not NaN
                sync[int(r)] = sync.get(int(r), 0.0) + float(v)
    waited_for = min(sync, key=lambda r: (sync[r], r)) if len(sync) > 1 else None
    rank_rows = [(r, s.host, found["flagged"][r] if found else 0, bool(found and r in found["stragglers"]),
                  _mean_step_ms(s), sync.get(r), r == waited_for) for r, s in ranked]
    return {
        "schema_version": SCHEMA_VERSION, "tool": TOOL, "hosts": [s.host for _, s in ranked],
        "ranks": [r for r, _ in ranked], "stragglers": found["stragglers"] if found else [],
        "waited_for": waited_for,
        "metric_kernel": found["metric_kernel"] if found else None,
        "mean_iteration_us": found["mean_iteration_us"] if found else None,
        "message": None if found else ("HTA's metric found no collective kernel that is long on two or more ranks "
                                       "(a rank that arrives last has short collective kernels)"),
        "tables": {
            "ranks": Table.from_columns(RANK_COLUMNS, {c.name: [r[i] for r in rank_rows]
                                                       for i, c in enumerate(RANK_COLUMNS)}),
            "evidence": Table.from_columns(EVIDENCE_COLUMNS, {c.name: [r[i] for r in ev_rows]
                                                              for i, c in enumerate(EVIDENCE_COLUMNS)}),
        },
    }


OPTIONS = (
    Option("num_candidates", parse_nonneg_int, 2, "ranks flagged per iteration and reported (HTA: 2)"),
)

TOOLS = (
    Tool(
        name=TOOL, title="Stragglers (HTA)", compute=compute, available=has_steps_and_collectives, options=OPTIONS,
        multi_host=True,
        description="HTA's straggler analysis: the ranks whose last long collective kernel starts latest.",
        result=StragglersResult, needs=frozenset({"devices", "kineto", "step_markers"}),
        requires="two or more ranks with ProfilerStep iterations and NCCL collective kernels.",
        how_to=(rec.TORCH_TRACE, rec.TORCH_RANKS),
    ),
)
