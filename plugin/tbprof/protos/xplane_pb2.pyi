from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers

DESCRIPTOR: _descriptor.FileDescriptor

class XSpace(_message.Message):
    __slots__ = ("errors", "hostnames", "planes", "warnings")
    PLANES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    planes: _containers.RepeatedCompositeFieldContainer[XPlane]
    errors: _containers.RepeatedScalarFieldContainer[bytes]
    warnings: _containers.RepeatedScalarFieldContainer[bytes]
    hostnames: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, planes: _Iterable[XPlane | _Mapping] | None = ..., errors: _Iterable[bytes] | None = ..., warnings: _Iterable[bytes] | None = ..., hostnames: _Iterable[bytes] | None = ...) -> None: ...

class XPlane(_message.Message):
    __slots__ = ("event_metadata", "id", "lines", "name", "stat_metadata", "stats")
    class EventMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: XEventMetadata
        def __init__(self, key: int | None = ..., value: XEventMetadata | _Mapping | None = ...) -> None: ...
    class StatMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: XStatMetadata
        def __init__(self, key: int | None = ..., value: XStatMetadata | _Mapping | None = ...) -> None: ...
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
    def __init__(self, id: int | None = ..., name: bytes | None = ..., lines: _Iterable[XLine | _Mapping] | None = ..., event_metadata: _Mapping[int, XEventMetadata] | None = ..., stat_metadata: _Mapping[int, XStatMetadata] | None = ..., stats: _Iterable[XStat | _Mapping] | None = ...) -> None: ...

class XLine(_message.Message):
    __slots__ = ("display_id", "display_name", "duration_ps", "events", "id", "name", "timestamp_ns")
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
    def __init__(self, id: int | None = ..., display_id: int | None = ..., name: bytes | None = ..., display_name: bytes | None = ..., timestamp_ns: int | None = ..., duration_ps: int | None = ..., events: _Iterable[XEvent | _Mapping] | None = ...) -> None: ...

class XEvent(_message.Message):
    __slots__ = ("duration_ps", "metadata_id", "num_occurrences", "offset_ps", "stats")
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
    def __init__(self, metadata_id: int | None = ..., offset_ps: int | None = ..., num_occurrences: int | None = ..., duration_ps: int | None = ..., stats: _Iterable[XStat | _Mapping] | None = ...) -> None: ...

class XStat(_message.Message):
    __slots__ = ("bytes_value", "double_value", "int64_value", "metadata_id", "ref_value", "str_value", "uint64_value")
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
    def __init__(self, metadata_id: int | None = ..., double_value: float | None = ..., uint64_value: int | None = ..., int64_value: int | None = ..., str_value: bytes | None = ..., bytes_value: bytes | None = ..., ref_value: int | None = ...) -> None: ...

class XEventMetadata(_message.Message):
    __slots__ = ("child_id", "display_name", "id", "metadata", "name", "stats")
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
    def __init__(self, id: int | None = ..., name: bytes | None = ..., display_name: bytes | None = ..., metadata: bytes | None = ..., stats: _Iterable[XStat | _Mapping] | None = ..., child_id: _Iterable[int] | None = ...) -> None: ...

class XStatMetadata(_message.Message):
    __slots__ = ("description", "id", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: bytes
    description: bytes
    def __init__(self, id: int | None = ..., name: bytes | None = ..., description: bytes | None = ...) -> None: ...
