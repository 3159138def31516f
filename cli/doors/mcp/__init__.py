"""snapstore mcp: the agent's own door (a stdio Model Context Protocol server)."""
