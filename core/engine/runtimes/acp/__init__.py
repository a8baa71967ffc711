"""Agent processes over the Agent Client Protocol (the `agent-client-protocol` package): a
role's session is an agent process started in the run's own directory, a turn is one
`session/prompt`, and the agent reaches the gateway's tools over MCP with its run's token.

- `runtime.py`: the runtime — commands, environments and secrets, directories, process slots.
- `session.py`: one session — opening (load or new), prompts, permissions, cancel, close.
- `process.py`: one process — spawning, the capped JSON-RPC lines, stderr, stopping.
- `updates.py`: what a prompt's session updates amount to (pure): reply, steps, tool calls.
- `render.py`: a turn's prompt as text (pure).
- `policy.py`: permission requests answered by the manifest (pure).
"""

from core.engine.runtimes.acp.runtime import AcpRuntime

__all__ = ["AcpRuntime"]
