"""Results as bytes: JSON (tables queried and paged, NaN/inf as null) and CSV, for HTTP and the CLI alike."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np

from tbprof.analyses.table import Table, TableQuery, apply_query, table_json


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
    if isinstance(value, Table):
        return table_json(value)
    return value


def to_json_bytes(result: Any, queries: dict[str, TableQuery] | None = None) -> bytes:
    clean = _sanitize(result, queries or {})
    return json.dumps(clean, default=_default, separators=(",", ":"), allow_nan=False).encode()




def table_csv(table: Table, query: TableQuery | None = None) -> bytes:
    index, _ = apply_query(table, query or TableQuery())
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    for row in table.rows(index):
        writer.writerow(["" if v is None else v for v in row])
    return out.getvalue().encode()
