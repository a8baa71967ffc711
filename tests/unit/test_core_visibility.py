"""The visibility filter, boundary by boundary (core/model/visibility.py).

Events are built by hand with explicit `at` instants and `seq` numbers. The rule under test
(PRODUCT.md, "Visibility"): P sees E iff E is P's own state change, or P was active at E — P's state
taken from P's latest state change strictly before E in `(at, seq)` order, `active` when none.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from core.model.membership import ParticipantState
from core.model.participants import Address, parse_address
from core.model.timeline import (
    Event,
    EventId,
    Message,
    Retraction,
    StateChange,
    SystemNote,
    ThreadId,
    TimelineKey,
)
from core.model.visibility import Blackout, blackouts, is_visible, own_changes, state_at, visible_to

ALICE = parse_address("person:alice")
BOB = parse_address("person:bob")
SUPPORT = parse_address("role:support")
OUTSIDER = parse_address("person:mallory")
MEMBERS = (ALICE, BOB, SUPPORT)
ACTIVE = ParticipantState.ACTIVE
REMOVED = ParticipantState.REMOVED

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
THREAD = ThreadId("thread-1")


def t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def msg(seq: int, at: float, author: Address = SUPPORT) -> Message:
    return Message(
        id=EventId(f"e{seq}"),
        thread_id=THREAD,
        seq=seq,
        position=seq,
        at=t(at),
        author=author,
        text=f"message {seq}",
    )


def removed(seq: int, at: float, who: Address = ALICE) -> StateChange:
    return StateChange(
        id=EventId(f"e{seq}"),
        thread_id=THREAD,
        seq=seq,
        position=seq,
        at=t(at),
        participant=who,
        from_state=ACTIVE,
        to_state=REMOVED,
    )


def readded(seq: int, at: float, who: Address = ALICE) -> StateChange:
    return StateChange(
        id=EventId(f"e{seq}"),
        thread_id=THREAD,
        seq=seq,
        position=seq,
        at=t(at),
        participant=who,
        from_state=REMOVED,
        to_state=ACTIVE,
    )


def note(seq: int, at: float) -> SystemNote:
    return SystemNote(
        id=EventId(f"e{seq}"), thread_id=THREAD, seq=seq, position=seq, at=t(at), text="note"
    )


def retraction(seq: int, at: float, target: int, author: Address = SUPPORT) -> Retraction:
    return Retraction(
        id=EventId(f"e{seq}"),
        thread_id=THREAD,
        seq=seq,
        position=seq,
        at=t(at),
        author=author,
        target=EventId(f"e{target}"),
    )


def seqs_seen(viewer: Address, events: Sequence[Event]) -> list[int]:
    return [e.seq for e in visible_to(viewer, events, MEMBERS)]


def key(seq: int, at: float) -> TimelineKey:
    return (t(at), seq)


# --- the boundaries of one blackout -------------------------------------------------------------


def test_message_at_the_instant_of_removal_but_ordered_before_it_is_visible() -> None:
    events = [msg(1, 0), msg(2, 10), removed(3, 10), msg(4, 10), msg(5, 11)]
    # seq 2 shares `at` with the removal and has a lower seq: Alice was still active.
    # seq 4 shares `at` too but comes after the removal: hidden.
    assert seqs_seen(ALICE, events) == [1, 2, 3]


def test_message_at_the_instant_of_re_add_but_ordered_before_it_is_not_visible() -> None:
    events = [removed(1, 0), msg(2, 5), msg(3, 20), readded(4, 20), msg(5, 20)]
    # seq 3 shares `at` with the re-add but comes before it: Alice was still removed.
    assert seqs_seen(ALICE, events) == [1, 4, 5]


def test_messages_after_the_re_add_are_visible() -> None:
    events = [removed(1, 0), msg(2, 1), readded(3, 2), msg(4, 3), msg(5, 4, author=ALICE)]
    assert seqs_seen(ALICE, events) == [1, 3, 4, 5]


def test_the_blackout_stays_dark_after_the_re_add() -> None:
    events = [msg(1, 0), removed(2, 1), msg(3, 2), msg(4, 3), readded(5, 4), msg(6, 5)]
    seen = seqs_seen(ALICE, events)
    assert 3 not in seen and 4 not in seen
    assert seen == [1, 2, 5, 6]


def test_several_remove_and_re_add_cycles() -> None:
    events = [
        msg(1, 0),
        removed(2, 1),
        msg(3, 2),
        readded(4, 3),
        msg(5, 4),
        removed(6, 5),
        msg(7, 6),
        msg(8, 7),
        readded(9, 8),
        msg(10, 9),
        removed(11, 10),
        msg(12, 10),
        readded(13, 10),
        msg(14, 10),
    ]
    assert seqs_seen(ALICE, events) == [1, 2, 4, 5, 6, 9, 10, 11, 13, 14]


def test_the_viewers_own_removal_and_re_add_are_always_visible() -> None:
    events = [removed(1, 0), readded(2, 1), removed(3, 2), readded(4, 2), removed(5, 3)]
    assert seqs_seen(ALICE, events) == [1, 2, 3, 4, 5]


def test_an_open_ended_blackout_hides_everything_after_the_removal() -> None:
    events = [
        msg(1, 0),
        removed(2, 1),
        msg(3, 1),
        msg(4, 2, author=BOB),
        removed(5, 3, who=BOB),
        note(6, 4),
        retraction(7, 5, target=3),
        msg(8, 1000),
    ]
    assert seqs_seen(ALICE, events) == [1, 2]


# --- others' state changes ----------------------------------------------------------------------


def test_others_state_changes_during_the_viewers_blackout_are_hidden() -> None:
    events = [
        removed(1, 0, who=BOB),  # before Alice's blackout: seen
        removed(2, 1),  # Alice removed
        readded(3, 2, who=BOB),  # inside: hidden
        removed(4, 3, who=SUPPORT),  # inside: hidden
        readded(5, 4),  # Alice re-added
        readded(6, 5, who=SUPPORT),  # after: seen
    ]
    assert seqs_seen(ALICE, events) == [1, 2, 5, 6]


def test_others_state_changes_at_the_blackout_edges_follow_seq_order() -> None:
    events = [
        removed(1, 10, who=BOB),  # same instant as Alice's removal, before it: seen
        removed(2, 10),
        readded(3, 10, who=BOB),  # same instant, after Alice's removal: hidden
        removed(4, 20, who=BOB),  # same instant as the re-add, before it: hidden
        readded(5, 20),
        readded(6, 20, who=BOB),  # same instant, after the re-add: seen
    ]
    assert seqs_seen(ALICE, events) == [1, 2, 5, 6]


def test_a_blackout_of_one_participant_does_not_affect_another() -> None:
    events = [msg(1, 0), removed(2, 1), msg(3, 2), readded(4, 3), msg(5, 4)]
    assert seqs_seen(BOB, events) == [1, 2, 3, 4, 5]
    assert seqs_seen(SUPPORT, events) == [1, 2, 3, 4, 5]


# --- ordering -----------------------------------------------------------------------------------


def test_ties_in_at_are_ordered_by_seq() -> None:
    events = [msg(1, 0), removed(2, 0), msg(3, 0), readded(4, 0), msg(5, 0)]
    assert seqs_seen(ALICE, events) == [1, 2, 4, 5]


def test_result_is_in_the_order_given_and_does_not_depend_on_it() -> None:
    events = [msg(1, 0), removed(2, 0), msg(3, 0), readded(4, 0), msg(5, 0)]
    shuffled = [events[4], events[2], events[0], events[3], events[1]]
    assert [e.seq for e in visible_to(ALICE, shuffled, MEMBERS)] == [5, 1, 4, 2]


def test_instants_one_microsecond_apart_are_ordered_by_at() -> None:
    # The removal at 10.000001 is after a message at 10.000000; the re-add one microsecond later.
    events = [msg(1, 10), removed(2, 10.000001), msg(3, 10.000001), readded(4, 10.000002)]
    assert seqs_seen(ALICE, events) == [1, 2, 4]


# --- who sees anything at all -------------------------------------------------------------------


def test_a_non_member_sees_nothing() -> None:
    events = [msg(1, 0), removed(2, 1, who=BOB), note(3, 2)]
    assert visible_to(OUTSIDER, events, MEMBERS) == []


def test_a_non_member_sees_nothing_even_with_a_stray_state_change_of_their_own() -> None:
    stray = removed(2, 1, who=OUTSIDER)
    assert visible_to(OUTSIDER, [msg(1, 0), stray], MEMBERS) == []


def test_members_may_be_any_iterable_including_a_generator() -> None:
    events = [msg(1, 0), msg(2, 1)]
    assert visible_to(ALICE, events, (m for m in MEMBERS)) == events
    assert visible_to(OUTSIDER, events, (m for m in MEMBERS)) == []


def test_a_participant_with_no_state_changes_sees_everything() -> None:
    events = [
        msg(1, 0),
        removed(2, 1, who=BOB),
        msg(3, 2, author=ALICE),
        retraction(4, 3, target=3, author=ALICE),
        note(5, 4),
        readded(6, 5, who=BOB),
    ]
    assert visible_to(SUPPORT, events, MEMBERS) == events


def test_an_empty_timeline_shows_nothing() -> None:
    assert visible_to(ALICE, [], MEMBERS) == []


def test_every_kind_of_event_in_a_blackout_is_hidden() -> None:
    events = [
        msg(1, 0, author=ALICE),
        removed(2, 1),
        retraction(3, 2, target=1, author=ALICE),
        note(4, 2),
        msg(5, 2),
        readded(6, 3),
        note(7, 4),
    ]
    assert seqs_seen(ALICE, events) == [1, 2, 6, 7]


# --- own_changes, blackouts, state_at, is_visible -----------------------------------------------


def test_own_changes_picks_the_viewers_state_changes_in_timeline_order() -> None:
    events = [readded(5, 3), msg(1, 0), removed(4, 2, who=BOB), removed(2, 1), note(3, 1)]
    assert [c.seq for c in own_changes(ALICE, events)] == [2, 5]
    assert own_changes(SUPPORT, events) == []


def test_blackouts_of_no_changes_is_none() -> None:
    assert blackouts([]) == []


def test_blackouts_of_a_removal_alone_is_open_ended() -> None:
    assert blackouts([removed(3, 1)]) == [Blackout(key(3, 1), None)]


def test_blackouts_pair_each_removal_with_its_re_add() -> None:
    changes = [removed(2, 1), readded(4, 2), removed(6, 2), readded(7, 2), removed(9, 5)]
    assert blackouts(changes) == [
        Blackout(key(2, 1), key(4, 2)),
        Blackout(key(6, 2), key(7, 2)),
        Blackout(key(9, 5), None),
    ]


def test_blackout_hides_strictly_between_its_ends() -> None:
    window = Blackout(key(5, 1), key(9, 2))
    assert not window.hides(key(4, 1))
    assert not window.hides(key(5, 1))  # the removal itself
    assert window.hides(key(6, 1))
    assert window.hides(key(7, 1.5))
    assert window.hides(key(8, 2))
    assert not window.hides(key(9, 2))  # the re-add itself
    assert not window.hides(key(10, 2))


def test_open_blackout_hides_everything_after_its_start() -> None:
    window = Blackout(key(5, 1), None)
    assert not window.hides(key(4, 1))
    assert not window.hides(key(5, 1))
    assert window.hides(key(6, 1))
    assert window.hides(key(10**6, 10**6))


def test_state_at_with_no_changes_is_active() -> None:
    assert state_at([], key(1, 0)) is ACTIVE


def test_state_at_uses_the_latest_change_strictly_before_the_key() -> None:
    changes = [removed(3, 10), readded(6, 20), removed(8, 30)]
    assert state_at(changes, key(1, 0)) is ACTIVE  # before any change
    assert state_at(changes, key(2, 10)) is ACTIVE  # same instant, lower seq
    assert state_at(changes, key(3, 10)) is ACTIVE  # the removal itself: strictly before
    assert state_at(changes, key(4, 10)) is REMOVED  # same instant, higher seq
    assert state_at(changes, key(5, 20)) is REMOVED  # same instant as re-add, before it
    assert state_at(changes, key(6, 20)) is REMOVED  # the re-add itself
    assert state_at(changes, key(7, 20)) is ACTIVE  # after the re-add
    assert state_at(changes, key(9, 31)) is REMOVED  # after the last removal


def test_is_visible_own_state_change_is_visible_even_inside_a_window() -> None:
    inside = readded(5, 1)
    window = [Blackout(key(1, 0), None)]
    assert is_visible(ALICE, inside, window)
    assert not is_visible(BOB, inside, window)
    assert not is_visible(ALICE, msg(6, 2), window)
    assert is_visible(ALICE, msg(6, 2), [])
