"""Following the commits of every replica: this process's listeners see every commit, whichever
replica made it, in position order, once.

Two streams, each with positions of its own: the timeline's events and the task events. For
each, the follower keeps how far it has **dispatched**: every position up to it has been handed
to this process's listeners (`Database.listen`), none after it. It starts at the heads read when
the database is opened: listeners hear what is committed from then on.

- Reads go up to each stream's committed head (`core.storage.positions`): nothing at or below
  it can be committed later, so what the database holds after the dispatched position and up to
  the head is exactly what is still to dispatch there, whichever replica committed it.
- The quick way: a local commit (the writer's `on_commit`) whose events are exactly the
  positions right after the dispatched one, in each stream, is dispatched at once, without a
  read: no other writer has anything below them.
- The carried way: a notification from another replica carries the events it committed, when
  they fit (`CARRIED_MOST` bytes) and the commit appended no task events. They are dispatched
  without a read as soon as they follow on from the dispatched position; until then they are
  held, as is a local commit that leaves a gap before it (another replica committed in
  between): the other replica's notification usually fills the gap a moment later. A gap still
  open after `GAP_WAIT` seconds (a batch rolled back leaves positions that nobody commits) is
  closed by a read.
- The reading way: when a notification from another replica says its heads are beyond ours
  and carries no events, a gap outlasts `GAP_WAIT`, the safety poll finds the heads beyond ours,
  or the notifications connection is back after an outage, the follower reads the events after
  its positions and dispatches them in order. One read at a
  time; nudges while it runs make one more read after it, however many they are. What a read
  finds at or below the dispatched position (a local commit dispatched meanwhile) is skipped,
  so nothing is dispatched twice; events held back behind a gap are dispatched by the read, in
  their place, or after it.
- Every local commit is announced to the other replicas after it (`PgNotifications.announce`:
  coalesced, never inside the writer's transaction, never blocking the writer), payload
  `"<events head> <task events head> <sent at, µs since the epoch>[ <events>]"`, the events as a
  JSON array of their rows (`core.storage.rows.event_values`) when carried. The receiver's delay
  since `sent at` is the notify lag (`on_lag`, for metrics).
- Notifications are not durable; a slow safety poll (`poll_every`) reads the heads, and a
  reconnect of the notifications connection starts a read. Nothing is missed, only delayed.
- After each dispatch the dispatched heads are published on the buses (`core.storage.bus`),
  which only nudge: a bus's head is never beyond what this process's listeners were handed.
  Every position up to the dispatched heads is final, so this process's reads go at least that
  far (`positions.known_final`): a listener nudged to read from its cursor finds what it was
  told of, even while another writer's open batch holds the committed head below it.
- A listener that raises is logged; the others still hear the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from core.model.tasks import TaskEvent
from core.model.timeline import AnyEvent
from core.storage import positions, threads_reads
from core.storage.bus import CommittedEvents
from core.storage.endpoints_store import task_events_since
from core.storage.errors import StorageUnavailable
from core.storage.notify import PgNotifications
from core.storage.pages import MAX_PAGE
from core.storage.rows import event_from_row, event_values
from core.storage.transact import Transactor

log = logging.getLogger(__name__)

COMMITS_CHANNEL = "rolecall_commits"
CARRIED_MOST = 7_500
"""Bytes a notification's payload may take with the events it carries (PostgreSQL refuses
8,000 or more); beyond, it carries only the heads."""
GAP_WAIT = 0.02
"""Seconds events are held behind a gap before a read closes it; doubled, up to
`GAP_WAIT_MOST`, while such reads find nothing new (a stalled replica's open batch holds every
reader below its positions until it wakes)."""
GAP_WAIT_MOST = 1.0
HELD_MOST = 10_000
"""Events held behind a gap, at most; beyond, they are dropped and a read fetches them."""
POLL_EVERY = 5.0
"""Seconds between the safety poll's reads of the heads."""
RETRY_EVERY = 1.0
"""Seconds between attempts to read while the database cannot be reached."""

Listener = Callable[[Sequence[AnyEvent], Sequence[TaskEvent]], None]
"""Hears the timeline events and the task events of a commit (or of a read of several)."""


@dataclass(frozen=True, slots=True)
class Heads:
    """A position in each stream."""

    events: int
    tasks: int

    def beyond(self, other: Heads) -> bool:
        """Whether either stream is past `other`'s."""
        return self.events > other.events or self.tasks > other.tasks

    def newest(self, other: Heads) -> Heads:
        return Heads(max(self.events, other.events), max(self.tasks, other.tasks))


def heads_payload(heads: Heads, sent_at: float, events: Sequence[AnyEvent] = ()) -> str:
    """A notification's payload: both heads, when it was sent (seconds since the epoch), and
    the events it carries if they fit in `CARRIED_MOST` bytes."""
    said = f"{heads.events} {heads.tasks} {round(sent_at * 1_000_000)}"
    if not events:
        return said
    carried = json.dumps([event_values(e) for e in events], separators=(",", ":"))
    return f"{said} {carried}" if len(said) + 1 + len(carried) <= CARRIED_MOST else said


def parse_payload(payload: str) -> tuple[Heads, float, str]:
    """The heads, the sending time and the events carried (as sent: `carried_events` reads
    them) of a payload (`ValueError` when it is not one)."""
    events, tasks, sent_at, *carried = payload.split(" ", 3)
    return Heads(int(events), int(tasks)), int(sent_at) / 1_000_000, "".join(carried)


def carried_events(carried: str) -> list[AnyEvent]:
    """The events a payload carried (`ValueError` when they are not events)."""
    rows = json.loads(carried) if carried else []
    if not isinstance(rows, list):
        raise ValueError("the events carried are not a list")
    try:
        return [event_from_row(row) for row in rows]
    except (TypeError, KeyError) as error:
        raise ValueError(f"an event carried is not one: {error}") from error


def dispatch(
    listeners: Sequence[Listener], events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]
) -> None:
    """Hand the events to every listener; one that raises is logged and the others still hear."""
    for listener in list(listeners):
        try:
            listener(events, task_events)
        except Exception:
            log.exception("a committed-event listener failed")


def read_heads(conn: Connection) -> Heads:
    """Each stream's committed head (`core.storage.positions`): a transaction of its own."""
    heads = positions.committed_heads(conn)
    return Heads(heads.events, heads.tasks)


async def _read_heads(reads: Transactor) -> Heads:
    heads = await positions.committed(reads)
    return Heads(heads.events, heads.tasks)


def read_after(
    conn: Connection, after: Heads, limit: int, upto: positions.Heads
) -> tuple[Sequence[AnyEvent], list[TaskEvent]]:
    """Up to `limit` events of each stream after `after` and up to its committed head `upto`,
    in position order. A stream whose head is not beyond `after` is not read. The two reads
    need no snapshot in common: every position up to a committed head is already final."""
    events: Sequence[AnyEvent] = ()
    tasks: list[TaskEvent] = []
    if upto.events > after.events:
        events = threads_reads.since(conn, after.events, limit, upto.events).events
    if upto.tasks > after.tasks:
        tasks = task_events_since(conn, after.tasks, limit, upto.tasks)
    return events, tasks


class Follower:
    """Dispatches every replica's commits to this process's listeners (see the module).

    `committed` is the writer's `on_commit`; `start` reads the heads and begins listening."""

    def __init__(
        self,
        reads: Transactor,
        *,
        listeners: Sequence[Listener],
        bus: CommittedEvents,
        task_bus: CommittedEvents,
        poll_every: float = POLL_EVERY,
        on_lag: Callable[[float], None] | None = None,
        page: int = MAX_PAGE,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._reads = reads
        self._listeners = listeners
        self._bus = bus
        self._task_bus = task_bus
        self._poll_every = poll_every
        self._on_lag = on_lag
        self._page = page
        self._wall_clock = wall_clock
        self._dispatched = Heads(0, 0)
        self._following = False
        """Whether the heads were read at start: until then a notification says nothing."""
        self._committed_here = Heads(0, 0)
        """The newest positions this process committed (what it announces)."""
        self._unannounced: list[AnyEvent] = []
        """Events committed here since the last announcement, for it to carry."""
        self._uncarried = False
        """Whether the next announcement carries nothing: task events were committed here
        since the last one, or more events than it could carry (`HELD_MOST`: the announcements
        stopped while the notifications connection was down)."""
        self._held: dict[int, AnyEvent] = {}
        """Events heard of or committed here that wait behind a gap, by position."""
        self._heard_heads = Heads(0, 0)
        """The newest heads heard of or committed here."""
        self._gap_timer: asyncio.TimerHandle | None = None
        self._gap_wait = GAP_WAIT
        self._gap_read_at: Heads | None = None
        """The dispatched heads when the last gap read began."""
        self._notifications: PgNotifications | None = None
        self._reading: asyncio.Task[None] | None = None
        self._again = False
        self._unreachable = False
        self._poll: asyncio.Task[None] | None = None
        self._stops: list[Callable[[], Awaitable[None] | None]] = []

    @property
    def dispatched(self) -> Heads:
        return self._dispatched

    async def start(self, notifications: PgNotifications) -> None:
        """Listen first, then read the heads: a commit after the read is heard of."""
        self._notifications = notifications
        self._stops.append(await notifications.listen(COMMITS_CHANNEL, self._heard))
        self._stops.append(notifications.on_reconnect(self._reconnected))
        self._dispatched = await _read_heads(self._reads)
        self._following = True
        self._publish()
        self._poll = asyncio.create_task(self._safety_poll(), name="rolecall-follow-poll")

    async def stop(self) -> None:
        if self._gap_timer is not None:
            self._gap_timer.cancel()
        for task in (self._poll, self._reading):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        for stop in self._stops:
            stopped = stop()
            if stopped is not None:
                await stopped
        self._stops.clear()

    def committed(self, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]) -> None:
        """A commit made here, right after it (the writer's loop: never blocks)."""
        at = self._dispatched
        here = Heads(
            events[-1].position if events else 0,
            task_events[-1].position if task_events else 0,
        )
        self._committed_here = self._committed_here.newest(here)
        self._heard_heads = self._heard_heads.newest(here)
        self._unannounced += events
        self._uncarried |= bool(task_events)
        if len(self._unannounced) > HELD_MOST:
            self._unannounced, self._uncarried = [], True
        if _follows(events, at.events) and _follows(task_events, at.tasks):
            self._hand_out(at, events, task_events)
        elif not task_events:
            self._hold(events)  # another replica's commit in between: it is heard of soon
        else:  # the task events' order: the read dispatches this one in order
            self.nudge()
        self._announce()

    def nudge(self) -> None:
        """Read what is committed after the dispatched positions, soon (one read at a time)."""
        if self._reading is not None and not self._reading.done():
            self._again = True
            return
        self._reading = asyncio.create_task(self._read(), name="rolecall-follow")

    # --- inside -----------------------------------------------------------------------------

    def _hand_out(
        self, at: Heads, events: Sequence[AnyEvent], task_events: Sequence[TaskEvent]
    ) -> None:
        """Dispatch events that start right after `at` (the dispatched heads)."""
        self._dispatched = Heads(
            events[-1].position if events else at.events,
            task_events[-1].position if task_events else at.tasks,
        )
        # Everything up to them is final: the listeners' reads go at least that far.
        positions.known_final(self._reads, self._dispatched.events, self._dispatched.tasks)
        dispatch(self._listeners, events, task_events)
        if self._held:
            self._release()
        self._publish()

    def _hold(self, events: Sequence[AnyEvent]) -> None:
        """Keep events that do not follow on yet, until a commit fills the gap before them (or
        a read, after `GAP_WAIT`)."""
        at = self._dispatched.events
        for event in events:
            if event.position > at:
                self._held[event.position] = event
        if len(self._held) > HELD_MOST:
            self._held.clear()
            self.nudge()
            return
        self._release()
        self._watch_gap()

    def _watch_gap(self) -> None:
        """Read after `GAP_WAIT` unless what is held (or heard of) is dispatched by then."""
        behind = self._held or self._heard_heads.beyond(self._dispatched)
        if not behind or self._gap_timer is not None:
            return
        stuck = self._gap_read_at == self._dispatched  # the last gap read found nothing
        self._gap_wait = min(self._gap_wait * 2, GAP_WAIT_MOST) if stuck else GAP_WAIT
        loop = asyncio.get_running_loop()
        self._gap_timer = loop.call_later(self._gap_wait, self._gap_outlasted)

    def _release(self) -> None:
        """Dispatch the held events that now follow on; forget those dispatched already."""
        at = self._dispatched
        for position in [p for p in self._held if p <= at.events]:
            del self._held[position]
        run: list[AnyEvent] = []
        while (event := self._held.pop(at.events + len(run) + 1, None)) is not None:
            run.append(event)
        if run:
            self._hand_out(at, run, ())

    def _gap_outlasted(self) -> None:
        self._gap_timer = None
        if self._held or self._heard_heads.beyond(self._dispatched):
            self._gap_read_at = self._dispatched
            self.nudge()

    def _publish(self) -> None:
        self._bus.publish(self._dispatched.events)
        self._task_bus.publish(self._dispatched.tasks)

    def _announce(self) -> None:
        if self._notifications is None:
            return
        self._notifications.announce(COMMITS_CHANNEL, self._payload)

    def _payload(self) -> str:
        """What the announcement says when it is sent: the heads, and the events committed here
        since the last one unless task events were among them."""
        carried = () if self._uncarried else self._unannounced
        payload = heads_payload(
            self._committed_here.newest(self._dispatched), self._wall_clock(), carried
        )
        self._unannounced, self._uncarried = [], False
        return payload

    def _heard(self, payload: str) -> None:
        if not self._following:  # the heads read at start will include what this is about
            return
        try:
            heads, sent_at, carried = parse_payload(payload)
            # Only what is not dispatched yet is read (this replica's own, say, is not).
            said = carried_events(carried) if heads.events > self._dispatched.events else []
        except ValueError:
            log.warning("a commit notification not understood: %r", payload[:100])
            self.nudge()
            return
        if self._on_lag is not None:
            try:
                self._on_lag(max(0.0, self._wall_clock() - sent_at))
            except Exception:
                log.exception("the notify lag callback failed")
        self._heard_heads = self._heard_heads.newest(heads)
        if said and heads.tasks <= self._dispatched.tasks:
            self._hold(said)
        elif heads.beyond(self._dispatched):
            self.nudge()

    def _reconnected(self) -> None:
        """Notifications were missed while the connection was down, and ours were lost."""
        if not self._following:
            return
        self.nudge()
        self._announce()

    async def _read(self) -> None:
        while True:
            self._again = False
            try:
                while not await self._read_page():
                    pass
            except Exception:  # a bug, not an outage: the next nudge reads again
                log.exception("reading the commits of other replicas failed")
                return
            if not self._again:
                self._watch_gap()
                return

    async def _read_page(self) -> bool:
        """Read and dispatch one page of each stream; whether that was all there was."""
        after = self._dispatched
        try:
            events, task_events = await positions.read_committed(
                self._reads, lambda c, upto: read_after(c, after, self._page, upto), single=True
            )
        except StorageUnavailable as error:
            if not self._unreachable:
                log.warning("reading the commits of other replicas failed: %s; retrying", error)
                self._unreachable = True
            await asyncio.sleep(RETRY_EVERY)
            return False
        if self._unreachable:
            log.info("reading the commits of other replicas again")
            self._unreachable = False
        # The quick way may have dispatched some of them meanwhile: the rest follow on.
        at = self._dispatched
        fresh = [e for e in events if e.position > at.events]
        fresh_tasks = [t for t in task_events if t.position > at.tasks]
        if fresh or fresh_tasks:
            self._hand_out(at, fresh, fresh_tasks)
        return len(events) < self._page and len(task_events) < self._page

    async def _safety_poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_every)
            try:
                heads = await _read_heads(self._reads)
            except StorageUnavailable:
                continue  # said by the reads, and by the writer's requests
            except Exception:
                log.exception("the safety poll of the commits failed")
                continue
            if heads.beyond(self._dispatched):
                self.nudge()


def _follows(events: Sequence[AnyEvent] | Sequence[TaskEvent], position: int) -> bool:
    """Whether `events` are the positions right after `position`, with no gap among them (or
    there are none): on PostgreSQL another replica's writer may have taken one in between."""
    return positions.follows_on([e.position for e in events], position)
