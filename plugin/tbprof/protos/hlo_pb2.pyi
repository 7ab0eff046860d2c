from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HloProto(_message.Message):
    __slots__ = ("hlo_module",)
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "computations", "id", "entry_computation_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_ID_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    entry_computation_name: bytes
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    id: int
    entry_computation_id: int
    def __init__(self, name: _Optional[bytes] = ..., entry_computation_name: _Optional[bytes] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., id: _Optional[int] = ..., entry_computation_id: _Optional[int] = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    id: int
    def __init__(self, name: _Optional[bytes] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., id: _Optional[int] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "metadata", "fusion_kind", "custom_call_target", "id", "called_computation_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    FUSION_KIND_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_CALL_TARGET_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CALLED_COMPUTATION_IDS_FIELD_NUMBER: _ClassVar[int]
    name: bytes
    opcode: bytes
    metadata: OpMetadata
    fusion_kind: bytes
    custom_call_target: bytes
    id: int
    called_computation_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[bytes] = ..., opcode: _Optional[bytes] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., fusion_kind: _Optional[bytes] = ..., custom_call_target: _Optional[bytes] = ..., id: _Optional[int] = ..., called_computation_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    op_type: bytes
    op_name: bytes
    source_file: bytes
    source_line: int
    def __init__(self, op_type: _Optional[bytes] = ..., op_name: _Optional[bytes] = ..., source_file: _Optional[bytes] = ..., source_line: _Optional[int] = ...) -> None: ...
