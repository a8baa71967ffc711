"""Approvals in storage: asking, resolving exactly once, reading, and waiting for the answer.

An approval is the `approval_requested` event (its id is the approval's) and at most one
`approval_resolved` event naming it (`target`), in the conversation's timeline; while it is
unresolved a row of `pending_approvals` says so, with its expiry. The writer's commands check the
rules of `core.model.approvals` under the thread's lock (the thread row, `FOR UPDATE` on
PostgreSQL), so of two answers at the same moment — from two channels, two people, two replicas
— the first commits and the second is refused with `approval_closed`, saying who answered what.
A partial unique index on the resolution's target holds the same rule in the schema.

Waiting (`wait`): a run that asked waits for the resolution through the database's listeners,
which hear every replica's commits (`Database.listen`), and reads the approval once more after
it starts listening, so an answer committed in between is not missed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, select

from core.model.approvals import (
    ApprovalClosed,
    ApprovalOption,
    ApprovalRequest,
    Outcome,
    Resolution,
    check_answer,
    check_approvers_are_members,
    check_expire,
    check_open,
)
from core.model.errors import Conflict, InvalidInput, NotFound
from core.model.participants import Address
from core.model.tasks import TaskEvent
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    EventId,
    EventKind,
    ThreadId,
    check_can_act,
)
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Reads
from core.storage.rows import event_from_row, from_micros, to_micros
from core.storage.threads_reads import covers, of_kind, visible_ranges
from core.storage.transact import Transactor
from core.storage.writer import Writer

_e, _pending = schema.events, schema.pending_approvals
_resolution = _e.alias("resolution")

Approval = tuple[ApprovalRequested, ApprovalResolved | None]
"""A request and its resolution (None while it is pending)."""


# --- reads ----------------------------------------------------------------------------------------

_WITH_RESOLUTION = select(_e, _resolution).select_from(
    _e.outerjoin(
        _resolution,
        (_resolution.c.target == _e.c.id)
        & of_kind(_resolution.c.kind, EventKind.APPROVAL_RESOLVED),
    )
)


def _approval(row: Sequence[object]) -> Approval:
    width = len(_e.c)
    request = event_from_row(row[:width])
    assert isinstance(request, ApprovalRequested)
    resolution = event_from_row(row[width:]) if row[width] is not None else None
    assert resolution is None or isinstance(resolution, ApprovalResolved)
    return request, resolution


def _not_found(approval_id: str) -> NotFound:
    return NotFound(f"no approval with id {approval_id!r}", code="approval_not_found")


def read_approval(c: Reads, approval_id: str, thread_id: ThreadId | None = None) -> Approval:
    """The approval (in `thread_id`, when given: another thread's is not found)."""
    row = c.execute(
        _WITH_RESOLUTION.where(
            _e.c.id == approval_id, of_kind(_e.c.kind, EventKind.APPROVAL_REQUESTED)
        )
    ).first()
    if row is None:
        raise _not_found(approval_id)
    approval = _approval(row)
    if thread_id is not None and approval[0].thread_id != thread_id:
        raise _not_found(approval_id)
    return approval


def as_seen_by(c: Reads, approval: Approval, viewer: Address) -> Approval:
    """The approval as `viewer` sees it: not found when its request is not in what they see (it
    was asked while they were removed), pending when its resolution is not."""
    request, resolution = approval
    ranges = visible_ranges(c, request.thread_id, viewer)
    if not covers(ranges, request.seq):
        raise _not_found(request.id)
    return request, resolution if resolution and covers(ranges, resolution.seq) else None


def read_thread_approvals(
    c: Connection, thread_id: ThreadId, viewer: Address | None, *, pending: bool, limit: int
) -> list[Approval]:
    """The thread's approvals `viewer` may see (None: the operator), oldest first; `pending`:
    only those not resolved as far as the viewer sees (a resolution during their blackout is
    not in what they see, so to them the approval is pending)."""
    ranges = visible_ranges(c, thread_id, viewer)
    query = _WITH_RESOLUTION.where(
        _e.c.thread_id == thread_id, of_kind(_e.c.kind, EventKind.APPROVAL_REQUESTED)
    )
    found: list[Approval] = []
    for row in c.execute(query.order_by(_e.c.seq)):
        request, resolution = _approval(row)
        if not covers(ranges, request.seq):
            continue
        seen = resolution if resolution and covers(ranges, resolution.seq) else None
        if pending and seen is not None:
            continue
        found.append((request, seen))
        if len(found) == limit:
            break
    return found


def read_resolutions(
    c: Connection, thread_id: ThreadId, approval_ids: Collection[str], viewer: Address
) -> dict[EventId, ApprovalResolved]:
    """How these approvals of the thread were resolved, as far as `viewer` sees."""
    if not approval_ids:
        return {}
    ranges = visible_ranges(c, thread_id, viewer)
    rows = c.execute(
        select(_e).where(
            _e.c.thread_id == thread_id,
            of_kind(_e.c.kind, EventKind.APPROVAL_RESOLVED),
            _e.c.target.in_(list(approval_ids)),
        )
    )
    found: dict[EventId, ApprovalResolved] = {}
    for row in rows:
        resolution = event_from_row(row)
        assert isinstance(resolution, ApprovalResolved)
        if covers(ranges, resolution.seq):
            found[resolution.target] = resolution
    return found


def read_due(c: Connection, now: int, limit: int) -> list[tuple[EventId, ThreadId]]:
    """Pending approvals whose expiry has passed, soonest first."""
    rows = c.execute(
        select(_pending.c.id, _pending.c.thread_id)
        .where(_pending.c.expires_at <= now)
        .order_by(_pending.c.expires_at)
        .limit(limit)
    )
    return [(EventId(i), ThreadId(t)) for i, t in rows]


def read_asked_since(c: Connection, run_id: str, thread_id: ThreadId, after: int) -> list[Approval]:
    """What the run asked in its thread after `seq` `after` (its cursor), newest first."""
    rows = c.execute(
        _WITH_RESOLUTION.where(
            _e.c.thread_id == thread_id,
            _e.c.seq > after,
            of_kind(_e.c.kind, EventKind.APPROVAL_REQUESTED),
        ).order_by(_e.c.seq.desc())
    )
    return [a for a in map(_approval, rows) if a[0].run_id == run_id]


# --- commands -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestApproval(NoRuns):
    thread_id: ThreadId
    run_id: str
    author: Address
    request: ApprovalRequest

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> None:
        thread = batch.thread(self.thread_id)
        states = thread.states
        check_can_act(states, self.author, thread.erased)
        check_approvers_are_members(self.request.approvers, states)

    def write(self, batch: Batch, plan: None) -> Callable[[], AnyEvent]:
        asked = self.request
        index = batch.stage(
            batch.thread(self.thread_id),
            ApprovalRequested,
            author=self.author,
            run_id=self.run_id,
            title=asked.title,
            description=asked.description,
            options=asked.options,
            tool=asked.tool,
            approvers=asked.approvers,
            expires_at=asked.expires_at,
        )
        batch.insert_after_flush(
            _pending,
            ("id", "thread_id", "run_id", "expires_at"),
            lambda: (
                batch.committed[index].id,
                self.thread_id,
                self.run_id,
                to_micros(asked.expires_at),
            ),
        )
        return lambda: batch.committed[index]


@dataclass(frozen=True, slots=True)
class ResolveApproval(NoRuns):
    """Answer (`by` chose `option`), expire, or cancel one approval."""

    thread_id: ThreadId
    approval_id: EventId
    outcome: Outcome
    by: Address | None = None
    option: str | None = None
    channel: str | None = None

    @property
    def thread_ids(self) -> Sequence[ThreadId]:
        return (self.thread_id,)

    def check(self, batch: BatchView) -> ApprovalOption | None:
        asked = read_approval(batch.connection, self.approval_id, self.thread_id)
        request, resolved = asked
        resolution = batch.resolved_here(self.approval_id) or (
            resolved.resolution if resolved else None
        )
        now = from_micros(batch.now)
        if self.outcome is Outcome.ANSWERED:
            assert self.by is not None
            # A question asked while the answerer was removed is not theirs to answer (what
            # they see of its resolution does not matter: the resolution stands).
            as_seen_by(batch.connection, asked, self.by)
            return check_answer(
                options=request.options,
                approvers=request.approvers,
                states=batch.thread(self.thread_id).states,
                resolved=resolution,
                expires_at=request.expires_at,
                answerer=self.by,
                option_id=self.option,
                now=now,
            )
        if self.outcome is Outcome.EXPIRED:
            check_expire(resolved=resolution, expires_at=request.expires_at, now=now)
        else:
            check_open(resolution)
        return None

    def write(self, batch: Batch, plan: ApprovalOption | None) -> Callable[[], AnyEvent]:
        index = batch.stage(
            batch.thread(self.thread_id),
            ApprovalResolved,
            target=self.approval_id,
            outcome=self.outcome,
            option=plan,
            by=self.by,
            channel=self.channel,
        )
        batch.resolved[self.approval_id] = Resolution(
            outcome=self.outcome, option=plan, by=self.by, channel=self.channel
        )
        batch.connection.execute(delete(_pending).where(_pending.c.id == self.approval_id))
        return lambda: batch.committed[index]


# --- the repository -------------------------------------------------------------------------------


class SqlApprovalRepository:
    def __init__(self, reads: Transactor, writer: Writer, clock: Callable[[], datetime]) -> None:
        self._reads = reads
        self._writer = writer
        self.now = clock
        """The writer's clock: expiry is judged by it."""
        self._waiting: dict[str, list[asyncio.Future[ApprovalResolved]]] = {}

    async def request(
        self, thread_id: ThreadId, run_id: str, author: Address, request: ApprovalRequest
    ) -> ApprovalRequested:
        """Ask in the conversation (the role must be an active member)."""
        event = await self._writer.run(RequestApproval(thread_id, run_id, author, request))
        assert isinstance(event, ApprovalRequested)
        return event

    async def answer(
        self, asked: ApprovalRequested, by: Address, option: object, *, channel: str | None
    ) -> ApprovalResolved:
        """`by` chooses `option`, from `channel`: the first valid answer resolves the approval;
        later ones are refused (`approval_closed`, saying who answered what), as are answers
        after its expiry (which is then recorded, if it was not yet)."""
        if not isinstance(option, str):
            raise InvalidInput("option must be an option's id (a string)", code="unknown_option")
        try:
            return await self._resolve(
                ResolveApproval(asked.thread_id, asked.id, Outcome.ANSWERED, by, option, channel)
            )
        except ApprovalClosed:
            # Refused because its time has passed, and nobody recorded that yet: record it now,
            # so every channel showing the approval hears it expired.
            with contextlib.suppress(Conflict):
                await self.expire(asked.id, asked.thread_id)
            raise

    async def expire(self, approval_id: EventId, thread_id: ThreadId) -> ApprovalResolved:
        """Resolve as `expired` once its time has passed (`not_expired` before)."""
        return await self._resolve(ResolveApproval(thread_id, approval_id, Outcome.EXPIRED))

    async def cancel(self, approval_id: EventId, thread_id: ThreadId) -> ApprovalResolved:
        """Resolve as `cancelled`: the run that asked no longer waits."""
        return await self._resolve(ResolveApproval(thread_id, approval_id, Outcome.CANCELLED))

    async def _resolve(self, command: ResolveApproval) -> ApprovalResolved:
        event = await self._writer.run(command)
        assert isinstance(event, ApprovalResolved)
        return event

    async def get(
        self,
        approval_id: str,
        *,
        thread_id: ThreadId | None = None,
        viewer: Address | None = None,
    ) -> Approval:
        """The approval (`approval_not_found`: none, another thread's when `thread_id` is given,
        or one `viewer` does not see); as `viewer` sees it when given (`as_seen_by`)."""

        def read(c: Connection) -> Approval:
            approval = read_approval(c, approval_id, thread_id)
            return approval if viewer is None else as_seen_by(c, approval, viewer)

        return await self._reads.transact(read)

    async def resolutions(
        self, thread_id: ThreadId, approval_ids: Collection[str], viewer: Address
    ) -> dict[EventId, ApprovalResolved]:
        """How these approvals of the thread were resolved, as far as `viewer` sees."""
        return await self._reads.transact(
            lambda c: read_resolutions(c, thread_id, approval_ids, viewer)
        )

    async def of_thread(
        self,
        thread_id: ThreadId,
        *,
        viewer: Address | None = None,
        pending: bool = False,
        limit: int = 100,
    ) -> list[Approval]:
        return await self._reads.transact(
            lambda c: read_thread_approvals(c, thread_id, viewer, pending=pending, limit=limit)
        )

    async def due(self, now: datetime, *, limit: int = 100) -> list[tuple[EventId, ThreadId]]:
        return await self._reads.transact(lambda c: read_due(c, to_micros(now), limit))

    async def asked_since(self, run_id: str, thread_id: ThreadId, after: int) -> list[Approval]:
        return await self._reads.transact(lambda c: read_asked_since(c, run_id, thread_id, after))

    # --- waiting ---------------------------------------------------------------------------

    def heard(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        """The database's listener: wake whoever waits for a resolution committed now."""
        if not self._waiting:
            return
        for event in events:
            if isinstance(event, ApprovalResolved):
                for future in self._waiting.pop(event.target, ()):
                    if not future.done():
                        future.set_result(event)

    async def wait(self, approval_id: EventId) -> ApprovalResolved:
        """The approval's resolution, once committed (by any replica). Bound it with
        `asyncio.timeout`."""
        future: asyncio.Future[ApprovalResolved] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(approval_id, []).append(future)
        try:
            _, resolution = await self.get(approval_id)
            if resolution is not None:
                return resolution
            return await future
        finally:
            waiting = self._waiting.get(approval_id)
            if waiting is not None and future in waiting:
                waiting.remove(future)
                if not waiting:
                    del self._waiting[approval_id]
