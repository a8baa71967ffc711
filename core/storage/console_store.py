"""What the operator console (`gateway.console`) keeps and reads that no other store has.

**Sessions** (`console_sessions`). An operator signs in to the console with an operator token
and gets a session: a random id in an HttpOnly cookie. Only the id's SHA-256 digest is stored,
with the name of the operator token that opened it (never the token), the session's CSRF token,
where it was opened from, and when it was opened, when it ends and when it was last used. A
session ends at `expires_at` (a fixed lifetime from opening: using it does not extend it), when
its operator signs out (`close`), or when its operator token is revoked — the console checks the
token by name on every request and closes the session it finds revoked. Opening a session deletes
every session past its end, so the table holds about as many rows as there are signed-in
browsers. `last_seen_at` is written at most about once a minute per session (`see`), so reading
a page costs no write.

**The overview's counts and finding people**, for the operator API's read routes
(`gateway.api.overview`, `gateway.api.search`): threads in all, every run's status and whether
its session was ever opened (the gateway adds what its run host holds now), and people whose
slug, name, email or a linked identity holds a text. The counts are aggregates the database
makes over those tables (`count(*)`, and over `runs` joined to their current sessions two sums):
no run crosses into Python but those the run host holds, looked up by id. The people search is
a `LIKE` over `persons` and `identities`, paged by slug. The last hour's turns and what waits to
be delivered are counted by `core.storage.overview_reads`, each by an index (named there).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, delete, exists, func, or_, select, update

from core.model.activity import Hour
from core.model.people import Person
from core.model.runs.run import RunId, RunStatus
from core.model.timeline import ThreadId
from core.storage import overview_reads, schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.deliveries_reads import ThreadChannels, thread_channels
from core.storage.message_search import FoundMessages, found_messages
from core.storage.people_store import person_from_row
from core.storage.transact import Transactor
from core.storage.writer import Writer

_s = schema.console_sessions


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleSession:
    """A signed-in console session as stored (times in microseconds since the epoch)."""

    digest: str
    """SHA-256 of the session id, in hex: the id itself is only in the browser's cookie."""
    operator: str
    """The name of the operator token that opened it: who the session acts as."""
    csrf: str
    """The token every change must carry (a form field or a header)."""
    client: str
    created_at: int
    expires_at: int
    last_seen_at: int


def _session_from_row(row: Any) -> ConsoleSession:
    return ConsoleSession(
        digest=row.session_hash,
        operator=row.operator,
        csrf=row.csrf_token,
        client=row.client,
        created_at=row.created_at,
        expires_at=row.expires_at,
        last_seen_at=row.last_seen_at,
    )


@dataclass(frozen=True, slots=True)
class OpenSession(NoRuns):
    """A new session that ends `lifetime` microseconds from now; the ended ones go."""

    digest: str
    operator: str
    csrf: str
    client: str
    lifetime: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], ConsoleSession]:
        connection, now = batch.connection, batch.now
        connection.execute(delete(_s).where(_s.c.expires_at <= now))
        opened = ConsoleSession(
            digest=self.digest,
            operator=self.operator,
            csrf=self.csrf,
            client=self.client,
            created_at=now,
            expires_at=now + self.lifetime,
            last_seen_at=now,
        )
        connection.execute(
            _s.insert().values(
                session_hash=opened.digest,
                operator=opened.operator,
                csrf_token=opened.csrf,
                client=opened.client,
                created_at=opened.created_at,
                expires_at=opened.expires_at,
                last_seen_at=opened.last_seen_at,
            )
        )
        return lambda: opened


@dataclass(frozen=True, slots=True)
class CloseSession(NoRuns):
    digest: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        deleted = batch.connection.execute(delete(_s).where(_s.c.session_hash == self.digest))
        closed = bool(deleted.rowcount)
        return lambda: closed


@dataclass(frozen=True, slots=True)
class SeeSession(NoRuns):
    """Record a use at `at` (unless a later one was recorded meanwhile)."""

    digest: str
    at: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(
            update(_s)
            .where(_s.c.session_hash == self.digest, _s.c.last_seen_at < self.at)
            .values(last_seen_at=self.at)
        )
        return lambda: None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCensus:
    """How many runs there are, how many are failed, how many have a current session that was
    ever opened (an unopened session cannot be asleep), and of the runs asked about (those the
    run host holds now) which are stored and which of those are among the opened ones."""

    total: int
    failed: int
    opened: int
    stored_of: frozenset[RunId]
    opened_of: frozenset[RunId]


_CHUNK = 500
"""Run ids per `IN (…)` list: well under every backend's limit of bound parameters."""


def _session_row(connection: Reads, digest: str) -> ConsoleSession | None:
    row = connection.execute(select(_s).where(_s.c.session_hash == digest)).first()
    return _session_from_row(row) if row is not None else None


def _census(connection: Reads, held: Collection[RunId]) -> RunCensus:
    runs, sessions = schema.runs, schema.run_sessions
    joined = runs.outerjoin(sessions, sessions.c.id == runs.c.session_id)
    was_opened = sessions.c.state.is_not(None)
    total, failed, opened = connection.execute(
        select(
            func.count(),
            func.coalesce(func.sum(case((runs.c.status == RunStatus.FAILED.value, 1), else_=0)), 0),
            func.coalesce(func.sum(case((was_opened, 1), else_=0)), 0),
        ).select_from(joined)
    ).one()
    asked = sorted(held)
    stored_of: set[RunId] = set()
    opened_of: set[RunId] = set()
    for i in range(0, len(asked), _CHUNK):
        chunk = asked[i : i + _CHUNK]
        found = connection.execute(
            select(runs.c.id, was_opened).select_from(joined).where(runs.c.id.in_(chunk))
        )
        for run_id, is_opened in found:
            stored_of.add(RunId(run_id))
            if is_opened:
                opened_of.add(RunId(run_id))
    return RunCensus(
        total=int(total),
        failed=int(failed),
        opened=int(opened),
        stored_of=frozenset(stored_of),
        opened_of=frozenset(opened_of),
    )


def _found_persons(connection: Reads, text: str, after: str | None, limit: int) -> list[Person]:
    persons, identities = schema.persons, schema.identities
    needle = text.strip().lower()
    slug = needle.removeprefix("person:")

    def holds(column: Any, what: str) -> Any:
        return func.lower(column).contains(what, autoescape=True)

    query = select(persons).where(
        or_(
            holds(persons.c.slug, slug),
            holds(persons.c.display_name, needle),
            holds(persons.c.email, needle),
            exists().where(
                identities.c.person_slug == persons.c.slug, holds(identities.c.address, needle)
            ),
        )
    )
    if after is not None:
        query = query.where(persons.c.slug > after)
    rows = connection.execute(query.order_by(persons.c.slug).limit(limit))
    return [person_from_row(row) for row in rows]


class SqlConsole:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    # --- sessions -------------------------------------------------------------------------------

    async def open(
        self, *, digest: str, operator: str, csrf: str, client: str, lifetime: int
    ) -> ConsoleSession:
        """A new session of `operator`'s token, ending `lifetime` microseconds from now."""
        return await self._writer.run(OpenSession(digest, operator, csrf, client[:200], lifetime))

    async def get(self, digest: str) -> ConsoleSession | None:
        """The session whose id has this digest (ended or not), or None."""
        return await self._reads.transact_brief(lambda c: _session_row(c, digest))

    async def close(self, digest: str) -> bool:
        """End the session; False when there was none."""
        return await self._writer.run(CloseSession(digest))

    async def see(self, digest: str, at: int) -> None:
        """Record a use of the session at `at` (microseconds)."""
        await self._writer.run(SeeSession(digest, at))

    # --- the overview's counts and finding people -----------------------------------------------

    async def count_threads(self) -> int:
        return await self._reads.transact(
            lambda c: int(c.execute(select(func.count()).select_from(schema.threads)).scalar_one())
        )

    async def run_census(self, held: Collection[RunId] = ()) -> RunCensus:
        """The runs counted, and which of `held` have a session that was ever opened."""
        return await self._reads.transact(lambda c: _census(c, held))

    async def last_hour(self, since: int) -> Hour:
        """The hour from `since` (microseconds), counted by the database
        (`core.storage.overview_reads.hour_from`)."""
        return await self._reads.transact(lambda c: overview_reads.hour_from(c, since))

    async def slack_backlog(self) -> list[overview_reads.SlackBacklog]:
        return await self._reads.transact(overview_reads.slack_backlog)

    async def endpoint_backlog(self) -> overview_reads.EndpointBacklog:
        return await self._reads.transact(overview_reads.endpoint_backlog)

    async def channels_of(
        self, thread_id: ThreadId, first_seq: int, last_seq: int
    ) -> ThreadChannels:
        """The thread's channels and its messages' Slack state in `first_seq..last_seq`."""
        return await self._reads.transact(
            lambda c: thread_channels(c, thread_id, first_seq, last_seq)
        )

    async def find_messages(self, text: str, *, before: int | None, limit: int) -> FoundMessages:
        """Messages whose text holds `text` (case aside), newest first (`message_search`)."""
        return await self._reads.transact(
            lambda c: found_messages(c, text, before=before, limit=limit)
        )

    async def find_persons(self, text: str, *, after: str | None, limit: int) -> list[Person]:
        """People, in slug order after `after`, whose slug, display name, email or a linked
        identity holds `text` (case aside)."""
        return await self._reads.transact(lambda c: _found_persons(c, text, after, limit))
