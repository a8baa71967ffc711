"""The calling run, as every tool sees it: what a tool may do is worked out from that run (its
role, its thread, how far it has read), never from an argument. Agents speak of "this
conversation": no tool takes a thread id.

`ToolContext` is the state the tool groups (`memory`, `conversation`, `subscriptions`, `tasks`)
share; `RunTools` (`core.engine.tools.run`) is all of them together.
"""

from __future__ import annotations

from core.engine.tools.budget import ToolBudget
from core.model.errors import NotAllowed
from core.model.runs.run import Run
from core.model.timeline import ThreadId
from core.storage.database import Database


class ToolContext:
    def __init__(
        self, database: Database, run: Run, *, read_to: int, budget: ToolBudget | None = None
    ) -> None:
        """`budget`: the running turn's, when there is one (calls outside a turn — an
        operator's token used by hand — are not counted)."""
        self._db = database
        self._run = run
        self.budget = budget
        self._thread_id = run.thread_id
        self._read_to = read_to
        self.sent = 0
        """Messages sent with `send_message` (a turn that sent one has answered)."""

    def _conversation(self) -> ThreadId:
        if self._thread_id is None:
            raise NotAllowed(
                "this run works on a task, not in a conversation", code="not_a_conversation"
            )
        return self._thread_id
