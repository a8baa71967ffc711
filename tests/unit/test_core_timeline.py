"""Timeline events and the rules for posting and retracting (core/model/timeline.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from core.model.errors import Conflict, Gone, InvalidInput, NotAllowed, NotFound, TooLarge
from core.model.membership import ParticipantState
from core.model.participants import Address, parse_address
from core.model.timeline import (
    MAX_REASON_LENGTH,
    MAX_TEXT_LENGTH,
    EventId,
    EventKind,
    Message,
    MessageContext,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
    check_can_act,
    check_reason,
    check_retraction,
    check_text,
    parse_context,
    rfc3339,
)

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
SUPPORT = parse_address("role:support")
T0 = datetime(2026, 11, 30, 5, 23, 46, 123456, tzinfo=UTC)
THREAD = ThreadId("thread-1")


def _message(author: Address = ALICE, *, seq: int = 1, id: str = "m1") -> Message:
    return Message(
        id=EventId(id), thread_id=THREAD, seq=seq, position=seq, at=T0, author=author, text="hi"
    )


# --- events -------------------------------------------------------------------------------------


def test_each_event_class_carries_its_kind() -> None:
    assert Message.kind is EventKind.MESSAGE
    assert StateChange.kind is EventKind.PARTICIPANT_STATE_CHANGED
    assert Retraction.kind is EventKind.RETRACTION
    assert SystemNote.kind is EventKind.SYSTEM
    assert EventKind.PARTICIPANT_STATE_CHANGED.value == "participant_state_changed"


def test_event_key_is_at_then_seq() -> None:
    message = _message(seq=7)
    assert message.key == (T0, 7)


def test_events_are_immutable_values_nothing_is_edited_in_place() -> None:
    message = _message()
    assert message.retracted is False
    assert message.context is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "edited"  # type: ignore[misc]


def test_message_context_to_json_leaves_out_absent_fields() -> None:
    assert MessageContext(kind="follow_up").to_json() == {"kind": "follow_up"}
    full = MessageContext(kind="task_update", task="t-1", originating_message="m-9")
    assert full.to_json() == {"kind": "task_update", "task": "t-1", "originating_message": "m-9"}


# --- check_text ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "   \n\t  ", "\u3000"])
def test_empty_or_whitespace_only_text_is_invalid_empty_text(text: str) -> None:
    with pytest.raises(InvalidInput) as info:
        check_text(text)
    assert info.value.code == "empty_text"


@pytest.mark.parametrize("text", [None, 1, ["hi"], {"text": "hi"}, b"hi"])
def test_non_string_text_is_invalid_text(text: object) -> None:
    with pytest.raises(InvalidInput) as info:
        check_text(text)
    assert info.value.code == "invalid_text"


def test_text_is_returned_as_given_including_surrounding_whitespace() -> None:
    assert check_text("  hello\n") == "  hello\n"


def test_text_of_exactly_40000_characters_is_accepted() -> None:
    assert MAX_TEXT_LENGTH == 40_000
    text = "x" * 40_000
    assert check_text(text) == text


def test_text_of_40001_characters_is_too_large_not_invalid() -> None:
    with pytest.raises(TooLarge) as info:
        check_text("x" * 40_001)
    assert info.value.code == "text_too_long"
    assert not isinstance(info.value, InvalidInput)
    assert "40001" in info.value.message


def test_text_limit_counts_characters_not_bytes() -> None:
    text = "é" * 40_000  # 80,000 bytes in UTF-8
    assert check_text(text) == text


# --- check_reason -------------------------------------------------------------------------------


def test_reason_is_optional_and_limited() -> None:
    assert check_reason(None) is None
    assert check_reason("typo") == "typo"
    assert check_reason("r" * MAX_REASON_LENGTH) == "r" * MAX_REASON_LENGTH
    with pytest.raises(TooLarge) as too_long:
        check_reason("r" * (MAX_REASON_LENGTH + 1))
    assert too_long.value.code == "reason_too_long"
    with pytest.raises(InvalidInput) as wrong_type:
        check_reason(5)
    assert wrong_type.value.code == "invalid_reason"


# --- parse_context ------------------------------------------------------------------------------


def test_no_context_is_none() -> None:
    assert parse_context(None) is None


def test_context_with_only_kind_is_valid() -> None:
    assert parse_context({"kind": "follow_up"}) == MessageContext(kind="follow_up")


def test_context_with_all_fields_is_valid_and_round_trips() -> None:
    raw = {"kind": "task_update", "task": "t-42", "originating_message": "m-7"}
    context = parse_context(raw)
    assert context == MessageContext(kind="task_update", task="t-42", originating_message="m-7")
    assert context.to_json() == raw


def test_context_optional_fields_may_be_null() -> None:
    raw = {"kind": "reminder", "task": None, "originating_message": None}
    assert parse_context(raw) == MessageContext(kind="reminder")


def test_context_field_of_200_characters_is_accepted() -> None:
    assert parse_context({"kind": "k" * 200}) == MessageContext(kind="k" * 200)


def _assert_invalid_context(raw: object) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        parse_context(raw)
    assert info.value.code == "invalid_context"
    return info.value


def test_context_with_unknown_keys_is_rejected_naming_them() -> None:
    error = _assert_invalid_context({"kind": "x", "priority": "high", "branch": "y"})
    assert "branch" in error.message and "priority" in error.message


@pytest.mark.parametrize(
    "raw", [{}, {"task": "t-1"}, {"originating_message": "m-1"}, {"kind": None}]
)
def test_context_without_kind_is_rejected(raw: dict[str, object]) -> None:
    error = _assert_invalid_context(raw)
    assert "kind" in error.message


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": 1},
        {"kind": True},
        {"kind": ""},
        {"kind": ["x"]},
        {"kind": {"a": "b"}},
        {"kind": "x", "task": 5},
        {"kind": "x", "task": ""},
        {"kind": "x", "originating_message": []},
        {"kind": "k" * 201},
        {"kind": "x", "task": "t" * 201},
    ],
)
def test_context_fields_must_be_short_non_empty_strings(raw: dict[str, object]) -> None:
    _assert_invalid_context(raw)


@pytest.mark.parametrize("raw", ["follow_up", ["kind", "x"], 1, True, ("kind",)])
def test_context_that_is_not_an_object_is_rejected(raw: object) -> None:
    _assert_invalid_context(raw)


# --- check_can_act ------------------------------------------------------------------------------


def test_an_active_member_may_act() -> None:
    states = {ALICE: ParticipantState.ACTIVE, SUPPORT: ParticipantState.ACTIVE}
    check_can_act(states, ALICE)  # raises when not


def test_a_non_member_may_not_act() -> None:
    states = {ALICE: ParticipantState.ACTIVE, SUPPORT: ParticipantState.ACTIVE}
    with pytest.raises(NotAllowed) as info:
        check_can_act(states, BOB)
    assert info.value.code == "not_a_member"
    assert "person:bob" in info.value.message


def test_a_removed_member_may_not_act() -> None:
    states = {ALICE: ParticipantState.REMOVED, SUPPORT: ParticipantState.ACTIVE}
    with pytest.raises(NotAllowed) as info:
        check_can_act(states, ALICE)
    assert info.value.code == "participant_removed"


def test_an_erased_person_may_not_act_though_still_a_member() -> None:
    states = {ALICE: ParticipantState.ACTIVE, SUPPORT: ParticipantState.ACTIVE}
    with pytest.raises(Gone) as info:
        check_can_act(states, ALICE, erased={ALICE})
    assert (info.value.code, info.value.message) == ("person_erased", "person:alice was erased")
    check_can_act(states, SUPPORT, erased={ALICE})


# --- check_retraction ---------------------------------------------------------------------------


def test_the_author_may_retract_their_message_once() -> None:
    message = _message(ALICE)
    assert check_retraction(message, ALICE, already_retracted=False) is message


def test_someone_else_may_not_retract_a_message() -> None:
    with pytest.raises(NotAllowed) as info:
        check_retraction(_message(ALICE), SUPPORT, already_retracted=False)
    assert info.value.code == "not_the_author"
    assert "person:alice" in info.value.message


def test_retracting_twice_is_a_conflict() -> None:
    with pytest.raises(Conflict) as info:
        check_retraction(_message(ALICE), ALICE, already_retracted=True)
    assert info.value.code == "already_retracted"


def test_a_non_author_is_refused_as_not_the_author_even_when_already_retracted() -> None:
    with pytest.raises(NotAllowed) as info:
        check_retraction(_message(ALICE), BOB, already_retracted=True)
    assert info.value.code == "not_the_author"


def _not_messages() -> list[object]:
    common = {"thread_id": THREAD, "seq": 2, "position": 2, "at": T0}
    return [
        None,
        StateChange(
            id=EventId("s1"),
            participant=ALICE,
            from_state=ParticipantState.ACTIVE,
            to_state=ParticipantState.REMOVED,
            **common,  # type: ignore[arg-type]
        ),
        Retraction(id=EventId("r1"), author=ALICE, target=EventId("m1"), **common),  # type: ignore[arg-type]
        SystemNote(id=EventId("n1"), text="hello", **common),  # type: ignore[arg-type]
    ]


@pytest.mark.parametrize("target", _not_messages(), ids=["none", "state", "retraction", "system"])
def test_retracting_something_that_is_not_a_message_is_message_not_found(target: object) -> None:
    with pytest.raises(NotFound) as info:
        check_retraction(target, ALICE, already_retracted=False)  # type: ignore[arg-type]
    assert info.value.code == "message_not_found"


# --- rfc3339 ------------------------------------------------------------------------------------


def test_rfc3339_is_utc_with_microseconds_and_a_trailing_z() -> None:
    assert rfc3339(T0) == "2026-11-30T05:23:46.123456Z"


def test_rfc3339_always_writes_six_digits_of_microseconds() -> None:
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000000Z"
    assert rfc3339(datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC)) == "2026-01-02T03:04:05.000007Z"


def test_rfc3339_converts_other_timezones_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert rfc3339(datetime(2026, 6, 1, 12, 0, 0, 500, tzinfo=plus_two)) == (
        "2026-06-01T10:00:00.000500Z"
    )


def test_rfc3339_conversion_may_cross_the_date_line() -> None:
    minus_five = timezone(timedelta(hours=-5, minutes=-30))
    assert rfc3339(datetime(2026, 12, 31, 20, 45, tzinfo=minus_five)) == (
        "2027-01-01T02:15:00.000000Z"
    )


def test_rfc3339_of_equal_instants_is_equal_whatever_the_zone() -> None:
    tokyo = T0.astimezone(timezone(timedelta(hours=9)))
    assert rfc3339(tokyo) == rfc3339(T0)
