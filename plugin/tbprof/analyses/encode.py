"""Results as bytes: JSON (tables queried and paged, NaN/inf as null) and CSV.

The one encoder of results: HTTP answers (compact), the CLI's ``--json`` output (indented) and
the memoised bodies of tool results and comparisons (``service``) all come from ``to_json_bytes``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from tbprof.analyses.table import Table, TableQuery, apply_query, rows_bytes, table_json
from tbprof.domain.answer_size import NARROW_CSV, NARROW_SQL, NARROW_TABLES, AnswerBudget, check_answer_bytes
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


# What a leaf other than text takes in the JSON (a number, true, null), with its separator.
_LEAF_BYTES = 8
# Checked against the budget after each this many bytes of leaves, not at every leaf.
_CHECK_EVERY_BYTES = 1 << 20


class _Walk:
    """One result made JSON-ready: tables become JSON tables (their query applied), NaN/inf
    null, and every leaf counted against the answer's budget as it is met, so an answer past
    the limit is refused before ``json.dumps`` writes it."""

    __slots__ = ("budget", "pending", "queries")

    def __init__(self, queries: dict[str, TableQuery], budget: AnswerBudget) -> None:
        self.queries = queries
        self.budget = budget
        self.pending = 0

    def flush(self) -> None:
        self.budget.add(self.pending, "its values")
        self.pending = 0

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                self.pending += len(k) + 4 if isinstance(k, str) else _LEAF_BYTES
                if k == "tables" and isinstance(v, dict):
                    out[k] = {name: table_json(t, self.queries.get(name), self.budget) if isinstance(t, Table)
                              else self.value(t) for name, t in v.items()}
                else:
                    out[k] = self.value(v)
            return out
        if isinstance(value, (list, tuple)):
            out_list = [self.value(v) for v in value]
            if self.pending >= _CHECK_EVERY_BYTES:
                self.flush()
            return out_list
        if isinstance(value, str):
            if value.isascii():
                self.pending += len(value) + 3
                return value
            shown = shown_name(value)  # a path or name with surrogate escapes (a non-UTF-8 file name)
            # JSON escapes each character past ASCII (as \uXXXX): its written length, in C.
            self.pending += len(encode_basestring_ascii(shown)) + 1
            return shown
        if isinstance(value, float):
            self.pending += _LEAF_BYTES
            return None if math.isnan(value) or math.isinf(value) else value
        if isinstance(value, Table):
            return table_json(value, None, self.budget)
        if isinstance(value, np.ndarray):
            self.pending += value.size * _LEAF_BYTES
        else:
            self.pending += _LEAF_BYTES
        return value


def to_json_bytes(result: Any, queries: dict[str, TableQuery] | None = None, indent: int | None = None,
                  narrow: str = NARROW_TABLES) -> bytes:
    """``result`` as JSON: compact, or indented by ``indent`` spaces (for people: the CLI).

    Every answer is counted against what one answer may take (``domain/answer_size.py``):
    while the result is walked (tables from their values before their rows are made), then
    the body itself; past it, ``AnswerTooLarge`` whose message is ``narrow`` (how to ask for less)."""
    walk = _Walk(queries or {}, AnswerBudget(narrow))
    clean = walk.value(result)
    walk.flush()
    if indent is None:
        body = json.dumps(clean, default=_default, separators=(",", ":"), allow_nan=False).encode()
    else:
        body = json.dumps(clean, default=_default, indent=indent, allow_nan=False).encode()
    check_answer_bytes(len(body), "its JSON", narrow)
    return body


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


def rows_csv(names: Sequence[str], rows: Iterable[Sequence[Any]],
             narrow: str = NARROW_SQL) -> bytes:
    """Rows under a header as ``table_csv`` writes them (a SQL answer's rows), refused
    (``AnswerTooLarge``, ``narrow``) once the lines written pass what one answer may take."""
    budget = AnswerBudget(narrow)
    lines = [",".join(_csv_field(n) for n in names)]
    for row in rows:
        line = ",".join(map(_csv_field, row))
        budget.add(len(line) + 1, f"{len(lines):,} rows")
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def table_csv(table: Table, query: TableQuery | None = None, narrow: str = NARROW_CSV) -> bytes:
    """The table as CSV: Python's csv dialect (QUOTE_MINIMAL, "\n" lines, None as ""), cells
    that are text neutralised (csv_text_cell); the browser's own CSV export writes the same bytes."""
    index, _ = apply_query(table, query or TableQuery())
    AnswerBudget(narrow).add(rows_bytes(table, index), f"{index.shape[0]:,} table rows")
    lines = [",".join(_csv_field(c.name) for c in table.columns)]
    lines.extend(",".join(map(_csv_field, row)) for row in table.rows(index))
    return ("\n".join(lines) + "\n").encode()
