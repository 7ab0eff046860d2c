"""``tbprof mcp``: the agent tools (``agent/specs.py``) over the Model Context Protocol on stdio,
with the official SDK (the ``tbprof[agent]`` extra).

Each call runs in a worker thread (the analyses block); its answer is one JSON text block and the
same object as structured content. A refusal is an error result whose JSON says what is valid.
"""

from __future__ import annotations

import json
from typing import Any

from tbprof import __version__
from tbprof.agent.answers import Agent, AgentError
from tbprof.agent.bounds import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, MIN_MAX_BYTES, encoded_size
from tbprof.agent.specs import AGENT_TOOLS
from tbprof.errors import TbprofError

MISSING_SDK = ("tbprof mcp needs the MCP SDK: pip install 'tbprof[agent]' (or pip install mcp==2.3.0)")

INSTRUCTIONS = ("tbprof analyses TensorFlow, JAX and PyTorch profiles. Start with list_runs, then "
                "explain_bottleneck or summary; tool_table pages through any tool's table; every answer is "
                "bounded and says how to get the next page.")


def answer(agent: Agent, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """(the JSON answer, whether it is an error) of one tool call, never larger than its bound."""
    out, is_error = _answer(agent, name, arguments)
    bound = (arguments or {}).get("max_bytes", DEFAULT_MAX_BYTES)
    if isinstance(bound, bool) or not isinstance(bound, int) or not MIN_MAX_BYTES <= bound <= MAX_MAX_BYTES:
        bound = DEFAULT_MAX_BYTES
    size = encoded_size(out)
    if size > bound:
        # Rows are cut to fit already; what is left over is a long list of hosts, runs or notes.
        out = {"error": f"the answer takes {size} bytes even with its rows cut, over max_bytes={bound}: raise "
                        f"max_bytes (up to {MAX_MAX_BYTES}) or narrow the call (host=, columns=, filters=)",
               "size_bytes": size, "tbprof_version": __version__}
        is_error = True
    return out, is_error


def _answer(agent: Agent, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
    spec = next((t for t in AGENT_TOOLS if t.name == name), None)
    if spec is None:
        return AgentError(f"unknown tool {name!r}", {"valid_tools": [t.name for t in AGENT_TOOLS]}).answer(), True
    args = dict(arguments or {})
    allowed = set(spec.input_schema["properties"])
    unknown = sorted(set(args) - allowed)
    try:
        if unknown:
            raise AgentError(f"unknown argument(s) {unknown} for {name}", {"valid_arguments": sorted(allowed)})
        return getattr(agent, spec.method)(args), False
    except AgentError as e:
        return e.answer(), True
    except TbprofError as e:  # an unreadable profile, a refused parameter: the message says which
        return {"error": str(e), "kind": e.kind, "tbprof_version": __version__}, True


def serve(agent: Agent) -> None:
    """Serves the agent tools on stdin/stdout until the client closes the stream."""
    try:
        import anyio
        import mcp.types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise SystemExit(MISSING_SDK) from None

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=t.name, description=t.description,
                                                       input_schema=t.input_schema) for t in AGENT_TOOLS])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        out, is_error = await anyio.to_thread.run_sync(answer, agent, params.name, params.arguments)
        # As the HTTP app after a response: converted stores to the disk cache, then warm-ups.
        agent.profiles.after_request()
        text = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=out,
                                    is_error=is_error)

    server: Server[Any] = Server("tbprof", version=__version__, instructions=INSTRUCTIONS,
                                 on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
