"""Results of the HLO tools: HLO op stats, roofline model, memory viewer, graph viewer."""

from typing import NotRequired, TypedDict

from tbprof.analyses.results.common import ToolEnvelope


class CategoryTime(TypedDict):
    category: str
    total_self_time_us: float


class TopHloOp(TypedDict):
    hlo_op_name: str
    program_id: str
    total_self_time_us: float


class HloStatsResult(ToolEnvelope):
    host: str | None
    hosts: list[str]
    op_count: int
    device_count: int
    total_time_us: float
    total_self_time_us: float
    self_time_by_category: list[CategoryTime]
    top_ops_by_self_time: list[TopHloOp]
    message: NotRequired[str]  # why there are no device ops


class RooflinePeaks(TypedDict):
    peak_flop_rate: float  # GFLOP/s
    peak_hbm_bw: float  # GiB/s
    hbm_ridge_point: float  # FLOP/byte
    peak_vmem_write_bw: float
    vmem_write_ridge_point: float


class UndeterminedBytes(TypedDict):
    """Device ops of the program point whose bytes the cost analysis could not determine (XLA's GPU
    rules for all-gather, reduce-scatter and async collectives, unknown custom-calls): the point
    leaves their bytes out."""

    op_count: int
    time_fraction: float  # their time over the program point's time, 0..1
    ops: list[str]  # the first few, most time first


class RooflineModelResult(ToolEnvelope, RooflinePeaks):
    host: str | None
    hosts: list[str]
    device_type: str  # XProf's architecture name ("Nvidia GPU (Hopper)")
    device_name: str  # the product name every page shows ("NVIDIA H200"); "" without a device
    include_infeed_outfeed: bool  # the rows' setting of XProf's Include Infeed/Outfeed filter
    device_count: int
    op_count: int
    undetermined_bytes: UndeterminedBytes
    message: NotRequired[str]  # why there are no device ops


class ModuleMemoryEntry(TypedDict):
    module: str
    program_id: str
    peak_heap_bytes: int


class HeapBuffer(TypedDict):
    """A buffer live at the peak."""

    logical_buffer_id: int
    size_bytes: int
    unpadded_size_bytes: int
    instruction_name: str
    shape: str
    tf_op_name: str
    group: str
    opcode: str
    label: str


class IndefiniteLifetime(TypedDict):
    allocation_index: int
    size_bytes: int
    attributes: list[str]
    logical_buffer_ids: list[int]


class BufferBlock(TypedDict):
    """A block of the allocation timeline: an allocation (``logical_buffer_id`` -1) over every
    step, or a buffer at its offset in it over its span."""

    logical_buffer_id: int
    name: str
    offset_bytes: int
    size_bytes: int
    start_step: int
    end_step: int


class ModuleMemory(TypedDict):
    """The memory viewer of one HLO module (``module_memory``)."""

    module: str
    module_name: str
    program_id: str
    memory_space: int
    peak_heap_bytes: int
    peak_unpadded_heap_bytes: int
    peak_heap_position: int
    entry_computation_parameters_bytes: int
    maybe_live_out_bytes: int
    non_reusable_bytes: int
    indefinite_bytes: int
    total_buffer_allocation_bytes: int
    heap_sizes_bytes: list[int]
    unpadded_heap_sizes_bytes: list[int]
    max_heap: list[HeapBuffer]
    indefinite_lifetimes: list[IndefiniteLifetime]
    # [start, limit) event positions of each buffer that took memory, by logical buffer id
    logical_buffer_spans: dict[str, list[int]]
    by_size_order: list[int]  # indices into max_heap, largest first (XProf's "by size")
    by_padding_order: list[int]  # indices into max_heap, most padding first
    buffer_blocks: list[BufferBlock]  # XProf's allocation timeline


class MemorySpaceEntry(TypedDict):
    """One memory space (XLA buffer color) a module's buffers use, for the memory-type selector."""

    memory_space: int
    name: str
    peak_heap_bytes: int


class MemoryViewerResult(ToolEnvelope):
    """With no module (``module`` null, ``message`` set) only the envelope, ``hosts`` and ``modules``;
    otherwise the chosen module's ``ModuleMemory`` fields as well."""

    host: str | None
    hosts: list[str]
    modules: list[ModuleMemoryEntry]
    module: str | None
    memory_spaces: NotRequired[list[MemorySpaceEntry]]
    message: NotRequired[str]
    module_name: NotRequired[str]
    program_id: NotRequired[str]
    memory_space: NotRequired[int]
    peak_heap_bytes: NotRequired[int]
    peak_unpadded_heap_bytes: NotRequired[int]
    peak_heap_position: NotRequired[int]
    entry_computation_parameters_bytes: NotRequired[int]
    maybe_live_out_bytes: NotRequired[int]
    non_reusable_bytes: NotRequired[int]
    indefinite_bytes: NotRequired[int]
    total_buffer_allocation_bytes: NotRequired[int]
    heap_sizes_bytes: NotRequired[list[int]]
    unpadded_heap_sizes_bytes: NotRequired[list[int]]
    max_heap: NotRequired[list[HeapBuffer]]
    by_size_order: NotRequired[list[int]]
    by_padding_order: NotRequired[list[int]]
    buffer_blocks: NotRequired[list[BufferBlock]]
    indefinite_lifetimes: NotRequired[list[IndefiniteLifetime]]
    logical_buffer_spans: NotRequired[dict[str, list[int]]]


class GraphNode(TypedDict):
    id: int
    name: str
    opcode: str
    category: str
    shape: str
    framework_op: str
    distance: int  # edges from the centre op
    center: bool
    self_time_us: float
    hlo_text: str  # the instruction's first line as XLA prints it
    source: str  # the op's source frame, "" when the profile has none
    called_text: str  # a fusion's or call's body, "" for other ops


# "from" is a Python keyword: the functional form.
GraphEdge = TypedDict("GraphEdge", {"from": str, "to": str})


class Graph(TypedDict):
    """The neighbourhood of one HLO op (``graph_viewer.build``)."""

    module: str
    program_id: str
    computation: str
    node_name: str
    graph_width: int
    truncated: bool
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class GraphModuleEntry(TypedDict):
    """A module for the graph viewer's module picker, by device time."""

    module: str
    program_id: str
    device_time_us: float


class GraphOpEntry(TypedDict):
    """An op for the op picker: those that ran first (by self time), then the rest by name."""

    name: str
    opcode: str
    self_time_us: float


class GraphViewerResult(ToolEnvelope, Graph):
    host: str | None
    hosts: list[str]
    modules: list[GraphModuleEntry]
    ops: list[GraphOpEntry]
    ops_truncated: bool
    dot: NotRequired[str]  # format=dot: the graph in Graphviz's language
    hlo_text: NotRequired[str]  # format=hlo: the module's HLO text


class PeakAllocationsResult(ToolEnvelope):
    host: str
    module_count: int
    largest_module: str | None
    largest_allocation_mib: float | None
