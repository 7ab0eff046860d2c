"""Type stubs of the compiled wire scanner (wire.pyx)."""

from collections.abc import Callable

import numpy as np

KIND_NONE: int
KIND_DOUBLE: int
KIND_UINT64: int
KIND_INT64: int
KIND_STR: int
KIND_BYTES: int
KIND_REF: int
ERR_TRUNCATED: int
ERR_BAD_WIRE_TYPE: int
ERR_BAD_VARINT: int
ERR_LENGTH: int
ERR_CAPACITY: int
ERR_TOO_MANY: int
ERR_NO_MEMORY: int
ERR_FIELD_ZERO: int
ERR_SHORT_READ: int
READ_PIECE_BYTES: int
READ_BESIDE_MIN_BYTES: int

class FileRead:
    error: int
    ran: bool
    def __init__(self, fd: int, array: np.ndarray, piece_bytes: int = ...) -> None: ...
    @staticmethod
    def supported() -> bool: ...
    @property
    def got(self) -> int: ...
    def read(self) -> int: ...
MAX_ROWS: int
ONE_THREAD_BELOW_BYTES: int
ERROR_TEXT: dict[int, str]

class WireError(ValueError):
    code: int
    offset: int
    def __init__(self, code: int, offset: int) -> None: ...

class ScanResult:
    spans: np.ndarray  # int64 (n, 3)
    lines: np.ndarray  # int64 (n, 2)
    ev_line: np.ndarray  # int32
    ev_meta: np.ndarray  # int32 or int64
    ev_start: np.ndarray  # int64
    ev_dur: np.ndarray  # int64
    st_owner: np.ndarray  # int32
    st_meta: np.ndarray  # int32 or int64
    st_kind: np.ndarray  # int8
    st_value: np.ndarray  # int64
    texts: np.ndarray  # int64 (n, 3)
    n_planes: int
    phase_s: dict[str, float] | None  # parallel scan: seconds per phase, threads, chunks
    decoded_planes: np.ndarray | None  # uint8 per plane whose events were decoded; None: all
    with_stats: bool
    line_bounds: np.ndarray | None  # int64 (n_lines, 3): least offset, greatest offset + duration, has events
    index: tuple[np.ndarray, np.ndarray, int, int] | None  # lines, chunks, n_planes, n_events (parallel scan)
    @property
    def n_events(self) -> int: ...
    @property
    def n_stats(self) -> int: ...

def default_threads() -> int: ...
def scan(data: bytes | bytearray | memoryview | np.ndarray, threads: int | None = None,
         chunk_bytes: int = ..., on_counts: Callable[[int, int], None] | None = None, stats: bool = True,
         planes: np.ndarray | None = None, events: bool = True,
         index: tuple[np.ndarray, np.ndarray, int, int] | None = None, reading: FileRead | None = None
         ) -> ScanResult: ...
def scan_serial_py(data: bytes | bytearray | memoryview | np.ndarray, wide: bool = False,
                   on_counts: Callable[[int, int], None] | None = None) -> ScanResult: ...
def hash_spans(data: bytes | np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray: ...

STREAM_STEP_BYTES: int

class StreamIndex:
    def __init__(self, file_size: int, chunk_bytes: int = ...) -> None: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def index_bytes(self) -> int: ...
    def feed(self, window: bytes | bytearray | memoryview | np.ndarray, base: int) -> int: ...
    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]: ...

def decode_window(window: bytes | bytearray | memoryview | np.ndarray, chunks: np.ndarray, byte_base: int,
                  stat_row0: int, stat_cap: int = ..., text_cap: int = ...) -> dict[str, np.ndarray]: ...
def field_metadata_ids(data: bytes | bytearray | memoryview | np.ndarray, starts: np.ndarray,
                       ends: np.ndarray) -> np.ndarray: ...
def plane_metadata(
    data: bytes | bytearray | memoryview | np.ndarray, starts: np.ndarray, ends: np.ndarray,
) -> tuple[int, bytes, np.ndarray, list[str], list[str], np.ndarray, list[str], np.ndarray, np.ndarray] | None: ...
