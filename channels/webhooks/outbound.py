"""Committed events out to the operators' endpoints, as Standard Webhooks: one worker per active
endpoint.

A worker reads what was committed after its endpoint's cursors — timeline events
(`events_since`) and task events, each stream from its own cursor — and sends each event its
filters want as one signed request, one at a time, in stream order. The two streams are merged
by commit time (`at`) as they are read: each stream's order is kept exactly (so is each thread's,
and each task's); between the streams the order is the commit time's, best effort.

At least once: a cursor moves in the database only after the endpoint answered 2xx, in the
same write that records the attempt (`RecordAttempt`, a compare-and-set on the cursors the worker
stored last). A failure is written down too — failures in a row, the reason, when to try again —
so a restart mid-backoff waits out what is left and sends the same event again. Each attempt
recorded joins the endpoint's delivery log in that same write (`endpoint_attempts`). An event the
filters do not want moves the cursor too, written with the next attempt or at the end of a page.
The request for an event is the same on every attempt, `webhook-id` included (the event's id):
receivers deduplicate by it. Redirects are not followed.

Addresses: with `allow_private` off, every address a host resolves to is checked when the
connection is made (`GuardedResolver`, the connector's resolver, so the check covers exactly
the addresses connected to), and a host written as an IP address before the request; a refused
address fails the attempt with the reason.

The worker is nudged by every commit (`Database.listen`: on PostgreSQL, every replica's), and
looks every few seconds anyway (`POLL`); it reads from the database what is new. Operators'
changes (a new endpoint, a replay, a deletion) restart the endpoint's worker from its row
(`refresh`).

Replicas (`channels.edge.leasing`): every replica runs a worker for every active endpoint, but
only the holder of the endpoint's lease (`LeaseKind.ENDPOINT`, its id) delivers. The others ask
for the lease every `retry_every` seconds and take over when it is free or expired. The lease is
looked at before each event is sent, the cursors are read again from the row whenever the lease
was (re)claimed, and each record names the fence (`LeaseLost` for a replica that lost the lease:
it stops at once, its cursors unmoved) — so each event is sent by one replica, in order; only a
replica that stalled past its lease may send one event again before its record is refused (at
least once; receivers deduplicate by `webhook-id`). Each replica also looks at the endpoints
every `retry_every` seconds (`_sweep`): one registered, replayed or deleted through another
replica gets, or loses, its worker here.

Traced (`core.tracing`), each event's delivery is a `rolecall.webhook.deliver` span — one event an
attempt — in the trace of the commit that appended it (a trace of its own when that commit is
not known here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from standardwebhooks import Webhook

from channels.edge.leasing import Held, Leasing
from core import tracing
from core.model.endpoints import (
    Attempt,
    Cursors,
    Endpoint,
    EndpointId,
    EndpointStatus,
    RetryPolicy,
    Standing,
    Tried,
    after_attempt,
    ip_literal,
    payload,
    refusal,
    retry_after,
    task_scope,
    task_type,
    timeline_type,
)
from core.model.errors import InvalidInput, NotFound
from core.model.leases import LeaseKind, LeaseLost
from core.model.participants import ParticipantKind, kind_of
from core.model.serialize import event_json
from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent, ThreadId
from core.storage.database import Database
from core.storage.errors import StorageUnavailable

log = logging.getLogger("rolecall.webhooks")

PAGE = 100
POLL = 5.0
"""Seconds a worker waits for a nudge before it looks anyway: commits made by another gateway
on the same database (scale-out on PostgreSQL) nudge nobody here."""
THREADS_KNOWN = 10_000
"""Threads whose roles are kept in memory for the roles filter (forgotten all at once beyond)."""
RETRY_PAUSE = 1.0
"""Seconds before a worker tries again after an unexpected error (the database, a bug)."""
USER_AGENT = "Rolecall-Webhooks/1"
ALLOW_SETTING = "ROLECALL_ENDPOINTS_ALLOW_PRIVATE"


class PrivateAddress(OSError):
    """The host resolves to an address endpoints may not be reached at."""


def refused_message(host: str, address: str, why: str) -> str:
    """Why an attempt (or a registration) is refused, and how to allow it."""
    where = f"{host} is a {why}" if ip_literal(host) else f"{host} resolves to {address}, a {why}"
    return (
        f"refused: {where}; endpoints are not reached at loopback, private or link-local "
        f"addresses unless {ALLOW_SETTING}=true"
    )


class GuardedResolver(AbstractResolver):
    """The default resolver, refusing a host any of whose addresses is not a global one."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        for result in found:
            if (why := refusal(result["host"])) is not None:
                raise PrivateAddress(refused_message(host, result["host"], why))
        return found

    async def close(self) -> None:
        await self._inner.close()


async def check_destination(url: str, *, allow_private: bool) -> None:
    """At registration: the URL's host resolves, and to global addresses only (unless
    allowed). `InvalidInput` naming the address otherwise."""
    if allow_private:
        return
    host = urllib.parse.urlsplit(url).hostname or ""
    if (literal := ip_literal(host)) is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None)
        except OSError as error:
            raise InvalidInput(
                f"url: the host {host!r} does not resolve ({error.strerror or error})",
                code="unresolvable_host",
            ) from None
        addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if (why := refusal(address)) is not None:
            raise InvalidInput(
                f"url: {refused_message(host, address, why)}", code="private_address"
            )


# --- what is delivered --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Item:
    """One event of either stream, with what its delivery sends."""

    event: AnyEvent | TaskEvent

    def past(self, cursors: Cursors) -> Cursors:
        if isinstance(self.event, TaskEvent):
            return Cursors(position=cursors.position, task_position=self.event.position)
        return Cursors(position=self.event.position, task_position=cursors.task_position)

    @property
    def type(self) -> str:
        if isinstance(self.event, TaskEvent):
            return task_type(self.event.kind)
        return timeline_type(self.event.kind)

    def body(self) -> str:
        if isinstance(self.event, TaskEvent):
            return payload(self.type, self.event.at, self.event.to_json())
        return payload(self.type, self.event.at, event_json(self.event))

    def tried(self, attempt: Attempt) -> Tried:
        """The attempt as the endpoint's delivery log keeps it."""
        return Tried(
            event_id=self.event.id,
            event_type=self.type,
            position=self.event.position,
            attempt=attempt,
        )


def _merged(
    timeline: Sequence[AnyEvent], tasks: Sequence[TaskEvent], *, page: int
) -> Iterator[_Item]:
    """Both pages as one sequence by commit time, each stream in its own order; it stops where
    a full page runs out (what follows it is not read yet)."""
    i = j = 0
    while i < len(timeline) or j < len(tasks):
        if i == len(timeline) and len(timeline) == page:
            return
        if j == len(tasks) and len(tasks) == page:
            return
        take_task = i == len(timeline) or (j < len(tasks) and tasks[j].at < timeline[i].at)
        if take_task:
            yield _Item(tasks[j])
            j += 1
        else:
            yield _Item(timeline[i])
            i += 1


class _Changed(Exception):
    """The endpoint's row is not what the worker stored last: reload it."""


class _Stopped(Exception):
    """The endpoint is parked, disabled or gone: this worker is done."""


# --- the workers --------------------------------------------------------------------------------


class Outbound:
    """The delivery workers of this gateway, one per active endpoint."""

    def __init__(
        self,
        database: Database,
        *,
        policy: RetryPolicy,
        allow_private: bool = False,
        timeout: float = 10.0,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        leasing: Leasing | None = None,
    ) -> None:
        self._db = database
        self.leasing = leasing or Leasing.sole()
        self.policy = policy
        self.allow_private = allow_private
        self.timeout = timeout
        self.jitter = jitter
        self.clock = clock
        self._workers: dict[EndpointId, _Worker] = {}
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None
        self._unlisten: Callable[[], None] | None = None
        self._sweeping: asyncio.Task[None] | None = None
        self._thread_roles: dict[ThreadId, frozenset[str]] = {}

    async def start(self) -> None:
        resolver = None if self.allow_private else GuardedResolver()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(resolver=resolver),
            timeout=aiohttp.ClientTimeout(total=self.timeout),
            headers={"User-Agent": USER_AGENT},
        )
        self._unlisten = self._db.listen(self._on_commit)
        for endpoint in await self._db.endpoints.all():
            if endpoint.status is EndpointStatus.ACTIVE:
                self._start(endpoint)
        if self.leasing.shared:
            self._sweeping = asyncio.create_task(self._sweep(), name="rolecall-endpoints-sweep")

    async def stop(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
        if self._sweeping is not None:
            self._sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeping
        async with self._lock:
            for worker in list(self._workers.values()):
                await worker.stop()
            self._workers.clear()
        if self._session is not None:
            await self._session.close()

    async def refresh(self, endpoint_id: EndpointId) -> None:
        """The endpoint changed (created, replayed, deleted): its worker starts again from the
        row, or stops for good."""
        async with self._lock:
            worker = self._workers.pop(endpoint_id, None)
            if worker is not None:
                await worker.stop()
            try:
                endpoint = await self._db.endpoints.get(endpoint_id)
            except NotFound:
                await self._let_go(endpoint_id)
                return
            if endpoint.status is EndpointStatus.ACTIVE:
                self._start(endpoint)
            else:
                await self._let_go(endpoint_id)

    async def _let_go(self, endpoint_id: EndpointId) -> None:
        """The endpoint is parked, disabled or gone: its lease is free for good (or, when this
        fails, expires)."""
        try:
            await self.leasing.release(LeaseKind.ENDPOINT, endpoint_id)
        except Exception as error:
            log.warning("endpoint %s: lease not released: %s", endpoint_id, error)

    async def _sweep(self) -> None:
        """With replicas: endpoints changed through another replica get, or lose, their
        worker here."""
        while True:
            await asyncio.sleep(self.leasing.retry_every)
            try:
                await self._sweep_once()
            except Exception as error:  # the next sweep tries again
                log.warning("endpoints not looked at: %s", error)

    async def _sweep_once(self) -> None:
        async with self._lock:
            active = {
                e.id: e for e in await self._db.endpoints.all() if e.status is EndpointStatus.ACTIVE
            }
            for endpoint_id, worker in list(self._workers.items()):
                if endpoint_id not in active:
                    await worker.stop()
                    self._workers.pop(endpoint_id, None)
                    await self._let_go(endpoint_id)
            for endpoint_id, endpoint in active.items():
                if endpoint_id not in self._workers:
                    self._start(endpoint)

    async def check(self, url: str) -> None:
        await check_destination(url, allow_private=self.allow_private)

    def _start(self, endpoint: Endpoint) -> None:
        worker = _Worker(self, self._db, endpoint)
        self._workers[endpoint.id] = worker
        worker.start()

    def _on_commit(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        for worker in self._workers.values():
            worker.wake(events, task_events)

    def _done(self, worker: _Worker) -> None:
        if self._workers.get(worker.id) is worker:
            del self._workers[worker.id]

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "Outbound.start() first"
        return self._session

    async def thread_roles(self, thread_id: ThreadId) -> frozenset[str]:
        """The roles of a thread (membership is permanent, so this never goes stale)."""
        known = self._thread_roles.get(thread_id)
        if known is None:
            thread = await self._db.threads.get(thread_id)
            known = frozenset(
                address.partition(":")[2]
                for address in thread.addresses
                if kind_of(address) is ParticipantKind.ROLE
            )
            if len(self._thread_roles) >= THREADS_KNOWN:
                self._thread_roles.clear()
            self._thread_roles[thread_id] = known
        return known


class _Worker:
    def __init__(self, outbound: Outbound, database: Database, endpoint: Endpoint) -> None:
        self._out = outbound
        self._db = database
        self._endpoint = endpoint
        self._webhook = Webhook(endpoint.secret)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._held: Held | None = None
        """The lease as this worker last worked under it (None: not held)."""
        self._load(endpoint)

    @property
    def id(self) -> EndpointId:
        return self._endpoint.id

    def _load(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._standing = endpoint.standing
        self._stored = self._cursors = endpoint.cursors

    def start(self) -> None:
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name=f"rolecall-endpoint-{self.id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        filters = self._endpoint.filters
        if (events and filters.wants_timeline) or (task_events and filters.wants_tasks):
            self._wake.set()

    # --- the loop -------------------------------------------------------------------------------

    async def _run(self) -> None:
        leasing = self._out.leasing
        try:
            if not leasing.shared:
                await self._wait_for_next_attempt()  # one scheduled before a restart, say
            while True:
                with contextlib.suppress(TimeoutError):  # a nudge may be lost: look anyway
                    await asyncio.wait_for(self._wake.wait(), POLL)
                self._wake.clear()
                try:
                    if not await self._hold():  # another replica delivers it: ask again later
                        await asyncio.sleep(leasing.retry_every)
                        self._wake.set()
                        continue
                    await self._drain()
                    continue
                except _Changed:
                    pass
                except _Stopped:
                    await self._out._let_go(self.id)
                    return
                except LeaseLost as lost:  # another replica holds it now: nothing was moved
                    log.info("endpoint %s: %s", self.id, lost)
                    leasing.lost(LeaseKind.ENDPOINT, self.id)
                    self._held = None
                    self._wake.set()
                    continue
                except Exception as error:  # the cursors have not moved: try again shortly
                    if isinstance(error, StorageUnavailable):  # expected: no traceback
                        log.warning("delivery to endpoint %s waits: %s", self.id, error)
                    else:
                        log.exception("delivery to endpoint %s stopped short", self.id)
                    await asyncio.sleep(RETRY_PAUSE)
                    self._wake.set()
                    continue
                if not await self._reload():
                    await self._out._let_go(self.id)
                    return
        finally:
            self._out._done(self)

    async def _hold(self) -> bool:
        """Whether this replica delivers the endpoint now. Newly (re)claimed, its row is read
        again first: another replica may have delivered meanwhile (`_Stopped` when it is no
        longer active)."""
        held = await self._out.leasing.hold(LeaseKind.ENDPOINT, self.id)
        if held is None:
            self._held = None
            return False
        if held != self._held:
            if self._out.leasing.shared:
                try:
                    self._load(await self._db.endpoints.get(self.id))
                except NotFound:
                    raise _Stopped from None
                if self._standing.status is not EndpointStatus.ACTIVE:
                    raise _Stopped
                await self._wait_for_next_attempt()
            self._held = held
        return True

    async def _still_held(self) -> None:
        """Before a request goes out, with replicas: `_Changed` (read the row again) unless
        the lease is still the one this worker delivers under."""
        if not self._out.leasing.shared:
            return
        held = await self._out.leasing.hold(LeaseKind.ENDPOINT, self.id)
        if held is None or held != self._held:
            self._held = None
            raise _Changed

    async def _reload(self) -> bool:
        """Start again from the row (an operator, or another gateway, changed it); False when
        it is no longer active."""
        try:
            self._load(await self._db.endpoints.get(self.id))
        except NotFound:
            return False
        if self._standing.status is not EndpointStatus.ACTIVE:
            return False
        await self._wait_for_next_attempt()
        self._wake.set()
        return True

    async def _drain(self) -> None:
        filters = self._endpoint.filters
        while True:
            timeline: Sequence[AnyEvent] = []
            tasks: Sequence[TaskEvent] = []
            if filters.wants_timeline:
                page = await self._db.threads.events_since(self._cursors.position, limit=PAGE)
                timeline = page.events
            if filters.wants_tasks:
                tasks = await self._db.endpoints.task_events_since(
                    self._cursors.task_position, limit=PAGE
                )
            if not timeline and not tasks:
                return
            for item in _merged(timeline, tasks, page=PAGE):
                if await self._wanted(item):
                    await self._deliver(item)
                else:
                    self._cursors = item.past(self._cursors)
            if self._cursors != self._stored:  # past events the filters passed over
                await self._record(self._cursors, self._standing)

    async def _wanted(self, item: _Item) -> bool:
        filters = self._endpoint.filters
        event = item.event
        if isinstance(event, TaskEvent):
            if not filters.scoped:
                return filters.wants_tasks
            watchers, assignee = await self._db.subscriptions.routes(event.task_id)
            scope = task_scope(
                assignee, event.changes, frozenset((thread, role) for _, thread, role in watchers)
            )
            return filters.wants_task_event(scope)
        roles = await self._out.thread_roles(event.thread_id) if filters.roles else frozenset()
        return filters.wants_timeline_event(event.kind.value, event.thread_id, roles)

    async def _deliver(self, item: _Item) -> None:
        """Send the event until the endpoint takes it; `_Stopped` when it is parked or gone."""
        where = {"rolecall.endpoint_id": self.id}
        with tracing.delivery("rolecall.webhook.deliver", item.event.id, attributes=where):
            await self._send(item)

    async def _send(self, item: _Item) -> None:
        body = item.body()
        while True:
            await self._still_held()
            attempt = await self._attempt(item.event.id, body)
            if tracing.on():
                tracing.event("rolecall.webhook.attempt", **_told(attempt))
            now = self._out.clock()
            standing = after_attempt(
                self._standing,
                attempt,
                now=now,
                policy=self._out.policy,
                jitter=self._out.jitter(),
            )
            cursors = item.past(self._cursors) if attempt.delivered else self._cursors
            await self._record(cursors, standing, item.tried(attempt))
            if attempt.delivered:
                return
            log.info("endpoint %s: %s", self.id, standing.reason)
            if standing.status is not EndpointStatus.ACTIVE:
                raise _Stopped
            await self._wait_for_next_attempt()

    async def _record(
        self, cursors: Cursors, standing: Standing, tried: Tried | None = None
    ) -> None:
        fence = self._held.fence if self._held is not None else None
        if fence is None and self._out.leasing.shared:
            raise _Changed  # not held: never written unfenced
        recorded = await self._db.endpoints.record(
            self.id, seen=self._stored, cursors=cursors, standing=standing, fence=fence, tried=tried
        )
        if not recorded:
            raise _Changed
        self._stored = self._cursors = cursors
        self._standing = standing

    async def _wait_for_next_attempt(self) -> None:
        due = self._standing.next_attempt_at
        if due is not None:
            wait = (due - self._out.clock()).total_seconds()
            if wait > 0:
                await asyncio.sleep(wait)

    async def _attempt(self, msg_id: str, body: str) -> Attempt:
        url = self._endpoint.url
        host = urllib.parse.urlsplit(url).hostname or ""
        literal = ip_literal(host)
        why = refusal(literal) if literal is not None and not self._out.allow_private else None
        if literal is not None and why is not None:  # a name is checked as it resolves
            return Attempt(error=refused_message(host, literal, why))
        now = datetime.now(UTC)
        headers = {
            "Content-Type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._webhook.sign(msg_id, now, body),
        }
        try:
            async with self._out.session.post(
                url, data=body.encode(), headers=headers, allow_redirects=False
            ) as answer:
                wait = None
                if answer.status in (429, 503):
                    wait = retry_after(answer.headers.get("Retry-After"), now)
                return Attempt(status=answer.status, retry_after=wait)
        except aiohttp.ClientConnectorError as error:
            if isinstance(error.os_error, PrivateAddress):
                return Attempt(error=str(error.os_error))
            return Attempt(error=f"cannot connect to {host}: {_reason(error.os_error)}")
        except TimeoutError:
            return Attempt(error=f"no answer within {self._out.timeout:g} s")
        except aiohttp.ClientError as error:
            return Attempt(error=f"{type(error).__name__}: {error}")


def _told(attempt: Attempt) -> dict[str, str | int]:
    """An attempt as its trace tells it: the status the endpoint answered, or the error."""
    if attempt.status is not None:
        return {"http.response.status_code": attempt.status}
    return {"error.type": attempt.error or "no answer"}


def _reason(error: Any) -> str:
    return str(getattr(error, "strerror", None) or error)
