"""Every agent answer fits a byte budget: rows are cut to fit, and the answer says what was left
out and how to ask for the rest (an agent's context is small, and a profile's tables are not).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DEFAULT_MAX_BYTES = 24_000  # a few tens of KB: a page an agent reads whole
MAX_MAX_BYTES = 200_000
MIN_MAX_BYTES = 2_000
DEFAULT_LIMIT = 50
MAX_LIMIT = 1_000
MAX_CELL_CHARS = 400  # a kernel name with its template arguments can run to kilobytes
# Room fit_rows leaves for the fields an answer gets after its rows are chosen (returned_rows,
# next with its hint, a note): each is short and of bounded length.
TAIL_BYTES = 300


def plain(value: Any) -> Any:
    """JSON's view of a value: numpy scalars and arrays as Python, NaN and infinities as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def clip_cell(value: Any) -> tuple[Any, bool]:
    """A cell's value, a long string cut to MAX_CELL_CHARS (and whether it was cut)."""
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return value[:MAX_CELL_CHARS] + "…", True
    return value, False


def fit_rows(answer: dict[str, Any], rows: Sequence[Any], key: str, max_bytes: int) -> int:
    """Puts as many of ``rows`` under ``answer[key]`` as fit ``max_bytes`` with the rest of the
    answer (and ``TAIL_BYTES`` for the paging fields added after); returns how many. None when
    even the first does not fit: the caller says so (``TOO_LARGE``), the bound is never passed."""
    answer[key] = []
    budget = max_bytes - encoded_size(answer) - TAIL_BYTES
    taken = 0
    used = 0
    for row in rows:
        size = encoded_size(row) + 1
        if used + size > budget:
            break
        used += size
        taken += 1
    answer[key] = list(rows[:taken])
    return taken


TOO_LARGE = "the next row alone is larger than max_bytes: raise max_bytes or ask for fewer columns"


def scalars(result: Mapping[str, Any], skip: Sequence[str] = ()) -> tuple[dict[str, Any], list[str]]:
    """The headline fields of a result (numbers, short strings, short lists of them) and the names
    of those left out (tables, charts, trees: reached through their own calls)."""
    out: dict[str, Any] = {}
    omitted: list[str] = []
    for k, v in result.items():
        if k in skip:
            continue
        v = plain(v) if not hasattr(v, "columns") else v
        if v is None or isinstance(v, (bool, int, float)):
            out[k] = v
        elif isinstance(v, str):
            out[k] = clip_cell(v)[0]
        elif isinstance(v, list) and len(v) <= 20 and all(x is None or isinstance(x, (bool, int, float, str))
                                                           for x in v):
            out[k] = [clip_cell(x)[0] for x in v]
        elif isinstance(v, dict) and encoded_size(v) <= 1_000:
            out[k] = v
        else:
            omitted.append(k)
    return out, omitted
