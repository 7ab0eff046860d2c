from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HloProto(_message.Message):
    __slots__ = ("hlo_module", "buffer_assignment")
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    buffer_assignment: BufferAssignmentProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ..., buffer_assignment: _Optional[_Union[BufferAssignmentProto, _Mapping]] = ...) -> None: ...

class BufferAssignmentProto(_message.Message):
    __slots__ = ("logical_buffers", "buffer_allocations", "heap_simulator_traces")
    LOGICAL_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    HEAP_SIMULATOR_TRACES_FIELD_NUMBER: _ClassVar[int]
    logical_buffers: _containers.RepeatedCompositeFieldContainer[LogicalBufferProto]
    buffer_allocations: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto]
    heap_simulator_traces: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace]
    def __init__(self, logical_buffers: _Optional[_Iterable[_Union[LogicalBufferProto, _Mapping]]] = ..., buffer_allocations: _Optional[_Iterable[_Union[BufferAllocationProto, _Mapping]]] = ..., heap_simulator_traces: _Optional[_Iterable[_Union[HeapSimulatorTrace, _Mapping]]] = ...) -> None: ...

class LogicalBufferProto(_message.Message):
    __slots__ = ("id", "size", "defined_at", "color")
    class Location(_message.Message):
        __slots__ = ("instruction_name", "shape_index", "instruction_id")
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_ID_FIELD_NUMBER: _ClassVar[int]
        instruction_name: bytes
        shape_index: _containers.RepeatedScalarFieldContainer[int]
        instruction_id: int
        def __init__(self, instruction_name: _Optional[bytes] = ..., shape_index: _Optional[_Iterable[int]] = ..., instruction_id: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DEFINED_AT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    id: int
    size: int
    defined_at: LogicalBufferProto.Location
    color: int
    def __init__(self, id: _Optional[int] = ..., size: _Optional[int] = ..., defined_at: _Optional[_Union[LogicalBufferProto.Location, _Mapping]] = ..., color: _Optional[int] = ...) -> None: ...

class BufferAllocationProto(_message.Message):
    __slots__ = ("index", "size", "is_thread_local", "is_entry_computation_parameter", "parameter_number", "maybe_live_out", "color", "assigned", "parameter_shape_index", "is_tuple", "is_constant")
    class Assigned(_message.Message):
        __slots__ = ("logical_buffer_id", "offset", "size")
        LOGICAL_BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        logical_buffer_id: int
        offset: int
        size: int
        def __init__(self, logical_buffer_id: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    IS_THREAD_LOCAL_FIELD_NUMBER: _ClassVar[int]
    IS_ENTRY_COMPUTATION_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MAYBE_LIVE_OUT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
    IS_TUPLE_FIELD_NUMBER: _ClassVar[int]
    IS_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    index: int
    size: int
    is_thread_local: bool
    is_entry_computation_parameter: bool
    parameter_number: int
    maybe_live_out: bool
    color: int
    assigned: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto.Assigned]
    parameter_shape_index: _containers.RepeatedScalarFieldContainer[int]
    is_tuple: bool
    is_constant: bool
    def __init__(self, index: _Optional[int] = ..., size: _Optional[int] = ..., is_thread_local: bool = ..., is_entry_computation_parameter: bool = ..., parameter_number: _Optional[int] = ..., maybe_live_out: bool = ..., color: _Optional[int] = ..., assigned: _Optional[_Iterable[_Union[BufferAllocationProto.Assigned, _Mapping]]] = ..., parameter_shape_index: _Optional[_Iterable[int]] = ..., is_tuple: bool = ..., is_constant: bool = ...) -> None: ...

class HeapSimulatorTrace(_message.Message):
    __slots__ = ("events", "whole_module_simulation", "buffer_allocation_index")
    class Event(_message.Message):
        __slots__ = ("kind", "buffer_id", "computation_name", "instruction_name", "share_with_canonical_id")
        class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            ALLOC: _ClassVar[HeapSimulatorTrace.Event.Kind]
            FREE: _ClassVar[HeapSimulatorTrace.Event.Kind]
            SHARE_WITH: _ClassVar[HeapSimulatorTrace.Event.Kind]
        ALLOC: HeapSimulatorTrace.Event.Kind
        FREE: HeapSimulatorTrace.Event.Kind
        SHARE_WITH: HeapSimulatorTrace.Event.Kind
        KIND_FIELD_NUMBER: _ClassVar[int]
        BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHARE_WITH_CANONICAL_ID_FIELD_NUMBER: _ClassVar[int]
        kind: HeapSimulatorTrace.Event.Kind
        buffer_id: int
        computation_name: bytes
        instruction_name: bytes
        share_with_canonical_id: int
        def __init__(self, kind: _Optional[_Union[HeapSimulatorTrace.Event.Kind, str]] = ..., buffer_id: _Optional[int] = ..., computation_name: _Optional[bytes] = ..., instruction_name: _Optional[bytes] = ..., share_with_canonical_id: _Optional[int] = ...) -> None: ...
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_MODULE_SIMULATION_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALLOCATION_INDEX_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace.Event]
    whole_module_simulation: bool
    buffer_allocation_index: int
    def __init__(self, events: _Optional[_Iterable[_Union[HeapSimulatorTrace.Event, _Mapping]]] = ..., whole_module_simulation: bool = ..., buffer_allocation_index: _Optional[int] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "computations", "id", "entry_computation_id", "stack_frame_index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_INDEX_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    entry_computation_name: bytes
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    id: int
    entry_computation_id: int
    stack_frame_index: StackFrameIndexProto
    def __init__(self, name: _Optional[bytes] = ..., entry_computation_name: _Optional[bytes] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., id: _Optional[int] = ..., entry_computation_id: _Optional[int] = ..., stack_frame_index: _Optional[_Union[StackFrameIndexProto, _Mapping]] = ...) -> None: ...

class StackFrameIndexProto(_message.Message):
    __slots__ = ("file_names", "function_names", "file_locations", "stack_frames")
    class FileLocation(_message.Message):
        __slots__ = ("file_name_id", "function_name_id", "line", "column")
        FILE_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_NAME_ID_FIELD_NUMBER: _ClassVar[int]
        LINE_FIELD_NUMBER: _ClassVar[int]
        COLUMN_FIELD_NUMBER: _ClassVar[int]
        file_name_id: int
        function_name_id: int
        line: int
        column: int
        def __init__(self, file_name_id: _Optional[int] = ..., function_name_id: _Optional[int] = ..., line: _Optional[int] = ..., column: _Optional[int] = ...) -> None: ...
    class StackFrame(_message.Message):
        __slots__ = ("file_location_id", "parent_frame_id")
        FILE_LOCATION_ID_FIELD_NUMBER: _ClassVar[int]
        PARENT_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
        file_location_id: int
        parent_frame_id: int
        def __init__(self, file_location_id: _Optional[int] = ..., parent_frame_id: _Optional[int] = ...) -> None: ...
    FILE_NAMES_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAMES_FIELD_NUMBER: _ClassVar[int]
    FILE_LOCATIONS_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAMES_FIELD_NUMBER: _ClassVar[int]
    file_names: _containers.RepeatedScalarFieldContainer[bytes]
    function_names: _containers.RepeatedScalarFieldContainer[bytes]
    file_locations: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.FileLocation]
    stack_frames: _containers.RepeatedCompositeFieldContainer[StackFrameIndexProto.StackFrame]
    def __init__(self, file_names: _Optional[_Iterable[bytes]] = ..., function_names: _Optional[_Iterable[bytes]] = ..., file_locations: _Optional[_Iterable[_Union[StackFrameIndexProto.FileLocation, _Mapping]]] = ..., stack_frames: _Optional[_Iterable[_Union[StackFrameIndexProto.StackFrame, _Mapping]]] = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "id", "root_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    id: int
    root_id: int
    def __init__(self, name: _Optional[bytes] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., id: _Optional[int] = ..., root_id: _Optional[int] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "shape", "metadata", "parameter_number", "fusion_kind", "tuple_index", "dimensions", "window", "convolution_dimension_numbers", "custom_call_target", "dot_dimension_numbers", "fft_length", "id", "operand_ids", "called_computation_ids", "backend_config", "feature_group_count", "batch_group_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    TUPLE_INDEX_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_TARGET_FIELD_NUMBER: _ClassVar[int]
    DOT_DIMENSION_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    FFT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    OPERAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_CONFIG_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    BATCH_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    opcode: bytes
    shape: ShapeProto
    metadata: OpMetadata
    parameter_number: int
    fusion_kind: bytes
    tuple_index: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    window: Window
    convolution_dimension_numbers: ConvolutionDimensionNumbers
    custom_call_target: bytes
    dot_dimension_numbers: DotDimensionNumbers
    fft_length: _containers.RepeatedScalarFieldContainer[int]
    id: int
    operand_ids: _containers.RepeatedScalarFieldContainer[int]
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    backend_config: bytes
    feature_group_count: int
    batch_group_count: int
    def __init__(self, name: _Optional[bytes] = ..., opcode: _Optional[bytes] = ..., shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., parameter_number: _Optional[int] = ..., fusion_kind: _Optional[bytes] = ..., tuple_index: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., window: _Optional[_Union[Window, _Mapping]] = ..., convolution_dimension_numbers: _Optional[_Union[ConvolutionDimensionNumbers, _Mapping]] = ..., custom_call_target: _Optional[bytes] = ..., dot_dimension_numbers: _Optional[_Union[DotDimensionNumbers, _Mapping]] = ..., fft_length: _Optional[_Iterable[int]] = ..., id: _Optional[int] = ..., operand_ids: _Optional[_Iterable[int]] = ..., called_computation_ids: _Optional[_Iterable[int]] = ..., backend_config: _Optional[bytes] = ..., feature_group_count: _Optional[int] = ..., batch_group_count: _Optional[int] = ...) -> None: ...

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes", "layout")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    element_type: int
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    layout: LayoutProto
    def __init__(self, element_type: _Optional[int] = ..., dimensions: _Optional[_Iterable[int]] = ..., tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., layout: _Optional[_Union[LayoutProto, _Mapping]] = ...) -> None: ...

class LayoutProto(_message.Message):
    __slots__ = ("minor_to_major", "tiles", "element_size_in_bits", "memory_space")
    MINOR_TO_MAJOR_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_SIZE_IN_BITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    minor_to_major: _containers.RepeatedScalarFieldContainer[int]
    tiles: _containers.RepeatedCompositeFieldContainer[TileProto]
    element_size_in_bits: int
    memory_space: int
    def __init__(self, minor_to_major: _Optional[_Iterable[int]] = ..., tiles: _Optional[_Iterable[_Union[TileProto, _Mapping]]] = ..., element_size_in_bits: _Optional[int] = ..., memory_space: _Optional[int] = ...) -> None: ...

class TileProto(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class DotDimensionNumbers(_message.Message):
    __slots__ = ("lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions", "rhs_batch_dimensions")
    LHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_CONTRACTING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    LHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    RHS_BATCH_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    lhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_contracting_dimensions: _containers.RepeatedScalarFieldContainer[int]
    lhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    rhs_batch_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, lhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., rhs_contracting_dimensions: _Optional[_Iterable[int]] = ..., lhs_batch_dimensions: _Optional[_Iterable[int]] = ..., rhs_batch_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class WindowDimension(_message.Message):
    __slots__ = ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    STRIDE_FIELD_NUMBER: _ClassVar[int]
    PADDING_LOW_FIELD_NUMBER: _ClassVar[int]
    PADDING_HIGH_FIELD_NUMBER: _ClassVar[int]
    WINDOW_DILATION_FIELD_NUMBER: _ClassVar[int]
    BASE_DILATION_FIELD_NUMBER: _ClassVar[int]
    size: int
    stride: int
    padding_low: int
    padding_high: int
    window_dilation: int
    base_dilation: int
    def __init__(self, size: _Optional[int] = ..., stride: _Optional[int] = ..., padding_low: _Optional[int] = ..., padding_high: _Optional[int] = ..., window_dilation: _Optional[int] = ..., base_dilation: _Optional[int] = ...) -> None: ...

class Window(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedCompositeFieldContainer[WindowDimension]
    def __init__(self, dimensions: _Optional[_Iterable[_Union[WindowDimension, _Mapping]]] = ...) -> None: ...

class ConvolutionDimensionNumbers(_message.Message):
    __slots__ = ("kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "input_batch_dimension", "input_feature_dimension", "output_batch_dimension", "output_feature_dimension", "input_spatial_dimensions", "output_spatial_dimensions")
    KERNEL_INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    KERNEL_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BATCH_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FEATURE_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SPATIAL_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    input_batch_dimension: int
    input_feature_dimension: int
    output_batch_dimension: int
    output_feature_dimension: int
    input_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    output_spatial_dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, kernel_input_feature_dimension: _Optional[int] = ..., kernel_output_feature_dimension: _Optional[int] = ..., kernel_spatial_dimensions: _Optional[_Iterable[int]] = ..., input_batch_dimension: _Optional[int] = ..., input_feature_dimension: _Optional[int] = ..., output_batch_dimension: _Optional[int] = ..., output_feature_dimension: _Optional[int] = ..., input_spatial_dimensions: _Optional[_Iterable[int]] = ..., output_spatial_dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line", "stack_frame_id")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    STACK_FRAME_ID_FIELD_NUMBER: _ClassVar[int]
    op_type: bytes
    op_name: bytes
    source_file: bytes
    source_line: int
    stack_frame_id: int
    def __init__(self, op_type: _Optional[bytes] = ..., op_name: _Optional[bytes] = ..., source_file: _Optional[bytes] = ..., source_line: _Optional[int] = ..., stack_frame_id: _Optional[int] = ...) -> None: ...
