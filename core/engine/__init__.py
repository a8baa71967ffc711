"""The engine: what hosts the agents and acts on the model, with I/O.

- `host/`: the run host — agent sessions, slots, idle sleep and wake, turns, transcripts,
  retries; it decides when a run is prompted and commits each turn's end through the drivers'
  rules in `core.model.runs`;
- `runtimes/`: what backs a role (built-in Python agents, ACP agent processes, remote A2A agents,
  OpenAI-compatible models), one interface for all;
- `tools`: the agent tools, one implementation offered over MCP and plain HTTP.

The engine reads and writes through `core.storage`, never SQL of its own.
"""
