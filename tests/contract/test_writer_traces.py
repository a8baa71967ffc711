"""The writer carries traces across its batches (docs/tracing.md): a command sent from inside a
trace is a `rolecall.commit` span of that trace; a batch that serves several traced requests is a
`rolecall.write_batch` span of its own, linked to each commit span and each linking back; each
committed event is remembered with the commit span of the command that appended it — also when
a command of the batch fails and the batch is redone a savepoint per command. A command sent
from outside any trace makes no span. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core import tracing
from core.model.participants import ParticipantSet, parse_address
from core.model.timeline import Message
from core.storage.database import Database
from core.storage.threads_commands import PostMessage
from tests.spans import Recorded

ALICE = parse_address("person:alice")
ROLE = parse_address("role:concierge")


@pytest.mark.usefixtures("core_spans")
async def test_a_batch_links_the_commits_it_served_and_each_event_keeps_its_own(
    database: Database, recorded: Recorded
) -> None:
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    assert recorded.spans == ()  # sent from outside any trace: no span
    tracer = recorded.provider.get_tracer("test")
    commands = [
        PostMessage(thread.id, ALICE, "first", None),
        PostMessage(thread.id, ALICE, "lone \ud800 surrogate", None),  # fails at the flush
        PostMessage(thread.id, ALICE, "third", None),
    ]

    async def request(number: int, command: PostMessage) -> Any:
        with tracer.start_as_current_span(f"request {number}"):
            return await database._writer.run(command)

    # Handed to the writer in the same turn of the loop: they share a batch.
    results = await asyncio.gather(
        *(request(n, c) for n, c in enumerate(commands)), return_exceptions=True
    )
    first, failed, third = results
    assert isinstance(first, Message) and isinstance(third, Message)
    assert isinstance(failed, Exception)

    commits = {}
    for commit in recorded.named("rolecall.commit"):
        request_span = recorded.parent(commit)
        assert request_span is not None
        commits[request_span.name] = commit
    assert sorted(commits) == ["request 0", "request 1", "request 2"]
    [batch] = recorded.named("rolecall.write_batch")
    assert batch.parent is None
    assert batch.attributes is not None and batch.attributes["rolecall.batch.commands"] == 3
    assert sorted(s.name for s in recorded.linked(batch)) == ["rolecall.commit"] * 3
    for commit in commits.values():
        assert recorded.linked(commit) == [batch]
    for message, number in ((first, 0), (third, 2)):
        commit = commits[f"request {number}"]
        assert tracing.origin_of(message.id) == commit.context
        assert commit.attributes is not None and commit.attributes["rolecall.events"] == 1
    assert not commits["request 1"].status.is_ok


@pytest.mark.usefixtures("core_spans")
async def test_events_are_forgotten_oldest_first(
    database: Database, recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracing, "KEPT", 2)
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    tracer = recorded.provider.get_tracer("test")
    said = []
    for text in ("one", "two", "three"):
        with tracer.start_as_current_span("request"):
            said.append(await database.threads.post_message(thread.id, ALICE, text))
    assert [tracing.origin_of(m.id) is not None for m in said] == [False, True, True]
