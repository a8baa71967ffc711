"""Notifications between replicas: PostgreSQL's LISTEN/NOTIFY, on one connection of their own.

A **channel** is a free-form name (`rolecall_commits`, `rolecall_control`, …); a notification is
a short text payload (PostgreSQL allows under 8000 bytes). Every process that serves a
PostgreSQL database has one `PgNotifications`: ONE raw asyncpg connection outside the pools
(`application_name` `rolecall-listen`, so an operator or a test can find its backend), which
LISTENs on every channel that has a callback and sends every notification (`pg_notify`, in
autocommit).

- Never from inside the writer's transaction: a transaction that issued a NOTIFY takes a lock at
  COMMIT that serialises every notifying committer of the whole server. Sent after the commit
  from this connection, a notification costs the writer nothing.
- `notify` sends one payload, or raises `StorageUnavailable` when the connection is down.
  `announce` is the coalesced, fire-and-forget way, for news that only nudges: while a
  notification is in flight, later payloads for the channel replace each other and only the
  newest is sent; a payload is made when it is sent, so it says the newest.
- Notifications are not durable: while the connection is down nothing is heard and nothing
  sent arrives. The connection is watched: asyncpg's termination callback, and a ping every
  `ping_every` seconds for a network gone silent (a ping unanswered for `ping_timeout` seconds
  counts as the connection lost). When it drops it is reopened with a short bounded backoff
  (`BACKOFF`), its LISTENs are restored, and the `on_reconnect` hooks are called so that their
  owners catch up by reading what they may have missed. One warning line per outage, one info
  line when the connection is back.
- A session hears its own notifications too (PostgreSQL delivers to every listener).
- A callback runs on the event loop and must be quick; one that raises is logged, and the other
  callbacks still hear the notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url

from core.storage.engine import COMMAND_TIMEOUT, CONNECT_TIMEOUT
from core.storage.errors import StorageUnavailable
from core.storage.transact import outage

log = logging.getLogger(__name__)

APPLICATION_NAME = "rolecall-listen"
BACKOFF = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
"""Seconds between attempts to reconnect: quick at first, then every 2 s at most."""
PING_EVERY = 5.0
"""Seconds between pings of an idle connection (a dead peer sends no termination)."""
PING_TIMEOUT = 5.0
"""Seconds a ping may take before the connection is taken for dead."""
CLOSE_GRACE = 1.0
"""Seconds `close` gives an announcement in flight to be sent."""

Callback = Callable[[str], None]
"""Called with a notification's payload."""


class PgNotifications:
    """LISTEN/NOTIFY on one dedicated connection, reopened whenever it drops. Open with
    `await PgNotifications.open(url)`; `await close()` when done."""

    def __init__(
        self, url: str, *, ping_every: float = PING_EVERY, ping_timeout: float = PING_TIMEOUT
    ) -> None:
        self._dsn = _dsn(url)
        self._ping_every = ping_every
        self._ping_timeout = ping_timeout
        self._connection: Any = None
        self._lost = asyncio.Event()
        """Set when the current connection is gone (a fresh one per connection)."""
        self._lock = asyncio.Lock()
        """One statement at a time on the connection (asyncpg refuses overlapping ones); also
        keeps the set of LISTENed channels and the connection's LISTENs in step."""
        self._callbacks: dict[str, list[Callback]] = {}
        self._reconnect_hooks: list[Callable[[], None]] = []
        self._pending: dict[str, Callable[[], str]] = {}
        self._sender: asyncio.Task[None] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(
        cls, url: str, *, ping_every: float = PING_EVERY, ping_timeout: float = PING_TIMEOUT
    ) -> PgNotifications:
        """Connect (`StorageUnavailable` when the server cannot be reached), then keep the
        connection up until `close`."""
        notifications = cls(url, ping_every=ping_every, ping_timeout=ping_timeout)
        try:
            await notifications._connect()
        except Exception as error:
            reason = outage(error)
            if reason is None:
                raise
            raise StorageUnavailable(reason) from error
        notifications._supervisor = asyncio.create_task(
            notifications._supervise(), name=APPLICATION_NAME
        )
        return notifications

    @property
    def backend_pid(self) -> int | None:
        """The server process of the connection (None while it is down)."""
        connection = self._connection
        if connection is None or connection.is_closed():
            return None
        return int(connection.get_server_pid())

    async def listen(self, channel: str, callback: Callback) -> Callable[[], Awaitable[None]]:
        """Call `callback(payload)` for every notification on `channel`, from when this returns
        (the LISTEN is in effect, or will be once the connection is back); returns the
        coroutine function that stops it."""
        async with self._lock:
            callbacks = self._callbacks.setdefault(channel, [])
            callbacks.append(callback)
            if len(callbacks) == 1 and self._connection is not None:
                # Down meanwhile: the reconnect LISTENs on every channel that has a callback.
                with contextlib.suppress(StorageUnavailable):
                    await self._on_connection(lambda c: c.add_listener(channel, self._deliver))

        async def stop() -> None:
            async with self._lock:
                callbacks = self._callbacks.get(channel, [])
                if callback in callbacks:
                    callbacks.remove(callback)
                if callbacks or channel not in self._callbacks:
                    return
                del self._callbacks[channel]
                if self._connection is not None:
                    with contextlib.suppress(StorageUnavailable):  # gone with the connection
                        await self._on_connection(
                            lambda c: c.remove_listener(channel, self._deliver)
                        )

        return stop

    def on_reconnect(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Call `hook()` each time the connection is back after it dropped (notifications were
        missed meanwhile); returns the function that stops it."""
        self._reconnect_hooks.append(hook)
        return lambda: self._reconnect_hooks.remove(hook)

    async def notify(self, channel: str, payload: str) -> None:
        """Send `payload` on `channel` now (`StorageUnavailable` when the connection is down)."""
        async with self._lock:
            if self._connection is None:
                raise StorageUnavailable("the notifications connection is down")
            await self._on_connection(
                lambda c: c.execute("SELECT pg_notify($1, $2)", channel, payload)
            )

    def announce(self, channel: str, payload: Callable[[], str]) -> None:
        """Send `payload()` on `channel` soon, without waiting: coalesced with the announcements
        on `channel` not sent yet (only the newest is sent). One that cannot be sent (the
        connection is down) is dropped: announcements only nudge."""
        if self._closed:
            return
        self._pending[channel] = payload
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_pending(), name="rolecall-announce")

    async def close(self) -> None:
        """Send what is being announced (briefly), stop watching, close the connection."""
        self._closed = True
        if self._sender is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._sender), CLOSE_GRACE)
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            try:
                await connection.close(timeout=CLOSE_GRACE)
            except Exception:  # the server is gone or slow: let go of the socket anyway
                connection.terminate()

    # --- the connection ---------------------------------------------------------------------

    async def _connect(self) -> None:
        connection = await asyncpg.connect(
            self._dsn,
            timeout=CONNECT_TIMEOUT,
            command_timeout=COMMAND_TIMEOUT,
            # A notifying transaction gets an xid, so its COMMIT would wait for a WAL flush;
            # a notification lost with a crash of the server costs nothing (the safety poll).
            server_settings={"application_name": APPLICATION_NAME, "synchronous_commit": "off"},
        )
        try:
            async with self._lock:
                for channel in self._callbacks:
                    await connection.add_listener(channel, self._deliver)
                lost = self._lost = asyncio.Event()
                connection.add_termination_listener(lambda _connection: lost.set())
                self._connection = connection
        except BaseException:
            connection.terminate()
            raise

    async def _on_connection(self, work: Callable[[Any], Awaitable[Any]]) -> None:
        """Run `work(connection)` (the lock held); a failure of the connection drops it, for the
        supervisor to reopen, and is raised as `StorageUnavailable`."""
        connection = self._connection
        try:
            await work(connection)
        except Exception as error:
            reason = outage(error)
            if reason is None:
                raise
            self._lost.set()
            raise StorageUnavailable(reason) from error

    async def _supervise(self) -> None:
        while True:
            await self._watch()
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.terminate()
            log.warning("notifications: the connection to PostgreSQL was lost; reconnecting")
            started = time.monotonic()
            await self._reconnect()
            log.info(
                "notifications: connected to PostgreSQL again after %.1f s",
                time.monotonic() - started,
            )
            for hook in list(self._reconnect_hooks):
                try:
                    hook()
                except Exception:
                    log.exception("a reconnect hook of the notifications failed")

    async def _watch(self) -> None:
        """Return once the connection is gone: terminated, or not answering a ping."""
        lost = self._lost
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), self._ping_every)
                return
            with contextlib.suppress(StorageUnavailable):  # (it sets `lost`)
                async with self._lock:
                    await self._on_connection(
                        lambda c: c.fetchval("SELECT 1", timeout=self._ping_timeout)
                    )

    async def _reconnect(self) -> None:
        attempt = 0
        while True:
            await asyncio.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
            try:
                await self._connect()
                return
            except Exception as error:  # the outage's one warning is out; the rest is detail
                log.debug("notifications: reconnecting failed: %s", outage(error) or error)
            attempt += 1

    def _deliver(self, _connection: Any, _pid: int, channel: str, payload: str) -> None:
        for callback in list(self._callbacks.get(channel, ())):
            try:
                callback(payload)
            except Exception:
                log.exception("a callback of notification channel %r failed", channel)

    async def _send_pending(self) -> None:
        while self._pending:
            channel = next(iter(self._pending))
            payload = self._pending.pop(channel)
            try:
                await self.notify(channel, payload())
            except StorageUnavailable as error:
                log.debug("notifications: an announcement on %r was dropped: %s", channel, error)
            except Exception:
                log.exception("an announcement on notification channel %r failed", channel)


def _dsn(url: str) -> str:
    """asyncpg's connection string for a SQLAlchemy URL (`postgresql+asyncpg://…`)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
