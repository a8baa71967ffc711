"""The calling run, as every tool sees it: what a tool may do is worked out from that run (its
role, its thread, how far it has read), never from an argument. Agents speak of "this
conversation": no tool takes a thread id.

`ToolContext` is the state the tool groups (`memory`, `conversation`, `subscriptions`, `tasks`)
share; `RunTools` (`core.engine.tools.run`) is all of them together.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from core.engine.approvals import HoldTurn, never, no_hold
from core.engine.tools.budget import ToolBudget
from core.model.errors import NotAllowed
from core.model.roles.roster import Roster
from core.model.runs.conversation import latest_from_a_person
from core.model.runs.run import Run
from core.model.timeline import EventId, ThreadId
from core.storage.database import Database
from core.storage.pages import MAX_PAGE


class Unread(Enum):
    UNREAD = "unread"


UNREAD = Unread.UNREAD
"""What the running turn answers is not known to the caller: read it when needed."""


class ToolContext:
    def __init__(
        self,
        database: Database,
        run: Run,
        *,
        read_to: int,
        roster: Roster,
        budget: ToolBudget | None = None,
        answering: EventId | Unread | None = UNREAD,
        hold: HoldTurn = no_hold,
        stopping: Callable[[], bool] = never,
    ) -> None:
        """`roster`: the roles a task may be assigned to; `budget`: the running turn's, when
        there is one (calls outside a turn — an operator's token used by hand — are not
        counted); `answering`: the person's message the running turn answers (None: the turn
        was woken by task news), when the caller knows it — else it is read when needed (the
        latest person's message past the run's cursor); `hold`: keeps the running turn's
        timeout from counting while a tool waits for a person (`ask`); `stopping`: whether the
        gateway is stopping (a wait it cuts short leaves its question open for the turn's
        rerun)."""
        self._db = database
        self.hold = hold
        self.stopping = stopping
        self._run = run
        self._roster = roster
        self._answering = answering
        self.budget = budget
        self._thread_id = run.thread_id
        self._read_to = read_to
        self.sent = 0
        """Messages sent with `send_message` (a turn that sent one has answered)."""

    @property
    def run_id(self) -> str:
        """The calling run's id."""
        return self._run.id

    async def _in_reply_to(self) -> EventId | None:
        """The person's message a message sent now answers (`answering`)."""
        if not isinstance(self._answering, Unread):
            return self._answering
        page = await self._db.runs.pending(
            self._conversation(), self._run.role_address, after=self._run.cursor, limit=MAX_PAGE
        )
        return latest_from_a_person(page.events)

    def _conversation(self) -> ThreadId:
        if self._thread_id is None:
            raise NotAllowed(
                "this run works on a task, not in a conversation", code="not_a_conversation"
            )
        return self._thread_id
