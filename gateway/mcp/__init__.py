"""The MCP endpoint: the agent tools offered to agents over the Model Context Protocol.

`server.py` builds the MCP server (the `mcp` SDK) over the one tool implementation
(`core.engine.tools`); `routes.py` mounts its Streamable HTTP transport at `/mcp` on the app,
authenticated by a run's token.
"""
