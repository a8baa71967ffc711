"""Replicas follow each other's commits (PostgreSQL): two `open_database` on one database act as
two replicas, and each one's listeners and buses hear every commit of both, in position order,
once — also after the notifications connection was killed (reconnect, then catch-up) and when a
notification is lost (the safety poll). The database is this module's own, dropped at its end.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from core.model.participants import ParticipantSet, parse_address
from core.model.tasks import Actor, TaskEvent
from core.model.timeline import AnyEvent
from core.storage import schema
from core.storage.database import Database, open_database, upgrade_schema
from core.storage.errors import StorageUnavailable
from core.storage.notify import APPLICATION_NAME, PgNotifications
from tests.conftest import ADMIN_URL, in_ci
from tests.waiting import WITHIN, eventually

pytestmark = pytest.mark.postgres

ALICE = parse_address("person:alice")
ROLE = parse_address("role:concierge")
ANN = Actor.person(ALICE)
NO_POLL = 600.0
"""A safety poll that never comes within a test: what arrives came by notification."""


def pair(*addresses: str) -> ParticipantSet:
    return ParticipantSet.of(addresses)


async def _admin(statement: str, *args: Any, database: str = "postgres") -> Any:
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"
    connection = await asyncpg.connect(url, timeout=5)
    try:
        return await connection.fetch(statement, *args)
    finally:
        await connection.close()


@dataclass(frozen=True)
class Throwaway:
    name: str
    url: str


@pytest.fixture(scope="module")
def throwaway() -> Iterator[Throwaway]:
    name = f"rolecall_follow_{uuid.uuid4().hex[:12]}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        if in_ci():
            pytest.fail(f"PostgreSQL is required in CI: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL not available: {type(exc).__name__}: {exc}")
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    try:
        asyncio.run(upgrade_schema(f"{base}/{name}"))
        yield Throwaway(name, f"{base}/{name}")
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@asynccontextmanager
async def replicas(url: str, **options: Any) -> AsyncIterator[tuple[Database, Database]]:
    """Two replicas of one database (two processes' worth of storage, in this one)."""
    a = await open_database(url, **options)
    try:
        b = await open_database(url, **options)
        try:
            yield a, b
        finally:
            await b.close()
    finally:
        await a.close()


@asynccontextmanager
async def connections_refused(name: str) -> AsyncIterator[None]:
    """No new connection to the database while inside (open ones stay up)."""
    await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        yield
    finally:
        await _admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


async def kill_listen_connection(db: Database) -> int:
    """Terminate the backend of `db`'s notifications connection; its pid."""
    assert db.notifications is not None
    pid = db.notifications.backend_pid
    assert pid is not None
    rows = await _admin("SELECT application_name FROM pg_stat_activity WHERE pid = $1", pid)
    assert [row["application_name"] for row in rows] == [APPLICATION_NAME]
    await _admin("SELECT pg_terminate_backend($1)", pid)
    return pid


async def heads(throwaway: Throwaway) -> dict[str, int]:
    """The highest position of each stream handed out so far (its sequence's)."""
    found = {}
    for stream, sequence in schema.POSITION_SEQUENCES.items():
        rows = await _admin(
            f"SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS v "
            f"FROM {sequence}",
            database=throwaway.name,
        )
        found[stream] = rows[0]["v"]
    return found


@dataclass
class Heard:
    """A listener that keeps what it hears."""

    events: list[AnyEvent] = field(default_factory=list)
    tasks: list[TaskEvent] = field(default_factory=list)

    def __call__(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        self.events += events
        self.tasks += task_events

    def has(self, event: AnyEvent) -> bool:
        return event.id in {e.id for e in self.events}

    def reached(self, events: int, tasks: int) -> bool:
        """Whether the last events heard are at these positions."""
        if not (self.events and self.tasks):
            return False
        return (self.events[-1].position, self.tasks[-1].position) == (events, tasks)


def deaf(db: Database) -> bool:
    """Whether `db`'s notifications connection is down."""
    return db.notifications is not None and db.notifications.backend_pid is None


async def test_a_message_through_one_replica_reaches_the_others_listeners_and_bus(
    throwaway: Throwaway,
) -> None:
    lags: list[float] = []
    async with replicas(throwaway.url, safety_poll=NO_POLL, on_notify_lag=lags.append) as (a, b):
        heard, heard_here = Heard(), Heard()
        b.listen(heard)
        a.listen(heard_here)
        thread, _ = await a.threads.resolve(pair("person:alice", "role:concierge"))
        message = await a.threads.post_message(thread.id, ALICE, "hello from a")
        # Its own replica's listeners heard it before the writer's caller was answered.
        assert heard_here.has(message) and a.bus.head == message.position
        async with asyncio.timeout(WITHIN):
            head = b.bus.head
            while head < message.position:
                head = await b.bus.wait_beyond(head)
        # The bus publishes what was handed out: the listener had the message by then.
        assert heard.has(message)
        assert lags and all(0 <= lag < WITHIN for lag in lags)


async def test_interleaved_commits_reach_every_replica_once_each_in_position_order(
    throwaway: Throwaway,
) -> None:
    # Small batches: many commits from each side, interleaved with the other side's.
    async with replicas(throwaway.url, safety_poll=NO_POLL, max_batch=3) as (a, b):
        sides = [(a, Heard()), (b, Heard())]
        for db, heard in sides:
            db.listen(heard)
        start = await heads(throwaway)
        threads = [
            (await a.threads.resolve(pair(f"person:p{i}", "role:concierge")))[0] for i in range(4)
        ]
        task, _ = await b.tasks.create(title="t", body="", assignee=None, external=None, actor=ANN)
        writes = [
            db.threads.post_message(thread.id, ROLE, f"{n}")
            for n in range(40)
            for thread in threads
            for db in (a, b)
        ] + [db.tasks.comment(task.id, f"c{n}", ANN) for n in range(30) for db in (a, b)]
        await asyncio.gather(*writes)
        end = await heads(throwaway)
        events = list(range(start["events"] + 1, end["events"] + 1))
        tasks = list(range(start["task_events"] + 1, end["task_events"] + 1))
        assert len(events) == 4 * 2 * 40 and len(tasks) == 1 + 2 * 30
        for _, heard in sides:
            await eventually(partial(heard.reached, events[-1], tasks[-1]))
        # Anything heard twice would be heard by now: a later commit has come through both.
        marker = await b.threads.post_message(threads[0].id, ROLE, "the end")
        for db, heard in sides:
            await eventually(partial(heard.has, marker))
            assert [e.position for e in heard.events] == [*events, marker.position]
            assert [t.position for t in heard.tasks] == tasks
            assert db.bus.head == marker.position and db.task_bus.head == tasks[-1]


async def test_a_task_event_through_one_replica_reaches_the_others_listeners(
    throwaway: Throwaway,
) -> None:
    async with replicas(throwaway.url, safety_poll=NO_POLL) as (a, b):
        heard = Heard()
        b.listen(heard)
        _, created = await a.tasks.create(
            title="t", body="", assignee=None, external=None, actor=ANN
        )
        await eventually(lambda: created.id in {t.id for t in heard.tasks})
        assert b.task_bus.head >= created.position


async def test_a_killed_notifications_connection_reconnects_and_misses_nothing(
    throwaway: Throwaway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="core.storage.notify")
    async with replicas(throwaway.url, safety_poll=NO_POLL) as (a, b):
        assert b.notifications is not None
        heard = Heard()
        b.listen(heard)
        thread, _ = await a.threads.resolve(pair("person:alice", "role:concierge"))
        async with connections_refused(throwaway.name):
            killed = await kill_listen_connection(b)
            await eventually(partial(deaf, b))
            # B is deaf: A's notification of these is lost, B reads them once it is back.
            meanwhile = [
                await a.threads.post_message(thread.id, ALICE, f"meanwhile {n}") for n in range(3)
            ]
        await eventually(lambda: all(heard.has(m) for m in meanwhile))
        assert b.notifications.backend_pid not in (None, killed)
        later = await a.threads.post_message(thread.id, ALICE, "later")
        await eventually(lambda: heard.has(later))
        positions = [e.position for e in heard.events]
        assert positions == sorted(set(positions))
    notify = [r for r in caplog.records if r.name == "core.storage.notify"]
    warnings = [r for r in notify if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None, warnings
    back = [r for r in notify if r.levelno == logging.INFO and "again" in r.getMessage()]
    assert len(back) == 1, back


async def test_a_lost_notification_is_made_up_for_by_the_safety_poll(
    throwaway: Throwaway,
) -> None:
    async with replicas(throwaway.url, safety_poll=0.2) as (a, b):
        heard = Heard()
        b.listen(heard)
        thread, _ = await a.threads.resolve(pair("person:alice", "role:concierge"))
        async with connections_refused(throwaway.name):
            await kill_listen_connection(a)
            await eventually(partial(deaf, a))
            message = await a.threads.post_message(thread.id, ALICE, "unannounced")
            await eventually(lambda: heard.has(message))


async def test_a_listener_that_raises_does_not_stop_the_others(
    throwaway: Throwaway, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def fails(_events: Sequence[AnyEvent], _tasks: Sequence[TaskEvent]) -> None:
        raise RuntimeError("a listener's bug")

    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'rolecall.db'}"
    await upgrade_schema(sqlite)
    async with replicas(throwaway.url, safety_poll=NO_POLL) as (a, b):
        alone = await open_database(sqlite)
        try:
            for writer, hearer in ((a, b), (alone, alone)):
                heard = Heard()
                hearer.listen(fails)
                hearer.listen(heard)
                thread, _ = await writer.threads.resolve(pair("person:alice", "role:concierge"))
                message = await writer.threads.post_message(thread.id, ALICE, "still heard")
                _, created = await writer.tasks.create(
                    title="t", body="", assignee=None, external=None, actor=ANN
                )
                await eventually(partial(heard.reached, message.position, created.position))
                assert hearer.bus.head == message.position
                assert hearer.task_bus.head == created.position
        finally:
            await alone.close()
    failures = [r for r in caplog.records if r.getMessage() == "a committed-event listener failed"]
    assert failures and all(r.exc_info is not None for r in failures)


async def test_a_free_form_channel_carries_notifications_to_its_listeners_until_stopped(
    throwaway: Throwaway,
) -> None:
    async with replicas(throwaway.url, safety_poll=NO_POLL) as (a, b):
        assert a.notifications is not None and b.notifications is not None
        channel = "rolecall_control: Cancel run"  # any name, spaces and capitals included
        heard: list[str] = []
        marks: list[str] = []
        stop = await b.notifications.listen(channel, heard.append)
        await b.notifications.listen("marks", marks.append)
        await a.notifications.notify(channel, "cancel r1")
        await eventually(lambda: heard == ["cancel r1"])
        await stop()
        await a.notifications.notify(channel, "cancel r2")
        await a.notifications.notify("marks", "after r2")
        await eventually(lambda: marks == ["after r2"])
        assert heard == ["cancel r1"]


class Blackhole:
    """A TCP proxy to PostgreSQL that can go silent: while `silent`, bytes of the connections
    it carries are dropped (the sockets stay open: no peer hears of it) and new connections
    are closed at once."""

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self.silent = False
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> int:
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for pipe in self._pipes:
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.silent:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            pipe = asyncio.create_task(self._pipe(source, sink))
            self._pipes.add(pipe)
            pipe.add_done_callback(self._pipes.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                if not self.silent:
                    sink.write(data)
                    await sink.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            sink.close()


async def test_a_notifications_connection_gone_silent_is_found_by_its_ping_and_reopened(
    throwaway: Throwaway,
) -> None:
    url = make_url(throwaway.url)
    proxy = Blackhole(url.host or "127.0.0.1", url.port or 5432)
    async with proxy as port, replicas(throwaway.url, safety_poll=NO_POLL) as (a, _):
        through = url.set(port=port).render_as_string(hide_password=False)
        quiet = await PgNotifications.open(through, ping_every=0.1, ping_timeout=0.5)
        try:
            heard: list[str] = []
            await quiet.listen("marks", heard.append)
            reconnected: list[bool] = []
            quiet.on_reconnect(lambda: reconnected.append(True))
            before = quiet.backend_pid
            proxy.silent = True
            await eventually(lambda: quiet.backend_pid is None)
            with pytest.raises(StorageUnavailable):
                await quiet.notify("marks", "while silent")
            proxy.silent = False
            await eventually(lambda: reconnected)
            assert quiet.backend_pid not in (None, before)
            assert a.notifications is not None
            await a.notifications.notify("marks", "back")  # the LISTEN was restored
            await eventually(lambda: heard == ["back"])
        finally:
            await quiet.close()
