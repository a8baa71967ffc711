"""The writes of threads, as commands for the writer: each checks the core's rules, then stages.

Every command names the threads it touches (`thread_ids`) so the writer can lock them up front,
and answers its caller only after the batch committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from core.model.membership import INITIAL_STATE, ParticipantState, change_state
from core.model.memory_policy import MemoryPolicy
from core.model.participants import Address, ParticipantSet
from core.model.threads import Thread
from core.model.timeline import (
    AnyEvent,
    EventId,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    ThreadId,
    check_can_act,
    check_retraction,
)
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, ThreadState
from core.storage.erasure_store import check_resolvable
from core.storage.ids import new_id
from core.storage.rows import event_from_row


def _committed(batch: Batch, index: int) -> Callable[[], AnyEvent]:
    return lambda: batch.committed[index]


@dataclass(frozen=True, slots=True)
class _InThread(NoRuns):
    """A command about one existing thread."""

    thread_id: ThreadId

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)


@dataclass(frozen=True, slots=True)
class ResolveThread(NoRuns):
    participants: ParticipantSet
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        check_resolvable(batch.connection, self.participants)  # any other set has its thread

    def write(self, batch: Batch, plan: None) -> Callable[[], tuple[Thread, bool]]:
        t = schema.threads
        by_key = select(t.c.id).where(t.c.set_key == self.participants.key)
        found = (batch.connection.execute(by_key)).scalar()
        created = False
        if found is None:
            found = new_id()
            dialect = postgresql if batch.connection.dialect.name == "postgresql" else sqlite
            inserted = batch.connection.execute(
                dialect.insert(t)
                .values(id=found, set_key=self.participants.key, created_at=batch.now)
                .on_conflict_do_nothing(index_elements=["set_key"])
            )
            if inserted.rowcount == 1:
                created = True
                batch.connection.execute(
                    schema.thread_participants.insert(),
                    [
                        {"thread_id": found, "address": a, "state": INITIAL_STATE.value}
                        for a in self.participants
                    ],
                )
            else:  # another process created it a moment ago; its commit is visible now
                found = (batch.connection.execute(by_key)).scalar_one()
        batch.load([ThreadId(found)])
        thread = batch.thread(ThreadId(found))
        return lambda: (thread.snapshot(), created)


@dataclass(frozen=True, slots=True)
class PostMessage(_InThread):
    author: Address
    text: str
    context: MessageContext | None
    channel: str | None = None
    in_reply_to: EventId | None = None

    def check(self, batch: BatchView) -> None:
        thread = batch.thread(self.thread_id)
        check_can_act(thread.states, self.author, thread.erased)

    def write(self, batch: Batch, plan: None) -> Callable[[], AnyEvent]:
        thread = batch.thread(self.thread_id)
        index = batch.stage(
            thread,
            Message,
            author=self.author,
            text=self.text,
            context=self.context,
            channel=self.channel,
            in_reply_to=self.in_reply_to,
        )
        return _committed(batch, index)


@dataclass(frozen=True, slots=True)
class ChangeParticipantState(_InThread):
    participant: Address
    to_state: ParticipantState

    def check(self, batch: BatchView) -> ParticipantState:
        """The participant's state before the change."""
        return change_state(batch.thread(self.thread_id).states, self.participant, self.to_state)

    def write(self, batch: Batch, plan: ParticipantState) -> Callable[[], AnyEvent]:
        thread = batch.thread(self.thread_id)
        from_state = plan
        thread.states[self.participant] = self.to_state
        thread.changed_states.add(self.participant)
        index = batch.stage(
            thread,
            StateChange,
            participant=self.participant,
            from_state=from_state,
            to_state=self.to_state,
        )
        return _committed(batch, index)


@dataclass(frozen=True, slots=True)
class Retract(_InThread):
    message_id: EventId
    author: Address
    reason: str | None

    def check(self, batch: BatchView) -> None:
        thread = batch.thread(self.thread_id)
        e = schema.events
        row = batch.connection.execute(
            select(e).where(e.c.id == self.message_id, e.c.thread_id == self.thread_id)
        ).first()
        already = (
            batch.retracted_here(self.message_id)
            or (
                batch.connection.execute(
                    select(e.c.id).where(e.c.kind == "retraction", e.c.target == self.message_id)
                )
            ).first()
            is not None
        )
        check_retraction(
            event_from_row(row) if row else None, self.author, already_retracted=already
        )
        check_can_act(thread.states, self.author, thread.erased)

    def write(self, batch: Batch, plan: None) -> Callable[[], AnyEvent]:
        thread = batch.thread(self.thread_id)
        batch.retracted.add(self.message_id)
        index = batch.stage(
            thread, Retraction, author=self.author, target=self.message_id, reason=self.reason
        )
        return _committed(batch, index)


@dataclass(frozen=True, slots=True)
class SetMemoryPolicy(_InThread):
    policy: MemoryPolicy

    def check(self, batch: BatchView) -> None:
        batch.thread(self.thread_id)  # NotFound for a thread the batch has not

    def write(self, batch: Batch, plan: None) -> Callable[[], Thread]:
        thread: ThreadState = batch.thread(self.thread_id)
        thread.thread_only = self.policy.thread_only
        thread.policy_changed = True
        return thread.snapshot
