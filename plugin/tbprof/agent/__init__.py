"""tbprof for coding agents: the MCP server (``tbprof mcp``), its tools' answers, and the skill
(``tbprof install-skill``). An edge like ``http/`` and ``cli/``: it only calls the layers below."""
