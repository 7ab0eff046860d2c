"""The Python API for notebooks and scripts: ``tbprof.open(path) -> Profile``.

A ``Profile`` is one run (optionally one host) of a file, session folder, run folder or
logdir. Its methods return what the CLI and the server return, from the same ``Profiles``
object, the same store cache (memory + disk) and the same tool memo:

* ``summary()``: the ``tbprof summary --json`` dict;
* ``steps()``, ``ops()``, ``kernels()``, ``memory()``: pandas DataFrames, one row per step /
  op / kernel / memory sample, from the tool of the run's format that has them;
* ``events(host=, start_ps=, end_ps=)``: the raw events of one host as a DataFrame;
* ``tool(name, **options)``: any tool's result dict (tables as ``analyses.table.Table``);
* ``sql(query)``: a DuckDB SELECT over every host's events and the tables (docs/sql.md) as a DataFrame.

pandas is optional (``pip install "tbprof[pandas]"``); only the DataFrame methods need it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tbprof.analyses.table import Table
from tbprof.errors import BadParameter, NoData, NotFound
from tbprof.service import summary as summary_mod
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.selection import default_host, pick_run, select_hosts
from tbprof.service.sql import TABLE_SOURCES, run_sql

__all__ = ["DATAFRAME_SOURCES", "Profile", "open"]

# Which (tool, table) gives each DataFrame: the tables SQL sees too (service/sql/tables.py).
DATAFRAME_SOURCES = TABLE_SOURCES

_PANDAS_HINT = ('tbprof\'s DataFrame methods need pandas: pip install "tbprof[pandas]" '
                "(or pip install pandas); summary() and tool() work without it")


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:
        raise ImportError(_PANDAS_HINT) from e
    return pandas


def open(path: str | Path, run: str | None = None, host: str | None = None,
         cache_dir: str | Path | None = None) -> Profile:
    """Opens a profile: a file, a session or run folder, or a logdir holding one run (or choose ``run=``)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    profiles = Profiles(p, cache_dir=Path(cache_dir) if cache_dir is not None else None)
    chosen = pick_run(profiles.index.runs(), run, where=str(path), choose_with="run=")
    if host is not None:
        select_hosts(chosen, host)  # an unknown host is refused now, not at the first call
    return Profile(profiles, chosen, host)


class Profile:
    """One run of a profile (see ``tbprof.open``)."""

    def __init__(self, profiles: Profiles, run: Run, host: str | None = None) -> None:
        self.profiles = profiles
        self.run = run
        self.host = host

    def __repr__(self) -> str:
        return f"<tbprof.Profile run={self.run.name!r} kind={self.run.kind} hosts={sorted(self.run.hosts)}>"

    @property
    def hosts(self) -> list[str]:
        return sorted(self.run.hosts)

    def tools(self) -> list[str]:
        """The tools with data for this run."""
        return self.profiles.tools(self.run)

    def summary(self) -> dict[str, Any]:
        """The ``tbprof summary --json`` dict."""
        return summary_mod.summary(self.profiles, self.run)

    def tool(self, name: str, host: str | None = None, **options: Any) -> dict[str, Any]:
        """Any tool's result. Several hosts: all of them for multi-host tools, else the first."""
        tool = self.profiles.tool(name)
        want = default_host(self.run, host if host is not None else self.host, tool.multi_host_for(self.run.traits))
        hosts = select_hosts(self.run, want)
        return self.profiles.compute(self.run, hosts, tool, {k: str(v) for k, v in options.items()})

    def _frame(self, what: str) -> Any:
        pd = _pandas()
        listed = set(self.tools())
        for tool_name, table in DATAFRAME_SOURCES[what]:
            if tool_name not in listed:
                continue
            result = self.tool(tool_name)
            found = result.get("tables", {}).get(table)
            if isinstance(found, Table):
                return table_to_frame(found, pd)
        raise NoData(f"run {self.run.name!r} (a {self.run.kind} run) has no {what} data "
                     f"(tools with data: {sorted(listed)})")

    def steps(self) -> Any:
        """One row per step (step time and its breakdown)."""
        return self._frame("steps")

    def ops(self) -> Any:
        """One row per framework op (host and device time)."""
        return self._frame("ops")

    def kernels(self) -> Any:
        """One row per GPU kernel (launch configuration, occupancy, time)."""
        return self._frame("kernels")

    def memory(self) -> Any:
        """One row per memory sample of the run's allocator timeline."""
        return self._frame("memory")

    def sql(self, query: str, host: str | None = None, max_rows: int = 1_000_000,
            timeout_s: float = 300.0) -> Any:
        """A read-only SELECT over the run's views (``events`` of every host, ``steps``, ``ops``,
        ``kernels``, ``memory``, ``hlo_ops``; docs/sql.md) as a DataFrame; ``host``: one host's
        events only. More rows than ``max_rows`` is refused rather than cut silently."""
        pd = _pandas()
        result = run_sql(self.profiles, self.run.name, query, host=host if host is not None else self.host,
                         max_rows=max_rows, timeout_s=timeout_s)
        if result["truncated"]:
            raise BadParameter(f"the query answers more than {max_rows:,} rows; aggregate, add a LIMIT, "
                               "or pass a larger max_rows")
        names = [c["name"] for c in result["columns"]]
        return pd.DataFrame(result["rows"], columns=names) if result["rows"] else pd.DataFrame(
            {n: [] for n in names})

    def events(self, host: str | None = None, start_ps: int | None = None, end_ps: int | None = None) -> Any:
        """Raw events of one host: plane, line, name, start_ps, dur_ps, depth (times relative to the
        profile start), those starting in [start_ps, end_ps)."""
        pd = _pandas()
        # One host's events: the first when none is named (all hosts are no one host).
        want = default_host(self.run, host if host is not None else self.host, multi_host=False) or self.hosts[0]
        if want not in self.run.hosts:
            raise NotFound(f"unknown host {want!r}; hosts: {self.hosts}")
        store = self.profiles.store(self.run, want)
        frames = []
        for plane in getattr(store, "planes", []):
            keep = np.ones(plane.n_events, dtype=bool)
            if start_ps is not None:
                keep &= plane.start_ps >= start_ps
            if end_ps is not None:
                keep &= plane.start_ps < end_ps
            rows = np.nonzero(keep)[0]
            if rows.shape[0] == 0:
                continue
            line_names = np.asarray(plane.line_names, dtype=object)
            frames.append(pd.DataFrame({
                "plane": plane.name,
                "line": line_names[plane.line_idx[rows]] if len(line_names) else "",
                "name": store.strings.lookup(plane.name_id[rows]),
                "start_ps": np.asarray(plane.start_ps[rows]),
                "dur_ps": np.asarray(plane.dur_ps[rows]),
                "depth": np.asarray(plane.depth[rows]),
            }))
        if not frames:
            return pd.DataFrame({"plane": [], "line": [], "name": [], "start_ps": [], "dur_ps": [], "depth": []})
        return pd.concat(frames, ignore_index=True).sort_values(["start_ps", "plane"], kind="stable",
                                                                ignore_index=True)


def table_to_frame(table: Table, pd: Any) -> Any:
    """A tool table as a DataFrame: one column per table column, units in the names already."""
    return pd.DataFrame({c.name: table.data[c.name] for c in table.columns})
