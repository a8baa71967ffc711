"""Leases in the database (`core.model.leases`): claim, renew, release, and the fence check
that writes made as a holder run inside their own batch.

A claim, a release and a heartbeat are writer commands, so they commit in the same group
commits as everything else. A claim reads the lease row `FOR UPDATE` in its check; a write made
as the holder (the end of a turn) reads it `FOR SHARE` (`check_fence`) — so a claim waits for a
holder's write in flight to commit, and a holder's write after a claim sees the new fence and is
refused. Rows are never deleted: the fence must outlive every release.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, and_, or_, select, update

from core.model.leases import FREE, Fence, Lease, LeaseKind, LeaseLost
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.engine import dialect_of
from core.storage.transact import Transactor
from core.storage.writer import Writer

_l = schema.leases


def read_lease(connection: Reads, kind: LeaseKind, subject: str, *, lock: str) -> Lease | None:
    """The lease on (kind, subject), its row locked (`lock`: "update" or "share")."""
    statement = (
        select(_l.c.holder, _l.c.fence, _l.c.expires_at)
        .where(_l.c.kind == kind.value, _l.c.subject == subject)
        .with_for_update(read=lock == "share")
    )
    row = connection.execute(statement).first()
    return Lease(holder=row[0], fence=row[1], expires_at=row[2]) if row is not None else None


def check_fence(batch: BatchView, kind: LeaseKind, subject: str, fence: Fence) -> None:
    """Refuse (`LeaseLost`) a write made under `fence` unless the lease is still that claim."""
    lease = read_lease(batch.connection, kind, subject, lock="share")
    if lease is None or not lease.fenced_by(fence):
        raise LeaseLost(f"{kind.value} {subject}")


def renew_all(connection: Connection, holder: str, *, until: int) -> list[tuple[str, str]]:
    """Move the end of every lease `holder` holds to `until`; (kind, subject) of each."""
    rows = connection.execute(
        update(_l)
        .where(_l.c.holder == holder)
        .values(expires_at=until)
        .returning(_l.c.kind, _l.c.subject)
    ).all()
    return [(kind, subject) for kind, subject in rows]


def hand_back_all(connection: Connection, holder: str, *, now: int) -> int:
    """Hand back every lease `holder` holds, for another replica to take over at once."""
    handed: int = connection.execute(
        update(_l).where(_l.c.holder == holder).values(holder=FREE, expires_at=now)
    ).rowcount
    return handed


@dataclass(frozen=True, slots=True)
class Claim(NoRuns):
    """Take the lease on (kind, subject) for `holder` for `ttl` microseconds, if it is
    claimable; the new fence, or None when another holds it. `thread_ids`: the thread of a
    conversation run, whose lock the claim takes — a write as the run's owner holds that lock
    too, so it reads the lease with the run and needs no lock of the lease row."""

    kind: LeaseKind
    subject: str
    holder: str
    ttl: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> Lease | None:
        return read_lease(batch.connection, self.kind, self.subject, lock="update")

    def write(self, batch: Batch, plan: Lease | None) -> Callable[[], Fence | None]:
        until = batch.now + self.ttl
        if plan is None:
            inserted = batch.connection.execute(
                dialect_of(batch.connection)
                .insert(_l)
                .values(
                    kind=self.kind.value,
                    subject=self.subject,
                    holder=self.holder,
                    fence=1,
                    expires_at=until,
                )
                .on_conflict_do_nothing()
            ).rowcount
            fence = Fence(holder=self.holder, number=1) if inserted else None
            return lambda: fence  # not inserted: another replica's claim came first
        if not plan.claimable_by(self.holder, now=batch.now):
            return lambda: None
        number = plan.fence + 1
        batch.connection.execute(
            update(_l)
            .where(_l.c.kind == self.kind.value, _l.c.subject == self.subject)
            .values(holder=self.holder, fence=number, expires_at=until)
        )
        claimed = Fence(holder=self.holder, number=number)
        return lambda: claimed


@dataclass(frozen=True, slots=True)
class Release(NoRuns):
    """Free the lease if `fence` is still its claim (else nothing: it was lost already).
    `handed_back`: leave it for another replica to take over at once."""

    kind: LeaseKind
    subject: str
    fence: Fence
    handed_back: bool = False
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], bool]:
        released = batch.connection.execute(
            update(_l)
            .where(
                _l.c.kind == self.kind.value,
                _l.c.subject == self.subject,
                _l.c.holder == self.fence.holder,
                _l.c.fence == self.fence.number,
            )
            .values(holder=FREE, expires_at=batch.now if self.handed_back else 0)
        ).rowcount
        return lambda: bool(released)


@dataclass(frozen=True, slots=True)
class OrphanedRun:
    run_id: str
    role: str
    thread_id: str | None
    task_id: str | None


class SqlLeases:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def claim(
        self,
        kind: LeaseKind,
        subject: str,
        holder: str,
        ttl: int,
        *,
        thread_id: ThreadId | None = None,
    ) -> Fence | None:
        """`thread_id`: a conversation run's thread, locked by the claim (see `Claim`)."""
        threads = (thread_id,) if thread_id is not None else ()
        return await self._writer.run(Claim(kind, subject, holder, ttl, threads))

    async def release(
        self, kind: LeaseKind, subject: str, fence: Fence, *, handed_back: bool = False
    ) -> bool:
        return await self._writer.run(Release(kind, subject, fence, handed_back))

    async def get(self, kind: LeaseKind, subject: str) -> Lease | None:
        def read(connection: Connection) -> Lease | None:
            row = connection.execute(
                select(_l.c.holder, _l.c.fence, _l.c.expires_at).where(
                    _l.c.kind == kind.value, _l.c.subject == subject
                )
            ).first()
            return Lease(holder=row[0], fence=row[1], expires_at=row[2]) if row else None

        return await self._reads.transact_single(read)

    async def orphaned_runs(
        self, *, now: int, roles: Sequence[str], limit: int = 1000
    ) -> list[OrphanedRun]:
        """Runs of `roles` whose lease expired while held, or was handed back."""
        _runs = schema.runs

        def read(connection: Connection) -> list[OrphanedRun]:
            rows = connection.execute(
                select(_runs.c.id, _runs.c.role, _runs.c.thread_id, _runs.c.task_id)
                .join(_l, and_(_l.c.kind == LeaseKind.RUN.value, _l.c.subject == _runs.c.id))
                .where(
                    _runs.c.role.in_(list(roles)),
                    or_(
                        and_(_l.c.holder != FREE, _l.c.expires_at < now),
                        and_(_l.c.holder == FREE, _l.c.expires_at > 0),
                    ),
                )
                .limit(limit)
            ).all()
            return [OrphanedRun(*row) for row in rows]

        if not roles:
            return []
        return await self._reads.transact(read)
