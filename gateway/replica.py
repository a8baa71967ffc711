"""This process as a replica: registered in the database, beating its heart, handing back its
leases when it stops (docs/scale.md).

Every `rolecall serve` is a replica with an id (`ROLECALL_REPLICA_ID`, or the host name and a
random suffix). At start it registers (refused while another live process has the same id) and
records, or checks, the facts every replica of the database must share: fingerprints of the
operator token and the widget key (`cluster_mismatch` stops a replica given other ones). While
it serves it beats every fifth of `ROLECALL_REPLICA_TIMEOUT`: one batch renews its row and every
lease it holds; then the run host lets go of runs whose lease it lost and nudges the runs whose
lease expired or was handed back (`RunHost.take_over`). Stopping cleanly (after the run host has
stopped its turns) it hands back every lease at once and marks itself stopped.

A heartbeat that fails (the database is out of reach) is logged and tried again at the next
beat; leases are not renewed meanwhile, so after the timeout other replicas may take this one's
runs over — and its writes as their owner are then refused (fencing), so nothing is doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web

from channels.edge.requests import DATABASE_KEY, HOST_KEY
from core.model.errors import Conflict
from core.model.leases import LeaseKind
from core.storage.replicas_store import SqlReplicas

log = logging.getLogger("rolecall.replica")

_MICROS = 1_000_000


@dataclass(slots=True)
class ThisReplica:
    id: str
    address: str | None
    timeout: float
    """Seconds without a heartbeat after which this replica counts as gone."""
    registered: bool = False
    last_beat: float = 0.0
    """Monotonic time of the last heartbeat that committed."""
    delivery_leases: int = 0
    """Leases other than runs' it held at the last heartbeat (deliveries, housekeeping)."""
    on_beat: list[Callable[[int], None]] = field(default_factory=list)
    """Called after each heartbeat with the runs it offered for take-over."""

    @property
    def every(self) -> float:
        return self.timeout / 5

    @property
    def ttl(self) -> int:
        """Microseconds a lease lasts unless renewed."""
        return int(self.timeout * _MICROS)


REPLICA_KEY = web.AppKey("replica", ThisReplica)


def new_replica_id() -> str:
    host = "".join(c if c.isalnum() or c in "._-" else "-" for c in socket.gethostname())
    return f"{host.strip('-._')[:48] or 'rolecall'}-{secrets.token_hex(3)}"


def own_address(host: str, port: int) -> str:
    """Where this replica itself listens (not the load balancer's public URL): its host name
    when it listens on every interface."""
    name = socket.gethostname() if host in ("", "0.0.0.0", "::") else host
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def fingerprint(kind: str, secret: str) -> str:
    """What `cluster_facts` keeps of a secret: enough to tell two apart, nothing to recover."""
    return hashlib.sha256(f"rolecall {kind}\0{secret}".encode()).hexdigest()[:32]


def replica_lifecycle(
    me: ThisReplica, facts: Mapping[str, str], what: Mapping[str, str]
) -> Callable[[web.Application], contextlib.AbstractAsyncContextManager[None]]:
    """The `cleanup_ctx` of this replica (after the database's, before the run host's)."""

    @contextlib.asynccontextmanager
    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        database = app[DATABASE_KEY]
        await _register(database.replicas, me)
        try:
            await database.replicas.agree(facts, what=what, replica_id=me.id, silent_for=me.ttl)
        except BaseException:  # refused: it never served, and must not count as live
            await database.replicas.stop(me.id)
            raise
        me.registered = True
        app[REPLICA_KEY] = me
        beating = asyncio.create_task(_beat_forever(app, me), name="rolecall-heartbeat")
        log.info("replica %s registered", me.id)
        try:
            yield
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
            me.registered = False
            try:
                handed = await database.replicas.stop(me.id)
                log.info("replica %s stopped; %d leases handed back", me.id, handed)
            except Exception as error:  # its leases expire instead
                log.warning("replica %s could not hand back its leases: %s", me.id, error)

    return lambda app: lifecycle(app)


async def _register(replicas: SqlReplicas, me: ThisReplica) -> None:
    """Register; while a process of the same id still beats (or its last beat is recent: it
    was just killed and restarted under a fixed name), wait for it to fall silent — up to twice
    the timeout, after which it is alive and this one is refused (`replica_live`)."""
    deadline = asyncio.get_running_loop().time() + 2 * me.timeout
    while True:
        try:
            await replicas.register(me.id, address=me.address, silent_for=me.ttl)
            return
        except Conflict as error:
            if error.code != "replica_live" or asyncio.get_running_loop().time() > deadline:
                raise
            log.info("replica %s: waiting for its previous process to fall silent", me.id)
            await asyncio.sleep(me.every)


async def _beat_forever(app: web.Application, me: ThisReplica) -> None:
    while True:
        await asyncio.sleep(me.every)
        try:
            await beat(app, me)
        except Exception as error:
            log.warning("replica %s: heartbeat failed: %s", me.id, error)


async def beat(app: web.Application, me: ThisReplica) -> None:
    """One heartbeat: renew, then let go of what was lost and take over what was left."""
    database = app[DATABASE_KEY]
    beaten = await database.replicas.beat(me.id, ttl=me.ttl)
    held = beaten.held
    me.last_beat = asyncio.get_running_loop().time()
    me.delivery_leases = sum(1 for kind, _ in held if kind != LeaseKind.RUN.value)
    host = app.get(HOST_KEY)
    offered = 0
    if host is not None:
        host.keep_held({subject for kind, subject in held if kind == LeaseKind.RUN.value})
        host.holders_alive(beaten.alive)
        offered = await host.take_over()
    for listener in me.on_beat:
        listener(offered)
