"""Results as bytes: JSON (tables queried and paged, NaN/inf as null) and CSV.

The one encoder of results: HTTP answers (compact), the CLI's ``--json`` output (indented) and
the memoised bodies of tool results and comparisons (``service``) all come from ``to_json_bytes``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tbprof.analyses.table import Table, TableQuery, apply_query, table_json
from tbprof.fs import shown_name


def _default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        f = float(o)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", errors="replace")
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _sanitize(value: Any, queries: dict[str, TableQuery]) -> Any:
    """Tables become JSON tables (with their query applied); NaN/inf become null."""
    if isinstance(value, Table):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "tables" and isinstance(v, dict):
                out[k] = {name: table_json(t, queries.get(name)) if isinstance(t, Table) else _sanitize(t, queries)
                          for name, t in v.items()}
            else:
                out[k] = _sanitize(v, queries)
        return out
    if isinstance(value, (list, tuple)):
        return [_sanitize(v, queries) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, str) and not value.isascii():
        return shown_name(value)  # a path or name with surrogate escapes (a non-UTF-8 file name)
    if isinstance(value, Table):
        return table_json(value)
    return value


def to_json_bytes(result: Any, queries: dict[str, TableQuery] | None = None, indent: int | None = None) -> bytes:
    """``result`` as JSON: compact, or indented by ``indent`` spaces (for people: the CLI)."""
    clean = _sanitize(result, queries or {})
    if indent is None:
        return json.dumps(clean, default=_default, separators=(",", ":"), allow_nan=False).encode()
    return json.dumps(clean, default=_default, indent=indent, allow_nan=False).encode()




# A spreadsheet reads a cell starting with one of these as a formula (`=HYPERLINK(...)`,
# `+cmd|...`, `@SUM(...)`; tab and CR too): OWASP's "CSV injection" advice is to prefix such a
# text cell with `'`. Op and file names come from the profile, so every text cell gets it;
# numeric cells are never text here, and a text cell that is a plain number ("-1.5") keeps its
# value. The browser's own CSV export follows the same rule, so the two exports stay byte-identical.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER_CHARS = frozenset("0123456789.eE+-")


def _plain_number(text: str) -> bool:
    """A decimal literal with an optional sign and exponent ("-1.5", "+2e-3")."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or body[0] not in "0123456789." or not _NUMBER_CHARS.issuperset(body):
        return False
    try:
        float(body)
    except ValueError:
        return False
    return True


def csv_text_cell(text: str) -> str:
    """``text`` as a CSV cell that a spreadsheet shows, never evaluates."""
    if text.startswith(_FORMULA_START) and not _plain_number(text):
        return "'" + text
    return text


def _csv_field(value: Any) -> str:
    """One field: text neutralised, then quoted when it holds a quote, comma, CR or LF.

    Python's csv.writer (3.11) leaves a bare CR unquoted when the line terminator is "\n": a
    name holding "\r=cmd" then started a new row with a formula in a spreadsheet.
    """
    if value is None:
        return ""
    if type(value) is not str:
        return str(value)
    if value and value[0] in _FORMULA_FIRST:
        value = csv_text_cell(value)
    if '"' in value or "," in value or "\n" in value or "\r" in value:
        return '"' + value.replace('"', '""') + '"'
    return value


_FORMULA_FIRST = frozenset(_FORMULA_START)


def rows_csv(names: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """Rows under a header as ``table_csv`` writes them (a SQL answer's rows)."""
    lines = [",".join(_csv_field(n) for n in names)]
    lines.extend(",".join(map(_csv_field, row)) for row in rows)
    return ("\n".join(lines) + "\n").encode()


def table_csv(table: Table, query: TableQuery | None = None) -> bytes:
    """The table as CSV: Python's csv dialect (QUOTE_MINIMAL, "\n" lines, None as ""), cells
    that are text neutralised (csv_text_cell); the browser's own CSV export writes the same bytes."""
    index, _ = apply_query(table, query or TableQuery())
    lines = [",".join(_csv_field(c.name) for c in table.columns)]
    lines.extend(",".join(map(_csv_field, row)) for row in table.rows(index))
    return ("\n".join(lines) + "\n").encode()
