"""Asking people and waiting for their answer: what a run does when it needs a person's yes.

`ask` and `wait_for_answer` are the one way an approval is asked for and awaited — by the `ask`
tool today, by a runtime's permission request tomorrow — so every asker keeps the same promises:

- **One question, asked once per turn.** A run that asks again what it asked earlier in the
  same unfinished turn (the replica running it died and the turn is run again after a
  restart or a takeover, so its agent asks again) gets that earlier approval back — still
  pending, or resolved meanwhile by an answer given while nobody waited — rather than a
  second request to the people. "Earlier in the same turn" is: after the run's cursor.
- **Exactly once, fail closed.** The first valid answer from any channel resolves it; no
  answer before the expiry resolves it as `expired` (committed by the waiter itself, so it
  does not wait for housekeeping), which reads as a rejection.
- **A waiter that stops cancels.** A turn that is cancelled (or times out) while waiting resolves
  the approval as `cancelled`, so no one answers a question nobody waits for. A waiter stopped
  because its gateway stops (`stopping` says so) does not: the turn runs again after the
  restart or on the replica that takes the run over, and finds its approval still pending — or
  answered meanwhile. Neither can a process that dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from core.model.approvals import ApprovalClosed, ApprovalRequest
from core.model.errors import Conflict
from core.model.participants import Address
from core.model.timeline import ApprovalRequested, ApprovalResolved, ThreadId
from core.storage.database import Database

log = logging.getLogger(__name__)


def never() -> bool:
    return False


HoldTurn = Callable[[float], AbstractAsyncContextManager[None]]
"""Keep the running turn's timeout from counting while the run waits up to this many seconds
for a person (given by the host; `no_hold` where no turn's timeout runs)."""


@contextlib.asynccontextmanager
async def no_hold(_: float) -> AsyncIterator[None]:
    yield


def _same(asked: ApprovalRequested, request: ApprovalRequest) -> bool:
    return (
        asked.title == request.title
        and asked.description == request.description
        and asked.options == request.options
        and asked.tool == request.tool
        and asked.approvers == request.approvers
    )


async def ask(
    db: Database,
    *,
    thread_id: ThreadId,
    run_id: str,
    role: Address,
    cursor: int,
    request: ApprovalRequest,
) -> tuple[ApprovalRequested, ApprovalResolved | None]:
    """The approval for `request`: the same one asked by this run since its cursor (and its
    resolution, if it has one), or a new one."""
    for asked, resolution in await db.approvals.asked_since(run_id, thread_id, cursor):
        if _same(asked, request) and (resolution is None or resolution.by is not None):
            return asked, resolution
    return await db.approvals.request(thread_id, run_id, role, request), None


async def wait_for_answer(
    db: Database, asked: ApprovalRequested, *, stopping: Callable[[], bool] = never
) -> ApprovalResolved:
    """Its resolution: the first answer, or `expired` once its time has passed by the writer's
    clock. A waiter that is cancelled resolves it as `cancelled` (unless an answer came first,
    or the gateway is `stopping`: the turn's rerun will want it) and is cancelled."""
    try:
        while True:
            left = (asked.expires_at - db.approvals.now()).total_seconds()
            try:
                async with asyncio.timeout(max(left, 0.0)):
                    return await db.approvals.wait(asked.id)
            except TimeoutError:
                pass
            with contextlib.suppress(Conflict):  # answered at the last moment: the wait has it
                return await db.approvals.expire(asked.id, asked.thread_id)
    except asyncio.CancelledError:
        if not stopping():
            await asyncio.shield(_cancel(db, asked))
        raise


async def _cancel(db: Database, asked: ApprovalRequested) -> None:
    try:
        await db.approvals.cancel(asked.id, asked.thread_id)
    except ApprovalClosed:
        pass
    except Exception as error:  # the database is out of reach: the approval stays pending
        log.warning("approval %s was not cancelled: %s", asked.id, error)
