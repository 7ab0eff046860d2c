"""Type stubs of the compiled Chrome-trace JSON scanner (jsonscan.pyx)."""

from typing import Any

import numpy as np

KIND_JSON: int
TIME_MISSING: int  # a ts or dur that is absent, not a number or beyond int64
FLAG_BP_E: int
FLAG_SCOPE_G: int
FLAG_EMPTY: int
UTF8_ERROR: int
DEPTH_ERROR: int
ERRORS: dict[int, str]

class Scanner:
    bare: bool
    top_kind: int
    trace_events: int
    non_objects: int
    event_resets: int
    err_code: int
    err_at: int
    top: dict[str, bytes]
    def feed(self, data: bytes | bytearray | memoryview, base: int, final: bool) -> int: ...
    @property
    def n_events(self) -> int: ...
    @property
    def n_stats(self) -> int: ...
    @property
    def n_tokens(self) -> int: ...
    @property
    def token_bytes(self) -> int: ...
    def token(self, t: int) -> bytes: ...
    def token_ints(self, np: Any) -> tuple[np.ndarray, np.ndarray]: ...
    def columns(self, np: Any) -> dict[str, np.ndarray]: ...
    @property
    def between_events(self) -> bool: ...
    def resume_in_events(self, bare: bool) -> None: ...
    def absorb_tokens(self, other: Scanner, np: Any) -> np.ndarray: ...
    def columns_into(self, out: dict[str, np.ndarray], ev_at: int, st_at: int,
                     remap: np.ndarray | None = None) -> None: ...
