"""The tools of one run, and calling them by name.

`RunTools` serves a conversation run with every tool group. Built-in agents call its methods in
process during a turn; remote agents call the same methods by name through `call_tool` (over
`POST /api/v1/tools/{name}` and MCP), with the run named by its token.

`TOOLS` is every declared tool, in the order they are offered (every list of tools shows this
order); a tool declared but left out of it fails at import.

Traced (`core.tracing`), a call by name is a `rolecall.tool_call` span in the run's turn, with the
tool's name and the call's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core import tracing
from core.engine.tools.approvals import ApprovalTools
from core.engine.tools.base import Tool, offered
from core.engine.tools.conversation import ConversationTools
from core.engine.tools.memory import MemoryTools
from core.engine.tools.subscriptions import SubscriptionTools
from core.engine.tools.tasks import TaskTools
from core.model.errors import InvalidInput, NotFound


class RunTools(ConversationTools, ApprovalTools, MemoryTools, TaskTools, SubscriptionTools):
    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Any tool by name, as remote agents call them (`call_tool`)."""
        return await call_tool(self, name, dict(arguments))


TOOLS: Mapping[str, Tool] = offered(
    (
        RunTools.peek_pending,
        RunTools.store,
        RunTools.recall,
        RunTools.send_message,
        RunTools.retract,
        RunTools.ask,
        RunTools.task_create,
        RunTools.task_get,
        RunTools.task_list,
        RunTools.task_comment,
        RunTools.task_update,
        RunTools.subscribe,
        RunTools.unsubscribe,
    )
)


async def call_tool(tools: RunTools, name: str, arguments: object) -> Any:
    """Call the tool `name` with JSON `arguments` (an object), checked against its declaration
    (`Tool.check`): unknown tools and arguments, missing required ones, and values
    `core.model.values` refuses (a lone surrogate, a NUL, a number storage cannot hold, nesting
    too deep) are named in the error. Every call counts against the turn's budget, a bad one too
    (an agent looping on a wrong call is cut off all the same)."""
    with tracing.tool_call(tools.run_id, name):
        return await _call(tools, name, arguments)


async def _call(tools: RunTools, name: str, arguments: object) -> Any:
    if tools.budget is not None:
        await tools.budget.spend(name)
    tool = TOOLS.get(name)
    if tool is None:
        raise NotFound(
            f"no tool named {name!r}; tools: {', '.join(sorted(TOOLS))}", code="tool_not_found"
        )
    if not isinstance(arguments, dict):
        raise InvalidInput("the arguments must be a JSON object", code="invalid_arguments")
    tool.check(arguments)
    return await tool.call(tools, arguments)
