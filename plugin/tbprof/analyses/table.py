"""Tables of analysis results: columnar, typed, with units, queryable without Python loops.

Every table a tool returns (op stats, kernel stats, input ops, ...) is a ``Table``; the
HTTP layer sorts, filters and pages it (``query``) and encodes it as JSON rows or CSV, so
every page gets the same sort/filter/paging/CSV behaviour and a 100 k-row table stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tbprof.domain.answer_size import NARROW_TABLES, AnswerBudget
from tbprof.errors import BadParameter

COLUMN_KINDS = ("str", "int", "float", "bool")


@dataclass(frozen=True)
class Column:
    name: str  # snake_case with unit, e.g. "total_self_time_us"
    label: str  # human label, e.g. "Total self-time"
    kind: str  # one of COLUMN_KINDS
    unit: str = ""  # "us", "ms", "%", "bytes", "GFLOP/s", ...
    description: str = ""


@dataclass
class Table:
    columns: list[Column]
    data: dict[str, np.ndarray]  # column name -> values (object arrays for strings)
    default_sort: str | None = None
    default_desc: bool = True
    meta: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_columns(columns: Sequence[Column], values: dict[str, Any], default_sort: str | None = None,
                     default_desc: bool = True) -> Table:
        data: dict[str, np.ndarray] = {}
        n: int | None = None
        for c in columns:
            v = values[c.name]
            if c.kind == "str":
                arr = np.asarray(v, dtype=object) if not isinstance(v, np.ndarray) else v.astype(object)
            elif c.kind == "int":
                arr = np.asarray(v, dtype=np.int64)
            elif c.kind == "float":
                arr = np.asarray(v, dtype=np.float64)
            else:
                arr = np.asarray(v, dtype=bool)
            if n is None:
                n = arr.shape[0]
            elif arr.shape[0] != n:
                raise ValueError(f"column {c.name} has {arr.shape[0]} rows, expected {n}")
            data[c.name] = arr
        return Table(list(columns), data, default_sort, default_desc)

    @property
    def n_rows(self) -> int:
        if not self.columns:
            return 0
        return int(self.data[self.columns[0].name].shape[0])

    def column(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    def rows(self, index: np.ndarray | None = None) -> list[list[Any]]:
        """Row-major plain Python values (NaN becomes None so JSON stays valid)."""
        cols = []
        for c in self.columns:
            v = self.data[c.name] if index is None else self.data[c.name][index]
            if c.kind == "float":
                lst = [None if x != x else x for x in v.tolist()]
            else:
                lst = v.tolist()
            cols.append(lst)
        return [list(r) for r in zip(*cols, strict=False)] if cols else []


class QueryError(BadParameter):
    """A sort/filter/paging parameter that cannot be applied."""


@dataclass(frozen=True)
class TableQuery:
    sort: str | None = None
    desc: bool | None = None
    offset: int = 0
    limit: int | None = None
    # column name -> regex (string columns) or "op value" numeric filter, e.g. ">=10"
    filters: tuple[tuple[str, str], ...] = ()


_NUMERIC_FILTER = re.compile(r"^\s*(<=|>=|<|>|==|=|!=)\s*(-?[0-9.eE+-]+)\s*$")


def apply_query(table: Table, q: TableQuery) -> tuple[np.ndarray, int]:
    """Row indices after filter + sort + paging, and the row count after filtering."""
    mask = np.ones(table.n_rows, dtype=bool)
    for col_name, expr in q.filters:
        col = table.column(col_name)
        if col is None:
            raise QueryError(f"unknown column {col_name!r} in filter; columns: "
                             + ", ".join(c.name for c in table.columns))
        values = table.data[col_name]
        if col.kind == "str":
            # Imported here: RE2 is needed only by a filtered request, not by every command
            # that builds a table.
            from tbprof.domain.regex import RegexError, searcher

            try:
                found = searcher(expr, what=f"filter regex for {col_name}")
            except RegexError as e:
                raise QueryError(str(e)) from None
            # Match each distinct string once: op tables repeat types thousands of times.
            uniq, inverse = np.unique(values.astype(str), return_inverse=True)
            hit = np.fromiter((found(u) for u in uniq.tolist()), dtype=bool, count=len(uniq))
            mask &= hit[inverse]
        elif col.kind == "bool":
            want = expr.strip().lower() in ("1", "true", "yes")
            mask &= values == want
        else:
            m = _NUMERIC_FILTER.match(expr)
            if not m:
                raise QueryError(f"numeric filter {expr!r} for {col_name} must look like '>=10'")
            op, num = m.group(1), float(m.group(2))
            ops = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "=": np.equal, "==": np.equal, "!=": np.not_equal}
            mask &= ops[op](values, num)
    index = np.nonzero(mask)[0]
    sort = q.sort if q.sort is not None else table.default_sort
    desc = q.desc if q.desc is not None else (table.default_desc if q.sort is None else False)
    if sort is not None:
        col = table.column(sort)
        if col is None:
            raise QueryError(f"unknown sort column {sort!r}; columns: " + ", ".join(c.name for c in table.columns))
        values = table.data[sort][index]
        if col.kind == "str":
            order = np.argsort(values.astype(str), kind="stable")
            if desc:
                order = order[::-1]
        else:
            numeric = values.astype(np.float64)
            # Stable in both directions: ties keep the tool's order; NaN (unknown) sorts last.
            order = np.argsort(-numeric if desc else numeric, kind="stable")
        index = index[order]
    total = int(index.shape[0])
    if q.offset < 0:
        raise QueryError("offset must be >= 0")
    end = total if q.limit is None else q.offset + q.limit
    return index[q.offset:end], total


# What a float takes in an answer with its separator: Python writes a computed float in up to
# 17 significant digits ("4662.377999999999"), and most of a table's floats are computed. A
# short estimate only lets a little more be built: the encoded body is measured again
# (``analyses/encode.py``).
_FLOAT_BYTES = 18
_BOOL_BYTES = 6
# A text cell's quotes and separator; escapes (a quote, a control character) are not counted
# here, for the same reason.
_TEXT_OVERHEAD_BYTES = 3


def _int_bytes(values: np.ndarray) -> int:
    """The digits, signs and separators of integers as JSON or CSV writes them, in numpy (an
    unknown value, NaN in a float array, as ``null``)."""
    if values.size == 0:
        return 0
    numbers = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        digits = np.floor(np.log10(np.maximum(np.abs(numbers), 1.0))) + 1
        negative = int(np.count_nonzero(numbers < 0))
    digits = np.where(np.isfinite(digits), digits, 4.0)
    return int(digits.sum()) + negative + int(values.size)


def rows_bytes(table: Table, index: np.ndarray) -> int:
    """About what the rows ``index`` take as JSON or CSV, from the values, before rows are made:
    each text cell's length, each integer's digits, each float ``_FLOAT_BYTES``."""
    n = int(index.shape[0])
    need = 0
    for c in table.columns:
        if c.kind == "str":
            values = table.data[c.name][index]
            need += sum(len(v) if isinstance(v, str) else _FLOAT_BYTES for v in values.tolist())
            need += n * _TEXT_OVERHEAD_BYTES
        elif c.kind == "int":
            need += _int_bytes(table.data[c.name][index])
        elif c.kind == "bool":
            need += n * _BOOL_BYTES
        else:
            need += n * _FLOAT_BYTES
    return need


def table_json(table: Table, q: TableQuery | None = None, budget: AnswerBudget | None = None) -> dict[str, Any]:
    """The table's query answer; its rows are counted against ``budget`` (the answer it is part
    of; None: an answer of its own) before they are made."""
    index, total = apply_query(table, q or TableQuery())
    (budget or AnswerBudget(NARROW_TABLES)).add(rows_bytes(table, index), f"{index.shape[0]:,} table rows")
    return {
        "columns": [{"name": c.name, "label": c.label, "kind": c.kind, "unit": c.unit,
                     **({"description": c.description} if c.description else {})} for c in table.columns],
        "rows": table.rows(index),
        "total_rows": total,
        "offset": (q.offset if q else 0),
        **({"meta": table.meta} if table.meta else {}),
    }
