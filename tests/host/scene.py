"""What the run host's tests share: the run host on a real database (SQLite, and PostgreSQL
when present), with agents of the tests' own at the edge. An agent is the world outside the
gateway, so a test may script one (one that fails, one that is slow, one that writes down what
it was told); the host, the driver, storage and the built-in runtime are the real ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from core.engine.host import HostLimits, RunHost
from core.engine.runtimes.builtin import BuiltinAgent
from core.model.participants import Address, ParticipantSet
from core.model.roles import Role
from core.model.runs.run import Run
from core.model.timeline import AnyEvent, Message, SystemNote, ThreadId
from core.storage.database import Database
from tests.waiting import eventually

FAST = HostLimits(backoff=0.01)


def role(name: str, agent: str | None = None, **fields: Any) -> Role:
    runtime = {"kind": "builtin", "agent": agent or name}
    runtime.update(fields.pop("runtime", {}))
    return Role.model_validate(
        {"name": name, "display_name": name.title(), "runtime": runtime, **fields}
    )


class Scene:
    """A database, a host over it, and the steps a test takes."""

    def __init__(self, database: Database, host: RunHost) -> None:
        self.db = database
        self.host = host

    async def conversation(self, *participants: str) -> ThreadId:
        thread, _ = await self.db.threads.resolve(ParticipantSet.of(participants))
        return thread.id

    async def say(self, thread_id: ThreadId, author: str, text: str) -> Message:
        return await self.db.threads.post_message(thread_id, Address(author), text)

    async def events(self, thread_id: ThreadId, **kwargs: Any) -> list[AnyEvent]:
        page = await self.db.threads.timeline(thread_id, limit=500, **kwargs)
        return list(page.events)

    async def said_by(self, thread_id: ThreadId, author: str) -> list[str]:
        return [
            e.text
            for e in await self.events(thread_id)
            if isinstance(e, Message) and e.author == author
        ]

    async def notes(self, thread_id: ThreadId) -> list[str]:
        return [e.text for e in await self.events(thread_id) if isinstance(e, SystemNote)]

    async def replies(self, thread_id: ThreadId, author: str, count: int, **kw: Any) -> list[str]:
        async def enough() -> list[str] | None:
            said = await self.said_by(thread_id, author)
            return said if len(said) >= count else None

        return await eventually(enough, what=f"{count} replies by {author}", **kw)

    async def wait_for_notes(self, thread_id: ThreadId, count: int, **kw: Any) -> list[str]:
        async def enough() -> list[str] | None:
            notes = await self.notes(thread_id)
            return notes if len(notes) >= count else None

        return await eventually(enough, what=f"{count} system notes", **kw)

    async def run_of(self, thread_id: ThreadId) -> Run:
        async def found() -> Run | None:
            runs = await self.db.runs.of_thread(thread_id)
            return runs[0] if runs else None

        return await eventually(found, what=f"a run of thread {thread_id}")


class MakeScene(Protocol):
    """The `make_scene` fixture: `async with make_scene(roles, agents=…) as scene:`."""

    def __call__(
        self,
        roles: list[Role],
        *,
        agents: Mapping[str, type[BuiltinAgent]] | None = None,
        limits: HostLimits = FAST,
        start: bool = True,
    ) -> AbstractAsyncContextManager[Scene]: ...
