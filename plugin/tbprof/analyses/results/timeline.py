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
