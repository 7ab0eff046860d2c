"""Counting every answer against the answer budget changes no real profile's answer: every tool
of every demo profile encodes to the bytes of the plain encoding (below: tables as their JSON
query answers, NaN/inf as null, ``json.dumps``), each table's size estimate is close to its CSV,
and every host's trace window at full width is answered.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from tbprof.analyses.encode import table_csv, to_json_bytes
from tbprof.analyses.table import Table, TableQuery, apply_query, rows_bytes
from tbprof.fs import shown_name
from tbprof.service.profiles import Profiles
from tbprof.store.tables import ProfileStore
from tbprof.timeline import encoding
from tbprof.timeline.window import query_window
from tests.conftest import SAMPLE_PROFILES

pytestmark = pytest.mark.slow

RUNS = sorted(p.name for p in SAMPLE_PROFILES.iterdir() if p.is_dir())


def _plain_table(t: Table) -> dict[str, Any]:
    index, total = apply_query(t, TableQuery())
    return {"columns": [{"name": c.name, "label": c.label, "kind": c.kind, "unit": c.unit,
                         **({"description": c.description} if c.description else {})} for c in t.columns],
            "rows": t.rows(index), "total_rows": total, "offset": 0, **({"meta": t.meta} if t.meta else {})}


def _plain(value: Any) -> Any:
    if isinstance(value, Table):
        return _plain_table(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, str) and not value.isascii():
        return shown_name(value)
    return value


def _numpy(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.floating):
        f = float(o)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, bytes):
        return o.decode("utf-8", errors="replace")
    raise TypeError(type(o).__name__)


def _estimate_is_close(table: Table, where: Any) -> None:
    """``rows_bytes``, what a page is refused on before its rows are made, is within what its
    counts allow of what the rows take as CSV: a float counted at 18 bytes takes from 2 ("0,")
    to 25 ("-1.2345678901234567e-300,"), a text cell's quotes counted (3) are not written when
    it needs none (1), a bool counted at 6 takes at least 5 ("True,"); integers are exact."""
    body = table_csv(table)
    rows_only = len(body) - (body.index(b"\n") + 1)
    cells = {kind: sum(1 for c in table.columns if c.kind == kind) * table.n_rows for kind in ("float", "str", "bool")}
    estimate = rows_bytes(table, np.arange(table.n_rows))
    slack = 16 * cells["float"] + 2 * cells["str"] + 1 * cells["bool"]
    assert rows_only - 7 * cells["float"] <= estimate <= rows_only + slack, (where, estimate, rows_only)


@pytest.mark.parametrize("run_dir", RUNS)
def test_every_tool_answer_is_the_plain_encoding(run_dir: str, tmp_path: Any) -> None:
    profiles = Profiles(SAMPLE_PROFILES / run_dir, cache_dir=tmp_path / "cache")
    runs = profiles.index.runs()
    assert runs
    for run in runs.values():
        tools = profiles.tools(run)
        assert tools
        for host in run.hosts:
            for name in tools:
                result = profiles.compute(run, [host], profiles.tool(name), {})
                plain = json.dumps(_plain(result), default=_numpy, separators=(",", ":"), allow_nan=False).encode()
                assert to_json_bytes(result) == plain, (run.name, host, name)
                for table_name, table in (result.get("tables") or {}).items():
                    if isinstance(table, Table) and table.n_rows:
                        _estimate_is_close(table, (run.name, host, name, table_name))
            store = profiles.store(run, host)
            if isinstance(store, ProfileStore):
                window = query_window(store, None, None, 65536, None)
                header, _ = encoding.decode_binary(encoding.encode_binary(window, store))
                assert header["counts"]["returned"] == window.returned
