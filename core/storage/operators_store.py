"""Named operator tokens in SQL (`operator_tokens`): made, listed, revoked, looked up by digest.

Only a token's SHA-256 digest is stored (`core.model.operators`); the plain token is handed back
once, by `create`. A revoked token keeps its row, so its name is never given again and the list
still shows it. The gateway's configured token is registered at start as `default`
(`configure_default`): a first start inserts it, a start with another configured token replaces
its digest (undoing a revocation of the old one), a start with the same token changes nothing —
so a revoked `default` stays revoked until the settings name a new token. Replicas starting
together all insert "on conflict do nothing"; the first wins, the others find its row.

`by_token` is a single read by the digest's unique index (on the event loop where the backend
allows: `transact_brief`), made for every operator request that the gateway's short cache does not
answer (`gateway.operators`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, update

from core.model.errors import Conflict
from core.model.operators import (
    DEFAULT_OPERATOR,
    OperatorToken,
    check_new_name,
    check_revocable,
    check_token_name,
    new_operator_token,
    token_digest,
)
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch, BatchView, NoRuns, Raced, Reads
from core.storage.engine import dialect_of
from core.storage.rows import from_micros
from core.storage.transact import Transactor
from core.storage.writer import Writer

_o = schema.operator_tokens
_BY_NAME = select(_o).where(_o.c.name == bindparam("name"))
_BY_DIGEST = select(_o).where(_o.c.token_hash == bindparam("token_hash"))
_ALL = select(_o).order_by(_o.c.created_at, _o.c.name)


def token_from_row(row: Any) -> OperatorToken:
    return OperatorToken(
        name=row.name,
        created_at=from_micros(row.created_at),
        last_used_at=from_micros(row.last_used_at) if row.last_used_at is not None else None,
        revoked_at=from_micros(row.revoked_at) if row.revoked_at is not None else None,
    )


def _named(connection: Reads, name: str) -> OperatorToken | None:
    row = connection.execute(_BY_NAME, {"name": name}).first()
    return token_from_row(row) if row is not None else None


def _digest_owner(connection: Reads, token_hash: str) -> str | None:
    row = connection.execute(_BY_DIGEST, {"token_hash": token_hash}).first()
    return str(row.name) if row is not None else None


@dataclass(frozen=True, slots=True)
class CreateToken(NoRuns):
    name: str
    token_hash: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        check_token_name(self.name)
        check_new_name(self.name, _named(batch.connection, self.name))

    def write(self, batch: Batch, plan: None) -> Callable[[], OperatorToken]:
        inserted = batch.connection.execute(
            dialect_of(batch.connection)
            .insert(_o)
            .values(name=self.name, token_hash=self.token_hash, created_at=batch.now)
            .on_conflict_do_nothing(index_elements=["name"])
        ).rowcount
        if not inserted:  # another replica made one of this name since the check
            raise Raced(Conflict(f"a token named {self.name!r} exists", code="token_exists"))
        made = OperatorToken(name=self.name, created_at=from_micros(batch.now))
        return lambda: made


@dataclass(frozen=True, slots=True)
class RevokeToken(NoRuns):
    name: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> OperatorToken:
        return check_revocable(self.name, _named(batch.connection, self.name))

    def write(self, batch: Batch, plan: OperatorToken) -> Callable[[], OperatorToken]:
        batch.connection.execute(
            update(_o)
            .where(_o.c.name == self.name, _o.c.revoked_at.is_(None))
            .values(revoked_at=batch.now)
        )
        revoked = OperatorToken(
            name=plan.name,
            created_at=plan.created_at,
            last_used_at=plan.last_used_at,
            revoked_at=from_micros(batch.now),
        )
        return lambda: revoked


@dataclass(frozen=True, slots=True)
class ConfigureDefault(NoRuns):
    """Register the configured token's digest as `default` (see the module's docstring)."""

    token_hash: str
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        owner = _digest_owner(batch.connection, self.token_hash)
        if owner is not None and owner != DEFAULT_OPERATOR:
            raise Conflict(
                f"the gateway's configured token (ROLECALL_API_TOKEN or var/api-token) is the "
                f"named operator token {owner!r}; configure a token of its own (unset "
                "ROLECALL_API_TOKEN for `rolecall serve` to use var/api-token)",
                code="token_taken",
            )

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        connection = batch.connection
        connection.execute(
            dialect_of(connection)
            .insert(_o)
            .values(name=DEFAULT_OPERATOR, token_hash=self.token_hash, created_at=batch.now)
            .on_conflict_do_nothing(index_elements=["name"])
        )
        connection.execute(
            update(_o)
            .where(_o.c.name == DEFAULT_OPERATOR, _o.c.token_hash != self.token_hash)
            .values(
                token_hash=self.token_hash,
                created_at=batch.now,
                last_used_at=None,
                revoked_at=None,
            )
        )
        return lambda: None


@dataclass(frozen=True, slots=True)
class TouchToken(NoRuns):
    """Write when a token was last used (unless a later use was written meanwhile)."""

    name: str
    at: int
    thread_ids: Sequence[ThreadId] = ()

    def check(self, batch: BatchView) -> None:
        pass

    def write(self, batch: Batch, plan: None) -> Callable[[], None]:
        batch.connection.execute(
            update(_o)
            .where(
                _o.c.name == self.name,
                (_o.c.last_used_at.is_(None)) | (_o.c.last_used_at < self.at),
            )
            .values(last_used_at=self.at)
        )
        return lambda: None


class SqlOperatorTokens:
    def __init__(self, reads: Transactor, writer: Writer) -> None:
        self._reads = reads
        self._writer = writer

    async def create(self, name: str) -> tuple[OperatorToken, str]:
        """A new token named `name`: the listing of it, and the plain token (shown once)."""
        token = new_operator_token()
        made = await self._writer.run(CreateToken(name, token_digest(token)))
        return made, token

    async def revoke(self, name: str) -> OperatorToken:
        """Refuse the token from now on (404 `token_not_found`, 409 `token_revoked`)."""
        return await self._writer.run(RevokeToken(name))

    async def configure_default(self, token: str) -> None:
        """Register the gateway's configured token as `default`."""
        await self._writer.run(ConfigureDefault(token_digest(token)))

    async def touch(self, name: str, at: int) -> None:
        """Record a use at `at` (microseconds) as the token's last."""
        await self._writer.run(TouchToken(name, at))

    async def by_token(self, token: str) -> OperatorToken | None:
        """The token `token` is (revoked or not), or None when it is no operator token."""
        token_hash = token_digest(token)

        def read(connection: Reads) -> OperatorToken | None:
            row = connection.execute(_BY_DIGEST, {"token_hash": token_hash}).first()
            return token_from_row(row) if row is not None else None

        return await self._reads.transact_brief(read)

    async def get(self, name: str) -> OperatorToken | None:
        return await self._reads.transact_brief(lambda c: _named(c, name))

    async def list(self) -> list[OperatorToken]:
        """Every token, revoked ones included, oldest first."""
        return await self._reads.transact(
            lambda c: [token_from_row(row) for row in c.execute(_ALL)]
        )
