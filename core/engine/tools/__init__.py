"""The agent's tools: one implementation each, offered over MCP and over plain HTTP, called with
the calling run as context.

- `base`: how a tool is declared (`@tool` on the method that does it) — name, description,
  JSON Schema, result and its schema, effects and call from that one declaration;
- `results`: the JSON Schemas of the tools' answers;
- `memory`, `conversation`, `subscriptions`, `tasks`: the tools, grouped by what they act on;
- `run`: `RunTools` (every group, for one run), `TOOLS` and `call_tool`;
- `budget`: the turn's `ToolBudget`; `docs`: the docs' table of the tools (docs/api.md).
"""

from core.engine.tools.base import Tool
from core.engine.tools.budget import ToolBudget
from core.engine.tools.run import TOOLS, RunTools, call_tool

__all__ = ["TOOLS", "RunTools", "Tool", "ToolBudget", "call_tool"]
