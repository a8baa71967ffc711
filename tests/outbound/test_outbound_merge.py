"""How a worker merges a page of timeline events with a page of task events: by commit time,
each stream in its own order, stopping where a full page runs out (what follows it is unread)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from channels.webhooks.outbound import _merged
from core.model.participants import Address
from core.model.tasks import Actor, TaskEvent, TaskEventKind, TaskId
from core.model.timeline import EventId, Message, ThreadId

T0 = datetime(2026, 11, 30, tzinfo=UTC)


def _message(position: int, second: int) -> Message:
    return Message(
        id=EventId(f"m{position}"),
        thread_id=ThreadId("t"),
        seq=position,
        position=position,
        at=T0 + timedelta(seconds=second),
        author=Address("person:ann"),
        text="hi",
    )


def _task_event(position: int, second: int) -> TaskEvent:
    return TaskEvent(
        id=f"k{position}",
        task_id=TaskId("task"),
        seq=position,
        position=position,
        at=T0 + timedelta(seconds=second),
        kind=TaskEventKind.COMMENTED,
        actor=Actor.person(Address("person:ann")),
        changes={},
        text="x",
    )


def test_streams_interleave_by_commit_time_timeline_first_on_a_tie() -> None:
    timeline = [_message(1, 0), _message(2, 2), _message(3, 4)]
    tasks = [_task_event(1, 1), _task_event(2, 2), _task_event(3, 9)]
    order = [item.event.id for item in _merged(timeline, tasks, page=10)]
    assert order == ["m1", "k1", "m2", "k2", "m3", "k3"]


def test_a_full_page_stops_the_merge_where_it_runs_out() -> None:
    timeline = [_message(1, 0), _message(2, 5)]  # a full page of 2: more may follow
    tasks = [_task_event(1, 1), _task_event(2, 9)]
    order = [item.event.id for item in _merged(timeline, tasks, page=2)]
    assert order == ["m1", "k1", "m2"]  # k2 waits: an unread message may come before it
    assert [i.event.id for i in _merged([], [_task_event(1, 1)], page=2)] == ["k1"]
