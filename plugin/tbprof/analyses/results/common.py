"""The parts every tool result shares: the envelope, tables, headline metrics, steps and diagnostics.

In Python a result's ``tables`` hold ``Table`` objects; on the wire (JSON) each is a ``TableJson``
(``http/schemas.py`` maps one to the other for the TypeScript side and the shape checks).
"""

from typing import Any, Literal, NotRequired, TypedDict

import numpy.typing as npt

from tbprof.analyses.table import Table

# A column of numbers in a chart's data: a numpy array in Python, a JSON array of numbers on the
# wire (analyses/encode.py).
NumberColumn = list[float] | npt.NDArray[Any]

InputBound = Literal["high", "moderate", "potential", "no", "unknown"]


class TableColumnJson(TypedDict):
    name: str
    label: str
    kind: Literal["str", "int", "float", "bool"]
    unit: str
    description: NotRequired[str]


class TableJson(TypedDict):
    columns: list[TableColumnJson]
    rows: list[list[str | int | float | bool | None]]
    total_rows: int
    offset: int
    meta: NotRequired[dict[str, Any]]


class HostError(TypedDict):
    host: str
    file: str
    error: str


class MetricJson(TypedDict):
    """A headline metric with its one definition (``analyses/metrics.py``)."""

    key: str
    label: str
    of: str
    definition: str
    value_percent: float | None


class ToolEnvelope(TypedDict):
    """Every tool answer has these; ``tables`` hold the tables every page renders alike;
    ``metrics`` the headline metrics the page shows (one definition each, analyses/metrics.py)."""

    schema_version: int
    tool: str
    tables: NotRequired[dict[str, Table]]
    host_errors: NotRequired[list[HostError]]
    metrics: NotRequired[list[MetricJson]]


class InputThresholds(TypedDict):
    """XProf's input-bound thresholds, percent of step time: ``high`` at or above, ``moderate`` at or above."""

    high: float
    moderate: float


class StepFacts(TypedDict):
    """How one host's steps were found (``steps/assignment.py`` ``Steps.to_json``)."""

    step_source: str
    method: str
    step_confidence: str
    detail: str
    diagnosis: str
    step_count: int
    candidate_step_count: int
    dropped_boundary_steps: int
    notes: list[str]


class HostSteps(StepFacts):
    host: str


class StepsInfo(TypedDict):
    step_source: str
    method: str
    # How the steps were found: "markers" | "annotated" | "inferred" | "none" (docs/formulas.md).
    step_confidence: str
    detail: str
    diagnosis: str
    step_count: int
    notes: list[str]
    per_host: list[HostSteps]


class Diagnostics(TypedDict):
    errors: list[str]
    warnings: list[str]
    info: list[str]


class Stat(TypedDict):
    """avg, sample stddev, min, max; null each when there are no values (no steps: no step time,
    not a step time of 0)."""

    avg: float | None
    stddev: float | None
    min: float | None
    max: float | None


class PerRankEnvelope(ToolEnvelope):
    """HTA-style analyses over several ranks (one host = one rank)."""

    hosts: list[str]
    ranks: list[int]
