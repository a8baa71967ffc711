"""The conversation driver's rules, as pure functions: what wakes a turn, where the cursor goes,
what the end of a turn leaves in the conversation, what a turn is told."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.runs.conversation import end_of_turn, plan_turn, prompt_for
from core.model.runs.run import TurnCause, TurnOutcome
from core.model.timeline import (
    AnyEvent,
    EventId,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
)

ROLE = Address("role:echo")
ANN = Address("person:ann")
AT = datetime(2026, 11, 30, tzinfo=UTC)


def _common(seq: int) -> dict[str, Any]:
    return {"id": EventId(f"e{seq}"), "thread_id": ThreadId("t"), "seq": seq, "position": seq,
            "at": AT}  # fmt: skip


def said(seq: int, author: Address, text: str = "x", *, retracted: bool = False) -> Message:
    return Message(**_common(seq), author=author, text=text, retracted=retracted)


def note(seq: int) -> SystemNote:
    return SystemNote(**_common(seq), text="note")


def removed(seq: int, who: Address) -> StateChange:
    return StateChange(
        **_common(seq),
        participant=who,
        from_state=ParticipantState.ACTIVE,
        to_state=ParticipantState.REMOVED,
    )


def test_nothing_past_the_cursor_is_no_turn_and_no_move() -> None:
    plan = plan_turn([], role=ROLE, cursor=7)
    assert not plan.wakes and not plan.advance and plan.cursor_to == 7


def test_a_persons_message_wakes_a_turn_with_everything_new_in_order() -> None:
    events: list[AnyEvent] = [said(3, ANN, "a"), removed(4, Address("person:bob")), said(5, ANN)]
    plan = plan_turn(events, role=ROLE, cursor=2)
    assert plan.wakes and not plan.advance  # the turn's end moves the cursor
    assert plan.cause is TurnCause.MESSAGE
    assert [e.seq for e in plan.news] == [3, 4, 5]
    assert (plan.cursor_from, plan.cursor_to) == (2, 5)


def test_the_roles_own_messages_and_system_notes_are_not_news_the_cursor_moves_over_them() -> None:
    plan = plan_turn([said(3, ROLE), note(4)], role=ROLE, cursor=2)
    assert not plan.wakes and plan.advance and plan.cursor_to == 4 and plan.news == []


def test_news_that_does_not_wake_stays_past_the_cursor_for_the_next_turn() -> None:
    plan = plan_turn([removed(3, Address("person:bob"))], role=ROLE, cursor=2)
    assert not plan.wakes and not plan.advance


def test_another_roles_message_or_a_retracted_message_wakes_nothing() -> None:
    other = said(3, Address("role:copy"))
    taken_back = said(4, ANN, retracted=True)
    assert not plan_turn([other, taken_back], role=ROLE, cursor=2).wakes


def test_a_message_erased_before_the_run_read_it_wakes_nothing() -> None:
    tombstone = Message(**_common(3), author=ANN, text="", erased=True)
    assert not plan_turn([tombstone], role=ROLE, cursor=2).wakes


def test_a_turn_that_began_with_a_message_always_ends_in_a_reply_or_a_notice() -> None:
    replied = end_of_turn(TurnCause.MESSAGE, ["hi", "  "], display_name="Echo")
    assert replied.messages == ["hi"] and replied.notice is None
    assert replied.outcome is TurnOutcome.REPLIED
    silent = end_of_turn(TurnCause.MESSAGE, [" "], display_name="Echo")
    assert silent.messages == () and silent.outcome is TurnOutcome.NO_ANSWER
    assert silent.notice == "Echo did not answer this time. Send another message to try again."


def test_a_turn_woken_only_by_news_says_nothing_unless_the_agent_does() -> None:
    quiet = end_of_turn(TurnCause.NEWS, [], display_name="Echo")
    assert quiet.notice is None and quiet.messages == () and quiet.outcome is TurnOutcome.SILENT
    spoke = end_of_turn(TurnCause.NEWS, ["heads up"], display_name="Echo")
    assert spoke.messages == ["heads up"]


def test_the_prompt_counts_pending_messages_and_opens_a_session_with_the_recent_ones() -> None:
    retraction = Retraction(**_common(6), author=ANN, target=EventId("e3"), reason="oops")
    plan = plan_turn([said(3, ANN, "a"), said(4, ROLE), said(5, ANN, "b"), retraction],
                     role=ROLE, cursor=2)  # fmt: skip
    recent = [said(1, ANN, "earlier"), said(2, ROLE, "reply")]
    prompt = prompt_for(plan, role="echo", instructions="be brief", more=True, opening=True,
                        recent=recent)  # fmt: skip
    assert prompt.pending == 2 and prompt.more and prompt.opening
    assert [e.text for e in prompt.news] == ["a", "b", "oops"]
    assert prompt.news[-1].target_seq == 3
    assert [e.text for e in prompt.recent] == ["earlier", "reply"]
    assert prompt.to_json()["recent"][0]["author"] == "person:ann"
    assert "recent" not in prompt_for(plan, role="echo", instructions="", more=False,
                                      opening=False, recent=recent).to_json()  # fmt: skip


def test_what_a_turn_answers_is_the_latest_persons_message_that_woke_it() -> None:
    """`TurnPlan.answers`: the latest unretracted person's message among the news; a turn woken
    by task news alone answers nobody (what it says is the role's initiative)."""
    events: list[AnyEvent] = [said(3, ANN), said(4, ANN, retracted=True), said(5, ROLE), note(6)]
    assert plan_turn(events, role=ROLE, cursor=2).answers == EventId("e3")
    assert plan_turn([note(6)], role=ROLE, cursor=5).answers is None


def test_peek_pending_names_the_seq_of_a_retracted_message_among_what_it_shows() -> None:
    from core.model.runs.conversation import pending_for

    retraction = Retraction(**_common(4), author=ANN, target=EventId("e3"), reason="typo")
    older = Retraction(**_common(5), author=ANN, target=EventId("e1"), reason=None)
    shown = pending_for([said(3, ANN), retraction, older], role=ROLE)
    assert [e.target_seq for e in shown if e.kind == "retraction"] == [3, None]
