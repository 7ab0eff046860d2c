"""Result of the memory profile (allocator events over time)."""

from typing import NotRequired, TypedDict

from tbprof.analyses.results.common import ToolEnvelope


class AllocatorSummary(TypedDict):
    memory_id: str
    num_allocations: int
    num_deallocations: int
    memory_capacity_bytes: int
    # What the capacity is: "allocator" (XProf: in use + free of the allocator's limit),
    # "reserved" (PyTorch: the caching allocator's reserved memory at the peak) or "peak".
    capacity_source: str
    capacity_label: str  # the capacity card's label, as the memory page and compare both say it
    capacity_meaning: str  # what that capacity is (memory_profile.CAPACITY_MEANING)
    peak_bytes_usage_lifetime: int
    peak_bytes_in_use: int
    peak_heap_bytes: int
    peak_stack_bytes: int
    peak_free_bytes: int
    peak_fragmentation_fraction: float | None
    peak_time_ps: int
    peak_time_ms: float
    peak_step_id: int
    event_count: int


class MemoryProfileResult(ToolEnvelope):
    """Without allocator events ``memory_id`` is null and ``message`` says why."""

    host: str
    memory_ids: list[str]
    allocators: dict[str, AllocatorSummary]
    memory_id: str | None
    message: NotRequired[str]
    timeline_is_downsampled: NotRequired[bool]
    breakdown_scope: NotRequired[str]  # "step" or "window"
