"""Property test: the visibility filter agrees with a plain reference model.

Random timelines for three participants (person:a, person:b, role:r) of messages, system notes and
state changes — state changes only legal moves, `at` non-decreasing along `seq` with frequent ties —
are filtered by `core.model.visibility.visible_to` and by `reference_visible` below, which restates
PRODUCT.md literally and is slow on purpose: for each event E, walk every event before E in
`(at, seq)` order and take the viewer's latest own state change strictly before E (`active` if
none); E is visible iff it is the viewer's own state change or that state is `active`. A
non-member viewer (person:z) sees nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from core.model.membership import ParticipantState
from core.model.participants import Address, parse_address
from core.model.timeline import Event, EventId, Message, StateChange, SystemNote, ThreadId
from core.model.visibility import blackouts, own_changes, state_at, visible_to

A = parse_address("person:a")
B = parse_address("person:b")
R = parse_address("role:r")
NON_MEMBER = parse_address("person:z")
MEMBERS = (A, B, R)
VIEWERS = (A, B, R, NON_MEMBER)
ACTIVE = ParticipantState.ACTIVE
REMOVED = ParticipantState.REMOVED

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
THREAD = ThreadId("thread-p")


# One step of a timeline: how far the clock moves (0 half the time, so several events often share
# one instant) and what happens: a message by, or a state change of, one member, or a system note.
_GAPS = st.sampled_from([0, 0, 0, 1, 2, 1_000_000])  # microseconds
_ACTIONS = st.sampled_from(
    [("message", who) for who in MEMBERS] + [("state", who) for who in MEMBERS] + [("system", None)]
)
_STEP = st.tuples(_GAPS, _ACTIONS)


@st.composite
def timelines(draw: st.DrawFn) -> list[Event]:
    """A thread's events in seq order, with only legal state changes and many ties in `at`."""
    states = dict.fromkeys(MEMBERS, ACTIVE)
    at = T0
    events: list[Event] = []
    # The length is drawn first: a plain `st.lists` favours very short timelines.
    length = draw(st.integers(min_value=0, max_value=40))
    steps = draw(st.lists(_STEP, min_size=length, max_size=length))
    for seq, (gap, (kind, who)) in enumerate(steps, start=1):
        at += timedelta(microseconds=gap)
        common = {"id": EventId(f"e{seq}"), "thread_id": THREAD, "seq": seq, "position": seq}
        if kind == "message":
            events.append(Message(at=at, author=who, text=f"m{seq}", **common))  # type: ignore[arg-type]
        elif kind == "state":
            assert who is not None
            before = states[who]
            after = REMOVED if before is ACTIVE else ACTIVE
            states[who] = after
            events.append(
                StateChange(at=at, participant=who, from_state=before, to_state=after, **common)  # type: ignore[arg-type]
            )
        else:
            events.append(SystemNote(at=at, text=f"n{seq}", **common))  # type: ignore[arg-type]
    return events


def in_timeline_order(events: Sequence[Event]) -> list[Event]:
    return sorted(events, key=lambda e: (e.at, e.seq))


def reference_state(viewer: Address, ordered: Sequence[Event], target: Event) -> ParticipantState:
    """The viewer's state from its latest own state change strictly before `target`.

    `ordered` is the whole timeline in `(at, seq)` order.
    """
    state = ACTIVE
    for event in ordered:
        if (event.at, event.seq) >= (target.at, target.seq):
            break
        if isinstance(event, StateChange) and event.participant == viewer:
            state = event.to_state
    return state


def reference_visible(
    viewer: Address, events: Sequence[Event], members: Sequence[Address]
) -> list[Event]:
    if viewer not in members:
        return []
    ordered = in_timeline_order(events)
    visible = []
    for event in events:
        own = isinstance(event, StateChange) and event.participant == viewer
        if own or reference_state(viewer, ordered, event) == ACTIVE:
            visible.append(event)
    return visible


@settings(max_examples=300, deadline=None)
@given(events=timelines(), viewer=st.sampled_from(VIEWERS))
def test_property_visible_to_matches_the_reference_model(
    events: list[Event], viewer: Address
) -> None:
    assert visible_to(viewer, events, MEMBERS) == reference_visible(viewer, events, MEMBERS)


@settings(max_examples=100, deadline=None)
@given(events=timelines(), viewer=st.sampled_from(VIEWERS), data=st.data())
def test_property_visible_to_matches_the_reference_in_any_input_order(
    events: list[Event], viewer: Address, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(events))
    assert visible_to(viewer, shuffled, MEMBERS) == reference_visible(viewer, shuffled, MEMBERS)


@settings(max_examples=150, deadline=None)
@given(events=timelines(), viewer=st.sampled_from(MEMBERS))
def test_property_state_at_and_blackouts_agree_with_the_reference_state(
    events: list[Event], viewer: Address
) -> None:
    changes = own_changes(viewer, events)
    windows = blackouts(changes)
    ordered = in_timeline_order(events)
    for event in events:
        expected = reference_state(viewer, ordered, event)
        assert state_at(changes, event.key) is expected
        hidden = any(window.hides(event.key) for window in windows)
        own = isinstance(event, StateChange) and event.participant == viewer
        if not own:
            assert hidden == (expected is REMOVED)


@settings(max_examples=50, deadline=None)
@given(events=timelines())
def test_property_a_non_member_sees_nothing(events: list[Event]) -> None:
    assert visible_to(NON_MEMBER, events, MEMBERS) == []
