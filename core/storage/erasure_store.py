"""A person's erasure in SQL (the rules and what goes: `core.model.erasure`).

An erasure is a series of write batches, so that no one batch holds the writer long:

1. `ForgetPerson`: the person (and everyone merged into them) becomes a tombstone — inactive,
   `erased_at`, no name, no email — and their identities and link codes go. From this commit on
   nobody can reach the old data through them: no identity leads to them, and resolving a set
   that names them is refused (`check_resolvable`).
2. `EraseInThread`, once per thread they are a member of: the messages become tombstones (the
   row stays, with its id, `seq`, `position`, kind, author and time; `text` empty, `context`
   null, `detail` `{"erased": true}`), retraction reasons go, memory stored there goes, the
   transcripts of the thread's runs lose prompt and steps, their sessions' saved state goes, and
   an `erased` event is appended — one per thread, unless an earlier erasure of the same person
   appended one and nothing was left to erase.

An erasure cut short (a crash between batches) is finished by erasing again: each step is
idempotent, and the threads are found from the memberships, which erasure never removes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Table, and_, delete, func, select, update
from sqlalchemy.sql.elements import ColumnElement

from core.model.erasure import (
    ERASED_NAME,
    ERASED_PROMPT,
    Erasure,
    check_erasable,
    erases_every_message,
)
from core.model.errors import Gone
from core.model.participants import Address, ParticipantSet
from core.model.people import slug_of
from core.model.timeline import Erased, ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.people_store import locked_person, person
from core.storage.rows import TOMBSTONE
from core.storage.transact import Transactor
from core.storage.writer import Writer

_p, _i, _c = schema.persons, schema.identities, schema.link_codes
_e, _tp = schema.events, schema.thread_participants
_CHUNK = 500
"""Ids in one `IN (…)`."""


def check_resolvable(connection: Reads, participants: ParticipantSet) -> None:
    """Refuse a participant set that names an erased person: their address never reaches the
    old data again."""
    slugs = [slug_of(a) for a in participants if a.startswith("person:")]
    if not slugs:
        return
    erased = connection.execute(
        select(_p.c.slug).where(_p.c.slug.in_(slugs), _p.c.erased_at.is_not(None)).limit(1)
    ).scalar()
    if erased is not None:
        raise Gone(f"person:{erased} was erased", code="person_erased")


def _merged_into(connection: Reads, slug: str) -> list[str]:
    """The slug and every slug merged into it, directly or through others."""
    found, frontier = [slug], [slug]
    while frontier:
        frontier = list(
            connection.execute(select(_p.c.slug).where(_p.c.merged_into.in_(frontier))).scalars()
        )
        found += [s for s in frontier if s not in found]
    return found


def _threads_of(connection: Reads, addresses: Sequence[str]) -> list[ThreadId]:
    query = select(_tp.c.thread_id).where(_tp.c.address.in_(addresses)).distinct()
    return sorted(ThreadId(t) for t in connection.execute(query).scalars())


def _their_messages(
    connection: Reads, thread_id: ThreadId, addresses: Sequence[str]
) -> ColumnElement[bool]:
    """The thread's messages that go: theirs, or in their conversation every one."""
    members = [Address(a) for a in connection.execute(
        select(_tp.c.address).where(_tp.c.thread_id == thread_id)
    ).scalars()]  # fmt: skip
    chosen = and_(_e.c.thread_id == thread_id, _e.c.kind == "message", _e.c.detail.is_(None))
    if erases_every_message(members, addresses):
        return chosen
    return and_(chosen, _e.c.author.in_(addresses))


def _runs_of(thread_id: ThreadId) -> ColumnElement[bool]:
    return schema.runs.c.thread_id == thread_id


def _count(connection: Reads, table: Table, where: ColumnElement[bool]) -> int:
    return int(
        connection.execute(select(func.count()).select_from(table).where(where)).scalar_one()
    )


def _slack_posts(connection: Reads, thread_ids: Sequence[ThreadId]) -> int:
    posts = schema.slack_messages
    of_threads = select(_e.c.id).where(_e.c.thread_id.in_(thread_ids))
    return _count(connection, posts, and_(posts.c.outbound, posts.c.message_id.in_(of_threads)))


def _in_thread(connection: Reads, thread_id: ThreadId, addresses: Sequence[str]) -> Erasure:
    """What erasing in this thread would remove."""
    memory = schema.memory_entries
    return Erasure(
        threads=1,
        messages=_count(connection, _e, _their_messages(connection, thread_id, addresses)),
        memory_entries=_count(connection, memory, memory.c.thread_id == thread_id),
        turns=len(_unerased_turns(connection, thread_id)),
    )


def plan(connection: Connection, slug: str) -> Erasure:
    """What erasing the person would remove, read in one snapshot."""
    check_erasable(person(connection, slug))
    slugs = _merged_into(connection, slug)
    addresses = [f"person:{s}" for s in slugs]
    threads = _threads_of(connection, addresses)
    total = Erasure(
        identities=_count(connection, _i, _i.c.person_slug.in_(slugs)),
        link_codes=_count(connection, _c, _c.c.person_slug.in_(slugs)),
        slack_posts=_slack_posts(connection, threads) if threads else 0,
    )
    for thread_id in threads:
        total += _in_thread(connection, thread_id, addresses)
    return total


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What `ForgetPerson` did: the addresses to erase in the threads it found."""

    addresses: tuple[str, ...]
    threads: tuple[ThreadId, ...]
    erasure: Erasure


@dataclass(frozen=True, slots=True)
class ForgetPerson(NoRuns):
    """The person and everyone merged into them become tombstones; identities and codes go."""

    slug: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        check_erasable(locked_person(batch.connection, self.slug))  # erased ones: again

    def write(self, batch: Batch, plan: None) -> Callable[[], Forgotten]:
        connection = batch.connection
        slugs = _merged_into(connection, self.slug)
        addresses = tuple(f"person:{s}" for s in slugs)
        threads = tuple(_threads_of(connection, addresses))
        identities = connection.execute(delete(_i).where(_i.c.person_slug.in_(slugs))).rowcount
        codes = connection.execute(delete(_c).where(_c.c.person_slug.in_(slugs))).rowcount
        connection.execute(
            update(_p)
            .where(_p.c.slug.in_(slugs))
            .values(
                active=False,
                display_name=ERASED_NAME,
                email=None,
                erased_at=func.coalesce(_p.c.erased_at, batch.now),
            )
        )
        posts = _slack_posts(connection, threads) if threads else 0
        erasure = Erasure(identities=identities, link_codes=codes, slack_posts=posts)
        forgotten = Forgotten(addresses, threads, erasure)
        return lambda: forgotten


@dataclass(frozen=True, slots=True)
class EraseInThread(NoRuns):
    """Erase what the person (`addresses[0]`, and those merged into them) left in one thread."""

    thread_id: ThreadId
    addresses: tuple[str, ...]

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> None:
        batch.thread(self.thread_id)

    def write(self, batch: Batch, plan: None) -> Callable[[], Erasure]:
        connection, thread_id = batch.connection, self.thread_id
        messages = connection.execute(
            update(_e)
            .where(_their_messages(connection, thread_id, self.addresses))
            .values(text="", context=None, detail=TOMBSTONE)
        ).rowcount
        connection.execute(
            update(_e)
            .where(
                _e.c.thread_id == thread_id,
                _e.c.kind == "retraction",
                _e.c.author.in_(self.addresses),
            )
            .values(reason=None)
        )
        memory = _erase_memory(connection, thread_id)
        turns = _erase_transcripts(connection, thread_id)
        if messages or not self._erased_before(connection):
            batch.stage(
                batch.thread(thread_id),
                Erased,
                participant=Address(self.addresses[0]),
                messages=messages,
            )
        erasure = Erasure(threads=1, messages=messages, memory_entries=memory, turns=turns)
        return lambda: erasure

    def _erased_before(self, connection: Connection) -> bool:
        return bool(
            _count(
                connection,
                _e,
                and_(
                    _e.c.thread_id == self.thread_id,
                    _e.c.kind == "erased",
                    _e.c.participant == self.addresses[0],
                ),
            )
        )


def _erase_memory(connection: Connection, thread_id: ThreadId) -> int:
    entries, redactions = schema.memory_entries, schema.memory_redactions
    here = select(entries.c.id).where(entries.c.thread_id == thread_id)
    connection.execute(delete(redactions).where(redactions.c.entry_id.in_(here)))
    return int(connection.execute(delete(entries).where(entries.c.thread_id == thread_id)).rowcount)


def _unerased_turns(connection: Reads, thread_id: ThreadId) -> list[str]:
    """The turns of the thread's runs whose transcript still holds its prompt (compared here,
    not in SQL: JSON compares differently on each database)."""
    turns, of_runs = schema.turns, select(schema.runs.c.id).where(_runs_of(thread_id))
    rows = connection.execute(select(turns.c.id, turns.c.prompt).where(turns.c.run_id.in_(of_runs)))
    return [turn_id for turn_id, prompt in rows if prompt != ERASED_PROMPT]


def _erase_transcripts(connection: Connection, thread_id: ThreadId) -> int:
    of_runs = select(schema.runs.c.id).where(_runs_of(thread_id))
    turns, sessions = schema.turns, schema.run_sessions
    connection.execute(update(sessions).where(sessions.c.run_id.in_(of_runs)).values(state=None))
    connection.execute(update(schema.runs).where(_runs_of(thread_id)).values(last_error=None))
    chosen = _unerased_turns(connection, thread_id)
    for start in range(0, len(chosen), _CHUNK):
        connection.execute(
            update(turns)
            .where(turns.c.id.in_(chosen[start : start + _CHUNK]))
            .values(prompt=ERASED_PROMPT, steps=[], error=None)
        )
    return len(chosen)


class SqlErasure:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def plan(self, slug: str) -> Erasure:
        """What erasing the person would remove (`person_merged` for one merged into another)."""
        return await self._reads.transact(lambda c: plan(c, slug))

    async def threads_of(self, slug: str) -> list[ThreadId]:
        """The threads erasing the person erases in (`person_merged` as `plan`)."""

        def read(connection: Connection) -> list[ThreadId]:
            check_erasable(person(connection, slug))
            return _threads_of(connection, [f"person:{s}" for s in _merged_into(connection, slug)])

        return await self._reads.transact(read)

    async def erase(
        self, slug: str, *, progress: Callable[[int, int], None] | None = None
    ) -> Erasure:
        """Erase the person (`core.model.erasure`): first the person, then thread by thread,
        telling `progress(done, of)` after each thread; what went."""
        forgotten = await self._writer.run(ForgetPerson(slug))
        total = forgotten.erasure
        for done, thread_id in enumerate(forgotten.threads, start=1):
            total += await self._writer.run(EraseInThread(thread_id, forgotten.addresses))
            if progress is not None:
                progress(done, len(forgotten.threads))
        return total
