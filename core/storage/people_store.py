"""People and their identities in SQL: every change a command for the writer, reads one snapshot.

The rules are `core.model.people`'s; here is what makes them hold under concurrency:

- **One person per identity.** `identities.address` is the primary key. A first contact inserts
  the person, then the identity with `ON CONFLICT DO NOTHING`; if another process won the race,
  the person just inserted is deleted again and the winner's is returned (its commit is visible
  by then: the writer's transactions are READ COMMITTED on PostgreSQL, and SQLite's writer holds
  the whole file). Within one process the writer runs commands one after another anyway.
- **Unique slugs.** A derived slug skips every slug a person has *or a thread uses* (an address
  like `person:alice` may predate the persons table: a stranger must not inherit its threads),
  and inserts with `ON CONFLICT DO NOTHING`, trying the next candidate on a conflict.
- **A redemption is one command**: the code is checked and used up, the identity moved, and —
  when it was the old person's last — the old person merged and their threads re-addressed
  (`core.storage.people_merge`), all in the batch's one transaction. Every check comes before the
  first write (in the command's `check`), so a refused redemption leaves nothing behind; only a
  race lost to another process is found by a write (`Raced`).
- **A first contact that joins by email** is one command too: the identity's owner, the people
  with the email (locked), and the identity attached to the one active among them — the
  `X has no person` case of a redemption, in the same `_attach` — else a new person. Two first
  contacts of one identity therefore still give one person, whichever way each went.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, select, update

from core.model.errors import Conflict, NotFound
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.people import (
    KEEP,
    Identity,
    LinkCode,
    LinkedIdentity,
    Person,
    PersonChange,
    check_can_link_to,
    check_display_name,
    check_email,
    check_identity_movable,
    check_not_erased,
    check_reactivation,
    check_redeemable,
    derive_slug,
    email_join_target,
    link_code_digest,
    new_link_code,
    parse_identity,
    slug_candidates,
    slug_of,
    unknown_link_code,
)
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Raced, Reads
from core.storage.engine import dialect_of
from core.storage.pages import DEFAULT_PAGE
from core.storage.people_merge import merge_threads
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Writer

_p, _i, _c = schema.persons, schema.identities, schema.link_codes
_PERSON = select(_p).where(_p.c.slug == bindparam("slug"))
_PERSON_FOR_UPDATE = _PERSON.with_for_update()
_OWNER = (
    select(_p).join(_i, _i.c.person_slug == _p.c.slug).where(_i.c.address == bindparam("address"))
)
_IDENTITIES_OF = (
    select(_i.c.address, _i.c.created_at)
    .where(_i.c.person_slug == bindparam("slug"))
    .order_by(_i.c.created_at, _i.c.address)
)
_WITH_EMAIL = (
    select(_p)
    .where(func.lower(_p.c.email) == func.lower(bindparam("email")), _p.c.active.is_(True))
    .order_by(_p.c.slug)
    .limit(2)  # one is a match, two are too many
)
_COUNT_IDENTITIES = select(func.count()).where(_i.c.person_slug == bindparam("slug"))
_CODE_FOR_UPDATE = select(_c).where(_c.c.code_hash == bindparam("hash")).with_for_update()
_SLUGS_CHUNK = 20
_KEEP_EXPIRED = timedelta(days=1)
"""Expired codes are deleted this long after expiry (until then, redeeming says "expired")."""


def person_from_row(row: Any) -> Person:
    return Person(
        slug=row.slug,
        display_name=row.display_name,
        email=row.email,
        active=row.active,
        created_at=from_micros(row.created_at),
        merged_into=row.merged_into,
        erased_at=from_micros(row.erased_at) if row.erased_at is not None else None,
    )


def _micros(delta: timedelta) -> int:
    return delta // timedelta(microseconds=1)


def locked_person(connection: Reads, slug: str) -> Person:
    row = connection.execute(_PERSON_FOR_UPDATE, {"slug": slug}).first()
    if row is None:
        raise NotFound(f"no person with slug {slug!r}", code="person_not_found")
    return person_from_row(row)


def _owner(connection: Reads, identity: Identity) -> Person | None:
    row = connection.execute(_OWNER.with_for_update(of=_i), {"address": str(identity)}).first()
    return person_from_row(row) if row else None


def _taken(connection: Connection, slugs: Sequence[str]) -> set[str]:
    """Which of these slugs a person has, or a thread uses as `person:<slug>`."""
    persons = connection.execute(select(_p.c.slug).where(_p.c.slug.in_(slugs))).scalars()
    tp = schema.thread_participants
    addresses = [f"person:{s}" for s in slugs]
    used = connection.execute(select(tp.c.address).where(tp.c.address.in_(addresses))).scalars()
    return set(persons) | {slug_of(Address(a)) for a in used}


def _insert_person(
    batch: Batch, slugs: Iterable[str], display_name: str, email: str | None
) -> Person | None:
    """Insert a person under the first of `slugs` free now; None when they are all taken."""
    insert = dialect_of(batch.connection).insert(_p).on_conflict_do_nothing(index_elements=["slug"])
    for slug in slugs:
        row: dict[str, Any] = {"slug": slug, "display_name": display_name, "email": email}
        row |= {"active": True, "created_at": batch.now, "merged_into": None, "erased_at": None}
        if batch.connection.execute(insert, row).rowcount == 1:
            return person_from_row(SimpleNamespace(**row))
    return None


def _insert_derived(batch: Batch, display_name: str, email: str | None) -> Person:
    """A new person whose slug is derived from the display name, made unique."""
    candidates = slug_candidates(derive_slug(display_name))
    while True:
        chunk = [next(candidates) for _ in range(_SLUGS_CHUNK)]
        taken = _taken(batch.connection, chunk)
        person = _insert_person(batch, (s for s in chunk if s not in taken), display_name, email)
        if person is not None:
            return person


def _attach(batch: Batch, identity: Identity, slug: str) -> bool:
    """Give `identity` to the person; False when it had a person already (a race lost)."""
    insert = (
        dialect_of(batch.connection).insert(_i).on_conflict_do_nothing(index_elements=["address"])
    )
    row = {"address": str(identity), "person_slug": slug, "created_at": batch.now}
    return bool(batch.connection.execute(insert, row).rowcount == 1)


def _email_target(connection: Reads, email: str) -> Person | None:
    """The one active person with this email (locked), whom an identity that has no person
    joins as a link code would make it; None when there is no such person, or several."""
    rows = connection.execute(_WITH_EMAIL.with_for_update(of=_p), {"email": email})
    target = email_join_target([person_from_row(row) for row in rows])
    if target is not None:
        check_can_link_to(target)  # as a redemption checks (it holds: the rule picks active ones)
    return target


def _join(batch: Batch, identity: Identity, target: Person) -> Person:
    """Attach the identity to `target`; the identity's person as it now stands."""
    if _attach(batch, identity, target.slug):
        return target
    winner = _owner(batch.connection, identity)  # another process gave it a person meanwhile
    assert winner is not None
    return winner


@dataclass(frozen=True, slots=True)
class ResolveIdentity(NoRuns):
    identity: Identity
    display_name: str
    email: str | None
    join_by_email: bool = False
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Person | None, Person | None]:
        """The identity's person, if it has one; else whom it joins by email, if anyone."""
        found = _owner(batch.connection, self.identity)
        if found is None and self.join_by_email and self.email is not None:
            return None, _email_target(batch.connection, self.email)
        return found, None

    def write(
        self, batch: Batch, plan: tuple[Person | None, Person | None]
    ) -> Callable[[], Person]:
        found, target = plan
        if found is not None:
            return lambda: found
        if target is not None:
            joined = _join(batch, self.identity, target)
            return lambda: joined
        person = _insert_derived(batch, self.display_name, self.email)
        if not _attach(batch, self.identity, person.slug):
            # Another process made this identity's person a moment ago: theirs stands.
            batch.connection.execute(delete(_p).where(_p.c.slug == person.slug))
            winner = _owner(batch.connection, self.identity)
            assert winner is not None
            return lambda: winner
        return lambda: person


@dataclass(frozen=True, slots=True)
class CreatePerson(NoRuns):
    slug: str | None
    display_name: str
    email: str | None
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if self.slug is not None and batch.connection.execute(_PERSON, {"slug": self.slug}).first():
            raise self._exists()

    def write(self, batch: Batch, plan: None) -> Callable[[], Person]:
        if self.slug is None:
            person = _insert_derived(batch, self.display_name, self.email)
        else:
            found = _insert_person(batch, [self.slug], self.display_name, self.email)
            if found is None:
                raise Raced(self._exists())
            person = found
        return lambda: person

    def _exists(self) -> Conflict:
        return Conflict(f"person:{self.slug} exists already", code="person_exists")


@dataclass(frozen=True, slots=True)
class UpdatePerson(NoRuns):
    slug: str
    change: PersonChange
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        person = locked_person(batch.connection, self.slug)
        check_not_erased(person)
        if self.change.active is True:
            check_reactivation(person)

    def write(self, batch: Batch, plan: None) -> Callable[[], Person]:
        values: dict[str, Any] = {}
        if self.change.display_name is not None:
            values["display_name"] = self.change.display_name
        if self.change.email is not KEEP:
            values["email"] = self.change.email
        if self.change.active is not None:
            values["active"] = self.change.active
        if values:
            batch.connection.execute(update(_p).where(_p.c.slug == self.slug).values(**values))
        after = person_from_row(batch.connection.execute(_PERSON, {"slug": self.slug}).one())
        return lambda: after


@dataclass(frozen=True, slots=True)
class AddIdentity(NoRuns):
    slug: str
    identity: Identity
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Person, bool]:
        """The person, and whether they have the identity already."""
        person = locked_person(batch.connection, self.slug)
        check_can_link_to(person)
        owner = _owner(batch.connection, self.identity)
        if owner is not None and owner.slug != self.slug:
            raise self._taken(person, owner)
        return person, owner is not None

    def write(self, batch: Batch, plan: tuple[Person, bool]) -> Callable[[], tuple[Person, bool]]:
        person, had = plan
        if had:
            return lambda: (person, False)
        if _attach(batch, self.identity, self.slug):
            return lambda: (person, True)
        owner = _owner(batch.connection, self.identity)  # another process gave it a person
        assert owner is not None
        if owner.slug == self.slug:
            return lambda: (person, False)
        raise Raced(self._taken(person, owner))

    def _taken(self, person: Person, owner: Person) -> Conflict:
        return Conflict(
            f"identity {self.identity} belongs to {owner.address}; to move it, redeem a link "
            f"code of {person.address} with it",
            code="identity_taken",
        )


@dataclass(frozen=True, slots=True)
class MintLinkCode(NoRuns):
    slug: str
    ttl: timedelta
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        check_can_link_to(locked_person(batch.connection, self.slug))

    def write(self, batch: Batch, plan: None) -> Callable[[], LinkCode]:
        connection = batch.connection
        connection.execute(delete(_c).where(_c.c.expires_at < batch.now - _micros(_KEEP_EXPIRED)))
        expires = batch.now + _micros(self.ttl)
        insert = dialect_of(connection).insert(_c).on_conflict_do_nothing()
        while True:  # a digest already stored (one chance in 2**40) is drawn again
            code = new_link_code()
            row = {
                "code_hash": link_code_digest(code),
                "person_slug": self.slug,
                "created_at": batch.now,
                "expires_at": expires,
            }
            if connection.execute(insert, row).rowcount == 1:
                made = LinkCode(code=code, person=self.slug, expires_at=from_micros(expires))
                return lambda: made


@dataclass(frozen=True, slots=True)
class RedeemLinkCode(NoRuns):
    code_hash: str
    identity: Identity
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> tuple[Person, Person | None]:
        """The code's person and the identity's person now (both locked, the code too)."""
        connection = batch.connection
        code = connection.execute(_CODE_FOR_UPDATE, {"hash": self.code_hash}).first()
        if code is None:
            raise unknown_link_code()
        check_redeemable(
            expires_at=from_micros(code.expires_at),
            used_at=from_micros(code.used_at) if code.used_at is not None else None,
            now=from_micros(batch.now),
        )
        target = locked_person(connection, code.person_slug)
        check_can_link_to(target)
        owner = _owner(connection, self.identity)
        if owner is not None:
            owner = locked_person(connection, owner.slug)
            check_identity_movable(owner, target)
        return target, owner

    def write(self, batch: Batch, plan: tuple[Person, Person | None]) -> Callable[[], Person]:
        target, owner = plan
        if owner is None:
            if not _attach(batch, self.identity, target.slug):
                raise Raced(
                    Conflict(
                        f"identity {self.identity} was linked to someone else meanwhile; try again",
                        code="identity_taken",
                    )
                )
        elif owner.slug != target.slug:
            self._move(batch, owner, target)
        batch.connection.execute(
            update(_c).where(_c.c.code_hash == self.code_hash).values(used_at=batch.now)
        )
        return lambda: target

    def _move(self, batch: Batch, owner: Person, target: Person) -> None:
        connection = batch.connection
        connection.execute(
            update(_i).where(_i.c.address == str(self.identity)).values(person_slug=target.slug)
        )
        if connection.execute(_COUNT_IDENTITIES, {"slug": owner.slug}).scalar_one() == 0:
            connection.execute(
                update(_p)
                .where(_p.c.slug == owner.slug)
                .values(active=False, merged_into=target.slug)
            )
            # Whoever was merged into the owner earlier is the target now too: `merged_into`
            # always names a person who is not merged.
            connection.execute(
                update(_p).where(_p.c.merged_into == owner.slug).values(merged_into=target.slug)
            )
            merge_threads(batch, owner.address, target.address)


# --- reads ----------------------------------------------------------------------------------


def person(conn: Connection, slug: str) -> Person:
    row = conn.execute(_PERSON, {"slug": slug}).first()
    if row is None:
        raise NotFound(f"no person with slug {slug!r}", code="person_not_found")
    return person_from_row(row)


def profile(conn: Connection, slug: str) -> tuple[Person, list[LinkedIdentity]]:
    found = person(conn, slug)
    linked = [
        LinkedIdentity(identity=parse_identity(row.address), linked_at=from_micros(row.created_at))
        for row in conn.execute(_IDENTITIES_OF, {"slug": slug})
    ]
    return found, linked


def of_identity(conn: Connection, identity: Identity) -> Person | None:
    row = conn.execute(_OWNER, {"address": str(identity)}).first()
    return person_from_row(row) if row else None


def persons(conn: Connection, after: str | None, limit: int) -> list[Person]:
    query = select(_p)
    if after is not None:
        query = query.where(_p.c.slug > after)
    return [person_from_row(r) for r in conn.execute(query.order_by(_p.c.slug).limit(limit))]


def inactive(conn: Connection, addresses: Iterable[Address]) -> set[Address]:
    slugs = {slug_of(a): a for a in addresses if kind_of(a) is ParticipantKind.PERSON}
    if not slugs:
        return set()
    query = select(_p.c.slug).where(_p.c.slug.in_(list(slugs)), _p.c.active.is_(False))
    return {slugs[slug] for slug in conn.execute(query).scalars()}


def predecessors(conn: Connection, thread_id: ThreadId) -> list[ThreadId]:
    tp = schema.thread_predecessors
    query = (
        select(tp.c.predecessor_id).where(tp.c.thread_id == thread_id).order_by(tp.c.predecessor_id)
    )
    return [ThreadId(i) for i in conn.execute(query).scalars()]


class SqlPeopleRepository:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    # --- writes -----------------------------------------------------------------------------

    async def resolve(
        self,
        identity: Identity,
        *,
        display_name: str,
        email: str | None = None,
        join_by_email: bool = False,
    ) -> Person:
        """The identity's person, made (with its identity) on first contact. Race-free. A known
        identity's person is returned as stored (the name and email given are for a new one).

        With `join_by_email` — only for an email the channel vouches is verified — a first
        contact joins the one active person who has that email (case-insensitively), if exactly
        one has; otherwise it makes a new person as usual (`core.model.people`)."""
        command = ResolveIdentity(
            identity, check_display_name(display_name), check_email(email), join_by_email
        )
        return await self._writer.run(command)

    async def create(
        self, *, display_name: str, slug: str | None = None, email: str | None = None
    ) -> Person:
        """A new person; without a slug, one derived from the display name (`person_exists`
        when a given slug is taken)."""
        command = CreatePerson(slug, check_display_name(display_name), check_email(email))
        return await self._writer.run(command)

    async def update(self, slug: str, change: PersonChange) -> Person:
        return await self._writer.run(UpdatePerson(slug, change))

    async def deactivate(self, slug: str) -> Person:
        return await self.update(slug, PersonChange(active=False))

    async def reactivate(self, slug: str) -> Person:
        """Active again (`person_merged` for a merged person)."""
        return await self.update(slug, PersonChange(active=True))

    async def add_identity(self, slug: str, identity: Identity) -> tuple[Person, bool]:
        """Give the person this identity; False when they had it already (`identity_taken`
        when another person has it: only a link code moves an identity)."""
        return await self._writer.run(AddIdentity(slug, identity))

    async def new_link_code(self, slug: str, ttl: timedelta) -> LinkCode:
        """A one-time code linking an identity to the person; the plain code is shown once."""
        return await self._writer.run(MintLinkCode(slug, ttl))

    async def redeem(self, code: str, identity: Identity) -> Person:
        """Link the identity to the code's person (see `core.model.people`); that person."""
        return await self._writer.run(RedeemLinkCode(link_code_digest(code), identity))

    # --- reads ------------------------------------------------------------------------------

    async def get(self, slug: str) -> Person:
        return await self._reads.transact_single(lambda c: person(c, slug))

    async def profile(self, slug: str) -> tuple[Person, list[LinkedIdentity]]:
        """The person and their identities, oldest link first, in one snapshot."""
        return await self._reads.transact(lambda c: profile(c, slug))

    async def of_identity(self, identity: Identity) -> Person | None:
        """The identity's person, or None when it has none yet."""
        return await self._reads.transact(lambda c: of_identity(c, identity))

    async def inactive(self, addresses: Iterable[Address]) -> set[Address]:
        """Which of these `person:` addresses name a deactivated (or merged) person; addresses
        with no person record count as active."""
        wanted = list(addresses)
        return await self._reads.transact(lambda c: inactive(c, wanted))

    async def predecessors(self, thread_id: ThreadId) -> list[ThreadId]:
        """Threads kept beside this one by merges of people, whose history precedes it."""
        return await self._reads.transact(lambda c: predecessors(c, thread_id))

    async def list(self, *, limit: int = DEFAULT_PAGE, after: str | None = None) -> list[Person]:
        """People in slug order, after the slug `after`."""
        return await self._reads.transact(lambda c: persons(c, after, limit))
