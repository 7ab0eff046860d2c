"""``tbprof mcp`` as an agent meets it: started as a subprocess and driven over stdio by the MCP
SDK's own client. Every tool is called on the demo profiles; a large table is paged through to
its end; unknown runs, hosts, tools and columns get errors that list the valid ones; and no
answer is larger than its byte bound."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tbprof.agent.bounds import DEFAULT_MAX_BYTES
from tbprof.agent.specs import AGENT_TOOLS

REPO = Path(__file__).resolve().parent.parent.parent
DDP_RUN = "torch_ddp"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory, ) -> Path:
    """Two real runs: a 2-rank PyTorch DDP job and a 2-GPU JAX XSpace profile."""
    root = tmp_path_factory.mktemp("agent_logdir")
    shutil.copytree(REPO / "demo_logs" / "torch_ddp", root / "torch_ddp")
    shutil.copytree(REPO / "demo_logs" / "jax_mlp", root / "jax_mlp")
    return root


Session = Callable[[ClientSession], Awaitable[None]]


def drive(logdir: Path, cache: Path, body: Session) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "plugin")}
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "tbprof.cli", "mcp", str(logdir), "--cache-dir", str(cache)],
                                   env=env, cwd=str(REPO))

    async def main() -> None:
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await body(session)

    before = sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in logdir.rglob("*"))
    anyio.run(main)
    # Nothing in the logdir is written (the converted stores go to the cache dir).
    assert sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in logdir.rglob("*")) == before


async def call(session: ClientSession, name: str, args: dict[str, Any],
               bound: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, Any], bool]:
    result = await session.call_tool(name, args)
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text.encode()) <= bound, f"{name} answered {len(text.encode())} bytes > {bound}"
    return json.loads(text), bool(result.is_error)


def test_every_tool_listed_and_answering(logdir: Path, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == [t.name for t in AGENT_TOOLS]
        for t in listed:
            assert t.description and t.input_schema["type"] == "object"
        runs, err = await call(session, "list_runs", {})
        assert not err
        names = {r["run"] for r in runs["runs"]}
        assert DDP_RUN in names and runs["total_runs"] == 2
        jax_run = next(n for n in names if n.startswith("jax_mlp"))
        calls: list[tuple[str, dict[str, Any]]] = [
            ("summary", {"run": DDP_RUN}),
            ("list_tools", {"run": jax_run}),
            ("tool_table", {"run": DDP_RUN, "tool": "collective_overlap", "sort": "exposed_us", "descending": True,
                            "limit": 5}),
            ("tool_table", {"run": jax_run, "tool": "kernel_stats", "columns": ["kernel_name", "total_duration_us"]}),
            ("find_events", {"run": DDP_RUN, "name": "ncclDevKernel", "limit": 5}),
            ("compare_runs", {"baseline_run": DDP_RUN, "candidate_run": DDP_RUN}),
            ("explain_bottleneck", {"run": DDP_RUN}),
            ("explain_bottleneck", {"run": jax_run}),
            ("sql_tables", {"run": DDP_RUN}),
            ("sql", {"run": DDP_RUN, "query": "SELECT host, count(*) AS n FROM events GROUP BY host ORDER BY host"}),
        ]
        for name, args in calls:
            out, err = await call(session, name, args)
            assert not err, out
            prov = out["provenance"]
            prov = prov.get("baseline", prov)
            assert prov["tbprof_version"] and prov["hosts"]
        overlap, _ = await call(session, "tool_table", calls[2][1])
        col = [c["name"] for c in overlap["columns"]].index("exposed_us")
        exposed = [r[col] for r in overlap["rows"]]
        assert exposed == sorted(exposed, reverse=True)
        assert overlap["provenance"]["combined"] is True and overlap["provenance"]["host_count"] == 2
        verdict, _ = await call(session, "explain_bottleneck", {"run": DDP_RUN})
        assert verdict["verdict"] in ("input-bound", "communication-bound", "host-bound", "compute-bound")
        assert all(e["computed_by"] for e in verdict["evidence"])
        counts, _ = await call(session, "sql", calls[-1][1])
        # Every host's events at once: one row per rank.
        assert [r[0] for r in counts["rows"]] == sorted(h for h in overlap["provenance"]["hosts"])
        assert counts["provenance"]["combined"] is True
        found, _ = await call(session, "find_events", {"run": DDP_RUN, "name": "ncclDevKernel", "limit": 5})
        assert len(found["events"]) == 5 and found["total_matches"] > 5 and found["next"]["offset"] == 5
        # One rank: the rank-1 trace's host only (its distributedInfo says rank 1), half the matches.
        one, err = await call(session, "find_events", {"run": DDP_RUN, "name": "ncclDevKernel", "rank": 1})
        assert not err and {e["host"] for e in one["events"]} == {h for h in overlap["provenance"]["hosts"]
                                                                 if h.startswith("rank1")}
        assert 0 < one["total_matches"] < found["total_matches"]
        bad, err = await call(session, "find_events", {"run": DDP_RUN, "name": "nccl", "rank": 7})
        assert err and bad["valid_ranks"] == [0, 1]

    drive(logdir, tmp_path / "cache", body)


def test_pages_through_a_large_table_within_the_bound(logdir: Path, tmp_path: Path) -> None:
    bound = 4_000

    async def body(session: ClientSession) -> None:
        args: dict[str, Any] = {"run": DDP_RUN, "tool": "collective_overlap", "table": "events",
                                "columns": ["host", "name", "start_us", "exposed_us"], "limit": 200,
                                "sort": "start_us", "max_bytes": bound}
        rows: list[list[Any]] = []
        pages = 0
        total = None
        offset = 0
        while True:
            out, err = await call(session, "tool_table", {**args, "offset": offset}, bound)
            assert not err, out
            pages += 1
            total = out["total_rows"]
            rows += out["rows"]
            if "next" not in out:
                break
            assert out["next"]["offset"] == offset + out["returned_rows"]
            offset = out["next"]["offset"]
        assert pages > 2  # the byte bound, not the limit, cut the pages
        assert len(rows) == total
        starts = [r[2] for r in rows]
        assert starts == sorted(starts)

    drive(logdir, tmp_path / "cache", body)


def test_errors_say_what_is_valid(logdir: Path, tmp_path: Path) -> None:
    async def body(session: ClientSession) -> None:
        out, err = await call(session, "summary", {"run": "no_such_run"})
        assert err and "no_such_run" in out["error"] and DDP_RUN in out["valid_runs"]
        out, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "no_such_tool"})
        assert err and "collective_overlap" in out["valid_tools"]
        out, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "collective_overlap",
                                                      "host": "no_such_host"})
        assert err and any(h.startswith("rank0") for h in out["valid_hosts"])
        out, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "collective_overlap",
                                                      "columns": ["no_such_column"]})
        assert err and "exposed_us" in out["valid_columns"]
        out, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "collective_overlap",
                                                      "filters": {"no_such_column": "x"}})
        assert err and "exposed_us" in out["valid_columns"]
        out, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "collective_overlap",
                                                      "table": "no_such_table"})
        assert err and out["valid_tables"] == ["events", "summary"]
        out, err = await call(session, "no_such_tool", {})
        assert err and "list_runs" in out["valid_tools"]
        out, err = await call(session, "summary", {"run": DDP_RUN, "bogus": 1})
        assert err and "run" in out["valid_arguments"]
        out, err = await call(session, "sql", {"run": DDP_RUN, "query": "SELECT no_such_column FROM events"})
        assert err and "no_such_column" in out["error"] and "sql_tables" in out["hint"]
        out, err = await call(session, "sql", {"run": DDP_RUN, "query": "DROP TABLE events"})
        assert err and "SELECT" in out["error"]
        out, err = await call(session, "summary", {})  # two runs: which one?
        assert err and DDP_RUN in out["valid_runs"]

    drive(logdir, tmp_path / "cache", body)


def test_without_the_sdk_the_command_names_the_extra(tmp_path: Path) -> None:
    import subprocess

    code = ("import sys; sys.modules['mcp'] = None; sys.modules['mcp.types'] = None\n"
            "from tbprof.cli.main import main\n"
            f"sys.exit(main(['mcp', {str(REPO / 'demo_logs' / 'torch_cnn')!r}, '--cache-dir', {str(tmp_path)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "plugin")}, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "tbprof[agent]" in done.stderr


def test_the_smallest_bound_holds_for_every_tool(logdir: Path, tmp_path: Path) -> None:
    """max_bytes at its minimum: every answer still fits (rows cut, fewer changes, or a refusal
    that says to raise it), checked on the wire by ``call``."""
    from tbprof.agent.bounds import MIN_MAX_BYTES

    async def body(session: ClientSession) -> None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("list_runs", {}), ("summary", {"run": DDP_RUN}), ("list_tools", {"run": DDP_RUN}),
            ("tool_table", {"run": DDP_RUN, "tool": "collective_overlap", "limit": 1000}),
            ("find_events", {"run": DDP_RUN, "name": "a", "limit": 1000}),
            ("compare_runs", {"baseline_run": DDP_RUN, "candidate_run": DDP_RUN, "top": 100}),
            ("explain_bottleneck", {"run": DDP_RUN}), ("sql_tables", {"run": DDP_RUN}),
            ("sql", {"run": DDP_RUN, "query": "SELECT * FROM events", "max_rows": 1000}),
        ]
        for name, args in calls:
            out, err = await call(session, name, {**args, "max_bytes": MIN_MAX_BYTES}, MIN_MAX_BYTES)
            assert not err or "max_bytes" in out["error"], (name, out)
        table, err = await call(session, "tool_table", {"run": DDP_RUN, "tool": "collective_overlap",
                                                        "max_bytes": MIN_MAX_BYTES}, MIN_MAX_BYTES)
        assert not err and 0 < table["returned_rows"] < table["total_rows"]

    drive(logdir, tmp_path / "cache", body)
