"""What the agent tools answer, as plain functions over one logdir's ``Profiles``.

The MCP server (``agent/server.py``) only decodes arguments and encodes these answers; tests call
them directly too. Every answer is a JSON object that fits its byte budget (``agent/bounds.py``),
carries its ``provenance`` (run, hosts, whether the numbers combine several hosts, tbprof's
version) and, where rows were left out, ``next`` (the arguments that fetch the next page). A
refusal is an ``AgentError`` whose answer lists what is valid (runs, hosts, tools, tables, columns).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tbprof import __version__
from tbprof.agent.bounds import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_BYTES,
    MAX_LIMIT,
    MAX_MAX_BYTES,
    MIN_MAX_BYTES,
    TOO_LARGE,
    clip_cell,
    fit_rows,
    plain,
    scalars,
)
from tbprof.analyses.table import QueryError, Table, TableQuery, apply_query
from tbprof.errors import BadParameter, NoData, NotFound, TbprofError
from tbprof.service.logdir import Run
from tbprof.service.profiles import Profiles
from tbprof.service.selection import ALL_HOSTS, default_host, pick_table, select_hosts

# The input-bound threshold is XProf's (docs/formulas.md); the others are tbprof's verdict rules
# (docs/agents.md, "explain_bottleneck").
INPUT_BOUND_PERCENT = 20.0
EXPOSED_COMMUNICATION_PERCENT = 10.0
DEVICE_IDLE_PERCENT = 30.0


class AgentError(Exception):
    """A refusal with what to do next: ``valid`` names the choices that would work."""

    def __init__(self, message: str, valid: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.valid = dict(valid or {})

    def answer(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": str(self), "tbprof_version": __version__}
        for k, v in self.valid.items():
            out[k] = v[:200] if isinstance(v, list) else v
        return out


def _int_arg(args: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise AgentError(f"{name} must be an integer from {lo} to {hi}; got {value!r}")
    return value


def _str_arg(args: Mapping[str, Any], name: str, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise AgentError(f"the argument {name!r} is required")
        return None
    if not isinstance(value, str):
        raise AgentError(f"{name} must be a string; got {type(value).__name__}")
    return value


class Agent:
    """The answers of the agent tools for the runs of one logdir."""

    def __init__(self, profiles: Profiles) -> None:
        self.profiles = profiles

    # --- choosing ------------------------------------------------------------------------------
    def _run(self, name: str | None, who: str = "run") -> Run:
        runs = self.profiles.index.runs()
        if not runs:
            raise AgentError(f"{self.profiles.logdir}: no profiles found")
        if name is None:
            if len(runs) == 1:
                return next(iter(runs.values()))
            raise AgentError(f"the logdir holds {len(runs)} runs; name one with {who}=",
                             {"valid_runs": sorted(runs)})
        if name not in runs:
            raise AgentError(f"unknown {who} {name!r}", {"valid_runs": sorted(runs)})
        return runs[name]

    def _hosts(self, run: Run, host: str | None, multi_host: bool) -> list[str]:
        chosen = default_host(run, host, multi_host)
        if chosen not in (None, ALL_HOSTS) and chosen not in run.hosts:
            raise AgentError(f"unknown host {host!r} in run {run.name!r}",
                             {"valid_hosts": [*sorted(run.hosts), ALL_HOSTS]})
        try:
            return select_hosts(run, chosen)
        except TbprofError as e:
            raise AgentError(str(e), {"valid_hosts": [*sorted(run.hosts), ALL_HOSTS]}) from None

    def _hosts_of_rank(self, run: Run, hosts: Sequence[str], rank: Any) -> list[str]:
        """The hosts of ``hosts`` whose rank (a PyTorch trace's ``distributedInfo.rank``, else the
        host's position in the run) is ``rank``."""
        from tbprof.analyses.gpu.breakdown import rank_of

        if isinstance(rank, bool) or not isinstance(rank, int):
            raise AgentError(f"rank must be an integer; got {rank!r}")
        ranks = {h: rank_of(self.profiles.event_store(run, h), i) for i, h in enumerate(sorted(run.hosts))}
        chosen = [h for h in hosts if ranks[h] == rank]
        if not chosen:
            raise AgentError(f"no host of run {run.name!r} has rank {rank}",
                             {"valid_ranks": sorted(set(ranks.values())),
                              "hosts_by_rank": {str(r): h for h, r in sorted(ranks.items(), key=lambda hr: hr[1])}})
        return chosen

    def _provenance(self, run: Run, hosts: Sequence[str], tool: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"run": run.name, "run_kind": run.kind, "hosts": list(hosts)[:64],
                               "host_count": len(hosts), "run_host_count": len(run.hosts),
                               "combined": len(hosts) > 1, "tbprof_version": __version__}
        if len(hosts) > 64:
            out["hosts_note"] = f"the first 64 of {len(hosts)} hosts"
        if tool is not None:
            out["tool"] = tool
        return out

    def _result(self, run: Run, tool_name: str, host: str | None,
                options: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
        try:
            tool = self.profiles.tool(tool_name)
        except NotFound:
            raise AgentError(f"unknown tool {tool_name!r}", {"valid_tools": self._tool_names(run)}) from None
        hosts = self._hosts(run, host, tool.multi_host_for(run.traits))
        raw = {str(k): str(v) for k, v in (options or {}).items()}
        try:
            return self.profiles.compute(run, hosts, tool, raw), hosts
        except NoData as e:
            raise AgentError(str(e), {"valid_tools": self._tool_names(run)}) from None
        except BadParameter as e:
            raise AgentError(str(e), {"valid_options": [o.to_json() for o in tool.options],
                                      "valid_hosts": [*sorted(run.hosts), ALL_HOSTS]}) from None

    def _tool_names(self, run: Run) -> list[str]:
        return self.profiles.tools(run)

    # --- the tools -----------------------------------------------------------------------------
    def list_runs(self, args: Mapping[str, Any]) -> dict[str, Any]:
        max_bytes = _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, MAX_MAX_BYTES)
        offset = _int_arg(args, "offset", 0, 0, 10**9)
        runs = self.profiles.index.newest_first()
        rows = [{"run": r.name, "kind": r.kind, "host_count": len(r.hosts), "hosts": sorted(r.hosts)[:8]}
                for r in runs[offset:offset + MAX_LIMIT]]
        answer: dict[str, Any] = {"logdir": str(self.profiles.logdir), "total_runs": len(runs), "offset": offset,
                                  "order": "newest first", "tbprof_version": __version__}
        taken = fit_rows(answer, rows, "runs", max_bytes)
        if offset + taken < len(runs):
            answer["next"] = {"offset": offset + taken}
        return answer

    def summary(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.service.summary import summary

        run = self._run(_str_arg(args, "run"))
        out = plain(summary(self.profiles, run))
        top = out.pop("top_ops", None) or []
        answer: dict[str, Any] = {"provenance": self._provenance(run, out.get("hosts", list(run.hosts)), "summary"),
                                  **{k: v for k, v in out.items() if k != "hosts"}}
        answer["provenance"]["computed_by"] = {"step time, input %": "overview_page / input_pipeline_analyzer",
                                               "top_ops": "framework_op_stats",
                                               "device_idle_percent, communication_percent": "gpu_breakdown"}
        fit_rows(answer, top[:10], "top_ops", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
                                                      MAX_MAX_BYTES))
        return answer

    def list_tools(self, args: Mapping[str, Any]) -> dict[str, Any]:
        run = self._run(_str_arg(args, "run"))
        tools = []
        for name in self._tool_names(run):
            t = self.profiles.tool(name)
            tools.append({"tool": name, "title": t.title, "description": clip_cell(t.description)[0],
                          "combines_hosts": t.multi_host_for(run.traits),
                          "options": [o.name for o in t.options]})
        answer: dict[str, Any] = {"provenance": self._provenance(run, sorted(run.hosts)),
                                  "hint": "tool_table(run, tool) answers a tool's headline numbers and one table"}
        fit_rows(answer, tools, "tools", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, MAX_MAX_BYTES))
        return answer

    def tool_table(self, args: Mapping[str, Any]) -> dict[str, Any]:
        run = self._run(_str_arg(args, "run"))
        tool_name = _str_arg(args, "tool", required=True)
        assert tool_name is not None
        options = args.get("options") or {}
        if not isinstance(options, Mapping):
            raise AgentError("options must be an object of option name -> value")
        result, hosts = self._result(run, tool_name, _str_arg(args, "host"), options)
        max_bytes = _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, MAX_MAX_BYTES)
        offset = _int_arg(args, "offset", 0, 0, 10**12)
        limit = _int_arg(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        headline, omitted = scalars(result, skip=("tables", "schema_version"))
        answer: dict[str, Any] = {"provenance": self._provenance(run, hosts, tool_name), "headline": headline}
        tables = {k: v for k, v in result.get("tables", {}).items() if isinstance(v, Table)}
        answer["tables"] = {k: v.n_rows for k, v in tables.items()}
        if omitted:
            answer["omitted_fields"] = omitted
        if not tables:
            answer["note"] = f"tool {tool_name!r} has no tables for this run"
            return answer
        table_name = _str_arg(args, "table")
        try:
            name, table = pick_table(result, table_name, f"tool {tool_name!r}")
        except NotFound:
            raise AgentError(f"tool {tool_name!r} has no table {table_name!r}",
                             {"valid_tables": list(tables)}) from None
        answer["table"] = name
        valid_columns = [c.name for c in table.columns]
        columns = args.get("columns") or valid_columns
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise AgentError("columns must be a list of column names", {"valid_columns": valid_columns})
        unknown = [c for c in columns if table.column(c) is None]
        if unknown:
            raise AgentError(f"unknown column(s) {unknown} in table {name!r}", {"valid_columns": valid_columns})
        filters = args.get("filters") or {}
        if not isinstance(filters, Mapping):
            raise AgentError("filters must be an object of column -> regex or comparison ('>=10')",
                             {"valid_columns": valid_columns})
        sort = _str_arg(args, "sort")
        desc = args.get("descending")
        query = TableQuery(sort=sort, desc=desc if isinstance(desc, bool) else None, offset=offset, limit=limit,
                           filters=tuple((str(k), str(v)) for k, v in filters.items()))
        try:
            index, total = apply_query(table, query)
        except QueryError as e:
            raise AgentError(str(e), {"valid_columns": valid_columns}) from None
        picked = Table([table.column(c) for c in columns if table.column(c) is not None],  # type: ignore[misc]
                       {c: table.data[c] for c in columns})
        clipped = False
        rows = []
        for r in picked.rows(index):
            cells = []
            for v in r:
                cell, cut = clip_cell(plain(v))
                clipped = clipped or cut
                cells.append(cell)
            rows.append(cells)
        answer["columns"] = [{"name": c.name, "unit": c.unit, **({"description": c.description} if c.description
                                                                  else {})} for c in picked.columns]
        answer.update({"total_rows": total, "offset": offset,
                       "sort": query.sort or table.default_sort,
                       "descending": query.desc if query.desc is not None else
                       (table.default_desc if query.sort is None else False)})
        taken = fit_rows(answer, rows, "rows", max_bytes)
        answer["returned_rows"] = taken
        if clipped:
            answer["note"] = "strings longer than 400 characters are cut (…)"
        if taken == 0 and rows:
            answer["note"] = TOO_LARGE
        if offset + taken < total:
            answer["next"] = {"offset": offset + taken, "limit": limit,
                              "hint": "repeat the call with this offset, or narrow it with columns/filters"}
        return answer

    def find_events(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.timeline.search import SearchError, find_all

        run = self._run(_str_arg(args, "run"))
        query = _str_arg(args, "name", required=True)
        assert query is not None
        hosts = self._hosts(run, _str_arg(args, "host") or ALL_HOSTS, True)
        rank = args.get("rank")
        if rank is not None:
            hosts = self._hosts_of_rank(run, hosts, rank)
        start_us, end_us = args.get("start_us"), args.get("end_us")
        for label, v in (("start_us", start_us), ("end_us", end_us)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise AgentError(f"{label} must be a number of microseconds from the profile's start")
        offset = _int_arg(args, "offset", 0, 0, 10**12)
        limit = _int_arg(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        regex = bool(args.get("regex", False))
        rows: list[dict[str, Any]] = []
        total = 0
        for host in hosts:
            store = self.profiles.event_store(run, host)
            try:
                m = find_all(store, query, regex)
            except SearchError as e:
                raise AgentError(str(e)) from None
            keep = np.ones(m.row.shape[0], bool)
            if start_us is not None:
                keep &= m.start_ps >= int(float(start_us) * 1e6)
            if end_us is not None:
                keep &= m.start_ps < int(float(end_us) * 1e6)
            idx = np.nonzero(keep)[0]
            first = max(0, offset - total)
            for k in idx[first:first + max(0, limit - len(rows))].tolist():
                p, r = int(m.plane[k]), int(m.row[k])
                plane = store.planes[p]
                rows.append({"host": host, "plane": plane.name, "line": plane.line_names[int(plane.line_idx[r])],
                             "name": clip_cell(store.strings[int(plane.name_id[r])])[0],
                             "start_us": int(plane.start_ps[r]) / 1e6, "duration_us": int(plane.dur_ps[r]) / 1e6})
            total += int(idx.shape[0])
        answer: dict[str, Any] = {"provenance": self._provenance(run, hosts, "trace search"),
                                  "query": query, "regex": regex, "total_matches": total, "offset": offset,
                                  "times": "microseconds from each host's profile start"}
        taken = fit_rows(answer, rows, "events", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
                                                           MAX_MAX_BYTES))
        if taken == 0 and rows:
            answer["note"] = TOO_LARGE
        if offset + taken < total:
            answer["next"] = {"offset": offset + taken, "limit": limit}
        return answer

    def sql_tables(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.service.sql import sql_tables

        run = self._run(_str_arg(args, "run"))
        try:
            tables = sql_tables(self.profiles, run.name)
        except TbprofError as e:  # no DuckDB: the message names the extra
            raise AgentError(str(e)) from None
        rows = [{"name": t["name"], "columns": [f"{c['name']} {c['type']}" for c in t["columns"]]} for t in tables]
        answer: dict[str, Any] = {"provenance": self._provenance(run, sorted(run.hosts), "sql"),
                                  "hint": "sql(run, query): one SELECT over these views; every host's events "
                                          "are in `events` (column host)"}
        taken = fit_rows(answer, rows, "tables", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
                                                           MAX_MAX_BYTES))
        if taken < len(rows):
            answer["left_out"] = [r["name"] for r in rows[taken:]]
        return answer

    def sql(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.service.sql import run_sql

        run = self._run(_str_arg(args, "run"))
        query = _str_arg(args, "query", required=True)
        assert query is not None
        host = _str_arg(args, "host")
        hosts = self._hosts(run, host or ALL_HOSTS, True)
        max_rows = _int_arg(args, "max_rows", DEFAULT_LIMIT, 1, MAX_LIMIT)
        try:
            result = run_sql(self.profiles, run.name, query, host=None if host in (None, ALL_HOSTS) else host,
                             max_rows=max_rows)
        except TbprofError as e:
            raise AgentError(str(e), {"hint": "sql_tables(run) lists the views and their columns"}) from None
        rows = [[clip_cell(v)[0] for v in r] for r in result["rows"]]
        answer: dict[str, Any] = {"provenance": self._provenance(run, hosts, "sql"),
                                  "columns": result["columns"], "elapsed_ms": round(result["elapsed_ms"], 1)}
        taken = fit_rows(answer, rows, "rows", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
                                                         MAX_MAX_BYTES))
        answer["returned_rows"] = taken
        if taken == 0 and rows:
            answer["note"] = TOO_LARGE
        answer["more_rows"] = result["truncated"] or taken < len(rows)
        if answer["more_rows"]:
            answer["hint"] = ("more rows than returned: aggregate, add WHERE, or page with ORDER BY ... "
                              "LIMIT n OFFSET m")
        return answer

    def compare_runs(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.service.comparisons import SideSpec, compare_sides, gather

        base = self._run(_str_arg(args, "baseline_run", required=True), "baseline_run")
        cand = self._run(_str_arg(args, "candidate_run", required=True), "candidate_run")
        sides = []
        for run, key in ((base, "baseline_host"), (cand, "candidate_host")):
            host = _str_arg(args, key)
            if host is None and len(run.hosts) > 1:
                host = ALL_HOSTS
            self._hosts(run, host, True)
            sides.append(SideSpec(run=run.name, host=host))
        try:
            result = compare_sides(gather(self.profiles, sides[0]), gather(self.profiles, sides[1]), 0.95)
        except TbprofError as e:
            raise AgentError(str(e)) from None
        top = _int_arg(args, "top", 10, 1, 100)
        answer: dict[str, Any] = {
            "provenance": {"baseline": self._provenance(base, result["baseline"]["hosts"]),
                           "candidate": self._provenance(cand, result["candidate"]["hosts"]), "tool": "compare"},
            "verdict": plain(result["verdict"]), "step_time": plain(result["step_time"]),
            "unavailable": result["unavailable"], "notes": result["notes"][:10],
            "gate": "tbprof check BASELINE CANDIDATE --max-regression 5% exits 3 on a regression",
        }
        max_bytes = _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES, MAX_MAX_BYTES)
        # The largest changes of each table, as many as fit: top, then half as many, down to none.
        while top > 0:
            changes = {}
            for name in ("breakdown", "op_types", "kernels"):
                t = result.get("tables", {}).get(name)
                if isinstance(t, Table) and t.n_rows:
                    first = t.rows(np.arange(min(top, t.n_rows)))
                    changes[name] = {"columns": [c.name for c in t.columns][:8], "total_rows": t.n_rows,
                                     "rows": [[clip_cell(plain(v))[0] for v in r[:8]] for r in first]}
            if fit_rows(answer, [changes], "largest_changes", max_bytes):
                answer["largest_changes"] = changes
                answer["top"] = top
                return answer
            top //= 2
        answer.pop("largest_changes", None)
        answer["note"] = "the largest changes do not fit max_bytes; raise it to see them"
        return answer

    def explain_bottleneck(self, args: Mapping[str, Any]) -> dict[str, Any]:
        from tbprof.service.summary import summary

        run = self._run(_str_arg(args, "run"))
        s = plain(summary(self.profiles, run))
        hosts = s.get("hosts", sorted(run.hosts))
        evidence: list[dict[str, Any]] = []

        def cite(metric: str, value: Any, unit: str, tool: str) -> Any:
            evidence.append({"metric": metric, "value": value, "unit": unit, "computed_by": tool})
            return value

        step_ms = cite("avg_step_time_ms", s.get("avg_step_time_ms"), "ms", "overview_page")
        input_pct = cite("input_percent", s.get("input_percent"), "%", "input_pipeline_analyzer")
        idle = cite("device_idle_percent", s.get("device_idle_percent"), "%", "gpu_breakdown")
        exposed_pct = None
        tools = self._tool_names(run)
        if "collective_overlap" in tools:
            ov, _ = self._result(run, "collective_overlap", ALL_HOSTS if len(run.hosts) > 1 else None)
            exposed_us = ov.get("collective_exposed_us")
            cite("collective_exposed_us", exposed_us, "us", "collective_overlap")
            cite("collective_covered_percent", ov.get("collective_covered_percent"), "%", "collective_overlap")
            span_ms = s.get("span_ms")
            if exposed_us is not None and span_ms:
                # Exposed communication per rank as a share of the traced span.
                ranks = max(len(ov.get("ranks", [])), 1)
                exposed_pct = cite("exposed_communication_percent_of_span",
                                   min(100.0, 100.0 * exposed_us / ranks / (span_ms * 1000.0)), "%",
                                   "collective_overlap / summary")
        host_bound = None
        if "host_boundness" in tools:
            hb, _ = self._result(run, "host_boundness", ALL_HOSTS if len(run.hosts) > 1 else None)
            cite("idle_time_ratio_percent", hb.get("idle_time_ratio_percent"), "%", "host_boundness")
            cite("host_wait_share_percent", hb.get("host_wait_share_percent"), "%", "host_boundness")
            host_bound = hb.get("status") == "HOST_BOUND"
        top = (s.get("top_ops") or [])[:5]
        if top:
            cite("top_ops", [{"name": clip_cell(o.get("name"))[0], "self_time_us": o.get("self_time_us")} for o in top],
                 "us", "framework_op_stats")
        if s.get("step_count", 0) == 0 and step_ms is None:
            verdict = "undetermined: no steps were found"
            why = s.get("step_diagnosis") or "no step markers"
        elif input_pct is not None and input_pct >= INPUT_BOUND_PERCENT:
            verdict, why = "input-bound", f"{input_pct:.1f} % of the step waits for input (>= {INPUT_BOUND_PERCENT} %)"
        elif exposed_pct is not None and exposed_pct >= EXPOSED_COMMUNICATION_PERCENT:
            verdict, why = ("communication-bound",
                            f"collectives not hidden by compute take {exposed_pct:.1f} % of the span "
                            f"(>= {EXPOSED_COMMUNICATION_PERCENT} %)")
        elif host_bound:
            verdict, why = ("host-bound", "host_boundness: the device idles inside the steps (> 10 %) and the idle "
                                          "gaps mostly wait for the host's launches (>= 50 %)")
        elif host_bound is None and idle is not None and idle >= DEVICE_IDLE_PERCENT:
            verdict, why = ("host-bound", f"the device is idle {idle:.1f} % of the time (>= {DEVICE_IDLE_PERCENT} %): "
                                          "it waits for the host to launch work")
        elif top:
            verdict, why = "compute-bound", f"the device is busy; the largest op is {top[0].get('name')!r}"
        else:
            verdict, why = "undetermined", "no op times were found"
        answer: dict[str, Any] = {"provenance": self._provenance(run, hosts, "explain_bottleneck"),
                                  "verdict": verdict, "why": why,
                                  "rules": {"input-bound": f"input_percent >= {INPUT_BOUND_PERCENT}",
                                            "communication-bound":
                                                f"exposed communication >= {EXPOSED_COMMUNICATION_PERCENT} % of span",
                                            "host-bound": "host_boundness says HOST_BOUND (GPU runs); else "
                                                          f"device_idle_percent >= {DEVICE_IDLE_PERCENT}",
                                            "compute-bound": "otherwise"},
                                  "next_steps": _next_steps(verdict)}
        fit_rows(answer, evidence, "evidence", _int_arg(args, "max_bytes", DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
                                                        MAX_MAX_BYTES))
        return answer


def _next_steps(verdict: str) -> list[str]:
    return {
        "input-bound": ["tool_table(tool='input_pipeline_analyzer')", "tool_table(tool='tf_data_bottleneck_analysis')"],
        "communication-bound": ["tool_table(tool='collective_overlap', sort='exposed_us', descending=True)",
                                "tool_table(tool='collectives')"],
        "host-bound": ["tool_table(tool='host_boundness')",
                       "tool_table(tool='gpu_breakdown', table='idle_time_breakdown')",
                       "find_events(name='cudaLaunchKernel')"],
        "compute-bound": ["tool_table(tool='framework_op_stats')", "tool_table(tool='kernel_stats')"],
    }.get(verdict, ["summary(run)", "list_tools(run)"])
