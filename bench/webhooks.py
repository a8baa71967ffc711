"""Webhooks both ways: signed deliveries into one gateway, committed events out to ten endpoints.

Inbound. `rolecall serve` on a fresh SQLite file with one source, `tracker` (`kind: standard`,
its secret in the setting `TRACKER_WEBHOOK_SECRET`), in a sources directory of its own. Delivery
i is the generic shape about item `ITEM-<i mod keys>` (its title, so the first one about an item
creates its task) with a comment unique to it, `delivery <i>`, signed with the `standardwebhooks`
package (`webhook-id: bench-<i>`). The load is open: delivery i is due at i / rate and written
when due on the first free one of `CONNECTIONS` keep-alive connections (raw HTTP/1.1, the
requests signed before the pass), whatever became of earlier ones; latency runs from when it was
due to the 2xx. One delivery in `REPEAT_EVERY` is sent again with the same `webhook-id` and body,
alternately at once (on another connection, racing the first) and `REPEAT_LATER` seconds later.
At the end every task and its history are read through the operator API (`GET /api/v1/tasks`,
`GET /api/v1/tasks/{id}`): each delivery answered 2xx must have made its comment once, each item
one task created once. The ceiling (`python -m bench.webhooks --ceiling PORT`) gets the same
requests: a bare aiohttp handler that verifies the same signature with `standardwebhooks` and
answers 204, no database.

Outbound. The receivers (`python -m bench.webhooks --receivers PORT`, a process of its own):
one aiohttp server, a path `/e<n>` per endpoint, each verifying every request with its
endpoint's secret (`standardwebhooks`), deduplicating by `webhook-id`, checking that `position`
only grows, and noting when each event first arrived; `/e0` flaps for `flap_seconds` after its
first request (every other request fails: 500, and every `RETRY_AFTER_EVERY`-th failure a 429
with `Retry-After: 1`). `rolecall serve` with `ROLECALL_ENDPOINTS_ALLOW_PRIVATE=true` and a
backoff of `BACKOFF_BASE`…`BACKOFF_CAP` s; ten endpoints registered for `message` events; then
`events` messages posted through the operator API as the role `quiet` (a role's messages start no
turns) by `POSTERS` posters over `THREADS` conversations. Measured: the time until every endpoint
has every event, deliveries per second, each endpoint's drain, duplicates, missing, out of order.
The ceiling: the same receivers (reset, none flapping) fed by this process with the bodies `/e1`
received, in the same order, signed before the pass with each endpoint's secret, one request at a
time per endpoint, all endpoints at once.

Every wait is bounded (`ACK_TIMEOUT`, `PASS_BUDGET`, `DRAIN_BUDGET`, `QUIET`): what did not
arrive is counted, not waited for.

    python -m bench.webhooks [--rate 1000] [--seconds 10] [--keys 1000] [--events 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import secrets
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from standardwebhooks import Webhook, WebhookVerificationError

from bench.harness import Latency, cpu_seconds, free_port, gateway_env, machine_busy_seconds, server

SOURCE = "tracker"
SECRET_SETTING = "TRACKER_WEBHOOK_SECRET"
SECRET = "whsec_" + base64.b64encode(b"bench-webhooks-signing-key-0123").decode()
HOOK = f"/hooks/{SOURCE}"
CONNECTIONS = 32
REPEAT_EVERY = 50
"""One delivery in this many is sent twice: 2%."""
REPEAT_LATER = 1.0
ACK_TIMEOUT = 10.0
PASS_BUDGET = 30.0
"""Seconds past the last due time after which nothing more is sent."""
ROLE = "quiet"
THREADS = 100
POSTERS = 32
BACKOFF_BASE = 0.05
BACKOFF_CAP = 0.5
RETRY_AFTER_EVERY = 20
FLAP_SECONDS = 5.0
DRAIN_BUDGET = 300.0
"""Seconds after the last post that deliveries are waited for, at most."""
QUIET = 30.0
"""The wait for deliveries also ends when no endpoint got anything new for this long."""


async def _healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


# --- inbound: the requests, the open load ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    delivery: int
    due: float
    """Seconds after the pass began."""
    repeat: bool
    request: bytes


def payload(i: int, keys: int) -> bytes:
    key = i % keys
    comment = {"author": "bench", "text": f"delivery {i}"}
    return json.dumps({"key": f"ITEM-{key}", "title": f"Item {key}", "comment": comment}).encode()


def schedule(rate: float, seconds: float, keys: int) -> list[Send]:
    """Delivery i due at i / rate, signed now; one in `REPEAT_EVERY` again (same webhook-id,
    same body), alternately at once and `REPEAT_LATER` s later."""
    signer, now = Webhook(SECRET), datetime.now(UTC)
    sends = []
    for i in range(round(rate * seconds)):
        body, delivery = payload(i, keys), f"bench-{i}"
        request = (
            f"POST {HOOK} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"webhook-id: {delivery}\r\nwebhook-timestamp: {int(now.timestamp())}\r\n"
            f"webhook-signature: {signer.sign(delivery, now, body.decode())}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        sends.append(Send(i, i / rate, False, request))
        if i % REPEAT_EVERY == 0:
            later = REPEAT_LATER if i // REPEAT_EVERY % 2 else 0.0
            sends.append(Send(i, i / rate + later, True, request))
    return sorted(sends, key=lambda s: s.due)


@dataclass(slots=True)
class Outcome:
    """What became of each send of a pass, by its index in the schedule."""

    began: float
    sent: dict[int, float] = field(default_factory=dict)
    answered: dict[int, float] = field(default_factory=dict)
    status: dict[int, str] = field(default_factory=dict)
    """The HTTP status, or the exception that ended the wait."""
    duplicate: set[int] = field(default_factory=set)
    """Sends answered `"duplicate": true`."""


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes, bool]:
    writer.write(request)
    head = (await reader.readuntil(b"\r\n\r\n")).lower()
    length = 0
    for line in head.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            length = int(line[15:])
    body = await reader.readexactly(length)
    return int(head[9:12]), body, b"connection: close" in head


async def load(port: int, sends: Sequence[Send], connections: int = CONNECTIONS) -> Outcome:
    """Write each send when it is due on the first free connection; read every answer."""
    queue: asyncio.Queue[int | None] = asyncio.Queue()
    outcome = Outcome(began=time.monotonic() + 0.2)
    stop_at = outcome.began + (sends[-1].due if sends else 0) + PASS_BUDGET

    async def due() -> None:
        for i, send in enumerate(sends):
            wait = outcome.began + send.due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            queue.put_nowait(i)
        for _ in range(connections):
            queue.put_nowait(None)

    async def connection() -> None:
        stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        while (i := await queue.get()) is not None:
            if time.monotonic() > stop_at:
                continue  # past the budget: counted as not sent
            outcome.sent[i] = time.monotonic()
            try:
                if stream is None:
                    stream = await asyncio.open_connection("127.0.0.1", port)
                async with asyncio.timeout(ACK_TIMEOUT):
                    status, body, closing = await _exchange(*stream, sends[i].request)
                outcome.answered[i], outcome.status[i] = time.monotonic(), str(status)
                if b'"duplicate": true' in body:
                    outcome.duplicate.add(i)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
                outcome.status[i], closing = type(error).__name__, True
            if closing and stream is not None:
                stream[1].close()
                stream = None
        if stream is not None:
            stream[1].close()

    await asyncio.gather(due(), *(connection() for _ in range(connections)))
    return outcome


# --- inbound: results ---------------------------------------------------------------------------


def _ok(status: str) -> bool:
    return status.isdigit() and 200 <= int(status) < 300


@dataclass(frozen=True, slots=True, kw_only=True)
class Acks:
    """One pass against one server: how its deliveries were answered."""

    deliveries: int
    repeats: int
    accepted: int
    """Deliveries whose first send was answered 2xx."""
    repeats_accepted: int
    answered_duplicate: int
    """Sends answered `"duplicate": true` (the gateway; should be one per repeat)."""
    errors: dict[str, int]
    unsent: int
    latency: Latency
    """Due → 2xx, every send answered 2xx; its rate is sends/s over the pass."""
    max_ms: float
    lag: Latency
    """Due → written on a connection (this process's loop, or waiting for a free connection)."""
    seconds: float
    server_cpu: float
    client_cpu: float
    others_cpu: float
    """CPU of the rest of the machine over the pass (other processes)."""
    accepted_deliveries: frozenset[int] = field(repr=False)
    """Deliveries of which some send was answered 2xx."""

    @classmethod
    def of(cls, sends: Sequence[Send], outcome: Outcome, cpu: tuple[float, float, float]) -> Acks:
        ok = [i for i, status in outcome.status.items() if _ok(status)]
        waits = [outcome.answered[i] - outcome.began - sends[i].due for i in ok]
        lags = [outcome.sent[i] - outcome.began - sends[i].due for i in outcome.sent]
        last = max(outcome.answered.values(), default=outcome.began)
        return cls(
            deliveries=sum(not s.repeat for s in sends),
            repeats=sum(s.repeat for s in sends),
            accepted=sum(not sends[i].repeat for i in ok),
            repeats_accepted=sum(sends[i].repeat for i in ok),
            answered_duplicate=len(outcome.duplicate),
            errors=dict(Counter(s for s in outcome.status.values() if not _ok(s))),
            unsent=len(sends) - len(outcome.sent),
            latency=Latency.of(waits or [float("nan")], max(last - outcome.began, 1e-9)),
            max_ms=max(waits, default=float("nan")) * 1000,
            lag=Latency.of(lags or [float("nan")], 1.0),
            seconds=last - outcome.began,
            server_cpu=cpu[0],
            client_cpu=cpu[1],
            others_cpu=max(cpu[2] - cpu[0] - cpu[1], 0.0),
            accepted_deliveries=frozenset(sends[i].delivery for i in ok),
        )

    @property
    def cpu_us_per_send(self) -> float:
        return self.server_cpu / max(self.accepted + self.repeats_accepted, 1) * 1e6

    @property
    def rate(self) -> float:
        """Sends answered 2xx (repeats included) per second over the pass."""
        count = self.accepted + self.repeats_accepted
        return count / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Processed:
    """What the gateway's tasks say was done, against what was sent and answered."""

    tasks: int
    items: int
    """Items the accepted deliveries were about."""
    created_twice: int
    """Tasks beyond one per item, plus `created` events beyond one per task."""
    comments: int
    """Accepted deliveries whose comment is in their task's history."""
    duplicates: int
    """Comments recorded more than once: deliveries processed twice."""
    missing: int
    """Deliveries answered 2xx whose comment is not there."""
    unanswered: int
    """Comments of deliveries never answered 2xx (committed, then the answer was lost)."""

    @property
    def clean(self) -> bool:
        return not (self.created_twice or self.duplicates or self.missing)


async def _tasks(http: aiohttp.ClientSession, base: str, token: str) -> list[dict[str, Any]]:
    """Every task with its history, through the operator API."""
    auth = {"Authorization": f"Bearer {token}"}
    tasks: list[dict[str, Any]] = []
    after = ""
    while True:
        query = f"?limit=500&after={after}" if after else "?limit=500"
        async with http.get(f"{base}/api/v1/tasks{query}", headers=auth) as answer:
            page = await answer.json()
        tasks += page["tasks"]
        if not page["next"]:
            break
        after = page["next"]
    gate = asyncio.Semaphore(16)

    async def history(task: dict[str, Any]) -> dict[str, Any]:
        async with gate, http.get(f"{base}/api/v1/tasks/{task['id']}", headers=auth) as answer:
            found: dict[str, Any] = await answer.json()
            return found

    return list(await asyncio.gather(*(history(t) for t in tasks)))


def processed(tasks: list[dict[str, Any]], acks: Acks, keys: int) -> Processed:
    events = [e for t in tasks for e in t["history"]]
    comments = Counter(int(e["text"].rsplit(" ", 1)[1]) for e in events if e["kind"] == "commented")
    created = sum(e["kind"] == "created" for e in events)
    items = {i % keys for i in acks.accepted_deliveries}
    return Processed(
        tasks=len(tasks),
        items=len(items),
        created_twice=max(len(tasks) - len(items), 0) + max(created - len(tasks), 0),
        comments=sum(i in comments for i in acks.accepted_deliveries),
        duplicates=sum(n - 1 for n in comments.values()),
        missing=sum(i not in comments for i in acks.accepted_deliveries),
        unanswered=sum(i not in acks.accepted_deliveries for i in comments),
    )


def ceiling_app() -> web.Application:
    """The inbound ceiling: the same signature checked with `standardwebhooks`, 204."""
    webhook = Webhook(SECRET)

    async def receive(request: web.Request) -> web.Response:
        try:
            webhook.verify(await request.read(), dict(request.headers))
        except WebhookVerificationError:
            return web.Response(status=401)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_get("/healthz", _healthz)
    app.router.add_post(HOOK, receive)
    return app


@dataclass(frozen=True, slots=True, kw_only=True)
class Inbound:
    rate: float
    seconds: float
    keys: int
    connections: int
    ceiling: Acks
    gateway: Acks
    processed: Processed


def _source(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{SOURCE}.yaml").write_text(
        f"name: {SOURCE}\nkind: standard\nsecret: {SECRET_SETTING}\n"
    )
    return directory


def _pass(port: int, pid: int, sends: Sequence[Send], connections: int) -> Acks:
    before = cpu_seconds(pid), time.process_time(), machine_busy_seconds()
    outcome = asyncio.run(load(port, sends, connections))
    after = cpu_seconds(pid), time.process_time(), machine_busy_seconds()
    used = after[0] - before[0], after[1] - before[1], after[2] - before[2]
    return Acks.of(sends, outcome, used)


def measure_inbound(
    rate: float = 1_000, seconds: float = 10, keys: int = 1_000, connections: int = CONNECTIONS
) -> Inbound:
    """The ceiling's pass, then the gateway's, then the gateway's tasks read back."""
    port = free_port()
    with server(["-m", "bench.webhooks", "--ceiling", str(port)], port=port) as bare:
        ceiling = _pass(port, bare.pid, schedule(rate, seconds, keys), connections)
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        workdir = Path(tmp)
        port, token = free_port(), secrets.token_urlsafe(24)
        env = gateway_env(workdir, port, token) | {
            "ROLECALL_SOURCES_DIR": str(_source(workdir / "sources")),
            SECRET_SETTING: SECRET,
        }
        with server(["-m", "gateway", "serve"], port=port, env=env) as gateway:
            acks = _pass(port, gateway.pid, schedule(rate, seconds, keys), connections)

            async def read() -> list[dict[str, Any]]:
                async with aiohttp.ClientSession() as http:
                    return await _tasks(http, f"http://127.0.0.1:{port}", token)

            tasks = asyncio.run(read())
    return Inbound(
        rate=rate,
        seconds=seconds,
        keys=keys,
        connections=connections,
        ceiling=ceiling,
        gateway=acks,
        processed=processed(tasks, acks, keys),
    )


# --- outbound: the receivers, in a process of their own -----------------------------------------


@dataclass(slots=True)
class Inbox:
    """One endpoint's receiver: what it got, first arrivals timed."""

    webhook: Webhook
    flapping: float
    """Seconds this receiver flaps after its first request (0: never)."""
    requests: int = 0
    failed: int = 0
    """Requests answered 500 or 429 on purpose."""
    retry_after: int = 0
    bad_signatures: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    last_position: int = 0
    started: float = 0.0
    first: dict[str, float] = field(default_factory=dict)
    """webhook-id → when it first arrived and was accepted (monotonic: one clock per machine)."""
    bodies: list[str] = field(default_factory=list)

    def failure(self, now: float) -> web.Response | None:
        """While flapping, every other request fails: 500, or now and then a 429."""
        if not self.flapping or now - self.started > self.flapping or self.requests % 2:
            return None
        self.failed += 1
        if self.failed % RETRY_AFTER_EVERY == 1:
            self.retry_after += 1
            return web.Response(status=429, headers={"Retry-After": "1"})
        return web.Response(status=500)

    def accept(self, webhook_id: str, body: str, position: int, now: float) -> None:
        if webhook_id in self.first:
            self.duplicates += 1
            return
        self.first[webhook_id] = now
        self.bodies.append(body)
        self.out_of_order += position < self.last_position
        self.last_position = max(self.last_position, position)

    def report(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "failed": self.failed,
            "retry_after": self.retry_after,
            "bad_signatures": self.bad_signatures,
            "duplicates": self.duplicates,
            "out_of_order": self.out_of_order,
            "first": self.first,
        }


def receivers_app() -> web.Application:
    """`POST /bench/setup` `{"secrets": {name: secret}, "flap": {name: seconds}}` (a fresh
    start), `POST /<name>` the endpoints, `GET /bench/progress`, `/bench/report`, and
    `/bench/bodies?name=N` (what N accepted, in order)."""
    inboxes: dict[str, Inbox] = {}

    async def setup(request: web.Request) -> web.Response:
        asked = await request.json()
        inboxes.clear()
        for name, secret in asked["secrets"].items():
            inboxes[name] = Inbox(Webhook(secret), float(asked.get("flap", {}).get(name, 0)))
        return web.Response(status=204)

    async def hook(request: web.Request) -> web.Response:
        inbox, now = inboxes[request.match_info["name"]], time.monotonic()
        body = await request.text()
        inbox.started = inbox.started or now
        inbox.requests += 1
        if (failing := inbox.failure(now)) is not None:
            return failing
        try:
            event = inbox.webhook.verify(body, dict(request.headers))
        except WebhookVerificationError:
            inbox.bad_signatures += 1
            return web.Response(status=401)
        inbox.accept(request.headers["webhook-id"], body, int(event["data"]["position"]), now)
        return web.Response(status=204)

    async def progress(_: web.Request) -> web.Response:
        return web.json_response({n: len(i.first) for n, i in inboxes.items()})

    async def report(_: web.Request) -> web.Response:
        return web.json_response({n: i.report() for n, i in inboxes.items()})

    async def bodies(request: web.Request) -> web.Response:
        return web.json_response(inboxes[request.query["name"]].bodies)

    app = web.Application(client_max_size=2**20)
    app.router.add_get("/healthz", _healthz)
    app.router.add_post("/bench/setup", setup)
    app.router.add_get("/bench/progress", progress)
    app.router.add_get("/bench/report", report)
    app.router.add_get("/bench/bodies", bodies)
    app.router.add_post("/{name}", hook)
    return app


# --- outbound: results --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Drain:
    """One endpoint: what its receiver got, against what was committed."""

    name: str
    flapping: bool
    received: int
    """Distinct events accepted."""
    requests: int
    failed: int
    retry_after: int
    duplicates: int
    missing: int
    out_of_order: int
    bad_signatures: int
    seconds: float
    """The first post sent (the ceiling: the first request) → its last new event."""
    latency: Latency | None
    """The post's answer (its commit) → the event's first arrival (the gateway's pass)."""


def _drains(
    report: dict[str, Any],
    committed: dict[str, float],
    began: float,
    flapping: set[str],
    *,
    timed: bool = True,
) -> list[Drain]:
    drains = []
    for name, got in report.items():
        first: dict[str, float] = got["first"]
        waits = [at - committed[i] for i, at in first.items() if i in committed]
        seconds = max(first.values(), default=began) - began
        drains.append(
            Drain(
                name=name,
                flapping=name in flapping,
                received=len(first),
                requests=got["requests"],
                failed=got["failed"],
                retry_after=got["retry_after"],
                duplicates=got["duplicates"],
                missing=sum(i not in first for i in committed),
                out_of_order=got["out_of_order"],
                bad_signatures=got["bad_signatures"],
                seconds=seconds,
                latency=Latency.of(waits, max(seconds, 1e-9)) if waits and timed else None,
            )
        )
    return drains


@dataclass(frozen=True, slots=True)
class Cpu:
    """CPU seconds: the gateway's, the receivers', this process's, and (once a difference) the
    rest of the machine's; before that, the machine's busy time."""

    gateway: float
    receivers: float
    client: float
    others: float

    def tuple(self) -> tuple[float, float, float, float]:
        return self.gateway, self.receivers, self.client, self.others


@dataclass(frozen=True, slots=True, kw_only=True)
class Outbound:
    events: int
    endpoints: int
    flap_seconds: float
    post_seconds: float
    """The first post sent → the last one answered (committed)."""
    seconds: float
    """The first post sent → the last endpoint's last new event."""
    drains: list[Drain]
    statuses: dict[str, str]
    """The gateway's view of each endpoint at the end (`status`, failures)."""
    cpu: Cpu
    ceiling_seconds: float
    ceiling: list[Drain]
    ceiling_cpu: Cpu

    @property
    def delivered(self) -> int:
        return sum(d.received for d in self.drains)

    @property
    def rate(self) -> float:
        return self.delivered / self.seconds if self.seconds > 0 else 0.0

    @property
    def ceiling_rate(self) -> float:
        total = sum(d.received for d in self.ceiling)
        return total / self.ceiling_seconds if self.ceiling_seconds > 0 else 0.0

    @property
    def clean(self) -> bool:
        return not any(d.missing or d.duplicates or d.out_of_order for d in self.drains)


def _cpu(pids: tuple[int, int], since: Cpu | None = None) -> Cpu:
    """CPU seconds so far (or since `since`) of the gateway (pid 0: none), the receivers, this
    process and the rest of the machine."""
    gateway = cpu_seconds(pids[0]) if pids[0] else 0.0
    now = Cpu(gateway, cpu_seconds(pids[1]), time.process_time(), machine_busy_seconds())
    if since is None:
        return now
    used = [b - a for a, b in zip(since.tuple(), now.tuple(), strict=True)]
    return Cpu(used[0], used[1], used[2], max(used[3] - used[0] - used[1] - used[2], 0.0))


async def _json(
    http: aiohttp.ClientSession, method: str, url: str, token: str = "", body: Any = None
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with http.request(method, url, json=body, headers=headers) as answer:
        if answer.status >= 300:
            raise RuntimeError(f"{method} {url} answered {answer.status}: {await answer.text()}")
        return await answer.json() if answer.status != 204 else None


async def _post_all(
    http: aiohttp.ClientSession, base: str, token: str, threads: list[str], events: int
) -> dict[str, float]:
    """`events` messages as the role, `POSTERS` at a time: message id → when it was committed."""
    committed: dict[str, float] = {}
    numbers = iter(range(events))

    async def poster() -> None:
        for n in numbers:
            path = f"{base}/api/v1/threads/{threads[n % len(threads)]}/messages"
            made = await _json(
                http, "POST", path, token, {"author": f"role:{ROLE}", "text": f"m{n}"}
            )
            committed[made["id"]] = time.monotonic()

    await asyncio.gather(*(poster() for _ in range(POSTERS)))
    return committed


async def _await_all(http: aiohttp.ClientSession, receivers: str, count: int) -> None:
    """Until every endpoint has `count` events, `DRAIN_BUDGET` passed, or `QUIET` went by
    with nothing new."""
    seen, changed, until = -1, time.monotonic(), time.monotonic() + DRAIN_BUDGET
    while time.monotonic() < until:
        progress = await _json(http, "GET", f"{receivers}/bench/progress")
        if min(progress.values()) >= count:
            await asyncio.sleep(1.0)  # an event sent twice would be here by now
            return
        if sum(progress.values()) != seen:
            seen, changed = sum(progress.values()), time.monotonic()
        elif time.monotonic() - changed > QUIET:
            return
        await asyncio.sleep(0.1)


async def _gateway_pass(
    port: int,
    token: str,
    receivers: str,
    pids: tuple[int, int],
    events: int,
    endpoints: int,
    flap: float,
) -> tuple[float, float, list[Drain], dict[str, str], Cpu, dict[str, str]]:
    base = f"http://127.0.0.1:{port}"
    connector = aiohttp.TCPConnector(limit=POSTERS)
    async with aiohttp.ClientSession(connector=connector) as http:
        threads = [
            (
                await _json(
                    http,
                    "POST",
                    f"{base}/api/v1/threads",
                    token,
                    {"participants": [f"person:p{n}", f"role:{ROLE}"]},
                )
            )["id"]
            for n in range(THREADS)
        ]
        registered = {}
        for n in range(endpoints):
            made = await _json(
                http,
                "POST",
                f"{base}/api/v1/endpoints",
                token,
                {"url": f"{receivers}/e{n}", "kinds": ["message"]},
            )
            registered[f"e{n}"] = made
        secrets_ = {name: made["secret"] for name, made in registered.items()}
        await _json(
            http,
            "POST",
            f"{receivers}/bench/setup",
            body={"secrets": secrets_, "flap": {"e0": flap}},
        )
        cpu = _cpu(pids)
        began = time.monotonic()
        committed = await _post_all(http, base, token, threads, events)
        posted = max(committed.values(), default=began) - began
        await _await_all(http, receivers, events)
        used = _cpu(pids, since=cpu)
        report = await _json(http, "GET", f"{receivers}/bench/report")
        statuses = {}
        for name, made in registered.items():
            now = await _json(http, "GET", f"{base}/api/v1/endpoints/{made['id']}", token)
            statuses[name] = f"{now['status']}, failures {now['failures']}"
    drains = _drains(report, committed, began, {"e0"} if flap else set())
    seconds = max(d.seconds for d in drains)
    return posted, seconds, drains, statuses, used, secrets_


async def _ceiling_pass(
    receivers: str, pid: int, secrets_: dict[str, str]
) -> tuple[float, list[Drain], Cpu]:
    """The bodies `/e1` accepted, in order, signed now for each endpoint, sent one at a time per
    endpoint, all endpoints at once."""
    async with aiohttp.ClientSession() as http:
        bodies: list[str] = await _json(http, "GET", f"{receivers}/bench/bodies?name=e1")
        await _json(http, "POST", f"{receivers}/bench/setup", body={"secrets": secrets_})
    now = datetime.now(UTC)
    stamp = str(int(now.timestamp()))
    ids = [json.loads(b)["data"]["id"] for b in bodies]
    signed = {
        name: [
            {
                "content-type": "application/json",
                "webhook-id": i,
                "webhook-timestamp": stamp,
                "webhook-signature": Webhook(secret).sign(i, now, b),
            }
            for i, b in zip(ids, bodies, strict=True)
        ]
        for name, secret in secrets_.items()
    }
    encoded = [b.encode() for b in bodies]

    async def send(name: str) -> None:
        async with aiohttp.ClientSession() as http:
            for headers, body in zip(signed[name], encoded, strict=True):
                async with http.post(f"{receivers}/{name}", data=body, headers=headers) as answer:
                    await answer.read()

    cpu = _cpu((0, pid))
    began = time.monotonic()
    await asyncio.gather(*(send(name) for name in secrets_))
    seconds = time.monotonic() - began
    used = _cpu((0, pid), since=cpu)
    async with aiohttp.ClientSession() as http:
        report = await _json(http, "GET", f"{receivers}/bench/report")
    return seconds, _drains(report, dict.fromkeys(ids, began), began, set(), timed=False), used


def measure_outbound(
    events: int = 10_000, endpoints: int = 10, flap_seconds: float = 5.0
) -> Outbound:
    """The gateway's pass with `/e0` flapping, then the bare sender's on the same receivers."""
    receivers_port = free_port()
    receivers = f"http://127.0.0.1:{receivers_port}"
    args = ["-m", "bench.webhooks", "--receivers", str(receivers_port)]
    with (
        tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp,
        server(args, port=receivers_port) as inbox,
    ):
        workdir = Path(tmp)
        roles = workdir / "roles"
        roles.mkdir()
        (roles / f"{ROLE}.yaml").write_text(
            f"name: {ROLE}\ndisplay_name: Quiet\nruntime: {{kind: builtin, agent: echo}}\n"
        )
        port, token = free_port(), secrets.token_urlsafe(24)
        env = gateway_env(workdir, port, token, roles_dir=roles) | {
            "ROLECALL_ENDPOINTS_ALLOW_PRIVATE": "true",
            "ROLECALL_ENDPOINTS_BACKOFF_BASE": str(BACKOFF_BASE),
            "ROLECALL_ENDPOINTS_BACKOFF_CAP": str(BACKOFF_CAP),
        }
        with server(["-m", "gateway", "serve"], port=port, env=env) as gateway:
            posted, seconds, drains, statuses, used, secrets_ = asyncio.run(
                _gateway_pass(
                    port,
                    token,
                    receivers,
                    (gateway.pid, inbox.pid),
                    events,
                    endpoints,
                    flap_seconds,
                )
            )
        ceiling_seconds, ceiling, ceiling_cpu = asyncio.run(
            _ceiling_pass(receivers, inbox.pid, secrets_)
        )
    return Outbound(
        events=events,
        endpoints=endpoints,
        flap_seconds=flap_seconds,
        post_seconds=posted,
        seconds=seconds,
        drains=drains,
        statuses=statuses,
        cpu=used,
        ceiling_seconds=ceiling_seconds,
        ceiling=ceiling,
        ceiling_cpu=ceiling_cpu,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    inbound: Inbound
    outbound: Outbound


def measure(
    rate: float = 1_000,
    seconds: float = 10,
    keys: int = 1_000,
    events: int = 10_000,
    endpoints: int = 10,
    *,
    flap_seconds: float = 5.0,
) -> Result:
    return Result(
        inbound=measure_inbound(rate, seconds, keys),
        outbound=measure_outbound(events, endpoints, flap_seconds),
    )


def _print_acks(name: str, acks: Acks) -> None:
    print(
        f"{name:8} {acks.accepted:,}+{acks.repeats_accepted:,} of {acks.deliveries:,}+"
        f"{acks.repeats:,} answered 2xx ({acks.rate:,.0f}/s)  p50 {acks.latency.p50_ms:,.2f} ms  "
        f"p99 {acks.latency.p99_ms:,.2f} ms  max {acks.max_ms:,.1f} ms  lag p99 "
        f"{acks.lag.p99_ms:,.2f} ms  errors {acks.errors}  not sent {acks.unsent}  duplicate "
        f"answers {acks.answered_duplicate}  server CPU {acks.cpu_us_per_send:,.0f} us/send"
    )


def _print_drain(drain: Drain) -> None:
    latency = drain.latency
    wait = (
        f"  commit→arrival p50 {latency.p50_ms:,.0f} ms p99 {latency.p99_ms:,.0f} ms"
        if latency
        else ""
    )
    print(
        f"  {drain.name}{' (flapping)' if drain.flapping else ''}: {drain.received:,} in "
        f"{drain.seconds:,.2f} s, requests {drain.requests:,}, failed on purpose {drain.failed:,} "
        f"({drain.retry_after} 429s), duplicates {drain.duplicates}, missing {drain.missing}, "
        f"out of order {drain.out_of_order}, bad signatures {drain.bad_signatures}{wait}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1_000, help="inbound deliveries a second")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=10_000, help="outbound events")
    parser.add_argument("--endpoints", type=int, default=10)
    parser.add_argument("--flap-seconds", type=float, default=5.0)
    parser.add_argument("--ceiling", type=int, metavar="PORT", help="serve the inbound ceiling")
    parser.add_argument("--receivers", type=int, metavar="PORT", help="serve the receivers")
    args = parser.parse_args()
    if args.ceiling is not None:
        web.run_app(ceiling_app(), host="127.0.0.1", port=args.ceiling, print=None)
        return
    if args.receivers is not None:
        web.run_app(receivers_app(), host="127.0.0.1", port=args.receivers, print=None)
        return
    inbound = measure_inbound(args.rate, args.seconds, args.keys)
    _print_acks("ceiling", inbound.ceiling)
    _print_acks("gateway", inbound.gateway)
    print(inbound.processed, flush=True)
    out = measure_outbound(args.events, args.endpoints, args.flap_seconds)
    print(
        f"outbound: {out.events:,} posted in {out.post_seconds:.2f} s; every endpoint had every "
        f"event after {out.seconds:.2f} s ({out.rate:,.0f} deliveries/s); gateway CPU "
        f"{out.cpu.gateway:.1f} s, receivers {out.cpu.receivers:.1f} s, client "
        f"{out.cpu.client:.1f} s, others {out.cpu.others:.1f} s; {out.statuses}"
    )
    for drain in out.drains:
        _print_drain(drain)
    print(f"ceiling: {out.ceiling_seconds:.2f} s ({out.ceiling_rate:,.0f} deliveries/s)")
    for drain in out.ceiling:
        _print_drain(drain)


if __name__ == "__main__":
    main()
