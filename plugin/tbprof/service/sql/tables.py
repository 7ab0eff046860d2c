"""The tables the pages compute, as the SQL views see them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles

if TYPE_CHECKING:  # the analyses' table type loads with a query that names a table (the tools compute it)
    from tbprof.analyses.table import Table

# Which (tool, table) gives each table: the first tool the run lists wins, so every format
# answers with the tool that has its data.
TABLE_SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    "steps": (("overview_page", "steps"), ("tf1_steps", "steps")),
    "ops": (("framework_op_stats", "ops"), ("tf1_op_stats", "ops")),
    "kernels": (("kernel_stats", "kernels"),),
    "memory": (("memory_profile", "timeline"), ("tf1_memory", "allocators")),
    "hlo_ops": (("hlo_stats", "hlo_ops"),),
}


def source_of(profiles: Profiles, run: Run, what: str) -> tuple[str, str] | None:
    """The (tool, table) that gives ``what`` for this run, None when no tool of the run has it."""
    listed = set(profiles.tools(run))
    return next((src for src in TABLE_SOURCES[what] if src[0] in listed), None)


def host_table(profiles: Profiles, run: Run, host: str, source: tuple[str, str]) -> Table | None:
    """One host's table (memoised with the tool's result)."""
    from tbprof.analyses.table import Table

    tool_name, table = source
    result = profiles.compute(run, [host], profiles.tool(tool_name), {})
    found = result.get("tables", {}).get(table)
    return found if isinstance(found, Table) else None


def table_columns(table: Table, host: str | None = None) -> dict[str, np.ndarray]:
    """A tool table's columns as DuckDB registers them (units are in the column names already);
    ``host`` first when given."""
    data: dict[str, np.ndarray] = {} if host is None else {"host": np.full(table.n_rows, host, dtype=object)}
    for c in table.columns:
        if c.name != "host" or host is None:
            data[c.name] = table.data[c.name]
    return data


def concat_columns(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several hosts' columns one after another; a column some host lacks is NULL in its rows."""
    names = list(dict.fromkeys(name for part in parts for name in part))
    out: dict[str, np.ndarray] = {}
    for name in names:
        pieces = []
        for part in parts:
            rows = len(next(iter(part.values()))) if part else 0
            pieces.append(part[name] if name in part else np.full(rows, None, dtype=object))
        out[name] = np.concatenate(pieces)
    return out
