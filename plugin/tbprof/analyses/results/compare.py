"""The A/B comparison's answer (``analyses/compare/report.compare``; the ``compare`` route, ``tbprof
compare --json`` and ``Profile.compare``).

It is no tool's result (no tool's ``result``: it reads two runs), but it has the envelope, and
the same checks: mypy checks ``compare`` against ``CompareResult``, ``http/schemas.py`` lists it for
the TypeScript side, ``tests/analyses/test_compare_types.py`` checks real comparisons against it.

Numbers that are NaN or infinite in Python (a ratio of a zero, no interval) are ``null`` on the
wire: they are typed ``float | None``.
"""

from typing import Literal, NotRequired, TypedDict

from tbprof.analyses.results.common import InputBound, NumberColumn, ToolEnvelope

# The verdict's and the step-time change's direction ("unknown": too few steps for an interval).
Direction = Literal["slower", "faster", "no change", "unknown"]


class CompareSide(TypedDict):
    """Which profile a side is (``SideInput.describe``) and how many steps it has."""

    run: str
    hosts: list[str]
    kind: str
    label: str
    steps: str | None  # the step selection ("3:6"), null: all steps
    step_count: int
    step_source: str | None  # null: the side has no step analysis


class StepDistribution(TypedDict):
    """One side's step times (``stats.distribution``, in ms): null only without steps."""

    count: int
    mean_ms: float | None
    median_ms: float | None
    p10_ms: float | None
    p90_ms: float | None
    stddev_ms: float | None
    min_ms: float | None
    max_ms: float | None


class StepChange(TypedDict):
    """The candidate against the baseline: Hodges-Lehmann shift and its interval (docs/formulas.md)."""

    direction: Direction
    significant: bool
    confidence: float
    method: str
    change_percent: float | None
    ci_low_percent: float | None  # null: too few steps for an interval at this confidence
    ci_high_percent: float | None
    shift_ms: float | None
    shift_ci_low_ms: float | None
    shift_ci_high_ms: float | None
    median_delta_ms: float | None
    median_change_percent: float | None  # null when the baseline's median is 0
    mean_delta_ms: float | None
    mean_change_percent: float | None


class StepTimeChange(TypedDict):
    unit: Literal["ms"]
    baseline: StepDistribution
    candidate: StepDistribution
    change: StepChange


class CompareVerdict(TypedDict):
    kind: Direction
    summary: str  # one sentence
    details: list[str]  # its clauses, one a line


class StepSeries(TypedDict):
    """One side's (selected) steps in order: the overlaid step-time chart."""

    step: list[str]
    step_num: NumberColumn
    step_time_ms: NumberColumn


class StepSeriesPair(TypedDict):
    baseline: StepSeries
    candidate: StepSeries


class BreakdownVerdicts(TypedDict):
    """XProf's input-bound verdict of each side; absent when the breakdown is not compared."""

    baseline_input_bound: NotRequired[InputBound]
    candidate_input_bound: NotRequired[InputBound]


class AllocatorPeak(TypedDict):
    """One allocator of one side at its highest peak over the side's hosts."""

    memory_id: str
    host: str | None
    peak_bytes_in_use: float | None
    memory_capacity_bytes: float | None
    peak_fragmentation_fraction: float | None
    capacity_source: str | None
    capacity_label: str
    capacity_meaning: str


class MemoryPeaks(TypedDict):
    """Each side's allocators; absent when memory is not compared."""

    baseline: NotRequired[list[AllocatorPeak]]
    candidate: NotRequired[list[AllocatorPeak]]


class TraceDiffSummary(TypedDict):
    """HTA's trace diff of two PyTorch runs: the iterations compared and rows per change kind."""

    baseline_iteration: int  # the first of baseline_iterations
    candidate_iteration: int
    baseline_iterations: list[int]  # ProfilerStep numbers, ascending
    candidate_iterations: list[int]
    changes: dict[str, int]


class OverlapCounts(TypedDict):
    """Keys of a joined table found on both sides and on each side."""

    both: int
    baseline: int
    candidate: int


class CompareResult(ToolEnvelope):
    """The comparison of a baseline and a candidate (``tool``: "compare").

    ``tables``: steps, breakdown, op_types, ops, kernels, trace_diff, memory_allocators and
    allocations, those both sides have."""

    baseline: CompareSide
    candidate: CompareSide
    confidence: float
    verdict: CompareVerdict
    step_time: StepTimeChange | None  # null: step time not compared (``unavailable`` says why)
    step_time_series: StepSeriesPair
    breakdown: BreakdownVerdicts
    memory: MemoryPeaks
    trace_diff: TraceDiffSummary | None
    identical: bool
    unavailable: dict[str, str]  # section -> why it is not compared
    notes: list[str]
    overlap: dict[str, OverlapCounts]  # "ops", "kernels"
    warnings: list[str]
