import profiler_options_pb2 as _profiler_options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolRequestOptions(_message.Message):
    __slots__ = ("output_formats", "save_to_repo")
    OUTPUT_FORMATS_FIELD_NUMBER: _ClassVar[int]
    SAVE_TO_REPO_FIELD_NUMBER: _ClassVar[int]
    output_formats: str
    save_to_repo: bool
    def __init__(self, output_formats: _Optional[str] = ..., save_to_repo: bool = ...) -> None: ...

class ProfileRequest(_message.Message):
    __slots__ = ("duration_ms", "max_events", "tools", "tool_options", "opts", "repository_root", "session_id", "host_name")
    class ToolOptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ToolRequestOptions
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ToolRequestOptions, _Mapping]] = ...) -> None: ...
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENTS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    OPTS_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_ROOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    duration_ms: int
    max_events: int
    tools: _containers.RepeatedScalarFieldContainer[str]
    tool_options: _containers.MessageMap[str, ToolRequestOptions]
    opts: _profiler_options_pb2.ProfileOptions
    repository_root: str
    session_id: str
    host_name: str
    def __init__(self, duration_ms: _Optional[int] = ..., max_events: _Optional[int] = ..., tools: _Optional[_Iterable[str]] = ..., tool_options: _Optional[_Mapping[str, ToolRequestOptions]] = ..., opts: _Optional[_Union[_profiler_options_pb2.ProfileOptions, _Mapping]] = ..., repository_root: _Optional[str] = ..., session_id: _Optional[str] = ..., host_name: _Optional[str] = ...) -> None: ...

class ProfileToolData(_message.Message):
    __slots__ = ("name", "data")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    data: bytes
    def __init__(self, name: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class ProfileResponse(_message.Message):
    __slots__ = ("tool_data", "empty_trace")
    TOOL_DATA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_TRACE_FIELD_NUMBER: _ClassVar[int]
    tool_data: _containers.RepeatedCompositeFieldContainer[ProfileToolData]
    empty_trace: bool
    def __init__(self, tool_data: _Optional[_Iterable[_Union[ProfileToolData, _Mapping]]] = ..., empty_trace: bool = ...) -> None: ...
