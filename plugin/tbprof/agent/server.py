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
from tbprof.agent.specs import AGENT_TOOLS
from tbprof.errors import TbprofError

MISSING_SDK = ("tbprof mcp needs the MCP SDK: pip install 'tbprof[agent]' (or pip install mcp==2.3.0)")

INSTRUCTIONS = ("tbprof analyses TensorFlow, JAX and PyTorch profiles. Start with list_runs, then "
                "explain_bottleneck or summary; tool_table pages through any tool's table; every answer is "
                "bounded and says how to get the next page.")


def answer(agent: Agent, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """(the JSON answer, whether it is an error) of one tool call."""
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
        text = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=out,
                                    is_error=is_error)

    server: Server[Any] = Server("tbprof", version=__version__, instructions=INSTRUCTIONS,
                                 on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
