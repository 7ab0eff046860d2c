"""Every HTTP route of tbprof, in one werkzeug ``Map`` (relative to the plugin prefix).

Each rule names its methods: GET rules also answer HEAD (werkzeug adds it, and a HEAD never
runs more than the GET would); POST rules answer nothing else, so a HEAD cannot capture.
"""

from __future__ import annotations

from werkzeug.routing import Map, Rule

from tbprof.http.routes import capture, compare, core, sql, tfprof, trace

URL_MAP = Map([
    Rule("/runs", endpoint=core.runs, methods=["GET"]),
    Rule("/tools", endpoint=core.tools, methods=["GET"]),
    Rule("/settings", endpoint=core.settings, methods=["GET"]),
    Rule("/progress", endpoint=core.progress, methods=["GET"]),
    Rule("/data", endpoint=core.data, methods=["GET"]),
    Rule("/table", endpoint=core.table, methods=["GET"]),
    Rule("/csv", endpoint=core.csv, methods=["GET"]),
    Rule("/trace", endpoint=trace.trace, methods=["GET"]),
    Rule("/trace_search", endpoint=trace.trace_search, methods=["GET"]),
    Rule("/trace_event", endpoint=trace.trace_event, methods=["GET"]),
    Rule("/trace_range", endpoint=trace.trace_range, methods=["GET"]),
    Rule("/capture", endpoint=capture.capture_route, methods=["POST"]),
    Rule("/sql", endpoint=sql.sql, methods=["POST"]),
    Rule("/sql_tables", endpoint=sql.tables, methods=["GET"]),
    Rule("/tfprof_export", endpoint=tfprof.tfprof_export_route, methods=["GET"]),
    Rule("/compare", endpoint=compare.compare, methods=["GET"]),
    Rule("/compare_table", endpoint=compare.compare_table, methods=["GET"]),
    Rule("/compare_csv", endpoint=compare.compare_csv, methods=["GET"]),
], strict_slashes=False)
