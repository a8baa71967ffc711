"""The conversation driver's rules: whether a run should take a turn, and what becomes of its end.

A run is only ever nudged; it then reads every event after its cursor that its role may see, and
`plan_turn` decides:

- A person's message (not retracted) **wakes** a turn that must end in a reply to them. All the
  news since the cursor goes into that one turn, in order: nudges that arrived while the run
  was busy collapse into it.
- The run's own messages and the gateway's `system` notes are not news to it, nor is what its role
  may not see. When nothing but those lies past the cursor, the cursor simply moves over them (no
  turn).
- Other news (a participant removed or re-added, a retraction, how a question the role asked
  was resolved) does not wake a turn on its own; it stays past the cursor and is told with the
  next turn. The role's own questions (`approval_requested`) are not news to it.
- News of a task the run subscribes to — a change made by anyone but this run — wakes a turn
  (cause `news` when no person's message came with it); all of it comes as one digest.

`end_of_turn` applies the product's rule: a turn that began with a person's message always ends
in a reply — the agent's, or a `system` notice that it did not answer. A turn woken only by news
(task news, once tasks exist) says nothing unless the agent sent a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.model.participants import Address, ParticipantKind, kind_of
from core.model.runs.prompt import Prompt, PromptEvent
from core.model.runs.run import TurnCause, TurnOutcome
from core.model.tasks import Task, TaskEvent
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    EventId,
    Message,
    Retraction,
    SystemNote,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    """What the driver read past the cursor, and what it decided."""

    cursor_from: int
    cursor_to: int
    """Where the cursor goes: with a turn, the `seq` of the last event read."""
    news: Sequence[AnyEvent]
    """What the agent is told, in timeline order (its own messages and system notes left out)."""
    wakes: bool
    """True: take a turn. False: no turn; move the cursors if `advance`."""
    cause: TurnCause
    advance: bool
    task_news: Sequence[tuple[Task, TaskEvent]] = ()
    """News of the tasks the run subscribes to, in position order (its own changes left out)."""
    task_cursor_from: int = 0
    task_cursor_to: int = 0

    @property
    def answers(self) -> EventId | None:
        """The person's message the turn's messages answer: the latest that woke it. None for
        a turn woken only by task news: what it says is the role's own initiative."""
        return latest_from_a_person(self.news)


def latest_from_a_person(events: Sequence[AnyEvent]) -> EventId | None:
    """The latest of these events that is a person's (unretracted) message, if any."""
    return next((e.id for e in reversed(events) if _wakes(e)), None)


def _own(event: AnyEvent, role: Address) -> bool:
    if isinstance(event, SystemNote):
        return True
    if isinstance(event, Message | Retraction | ApprovalRequested):
        return event.author == role
    return False


def _wakes(event: AnyEvent) -> bool:
    """A person's message wakes the run — unless retracted, or erased before the run read it
    (a person erased while their message waited is answered by nobody)."""
    return (
        isinstance(event, Message)
        and kind_of(event.author) is ParticipantKind.PERSON
        and not event.retracted
        and not event.erased
    )


def plan_turn(
    events: Sequence[AnyEvent],
    *,
    role: Address,
    cursor: int,
    read_to: int | None = None,
    task_news: Sequence[tuple[Task, TaskEvent]] = (),
    task_cursor: int = 0,
    task_read_to: int | None = None,
) -> TurnPlan:
    """Decide on the events past `cursor` that `role` may see (in `seq` order) and the task news
    past `task_cursor`. `read_to` / `task_read_to`: how far the reads went (what the run may not
    see, or made itself, included; default: the last event given)."""
    news = [e for e in events if not _own(e, role)]
    by_a_person = any(_wakes(e) for e in news)
    wakes = by_a_person or bool(task_news)
    last = read_to if read_to is not None else (events[-1].seq if events else cursor)
    task_last = task_read_to if task_read_to is not None else task_cursor
    # Without a turn, the cursor moves only over what is not news to the run; the task cursor
    # over what the run made itself (task news always wakes).
    cursor_to = last if wakes or not news else cursor
    return TurnPlan(
        cursor_from=cursor,
        cursor_to=cursor_to,
        news=news,
        wakes=wakes,
        cause=TurnCause.MESSAGE if by_a_person else TurnCause.NEWS,
        advance=not wakes and (cursor_to > cursor or task_last > task_cursor),
        task_news=task_news,
        task_cursor_from=task_cursor,
        task_cursor_to=task_last,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class EndOfTurn:
    """What the turn leaves in the conversation: the role's messages, or a system notice."""

    messages: Sequence[str]
    notice: str | None
    outcome: TurnOutcome


def end_of_turn(
    cause: TurnCause, replies: Sequence[str], *, display_name: str, sent: int = 0
) -> EndOfTurn:
    """`replies`: what the agent said as its answer (posted now); `sent`: messages it already
    sent during the turn with `send_message` (they count as its answer too)."""
    said = [text for text in replies if text.strip()]
    if said or sent:
        return EndOfTurn(messages=said, notice=None, outcome=TurnOutcome.REPLIED)
    if cause is TurnCause.MESSAGE:
        return EndOfTurn(
            messages=(),
            notice=f"{display_name} did not answer this time. Send another message to try again.",
            outcome=TurnOutcome.NO_ANSWER,
        )
    return EndOfTurn(messages=(), notice=None, outcome=TurnOutcome.SILENT)


def failure_notice(display_name: str) -> str:
    """Told to the people when a turn failed every attempt (the details go to the transcript)."""
    return (
        f"{display_name} could not answer because of an error. Send another message to try again."
    )


def cancel_notice(display_name: str) -> str:
    return f"{display_name}'s turn was stopped by an operator before it answered."


def cancelled_turn(cause: TurnCause, *, display_name: str) -> EndOfTurn:
    """A cancelled turn says nothing from the agent; a person whose message caused it waits for
    an answer, so they are told why none comes."""
    notice = cancel_notice(display_name) if cause is TurnCause.MESSAGE else None
    return EndOfTurn(messages=(), notice=notice, outcome=TurnOutcome.CANCELLED)


FRESH_SESSION_NOTICE = (
    "A fresh session started. Earlier messages are archived: the role can still read them."
)


def prompt_for(
    plan: TurnPlan,
    *,
    role: str,
    instructions: str,
    more: bool,
    opening: bool,
    recent: Sequence[AnyEvent] = (),
    subscribed: Sequence[Task] = (),
) -> Prompt:
    """What the turn is told: the news in order, how many people's messages wait, the task news
    as one digest (per task, its new events), and — for a session's opening turn — the recent
    conversation (archived messages included) and the tasks it subscribes to."""
    seq_of = {e.id: e.seq for e in (*recent, *plan.news)}
    return Prompt(
        role=role,
        instructions=instructions,
        news=[PromptEvent.of(e, seq_of=seq_of) for e in plan.news],
        pending=sum(1 for e in plan.news if _wakes(e)),
        more=more,
        opening=opening,
        recent=[PromptEvent.of(e, seq_of=seq_of) for e in recent] if opening else (),
        tasks=task_digest(plan.task_news),
        subscribed=[task_summary(t) for t in subscribed] if opening else (),
    )


def task_summary(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "title": task.title,
        "status": task.status.value,
        "assignee": task.assignee,
    }


def task_digest(news: Sequence[tuple[Task, TaskEvent]]) -> list[dict[str, Any]]:
    """Task news as one digest: each task once (as it is now), with its new events in order."""
    digest: dict[str, dict[str, Any]] = {}
    for task, event in news:
        entry = digest.setdefault(task.id, {**task_summary(task), "events": []})
        entry.update(task_summary(task))
        entry["events"].append(
            {
                "seq": event.seq,
                "kind": event.kind.value,
                "by": event.actor.name,
                "changes": dict(event.changes),
                "text": event.text,
            }
        )
    return list(digest.values())


def pending_for(events: Sequence[AnyEvent], *, role: Address) -> list[PromptEvent]:
    """`peek_pending`: what arrived during a turn that the agent has not been told yet (a
    retraction of a message among them names the message's `seq`, as a turn's news do)."""
    seq_of = {e.id: e.seq for e in events}
    return [PromptEvent.of(e, seq_of=seq_of) for e in events if not _own(e, role)]
