"""Who calls the operator API: the name of the operator token a request carries, checked at the
edge (`gateway.app.request_edge`) and handed to the handlers as `request[OPERATOR_KEY]`.

Tokens are named and revocable (`core.model.operators`, stored by `core.storage.operators_store`);
the gateway's configured token (`ROLECALL_API_TOKEN`, or the file `var/api-token`) is registered
at start as the token named `default`, so it is accepted as before and acts as `default`.

A request's token is looked up by its digest in the database, and the answer kept in a small
cache for `CACHE_SECONDS`, so that a busy client costs one read per few seconds, not one per
request. What holds:

- A token made on any replica is accepted at once everywhere (only what was found is cached).
- A token revoked on this replica is refused at once here: revoking clears this cache.
- On PostgreSQL, revoking also notifies every replica (`REVOCATIONS`, LISTEN/NOTIFY), and each
  clears its cache when it hears it: other replicas refuse the token within the notification's
  delay (milliseconds). Notifications are not durable, so when a replica's notification
  connection is down it may accept a revoked token until its cached answer expires: at most
  `CACHE_SECONDS` after the revocation. Its cache is cleared again when the connection is back.
- A token's `last_used_at` is written when a use finds it due (`LAST_USED_EVERY`, a minute):
  a use answered from the cache is not written, so it is right to the minute or so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from channels.edge.errors import ApiError
from channels.edge.requests import DATABASE_KEY
from core.model.operators import due_for_last_used
from core.storage import Database
from core.storage.rows import to_micros

CACHE_SECONDS = 5.0
"""How long a token found in the database is taken as it was found."""
CACHE_SIZE = 1024
"""Tokens kept at most; the cache is emptied when it is full (a handful of operators fit)."""
REVOCATIONS = "rolecall_operator_tokens"
"""The notification channel a revocation is announced on, to every replica."""

log = logging.getLogger("rolecall.operators")


@dataclass(frozen=True, slots=True, kw_only=True)
class Operator:
    """The caller of an operator route: its token's name, and where the request came from (as
    the edge sees it: a trusted proxy's `X-Forwarded-For`, else the connection's peer)."""

    name: str
    client: str


OPERATOR_KEY = web.RequestKey("operator", Operator)


def unauthorized(message: str, code: str = "unauthorized") -> ApiError:
    return ApiError(401, code, message, headers={"WWW-Authenticate": 'Bearer realm="rolecall"'})


NO_TOKEN = "this route needs the header 'Authorization: Bearer <operator token>'"


class OperatorTokens:
    """The edge's check of operator tokens, with its cache; opened with the database
    (`lifecycle`), which registers the configured token as `default`."""

    def __init__(
        self,
        configured: str,
        *,
        cache_for: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._configured = configured
        self.cache_for = cache_for
        """Seconds a token found in the database is taken as it was found."""
        self._clock = clock
        self._cache: dict[str, tuple[str, float]] = {}
        """token -> (its name, until when the answer holds)."""
        self._forgotten = 0
        """How many times the cache was cleared: an answer read before a clearing is not kept
        after it (it may be from before the revocation that cleared it)."""
        self._database: Database | None = None

    async def identify(self, token: str | None) -> str:
        """The name of the operator token `token`; 401 for none, an unknown one or a revoked
        one (`token_revoked`)."""
        if not token:
            raise unauthorized(NO_TOKEN)
        cached = self._cache.get(token)
        now = self._clock()
        if cached is not None and cached[1] > now:
            return cached[0]
        database = self._opened()
        forgotten = self._forgotten
        found = await database.operators.by_token(token)
        if found is None:
            raise unauthorized(NO_TOKEN)
        if found.revoked:
            raise unauthorized(
                f"the operator token {found.name!r} was revoked; ask an operator for another "
                "(rolecall token create)",
                code="token_revoked",
            )
        used = datetime.now(UTC)
        if due_for_last_used(found.last_used_at, used):
            await database.operators.touch(found.name, to_micros(used))
        if forgotten == self._forgotten:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[token] = (found.name, now + self.cache_for)
        return found.name

    def forget(self) -> None:
        """Take nothing from the cache any more: the next use of every token reads it."""
        self._forgotten += 1
        self._cache.clear()

    def revoked(self) -> None:
        """A token was revoked here: refuse it at once here, and tell the other replicas."""
        self.forget()
        notifications = self._opened().notifications
        if notifications is not None:
            notifications.announce(REVOCATIONS, lambda: "revoked")

    def _opened(self) -> Database:
        if self._database is None:
            raise RuntimeError("operator tokens are checked only while the gateway runs")
        return self._database

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """Once the database is open: register the configured token as `default`, and on
        PostgreSQL hear the other replicas' revocations (and clear the cache whenever the
        notifications' connection is back, since some may have been missed)."""
        database = app[DATABASE_KEY]
        await database.operators.configure_default(self._configured)
        self._database = database
        notifications = database.notifications
        if notifications is None:  # SQLite: one process, nobody else revokes
            yield
            self._database = None
            return
        stop_listening = await notifications.listen(REVOCATIONS, lambda _: self.forget())
        stop_hook = notifications.on_reconnect(self.forget)
        try:
            yield
        finally:
            stop_hook()
            await stop_listening()
            self._database = None
            self.forget()


OPERATORS_KEY = web.AppKey("operators", OperatorTokens)
