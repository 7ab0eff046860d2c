"""Result of the trace viewer's tool: the tracks of a profile (events come through the trace route)."""

from typing import Literal, NotRequired, TypedDict

from tbprof.analyses.results.common import ToolEnvelope


class TrackGroup(TypedDict):
    id: int
    name: str
    kind: Literal["device", "host", "process"]
    plane: int
    tracks: list[int]


class TrackJson(TypedDict):
    id: int
    group: int
    name: str
    kind: str
    plane: int
    line: int
    event_count: int
    max_depth: int
    derived: NotRequired[bool]  # viewer-only events (XLA Modules / XLA Ops under a GPU stream)
    series: NotRequired[list[str]]  # a counter track's series
    unit: NotRequired[str]


class TrackIndexJson(TypedDict):
    groups: list[TrackGroup]
    tracks: list[TrackJson]


class TraceViewerResult(ToolEnvelope, TrackIndexJson):
    host: str
    hosts: list[str]  # the hosts shown: a PyTorch run's ranks in one timeline, else the one host
    format: str
    span_ps: int
    origin_ps: int
    event_count: int
    warnings: list[str]


class RankShare(TypedDict):
    total_ps: int  # the name's clipped time summed over the rank's selected tracks
    covered_ps: int  # the part of the selection during which it ran on any of them (at most the selection)


class RangeName(TypedDict):
    name: str
    count: int
    total_ps: int  # summed over every selected track: can exceed the selection
    covered_ps: int  # the part of the selection during which it ran anywhere: at most the selection
    by_rank: list[RankShare]  # aligned with RangeSummaryJson.ranks (empty for one host)


class RangeSummaryJson(TypedDict):
    """A trace viewer selection's totals per event name (route trace_range)."""

    start_ps: int
    end_ps: int
    duration_ps: int
    event_count: int
    name_count: int
    ranks: list[str]  # a multi-rank run's ranks with selected tracks, in timeline order; empty for one host
    names: list[RangeName]
