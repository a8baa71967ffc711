"""A turn of a run in a conversation: what its driver tells the turn, and what becomes of its end.

The turn is told the news past the run's cursor (`core.model.runs.conversation.prompt_for`); the
people in the conversation see that the role is working and the replies as they are written
(activity, drafts). Its end is what the conversation driver's rules make of it
(`end_of_turn`): the role's messages, or a `system` notice — that it did not answer, that the
turn failed, or was cancelled while a person waited — committed with the run's cursors
(`finish_turn`).

Messages the run sent during the turn with tools of its own — an agent outside the gateway's
process calls them over MCP or HTTP — count as its answer, as those sent with the host's tools
do. A session that woke without its agent's memory of the conversation is told the conversation
before the news and the tasks the run follows, as a session's first turn is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from core.engine.host.drafts import Draft, DraftKind, DraftListener
from core.engine.host.turn import HostLimits
from core.engine.runtimes.base import Prompt, PromptEvent
from core.engine.tools import RunTools
from core.model.leases import Fence
from core.model.roles.role import Role
from core.model.roles.roster import Roster
from core.model.runs.conversation import (
    EndOfTurn,
    TurnPlan,
    cancelled_turn,
    end_of_turn,
    failure_notice,
    prompt_for,
    task_summary,
)
from core.model.runs.run import Run, TurnCause, TurnOutcome
from core.model.timeline import Message, ThreadId
from core.storage.database import Database
from core.storage.runs_reads import TurnInput
from core.storage.runs_store import TurnRecord

Activity = Callable[[ThreadId, str, bool], None]
"""`activity(thread, role, working)`: told as a conversation turn starts and ends (channels show
"working…" with it)."""


class ConversationTurn:
    """One turn of a conversation run (`core.engine.host.turn.RunTurn`), made after its
    driver read `given` and planned `plan`."""

    def __init__(
        self,
        database: Database,
        role: Role,
        given: TurnInput,
        plan: TurnPlan,
        *,
        limits: HostLimits,
        activity: Activity,
        drafts: DraftListener,
        fence: Fence | None = None,
        roster: Roster,
    ) -> None:
        assert given.run.thread_id is not None
        self._db = database
        self._fence = fence
        self._role = role
        self._plan = plan
        self._limits = limits
        self._activity = activity
        self._drafts = drafts
        self._thread_id: ThreadId = given.run.thread_id
        self.run: Run = given.run
        self.cause: TurnCause = plan.cause
        self.prompt: Prompt = prompt_for(
            plan,
            role=role.name,
            instructions=role.instructions,
            more=given.page.more,
            opening=not given.run.session.opened,
            recent=given.recent.events if given.recent else (),
            subscribed=given.subscribed,
        )
        self._answers = plan.answers
        """The person's message the turn's messages answer (None: the role's initiative)."""
        self.tools = RunTools(
            database, given.run, read_to=plan.cursor_to, roster=roster, answering=self._answers
        )

    def working(self, working: bool) -> None:
        self._activity(self._thread_id, self._role.name, working)

    def draft(self, kind: DraftKind, text: str) -> None:
        initiative = self._answers is None
        self._drafts(Draft(self._thread_id, self._role.name, kind, text, initiative))

    def cancelled(self) -> EndOfTurn:
        return cancelled_turn(self.cause, display_name=self._role.display_name)

    def failed(self) -> EndOfTurn:
        notice = failure_notice(self._role.display_name)
        return EndOfTurn(messages=(), notice=notice, outcome=TurnOutcome.FAILED)

    async def answered(self, replies: Sequence[str]) -> EndOfTurn:
        sent = self.tools.sent
        if not sent and not any(text.strip() for text in replies):
            sent = await self._sent_elsewhere()
        return end_of_turn(self.cause, replies, display_name=self._role.display_name, sent=sent)

    async def commit(
        self,
        end: EndOfTurn,
        record: TurnRecord,
        session_state: Mapping[str, Any] | None,
        *,
        failed: bool,
    ) -> Run:
        _end, after = await self._db.runs.finish_turn(
            self.run,
            cursor_to=self._plan.cursor_to,
            task_cursor_to=self._plan.task_cursor_to,
            messages=end.messages,
            notice=end.notice,
            record=record,
            session_state=session_state,
            failed=failed,
            fence=self._fence,
            in_reply_to=self._answers,
        )
        return after

    async def _sent_elsewhere(self) -> int:
        """Messages the run sent during the turn with tools other than the host's: an agent
        outside the gateway's process sends over MCP or HTTP (they count as its answer too)."""
        role = self.run.role_address
        page = await self._db.runs.pending(
            self._thread_id, role, after=self._plan.cursor_to, limit=self._limits.read_limit
        )
        return sum(1 for e in page.events if isinstance(e, Message) and e.author == role)

    async def opening(self, prompt: Prompt) -> Prompt:
        """`prompt` made an opening one, with the tasks the run follows and the conversation
        before the news: read up to the last of the news, the news left out, so that the run's
        own messages among them (sent over MCP in its last turn, they are not news) are there."""
        run = self.run
        told = {event.id for event in prompt.news}
        upto = max((event.seq for event in prompt.news), default=run.cursor)
        unopened = replace(run, cursor=upto, session=replace(run.session, state=None))
        [given] = await self._db.runs.turn_inputs(
            [(unopened, False)], limit=1, recent=self._limits.recent + len(told)
        )
        if isinstance(given, Exception):
            raise given
        read = given.recent.events if given.recent is not None else ()
        recent = [event for event in read if event.id not in told]
        recent = recent[max(len(recent) - self._limits.recent, 0) :]
        seq_of = {event.id: event.seq for event in read}
        return replace(
            prompt,
            opening=True,
            recent=[PromptEvent.of(event, seq_of=seq_of) for event in recent],
            subscribed=[task_summary(task) for task in given.subscribed],
        )
