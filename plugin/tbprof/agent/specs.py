"""THE list of agent tools: name, description and JSON schema of the arguments, and the ``Agent``
method that answers it. The MCP server lists them in this order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tbprof.agent.bounds import DEFAULT_LIMIT, DEFAULT_MAX_BYTES, MAX_LIMIT, MAX_MAX_BYTES, MIN_MAX_BYTES

_RUN = {"type": "string", "description": "a run name from list_runs (may be left out when the logdir has one run)"}
_HOST = {"type": "string", "description": "a host (rank) of the run, or __all__ for all hosts combined; default: "
                                          "all hosts for tools that combine them, else the first"}
_MAX_BYTES = {"type": "integer", "minimum": MIN_MAX_BYTES, "maximum": MAX_MAX_BYTES, "default": DEFAULT_MAX_BYTES,
              "description": "the most bytes of JSON the answer may take; rows past it come with `next`"}
_OFFSET = {"type": "integer", "minimum": 0, "default": 0, "description": "rows to skip (from a previous `next`)"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
          "description": "the most rows to return"}


def _schema(required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


@dataclass(frozen=True)
class AgentTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    method: str  # the Agent method that answers it


AGENT_TOOLS: tuple[AgentTool, ...] = (
    AgentTool("list_runs", "List the profiled runs of the logdir (newest first): name, kind (xspace, pytorch, "
              "tf1_timeline, tfprof, ...), hosts. Start here.", _schema(offset=_OFFSET, max_bytes=_MAX_BYTES),
              "list_runs"),
    AgentTool("summary", "The headline numbers of a run: steps and average step time, input %, device idle and "
              "communication %, the top ops by self time. Each number names the tool that computed it.",
              _schema(run=_RUN, max_bytes=_MAX_BYTES), "summary"),
    AgentTool("list_tools", "The analysis tools that have data for a run (overview_page, framework_op_stats, "
              "kernel_stats, gpu_breakdown, collective_overlap, ...), with their options.",
              _schema(run=_RUN, max_bytes=_MAX_BYTES), "list_tools"),
    AgentTool("tool_table", "One tool's result: its headline numbers and one of its tables, with column selection, "
              "filters (regex for text columns, '>=10' style for numbers), sorting and paging. The answer gives "
              "total_rows and `next` (the offset of the next page).",
              _schema(("tool",), run=_RUN, tool={"type": "string", "description": "a tool from list_tools"},
                      host=_HOST, table={"type": "string", "description": "a table of the tool (default: its first)"},
                      columns={"type": "array", "items": {"type": "string"}, "description": "columns to return"},
                      filters={"type": "object", "additionalProperties": {"type": "string"},
                               "description": "column -> regex (text) or comparison like '>=10' (numbers)"},
                      sort={"type": "string", "description": "column to sort by (default: the table's own order)"},
                      descending={"type": "boolean"}, offset=_OFFSET, limit=_LIMIT,
                      options={"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]},
                               "description": "the tool's options (list_tools names them)"},
                      max_bytes=_MAX_BYTES), "tool_table"),
    AgentTool("find_events", "Find trace events by name (case-insensitive substring, or a regex), optionally in a "
              "time window (microseconds from the profile's start) and on one host or rank. Returns host, plane, "
              "line (thread or stream), name, start and duration.",
              _schema(("name",), run=_RUN, name={"type": "string", "description": "text or regex to match"},
                      regex={"type": "boolean", "default": False}, host=_HOST,
                      rank={"type": "integer", "minimum": 0,
                            "description": "only this rank's host (PyTorch: distributedInfo.rank; else the host's "
                                           "position in the run)"},
                      start_us={"type": "number", "description": "only events starting at or after this time"},
                      end_us={"type": "number", "description": "only events starting before this time"},
                      offset=_OFFSET, limit=_LIMIT, max_bytes=_MAX_BYTES), "find_events"),
    AgentTool("sql_tables", "The SQL views of a run and their columns: `events` (every host's and plane's trace "
              "events, with step, times in ns) and the pages' tables (steps, ops, kernels, memory, hlo_ops, where the "
              "run has them).", _schema(run=_RUN, max_bytes=_MAX_BYTES), "sql_tables"),
    AgentTool("sql", "One read-only SQL SELECT (DuckDB dialect) over a run's views (sql_tables lists them), every "
              "host at once unless `host` names one. Rows past max_rows or the byte bound are left out "
              "(`more_rows`): aggregate, filter, or page with ORDER BY ... LIMIT/OFFSET.",
              _schema(("query",), run=_RUN, query={"type": "string", "description": "one SELECT statement"},
                      host=_HOST, max_rows={"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                            "default": DEFAULT_LIMIT},
                      max_bytes=_MAX_BYTES), "sql"),
    AgentTool("compare_runs", "Compare two runs of the logdir: step-time change with its confidence interval and "
              "verdict, the step breakdown, the op types and kernels that changed most.",
              _schema(("baseline_run", "candidate_run"), baseline_run=_RUN, candidate_run=_RUN,
                      baseline_host=_HOST, candidate_host=_HOST,
                      top={"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                      max_bytes=_MAX_BYTES), "compare_runs"),
    AgentTool("explain_bottleneck", "The run's bottleneck (input-bound, communication-bound, host-bound, "
              "compute-bound) by stated rules, with every number behind the verdict and the tool that computed it, "
              "and the calls to make next.", _schema(run=_RUN, max_bytes=_MAX_BYTES), "explain_bottleneck"),
)
