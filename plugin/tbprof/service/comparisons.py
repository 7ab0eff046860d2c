"""Comparing two profiles through ``Profiles``: resolve each side, gather its tool results,
compare them (``analyses.compare``) and memoise the answer per pair.

Shared by the HTTP routes (``http/routes/compare.py``) and the CLI (``cli/compare.py``).
Each side's results are the memoised results of the ordinary tools, so a comparison of two
runs already open in the dashboard recomputes nothing but the joins.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tbprof.analyses.compare import report as cmp
from tbprof.analyses.compare import sources as src
from tbprof.analyses.compare import stats as cs
from tbprof.analyses.gpu import trace_diff
from tbprof.analyses.gpu.breakdown import rank_of
from tbprof.analyses.ops.op_step_time import op_step_time
from tbprof.analyses.results.compare import CompareResult
from tbprof.cache.disk_cache import cache_key
from tbprof.errors import BadParameter, NotFound
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.selection import comparison_host, select_hosts
from tbprof.store.memo import Memo
from tbprof.store.tables import ProfileStore


@dataclass(frozen=True)
class SideSpec:
    """A side as a request names it: run, host (a host, ``__all__`` or None), step selection and the
    trace diff's ProfilerStep iterations (empty: the first)."""

    run: str
    host: str | None = None
    steps: str = ""
    iterations: tuple[int, ...] = ()


_MAX_ITERATIONS = 10_000


def parse_iterations(text: str, name: str = "iterations") -> tuple[int, ...]:
    """A trace-diff iteration list, "3" or "3,5,7" (ProfilerStep numbers); "" is the first."""
    parts = [p.strip() for p in text.split(",")] if text.strip() else []
    if len(parts) > _MAX_ITERATIONS or not all(p.isdigit() and len(p) <= 18 for p in parts):
        raise BadParameter(f"{name} {text[:80]!r}: expected ProfilerStep numbers separated by commas, e.g. 3 or 3,4")
    return tuple(sorted({int(p) for p in parts}))


def resolve(profiles: Profiles, spec: SideSpec) -> tuple[Run, list[str]]:
    run = profiles.run(spec.run)
    return run, select_hosts(run, comparison_host(run, spec.host))


def _tool_result(profiles: Profiles, run: Run, hosts: Sequence[str], tool_name: str,
                 options: Mapping[str, str] | None = None) -> dict[str, Any] | str:
    """The tool's memoised result, or why the side has none (a string)."""
    tool = profiles.tool(tool_name)
    if not tool.offered_for(run.traits):
        return f"{tool_name} does not read {run.kind} runs"
    try:
        return profiles.compute(run, list(hosts), tool, dict(options or {}))
    except NotFound as e:
        return str(e)  # as said: stripping quotes would cut the closing quote off names


# compare's section names (SideInput.unavailable keys) of each source section.
_UNAVAILABLE_KEY = {"steps": "step_time", "ops": "ops", "kernels": "kernels", "memory": "memory"}


def gather(profiles: Profiles, spec: SideSpec) -> cmp.SideInput:
    """One side's inputs: the results of the tools its run kind has for each section
    (compare/sources.py SOURCES), restated in the XSpace tools' shape."""
    run, hosts = resolve(profiles, spec)
    side = cmp.SideInput(run=run.name, hosts=list(hosts), kind=run.kind, steps=spec.steps)
    sources = src.sources_for(run.traits)
    for section in ("steps", "ops", "kernels", "memory"):
        key = _UNAVAILABLE_KEY[section]
        tool_name = sources.get(section)
        if tool_name is None:
            side.unavailable[key] = src.missing_reason(run.kind, section)
            side.missing.add(key)
            continue
        tool = profiles.tool(tool_name)
        groups = [list(hosts)] if tool.multi_host_for(run.traits) else [[h] for h in hosts]
        results: list[dict[str, Any]] = []
        digests = _memory_digests(profiles, run, hosts) if tool_name == "memory_profile" else None
        if digests is not None:
            groups, results = [], digests  # a pod: every host's allocators from its partial
        for group in groups:
            r = _tool_result(profiles, run, group, tool_name)
            if isinstance(r, str):
                side.unavailable[key] = r
                side.missing.add(key)
                results = []
                break
            results.append(src.adapt(section, tool_name, r))
            # memory_profile's result details its first allocator; the others are options.
            if tool_name == "memory_profile":
                for mid in (r.get("memory_ids") or [])[1:]:
                    other = _tool_result(profiles, run, group, tool_name, {"memory_id": mid})
                    if not isinstance(other, str):
                        results.append(other)
        if section == "steps":
            side.overview = results[0] if results else None
        elif section == "ops":
            side.op_stats = results
        elif section == "kernels":
            side.kernel_stats = results
        else:
            side.memory = results
    if "kineto" in run.traits:  # HTA's trace diff reads Kineto's operators and iterations
        side.op_summary = _op_summary(profiles, run, hosts, spec.iterations)
    if side.kernel_stats and not any(r.get("has_gpu_kernels") for r in side.kernel_stats):
        side.kernel_stats = []
        side.unavailable["kernels"] = "no GPU kernels in the profile"
    if side.memory and not any(r.get("memory_ids") for r in side.memory):
        # The memory page's own statement (memory_profile's message), not a second wording.
        why = next((str(r["message"]) for r in side.memory if r.get("message")), "")
        side.memory = []
        side.unavailable["memory"] = why or "no memory allocation events in the profile"
    return side


def _op_summary(profiles: Profiles, run: Run, hosts: Sequence[str],
                iterations: tuple[int, ...]) -> trace_diff.OpSummary:
    """HTA's trace-diff input of a PyTorch side: its first rank's iterations (default: the first)."""
    stores = [profiles.event_store(run, h) for h in hosts]
    ranked = sorted(((rank_of(s, i), i) for i, s in enumerate(stores)))
    return trace_diff.op_summary(stores[ranked[0][1]], iterations or None)


def _memory_digests(profiles: Profiles, run: Run, hosts: Sequence[str]) -> list[dict[str, Any]] | None:
    """The memory_profile results compare reads, of every host of a pod, from the hosts' partials
    (no store loaded); None when a partial cannot serve them (one host, another format)."""
    if len(hosts) < 2:
        return None
    from tbprof.analyses.partials import MEMORY_DIGESTS  # a pod's compare only

    parts = profiles.host_partials(run, hosts)
    if parts is None:
        return None
    return [digest for hp in parts[0] for digest in hp.derive(MEMORY_DIGESTS)]


def _file_keys(profiles: Profiles, run: Run, hosts: Sequence[str]) -> tuple[str, ...]:
    fmt = profiles.store_format(run)
    return tuple(cache_key(run.hosts[h], fmt) for h in hosts)


# Comparisons per Profiles, in the process-wide memory budget (store/memo.py).
_MEMOS: weakref.WeakKeyDictionary[Profiles, Memo] = weakref.WeakKeyDictionary()
_MEMO_LOCK = threading.Lock()


def _pair_key(profiles: Profiles, base: SideSpec, cand: SideSpec, confidence: float) -> tuple[Memo, Hashable]:
    b_run, b_hosts = resolve(profiles, base)
    c_run, c_hosts = resolve(profiles, cand)
    key = (b_run.name, tuple(b_hosts), _file_keys(profiles, b_run, b_hosts), base.steps, base.iterations,
           c_run.name, tuple(c_hosts), _file_keys(profiles, c_run, c_hosts), cand.steps, cand.iterations, confidence)
    with _MEMO_LOCK:
        memo = _MEMOS.setdefault(profiles, Memo())
    return memo, key


def compare_pair(profiles: Profiles, base: SideSpec, cand: SideSpec,
                 confidence: float = cs.DEFAULT_CONFIDENCE) -> CompareResult:
    """The comparison of two sides of one logdir, memoised per pair (and file versions)."""
    return compared(profiles, base, cand, confidence)[0]


def compared(profiles: Profiles, base: SideSpec, cand: SideSpec,
             confidence: float = cs.DEFAULT_CONFIDENCE) -> tuple[CompareResult, Hashable]:
    """``compare_pair``'s answer and its memo key (the pair's runs, hosts, file versions and
    selections: the key an edge keeps the answer's encoding under)."""
    memo, key = _pair_key(profiles, base, cand, confidence)
    return memo.get(key, lambda: compare_sides(gather(profiles, base), gather(profiles, cand), confidence)), key


def compare_sides(base: cmp.SideInput, cand: cmp.SideInput, confidence: float) -> CompareResult:
    """The comparison of two gathered sides (a bad step selection raises SelectionError, a BadParameter)."""
    return cmp.compare(base, cand, confidence)


# --- one op's time per step (tbprof check --op; the analysis: analyses/ops/op_step_time.py) ----

def op_step_series(profiles: Profiles, spec: SideSpec, op_names: Sequence[str]) -> np.ndarray | None:
    """Self time (µs) per selected step of the named framework ops, summed over the side's hosts
    (``op_step_time``); None when the side has no steps."""
    run, hosts = resolve(profiles, spec)
    stores = [s for s in (profiles.store(run, h) for h in hosts) if isinstance(s, ProfileStore)]
    per_step = op_step_time(stores, op_names)
    if per_step is None:
        return None
    keep = np.ones(per_step.step_nums.shape[0], bool)
    if spec.steps:
        keep = cmp.select_steps(per_step.step_nums, spec.steps)
    return per_step.self_time_ps[keep] / 1e6
