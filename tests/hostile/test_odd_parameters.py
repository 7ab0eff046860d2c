"""Every tool option and route parameter, given odd values, answers 2xx or a 4xx naming what is
allowed: never a 5xx (issue #25: ``duration_ratio=1.5``, ``consecutive_kernel_delay_us=1e309``,
``step=99999999999999999999999``, ``index.html%00.js``, op_profile on a 5,000-level name scope).

Table-driven over the tool registry (``service/tools.py``), through a real ``tbprof serve``.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from tbprof.service.tools import all_tools
from tests.hostile.profiles import copy_runs, deep_scope_run
from tests.servers import Server, tbprof_serve

ODD_VALUES = ("inf", "-inf", "nan", "1e309", "-1e309", "-1", "1.5", "-1.5", "99999999999999999999999",
              "-99999999999999999999999", "9" * 5000, "0", "x", " 1", "0x10", "1_0", "\x00", "é", "*" * 3000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, list[str]]]]:
    root = tmp_path_factory.mktemp("odd")
    logdir = root / "logs"
    copy_runs(logdir, "custom_loop", "jax_mlp", "torch_ddp", "tf1_timeline")
    deep_scope_run(logdir)
    with tbprof_serve(logdir, root / "cache", root / "server.log") as s:
        status, body = _get(s, "runs")
        assert status == 200 and body is not None
        runs_by_tool: dict[str, list[str]] = {}
        for run in body["runs"]:
            for tool in run["tools"]:
                runs_by_tool.setdefault(tool, []).append(run["run"])
        yield s, runs_by_tool
        assert "Traceback" not in s.log(), s.log()[-3000:]


def _get(server: Server, route: str, query: dict[str, str] | None = None) -> tuple[int, dict[str, Any] | None]:
    url = urllib.parse.urlsplit(server.api)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=120)
    try:
        conn.request("GET", url.path + route + ("?" + urllib.parse.urlencode(query) if query else ""))
        resp = conn.getresponse()
        raw = resp.read()
    finally:
        conn.close()
    try:
        return resp.status, json.loads(raw) if raw and resp.getheader("Content-Type", "").startswith(
            "application/json") else None
    except ValueError:
        return resp.status, None


def _host_args(runs: list[str]) -> dict[str, str]:
    return {"run": runs[0], "host": "__all__"} if runs[0].startswith("torch_ddp") else {"run": runs[0]}


def _check(status: int, body: dict[str, Any] | None, what: str) -> None:
    assert status < 500, f"{what}: {status} {body}"
    if status >= 400:
        assert body is not None and body.get("error"), f"{what}: {status} {body}"


OPTIONS = [(t.name, o.name) for t in all_tools() for o in t.options]


@pytest.mark.parametrize(("tool", "option"), OPTIONS, ids=[f"{t}.{o}" for t, o in OPTIONS])
def test_every_tool_option_answers_odd_values(server: tuple[Server, dict[str, list[str]]], tool: str,
                                              option: str) -> None:
    s, runs_by_tool = server
    runs = runs_by_tool.get(tool)
    assert runs, f"no demo run has {tool}: add one to the logdir"
    for value in ODD_VALUES:
        status, body = _get(s, "data", {**_host_args(runs), "tool": tool, option: value})
        _check(status, body, f"{tool} {option}={value[:20]!r}")


@pytest.mark.parametrize(("tool", "option", "value", "allowed"), [
    ("gpu_breakdown", "duration_ratio", "1.5", "from 0 to 1"),
    ("gpu_breakdown", "duration_ratio", "-1", "from 0 to 1"),
    ("gpu_breakdown", "consecutive_kernel_delay_us", "inf", "from 0 to"),
    ("gpu_breakdown", "consecutive_kernel_delay_us", "1e309", "from 0 to"),
    ("pod_viewer", "step", "99999999999999999999999", "from -1 to 2147483647"),
    ("op_profile", "max_depth", "100000", "from 0 to 200"),
    ("op_profile", "order_by", "x", "one of self_time"),
])
def test_out_of_range_names_the_allowed_range(server: tuple[Server, dict[str, list[str]]], tool: str,
                                              option: str, value: str, allowed: str) -> None:
    s, runs_by_tool = server
    status, body = _get(s, "data", {**_host_args(runs_by_tool[tool]), "tool": tool, option: value})
    assert status == 400 and body is not None, (status, body)
    assert option in body["error"] and allowed in body["error"], body


def test_op_profile_of_a_5000_level_name_scope(server: tuple[Server, dict[str, list[str]]]) -> None:
    s, runs_by_tool = server
    run = next(r for r in runs_by_tool["op_profile"] if r.startswith("deep_scope"))
    for query in ({}, {"side": "host"}, {"side": "host", "max_depth": "200"}):
        status, body = _get(s, "data", {"run": run, "tool": "op_profile", **query})
        assert status == 200, (query, status, body)
    # The tree is cut at max_depth: walk the deepest branch of the name-scope tree.
    assert body is not None
    depth, node = 0, body["by_name_scope"]
    while node["children"]:
        node, depth = node["children"][0], depth + 1
        if node["name"] != "s":
            break
    assert depth <= 200


@pytest.mark.parametrize("route", ["index.html%00.js", "index.html%00", "a" * 5000, "%2e%2e/%2e%2e/etc/passwd",
                                   "assets/..%2f..%2fsetup.py"])
def test_odd_static_paths_are_404(server: tuple[Server, dict[str, list[str]]], route: str) -> None:
    s, _ = server
    status, body = _get(s, route)
    assert status == 404 and body is not None and body["kind"] == "not_found", (status, body)


@pytest.mark.parametrize("param", ["offset", "limit", "rows", "sort", "desc", "table", "filter.name", "host"])
def test_route_parameters_answer_odd_values(server: tuple[Server, dict[str, list[str]]], param: str) -> None:
    s, runs_by_tool = server
    base = {**_host_args(runs_by_tool["framework_op_stats"]), "tool": "framework_op_stats"}
    for route in ("data", "table", "csv"):
        for value in ODD_VALUES:
            status, body = _get(s, route, {**base, param: value})
            _check(status, body, f"{route} {param}={value[:20]!r}")


@pytest.mark.parametrize(("route", "params"), [
    ("trace", ("start_ps", "end_ps", "width_px", "format", "tracks")),
    ("trace_search", ("q", "regex", "offset", "limit", "from_ps")),
    ("trace_event", ("track", "index", "plane", "row")),
    ("trace_range", ("start_ps", "end_ps", "limit", "tracks")),
    ("compare", ("confidence", "baseline_run", "baseline_host")),
])
def test_trace_and_compare_parameters(server: tuple[Server, dict[str, list[str]]], route: str,
                                      params: tuple[str, ...]) -> None:
    s, runs_by_tool = server
    run = runs_by_tool["trace_viewer"][0]
    for param in params:
        for value in ODD_VALUES:
            status, body = _get(s, route, {"run": run, "q": "a", param: value})
            _check(status, body, f"{route} {param}={value[:20]!r}")


@pytest.mark.parametrize("param", ["offset", "limit", "q", "run", "refresh"])
def test_run_list_parameters(server: tuple[Server, dict[str, list[str]]], param: str) -> None:
    """GET runs' page, search and one-run lookup (the paged run picker's requests)."""
    s, _ = server
    for value in ODD_VALUES:
        status, body = _get(s, "runs", {"offset": "0", "limit": "200", param: value})
        _check(status, body, f"runs {param}={value[:20]!r}")
