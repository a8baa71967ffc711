"""Replicas in the database: who serves, since when, and the last sign of life of each.

A replica registers at start (`Register`): refused while another process of the same id beats
its heart (`replica_live`); otherwise its row is (re)written and whatever a previous process of
that id still held is handed back at once — that process is gone. It beats its heart every few
seconds (`Beat`: its row's `heartbeat_at`, and the end of each of its leases moved, in one
batch) and, stopping cleanly, hands back its leases and marks itself stopped (`Stop`).

`cluster_facts` holds what every replica must agree on — a fingerprint of a secret, never the
secret: `Agree` refuses a replica whose fact differs from the cluster's while another replica is
live (`cluster_mismatch`), and records the facts anew when none is (a full restart with a new
secret changes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, func, select, text, update

from core.model.errors import Conflict
from core.model.leases import FREE, LeaseKind
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns
from core.storage.engine import dialect_of
from core.storage.leases_store import renew_all
from core.storage.transact import Transactor
from core.storage.writer import Writer

_r, _l, _f = schema.replicas, schema.leases, schema.cluster_facts
FACTS_LOCK = {"a": 0x526F6C65, "b": 0x66616374}
"""The transaction lock (the bytes of "Role" and "fact") that makes replicas starting at the
same moment agree on the cluster's facts one after another."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Replica:
    id: str
    address: str | None
    started_at: int
    heartbeat_at: int
    stopped_at: int | None
    runs_owned: int


@dataclass(frozen=True, slots=True)
class Register(NoRuns):
    replica_id: str
    address: str | None
    timeout: int
    """Microseconds without a heartbeat after which a replica of this id counts as gone."""
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        row = batch.connection.execute(
            select(_r.c.heartbeat_at, _r.c.stopped_at).where(_r.c.id == self.replica_id)
        ).first()
        if row is not None and row[1] is None and batch.now - row[0] < self.timeout:
            seconds = (batch.now - row[0]) / 1e6
            raise Conflict(
                f"a replica named {self.replica_id!r} is already serving (its last heartbeat "
                f"was {seconds:.1f} s ago); give each replica its own ROLECALL_REPLICA_ID",
                code="replica_live",
            )

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        connection = batch.connection
        values = {
            "address": self.address,
            "started_at": batch.now,
            "heartbeat_at": batch.now,
            "stopped_at": None,
        }
        insert = dialect_of(connection).insert(_r).values(id=self.replica_id, **values)
        connection.execute(insert.on_conflict_do_update(index_elements=["id"], set_=values))
        connection.execute(
            update(_l)
            .where(_l.c.holder == self.replica_id)
            .values(holder=FREE, expires_at=batch.now)
        )
        return lambda: None


@dataclass(frozen=True, slots=True)
class Beaten:
    held: list[tuple[str, str]]
    """(kind, subject) of the leases the replica still holds."""
    alive: set[str]
    """The replicas whose heartbeat is within `ttl` (this one's included): a lease one of them
    holds is being renewed."""


@dataclass(frozen=True, slots=True)
class Beat(NoRuns):
    """The heartbeat: the replica's row, and every lease it holds renewed for `ttl`; and who
    else beats."""

    replica_id: str
    ttl: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], Beaten]:
        connection = batch.connection
        connection.execute(
            update(_r)
            .where(_r.c.id == self.replica_id)
            .values(heartbeat_at=batch.now, stopped_at=None)
        )
        held = renew_all(connection, self.replica_id, until=batch.now + self.ttl)
        alive = set(
            connection.execute(
                select(_r.c.id).where(
                    _r.c.stopped_at.is_(None), _r.c.heartbeat_at > batch.now - self.ttl
                )
            ).scalars()
        )
        beaten = Beaten(held, alive)
        return lambda: beaten


@dataclass(frozen=True, slots=True)
class Stop(NoRuns):
    """A clean stop: every lease handed back at once, the replica marked stopped."""

    replica_id: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], int]:
        connection = batch.connection
        handed = connection.execute(
            update(_l)
            .where(_l.c.holder == self.replica_id)
            .values(holder=FREE, expires_at=batch.now)
        ).rowcount
        connection.execute(
            update(_r).where(_r.c.id == self.replica_id).values(stopped_at=batch.now)
        )
        return lambda: handed


@dataclass(frozen=True, slots=True)
class Agree(NoRuns):
    """Record the facts `replica_id` starts with. While another replica is live (a heartbeat
    within `silent_for` µs, not stopped), a fact that differs from what the cluster recorded is
    refused (`cluster_mismatch`); with no other replica live they are simply recorded anew —
    so a secret is changed by restarting every replica with the new one. `what` names a fact
    for the message."""

    facts: Mapping[str, str]
    what: Mapping[str, str]
    replica_id: str
    silent_for: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        if not self.facts:
            return
        if batch.connection.dialect.name == "postgresql":  # replicas starting at one moment
            batch.connection.execute(text("SELECT pg_advisory_xact_lock(:a, :b)"), FACTS_LOCK)
        others = batch.connection.execute(
            select(_r.c.id)
            .where(
                _r.c.id != self.replica_id,
                _r.c.stopped_at.is_(None),
                _r.c.heartbeat_at > batch.now - self.silent_for,
            )
            .limit(1)
        ).first()
        if others is None:
            return
        rows = batch.connection.execute(
            select(_f.c.name, _f.c.value).where(_f.c.name.in_(list(self.facts)))
        ).all()
        for name, value in rows:
            if value != self.facts[name]:
                raise Conflict(
                    f"{self.what.get(name, name)} differs from the one the other replicas of "
                    f"this database use (replica {others[0]!r} is live); every replica must be "
                    "given the same",
                    code="cluster_mismatch",
                )

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        insert = dialect_of(batch.connection).insert(_f)
        for name, value in self.facts.items():
            batch.connection.execute(
                insert.values(name=name, value=value).on_conflict_do_update(
                    index_elements=["name"], set_={"value": value}
                )
            )
        return lambda: None


class SqlReplicas:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def register(self, replica_id: str, *, address: str | None, silent_for: int) -> None:
        """`silent_for`: microseconds without a heartbeat after which a replica is gone."""
        await self._writer.run(Register(replica_id, address, silent_for))

    async def beat(self, replica_id: str, *, ttl: int) -> Beaten:
        return await self._writer.run(Beat(replica_id, ttl))

    async def stop(self, replica_id: str) -> int:
        return await self._writer.run(Stop(replica_id))

    async def agree(
        self,
        facts: Mapping[str, str],
        *,
        what: Mapping[str, str],
        replica_id: str,
        silent_for: int,
    ) -> None:
        await self._writer.run(Agree(dict(facts), dict(what), replica_id, silent_for))

    async def list(self, *, now: int, include_stopped: bool = False) -> list[Replica]:
        """Replicas with the runs each holds unexpired; the stopped ones too if asked."""

        def read(connection: Connection) -> list[Replica]:
            owned: dict[str, int] = dict(
                connection.execute(
                    select(_l.c.holder, func.count())
                    .where(
                        _l.c.kind == LeaseKind.RUN.value,
                        _l.c.holder != FREE,
                        _l.c.expires_at >= now,
                    )
                    .group_by(_l.c.holder)
                ).all()
            )
            query = select(_r).order_by(_r.c.started_at, _r.c.id)
            if not include_stopped:
                query = query.where(_r.c.stopped_at.is_(None))
            return [
                Replica(
                    id=row.id,
                    address=row.address,
                    started_at=row.started_at,
                    heartbeat_at=row.heartbeat_at,
                    stopped_at=row.stopped_at,
                    runs_owned=int(owned.get(row.id, 0)),
                )
                for row in connection.execute(query)
            ]

        return await self._reads.transact(read)
