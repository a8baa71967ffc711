"""The conversation driver's rules: whether a run should take a turn, and what becomes of its end.

A run is only ever nudged; it then reads every event after its cursor that its role may see, and
`plan_turn` decides:

- A person's message (not retracted) **wakes** a turn that must end in a reply to them. All the
  news since the cursor goes into that one turn, in order: nudges that arrived while the run
  was busy collapse into it.
- The run's own messages and the gateway's `system` notes are not news to it, nor is what its role
  may not see. When nothing but those lies past the cursor, the cursor simply moves over them (no
  turn).
- Other news (a participant removed or re-added, a retraction) does not wake a turn on its own; it
  stays past the cursor and is told with the next turn.

`end_of_turn` applies the product's rule: a turn that began with a person's message always ends
in a reply — the agent's, or a `system` notice that it did not answer. A turn woken only by news
(task news, once tasks exist) says nothing unless the agent sent a message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.participants import Address, ParticipantKind, kind_of
from core.runs.run import TurnCause, TurnOutcome
from core.runtimes.base import Prompt, PromptEvent
from core.timeline import AnyEvent, Message, Retraction, SystemNote


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    """What the driver read past the cursor, and what it decided."""

    cursor_from: int
    cursor_to: int
    """The `seq` of the last event read: where the cursor goes once the turn is done."""
    news: Sequence[AnyEvent]
    """What the agent is told, in timeline order (its own messages and system notes left out)."""
    wakes: bool
    """True: take a turn. False: no turn; move the cursor to `cursor_to` if `advance`."""
    cause: TurnCause
    advance: bool

    @property
    def messages(self) -> list[Message]:
        return [e for e in self.news if isinstance(e, Message)]


def _own(event: AnyEvent, role: Address) -> bool:
    if isinstance(event, SystemNote):
        return True
    if isinstance(event, Message | Retraction):
        return event.author == role
    return False


def _wakes(event: AnyEvent) -> bool:
    return (
        isinstance(event, Message)
        and kind_of(event.author) is ParticipantKind.PERSON
        and not event.retracted
    )


def plan_turn(
    events: Sequence[AnyEvent], *, role: Address, cursor: int, read_to: int | None = None
) -> TurnPlan:
    """Decide on the events past `cursor` that `role` may see (in `seq` order). `read_to` is the
    last `seq` the read covered (events the role may not see included; default: the last event)."""
    news = [e for e in events if not _own(e, role)]
    wakes = any(_wakes(e) for e in news)
    last = read_to if read_to is not None else (events[-1].seq if events else cursor)
    return TurnPlan(
        cursor_from=cursor,
        cursor_to=last,
        news=news,
        wakes=wakes,
        cause=TurnCause.MESSAGE,
        advance=last > cursor and (wakes or not news),
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
) -> Prompt:
    """What the turn is told: the news in order, how many people's messages wait, and — for a
    session's opening turn — the recent conversation (archived messages included)."""
    seq_of = {e.id: e.seq for e in (*recent, *plan.news)}
    return Prompt(
        role=role,
        instructions=instructions,
        news=[PromptEvent.of(e, seq_of=seq_of) for e in plan.news],
        pending=sum(1 for e in plan.news if _wakes(e)),
        more=more,
        opening=opening,
        recent=[PromptEvent.of(e, seq_of=seq_of) for e in recent] if opening else (),
    )


def pending_for(events: Sequence[AnyEvent], *, role: Address) -> list[PromptEvent]:
    """`peek_pending`: what arrived during a turn that the agent has not been told yet."""
    return [PromptEvent.of(e) for e in events if not _own(e, role)]
