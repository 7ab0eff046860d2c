from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class XSpace(_message.Message):
    __slots__ = ("planes", "errors", "warnings", "hostnames")
    PLANES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    planes: _containers.RepeatedCompositeFieldContainer[XPlane]
    errors: _containers.RepeatedScalarFieldContainer[bytes]
    warnings: _containers.RepeatedScalarFieldContainer[bytes]
    hostnames: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, planes: _Optional[_Iterable[_Union[XPlane, _Mapping]]] = ..., errors: _Optional[_Iterable[bytes]] = ..., warnings: _Optional[_Iterable[bytes]] = ..., hostnames: _Optional[_Iterable[bytes]] = ...) -> None: ...

class XPlane(_message.Message):
    __slots__ = ("id", "name", "lines", "event_metadata", "stat_metadata", "stats")
    class EventMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: XEventMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[XEventMetadata, _Mapping]] = ...) -> None: ...
    class StatMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: XStatMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[XStatMetadata, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    EVENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STAT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: bytes
    lines: _containers.RepeatedCompositeFieldContainer[XLine]
    event_metadata: _containers.MessageMap[int, XEventMetadata]
    stat_metadata: _containers.MessageMap[int, XStatMetadata]
    stats: _containers.RepeatedCompositeFieldContainer[XStat]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[bytes] = ..., lines: _Optional[_Iterable[_Union[XLine, _Mapping]]] = ..., event_metadata: _Optional[_Mapping[int, XEventMetadata]] = ..., stat_metadata: _Optional[_Mapping[int, XStatMetadata]] = ..., stats: _Optional[_Iterable[_Union[XStat, _Mapping]]] = ...) -> None: ...

class XLine(_message.Message):
    __slots__ = ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps", "events")
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_NS_FIELD_NUMBER: _ClassVar[int]
    DURATION_PS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    id: int
    display_id: int
    name: bytes
    display_name: bytes
    timestamp_ns: int
    duration_ps: int
    events: _containers.RepeatedCompositeFieldContainer[XEvent]
    def __init__(self, id: _Optional[int] = ..., display_id: _Optional[int] = ..., name: _Optional[bytes] = ..., display_name: _Optional[bytes] = ..., timestamp_ns: _Optional[int] = ..., duration_ps: _Optional[int] = ..., events: _Optional[_Iterable[_Union[XEvent, _Mapping]]] = ...) -> None: ...

class XEvent(_message.Message):
    __slots__ = ("metadata_id", "offset_ps", "num_occurrences", "duration_ps", "stats")
    METADATA_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_PS_FIELD_NUMBER: _ClassVar[int]
    NUM_OCCURRENCES_FIELD_NUMBER: _ClassVar[int]
    DURATION_PS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    metadata_id: int
    offset_ps: int
    num_occurrences: int
    duration_ps: int
    stats: _containers.RepeatedCompositeFieldContainer[XStat]
    def __init__(self, metadata_id: _Optional[int] = ..., offset_ps: _Optional[int] = ..., num_occurrences: _Optional[int] = ..., duration_ps: _Optional[int] = ..., stats: _Optional[_Iterable[_Union[XStat, _Mapping]]] = ...) -> None: ...

class XStat(_message.Message):
    __slots__ = ("metadata_id", "double_value", "uint64_value", "int64_value", "str_value", "bytes_value", "ref_value")
    METADATA_ID_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    UINT64_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT64_VALUE_FIELD_NUMBER: _ClassVar[int]
    STR_VALUE_FIELD_NUMBER: _ClassVar[int]
    BYTES_VALUE_FIELD_NUMBER: _ClassVar[int]
    REF_VALUE_FIELD_NUMBER: _ClassVar[int]
    metadata_id: int
    double_value: float
    uint64_value: int
    int64_value: int
    str_value: bytes
    bytes_value: bytes
    ref_value: int
    def __init__(self, metadata_id: _Optional[int] = ..., double_value: _Optional[float] = ..., uint64_value: _Optional[int] = ..., int64_value: _Optional[int] = ..., str_value: _Optional[bytes] = ..., bytes_value: _Optional[bytes] = ..., ref_value: _Optional[int] = ...) -> None: ...

class XEventMetadata(_message.Message):
    __slots__ = ("id", "name", "display_name", "metadata", "stats", "child_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    CHILD_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: bytes
    display_name: bytes
    metadata: bytes
    stats: _containers.RepeatedCompositeFieldContainer[XStat]
    child_id: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[bytes] = ..., display_name: _Optional[bytes] = ..., metadata: _Optional[bytes] = ..., stats: _Optional[_Iterable[_Union[XStat, _Mapping]]] = ..., child_id: _Optional[_Iterable[int]] = ...) -> None: ...

class XStatMetadata(_message.Message):
    __slots__ = ("id", "name", "description")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: bytes
    description: bytes
    def __init__(self, id: _Optional[int] = ..., name: _Optional[bytes] = ..., description: _Optional[bytes] = ...) -> None: ...
