"""The tool calls one turn may make (the role's `max_tool_calls_per_turn`).

One budget is counted across every way the run's tools are reached — in process,
`POST /api/v1/tools/{name}` and MCP — since each of those builds its `RunTools` with the running
turn's budget. A call past the limit is refused with `LimitReached` (`tool_budget_spent`) before
it does anything; the refusals are counted for the turn's transcript.
"""

from __future__ import annotations

from core.model.errors import LimitReached


class ToolBudget:
    __slots__ = ("limit", "refused", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.refused = 0

    def spend(self, name: str) -> None:
        if self.used >= self.limit:
            self.refused += 1
            raise LimitReached(
                f"this turn has made the {self.limit} tool calls its role allows "
                f"(max_tool_calls_per_turn); {name} was not run — answer with what you have",
                code="tool_budget_spent",
            )
        self.used += 1
