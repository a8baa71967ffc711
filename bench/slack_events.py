"""Slack's Events API under load: signed `message.im` events at a steady rate into one gateway.

Three processes on 127.0.0.1 besides this one: the fake Slack (`python -m bench.slack_events
--fake PORT`: `tests.slack.fake_slack.FakeSlack` with `people` people, and a small control
server on PORT that hands out the events its builders make and, at the end, what was posted),
`rolecall serve` (a fresh SQLite file; one role, `echo`, the built-in agent that answers each
person message with its text, with a `slack:` section whose settings hold the fake's signing
secret and bot token; `ROLECALL_SLACK_API_URL` at the fake), and the ceiling (`python -m
bench.slack_events --ceiling PORT`: a bare aiohttp handler that checks the same signature with
slack_sdk's `SignatureVerifier` and answers 200, no database).

The load is open: every request has a time it is due (event i of a pass at i / rate), and is
written at that time on the first free one of `CONNECTIONS` keep-alive connections, whatever the
answers to earlier ones; latency runs from the time it was due, so a slow answer delays what
waits behind it and is counted. People are taken round-robin (`people` = `rate` means each writes
once a second, the pace at which Slack lets a bot post to one DM); every event has its own
`event_id` and text. One in `RETRY_EVERY` is delivered again `RETRY_AFTER` later as Slack's retry
(the same body, `X-Slack-Retry-Num: 1`): the gateway must answer 200 and add nothing.

Passes: first contact (one event from each person: the gateway asks `users.info`, makes the
person, the conversation and its binding to the DM before the 200), then, once those are
answered in Slack, the steady pass (`rate` times `seconds` events). Then the wait for the replies
(`chat.postMessage` calls the fake recorded), and the gateway's committed-event stream is read
through the operator API (`GET /api/v1/events`) to count what was committed twice or not at all.
The ceiling gets the same two passes, with the same bodies, from the same client code.

Every wait is bounded (`ACK_TIMEOUT`, `PASS_BUDGET`, `REPLY_BUDGET`, `QUIET`): what did not
arrive is counted, not waited for.

    python -m bench.slack_events [--rate 500] [--seconds 20] [--people 500] [--pace 1]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import secrets
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from bench.harness import Latency, cpu_seconds, free_port, gateway_env, machine_busy_seconds, server
from tests.slack.fake_slack import App, Bot, FakeSlack, User, retry_headers, signed_request_headers

ROLE = "echo"
SIGNING = "SLACK_ECHO_SIGNING_SECRET"
TOKEN = "SLACK_ECHO_BOT_TOKEN"
PATH = f"/slack/{ROLE}/events"
CONNECTIONS = 32
"""Keep-alive connections the load is written on (Slack opens as many as it needs)."""
RETRY_EVERY = 50
"""One event in this many is delivered twice: 2%."""
RETRY_AFTER = 1.0
"""Seconds after the event was due that its retry is."""
SLACK_TIMEOUT = 3.0
"""Slack gives up on an answer after this long and delivers the event again."""
ACK_TIMEOUT = 10.0
"""Seconds this client waits for one answer before it counts an error."""
PASS_BUDGET = 30.0
"""Seconds past the last due time after which nothing more is sent."""
REPLY_BUDGET = 180.0
"""Seconds after the last event was sent that replies are waited for, at most."""
QUIET = 20.0
"""The wait for replies also ends when none has been posted for this long."""
SCRIPT_PAGE = 2_000


# --- the fake Slack and the ceiling, each in a process of its own ------------------------------


def person(n: int) -> User:
    return User(id=f"U0BENCH{n:05d}", name=f"person{n}", real_name=f"Person {n}")


def text_of(k: int) -> str:
    """The text of event k of the run (unique: the echo's reply carries it back)."""
    return f"Hello, this is message {k}."


async def _fake_app(people: int) -> web.Application:
    """The control server of the fake: `/bench/info`, `/bench/events?first=K&count=N` (the
    payloads of events K…K+N-1, made by the fake and kept in its DMs), `/bench/count` and
    `/bench/calls` (what the Web API was asked)."""
    users = [person(n) for n in range(people)]
    fake = await FakeSlack(users=users).start()

    async def info(_: web.Request) -> web.Response:
        return web.json_response({"api_url": fake.api_url})

    async def events(request: web.Request) -> web.Response:
        first, count = int(request.query["first"]), int(request.query["count"])
        made = [
            fake.user_message(users[k % people], text_of(k)) for k in range(first, first + count)
        ]
        return web.json_response({"events": made})

    async def count(_: web.Request) -> web.Response:
        return web.json_response({"posts": len(fake.calls("chat.postMessage", ok=True))})

    async def calls(_: web.Request) -> web.Response:
        posts = [
            [c.args.get("text"), c.at, c.args.get("channel")]
            for c in fake.calls("chat.postMessage", ok=True)
        ]
        methods = Counter(c.method for c in fake.recorded)
        refused = Counter(c.method for c in fake.recorded if not c.ok)
        return web.json_response({"posts": posts, "methods": methods, "refused": refused})

    async def close(_: web.Application) -> None:
        await fake.close()

    app = web.Application()
    app.router.add_get("/healthz", lambda _: _ok())
    app.router.add_get("/bench/info", info)
    app.router.add_get("/bench/events", events)
    app.router.add_get("/bench/count", count)
    app.router.add_get("/bench/calls", calls)
    app.on_cleanup.append(close)
    return app


async def _ok() -> web.Response:
    return web.Response(text="ok")


def _ceiling_app() -> web.Application:
    verifier = SignatureVerifier(App().signing_secret)

    async def events(request: web.Request) -> web.Response:
        body = await request.read()
        headers = request.headers
        if not verifier.is_valid(
            body, headers.get("X-Slack-Request-Timestamp"), headers.get("X-Slack-Signature")
        ):
            return web.Response(status=401)
        return web.Response()

    app = web.Application()
    app.router.add_get("/healthz", lambda _: _ok())
    app.router.add_post(PATH, events)
    return app


# --- the load: due times, raw keep-alive connections -------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    event: int
    """The event's index in its pass."""
    due: float
    """Seconds after the pass began."""
    retry: bool
    body: bytes


def schedule(bodies: Sequence[bytes], rate: float) -> list[Send]:
    """Event i due at i / rate; one in `RETRY_EVERY` again `RETRY_AFTER` later, as a retry."""
    sends = [Send(i, i / rate, False, body) for i, body in enumerate(bodies)]
    sends += [
        Send(i, i / rate + RETRY_AFTER, True, body)
        for i, body in enumerate(bodies)
        if i % RETRY_EVERY == 0
    ]
    return sorted(sends, key=lambda s: s.due)


def _request(send: Send, stamp: int) -> bytes:
    headers = signed_request_headers(send.body, App().signing_secret, stamp)
    if send.retry:
        headers |= retry_headers(1)
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (
        f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{head}"
        f"Content-Length: {len(send.body)}\r\n\r\n"
    ).encode() + send.body


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def exchange(self, request: bytes) -> tuple[int, bool]:
        """Write the request, read the answer: its status, and whether the server closes."""
        self.writer.write(request)
        head = (await self.reader.readuntil(b"\r\n\r\n")).lower()
        length = 0
        for line in head.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                length = int(line[15:])
        await self.reader.readexactly(length)
        return int(head[9:12]), b"connection: close" in head


@dataclass(slots=True)
class Outcome:
    """What became of each send of a pass (by its index in the schedule)."""

    began: float
    sent: dict[int, float] = field(default_factory=dict)
    answered: dict[int, float] = field(default_factory=dict)
    status: dict[int, str] = field(default_factory=dict)
    """"200", another status, or the exception that ended the wait."""


async def load(port: int, sends: Sequence[Send], *, connections: int = CONNECTIONS) -> Outcome:
    """Write each send when it is due on the first free connection; read every answer."""
    stamp = int(time.time())
    requests = [_request(s, stamp) for s in sends]
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
        open_one: _Connection | None = None
        while (i := await queue.get()) is not None:
            if time.monotonic() > stop_at:
                continue  # past the budget: counted as not sent
            outcome.sent[i] = time.monotonic()
            try:
                if open_one is None:
                    open_one = _Connection(*await asyncio.open_connection("127.0.0.1", port))
                async with asyncio.timeout(ACK_TIMEOUT):
                    status, closing = await open_one.exchange(requests[i])
                outcome.answered[i], outcome.status[i] = time.monotonic(), str(status)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
                outcome.status[i], closing = type(error).__name__, True
            if closing and open_one is not None:
                open_one.writer.close()
                open_one = None
        if open_one is not None:
            open_one.writer.close()

    await asyncio.gather(due(), *(connection() for _ in range(connections)))
    return outcome


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cpu:
    """CPU seconds over a stretch of time: the server's, the fake's, this process's (the load),
    and the rest of the machine's (other processes)."""

    server: float
    fake: float
    client: float
    others: float

    def cores(self, seconds: float) -> Cpu:
        """Cores used on average over `seconds`."""
        scale = 1 / seconds if seconds > 0 else 0.0
        return Cpu(self.server * scale, self.fake * scale, self.client * scale, self.others * scale)


class Meter:
    """Reads the CPU counters when made; `read()` is what was used since."""

    def __init__(self, server: int, fake: int) -> None:
        self._pids = server, fake
        self._start = self._now()

    def _now(self) -> tuple[float, float, float, float]:
        server, fake = self._pids
        return cpu_seconds(server), cpu_seconds(fake), time.process_time(), machine_busy_seconds()

    def read(self) -> Cpu:
        server, fake, client, busy = (b - a for a, b in zip(self._start, self._now(), strict=True))
        return Cpu(server, fake, client, max(busy - server - fake - client, 0.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Acks:
    """One pass against one server: how its events were acknowledged."""

    events: int
    retries: int
    acknowledged: int
    """Events whose first delivery was answered 200."""
    retries_acknowledged: int
    retries_sent: int
    errors: dict[str, int]
    """Sends answered otherwise, by status or by what ended the wait."""
    unsent: int
    latency: Latency
    """Due → 200, every send answered 200; its rate is events/s over the pass."""
    max_ms: float
    late: int
    """200s that came after `SLACK_TIMEOUT`: Slack would have delivered the event again."""
    lag: Latency
    """Due → written on a connection (waiting for this process's loop or a free connection)."""
    seconds: float
    """The first send due → the last answer."""
    cpu: Cpu
    """Over the pass: the first send due → the last answer."""
    sent_at: dict[int, float] = field(repr=False)
    """Event index → when its first delivery was written (monotonic)."""

    @classmethod
    def of(cls, sends: Sequence[Send], outcome: Outcome, cpu: Cpu) -> Acks:
        ok = [i for i, status in outcome.status.items() if status == "200"]
        waits = [outcome.answered[i] - outcome.began - sends[i].due for i in ok]
        lags = [outcome.sent[i] - outcome.began - sends[i].due for i in outcome.sent]
        last = max(outcome.answered.values(), default=outcome.began)
        errors = Counter(status for status in outcome.status.values() if status != "200")
        return cls(
            events=sum(not s.retry for s in sends),
            retries=sum(s.retry for s in sends),
            acknowledged=sum(not sends[i].retry for i in ok),
            retries_acknowledged=sum(sends[i].retry for i in ok),
            retries_sent=sum(sends[i].retry for i in outcome.sent),
            errors=dict(errors),
            unsent=len(sends) - len(outcome.sent),
            latency=Latency.of(waits or [float("nan")], last - outcome.began),
            max_ms=max(waits, default=float("nan")) * 1000,
            late=sum(w > SLACK_TIMEOUT for w in waits),
            lag=Latency.of(lags or [float("nan")], 1.0),
            seconds=last - outcome.began,
            cpu=cpu,
            sent_at={sends[i].event: t for i, t in outcome.sent.items() if not sends[i].retry},
        )

    @property
    def cpu_us_per_event(self) -> float:
        """The server's CPU over the pass per event acknowledged."""
        return self.cpu.server / max(self.acknowledged, 1) * 1e6

    @property
    def cores(self) -> Cpu:
        return self.cpu.cores(self.seconds)

    @property
    def rate(self) -> float:
        """Sends acknowledged (retries included) per second over the pass."""
        count = self.acknowledged + self.retries_acknowledged
        return count / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """What the gateway did with the events: replies posted to the fake, the timeline."""

    expected: int
    """Events (first deliveries) sent in both passes: each should be answered once."""
    posted: int
    missing: int
    duplicate_posts: int
    """Posts of a reply already posted (the same event answered twice in Slack)."""
    committed: int
    """Person messages of those events in the timeline."""
    duplicate_messages: int
    """Person messages committed more than once (a retry or a redelivery not deduplicated)."""
    duplicate_replies: int
    reply: Latency
    """Steady pass: the event written → its reply's chat.postMessage reaching the fake."""
    drain_seconds: float
    """The last steady event written → the last reply posted."""
    steady_posted: int
    """Events of the steady pass answered in Slack."""
    posted_while_sending: int
    """Replies posted between the steady pass's first event and its last."""
    sending_seconds: float
    """The steady pass's first event written → its last."""
    closest_seconds: float
    """The shortest time between two posts to one DM (pacing holds them `pace` apart)."""
    calls: dict[str, int]
    """Web API calls the fake answered, by method."""
    refused: dict[str, int]
    cpu: Cpu
    """From the steady pass's start until the last reply (or the wait for it ended)."""

    @property
    def cpu_us_per_reply(self) -> float:
        """The gateway's CPU from the steady pass's start to its last reply, per reply."""
        return self.cpu.server / max(self.steady_posted, 1) * 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """The ceiling's two passes and the gateway's, and what the gateway did with the events."""

    rate: float
    seconds: float
    people: int
    pace: float
    connections: int
    first: Acks
    steady: Acks
    ceiling_first: Acks
    ceiling: Acks
    delivery: Delivery

    @property
    def clean(self) -> bool:
        d = self.delivery
        twice = d.duplicate_posts or d.duplicate_messages or d.duplicate_replies
        return not (d.missing or twice) and d.committed == d.expected


# --- one run ------------------------------------------------------------------------------------


async def _script(http: aiohttp.ClientSession, base: str, first: int, count: int) -> list[bytes]:
    """The bodies of events first…first+count-1, made by the fake's builders."""
    bodies: list[bytes] = []
    for start in range(first, first + count, SCRIPT_PAGE):
        size = min(SCRIPT_PAGE, first + count - start)
        async with http.get(f"{base}/bench/events?first={start}&count={size}") as answer:
            bodies += [json.dumps(e).encode() for e in (await answer.json())["events"]]
    return bodies


async def _posts(http: aiohttp.ClientSession, base: str) -> int:
    """Replies posted so far."""
    async with http.get(f"{base}/bench/count") as answer:
        return int((await answer.json())["posts"])


async def _await_replies(http: aiohttp.ClientSession, base: str, count: int, until: float) -> None:
    """Until `count` replies are posted, `until` (monotonic) comes, or none came for `QUIET`."""
    seen, changed = -1, time.monotonic()
    while time.monotonic() < until:
        posts = await _posts(http, base)
        if posts >= count:
            await asyncio.sleep(1.0)  # a reply posted twice would be by now
            return
        if posts != seen:
            seen, changed = posts, time.monotonic()
        elif time.monotonic() - changed > QUIET:
            return
        await asyncio.sleep(0.2)


async def _timeline(http: aiohttp.ClientSession, port: int, token: str) -> list[dict[str, Any]]:
    """Every committed event, through the operator API's event stream."""
    events: list[dict[str, Any]] = []
    after = 0
    while True:
        async with http.get(
            f"http://127.0.0.1:{port}/api/v1/events?after={after}&limit=500",
            headers={"Authorization": f"Bearer {token}"},
        ) as answer:
            page = await answer.json()
        if not page["events"]:
            return events
        events += page["events"]
        after = page["next"]


def _passes(
    port: int,
    first: list[bytes],
    steady: list[bytes],
    rate: float,
    pids: tuple[int, int],
    connections: int,
) -> tuple[Acks, Acks]:
    """The first-contact pass and the steady pass against the server at `port` (no waiting)."""
    result = []
    for bodies in (first, steady):
        sends = schedule(bodies, rate)
        meter = Meter(*pids)
        outcome = asyncio.run(load(port, sends, connections=connections))
        result.append(Acks.of(sends, outcome, meter.read()))
    return result[0], result[1]


def _gateway_role(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{ROLE}.yaml").write_text(
        f"name: {ROLE}\n"
        "display_name: Echo\n"
        "runtime: {kind: builtin, agent: echo}\n"
        "max_concurrent_turns: 64\n"
        "idle_sleep_after: 300\n"
        f"slack: {{mode: http, signing_secret: {SIGNING}, bot_token: {TOKEN}}}\n"
    )
    return directory


async def _run_gateway(
    port: int,
    token: str,
    fake: str,
    first: list[bytes],
    steady: list[bytes],
    *,
    rate: float,
    pids: tuple[int, int],
    connections: int,
) -> tuple[Acks, Acks, Delivery]:
    async with aiohttp.ClientSession() as http:
        sends = schedule(first, rate)
        meter = Meter(*pids)
        outcome = await load(port, sends, connections=connections)
        first_acks = Acks.of(sends, outcome, meter.read())
        await _await_replies(http, fake, len(first), time.monotonic() + REPLY_BUDGET)
        sends = schedule(steady, rate)
        meter = Meter(*pids)
        outcome = await load(port, sends, connections=connections)
        steady_acks = Acks.of(sends, outcome, meter.read())
        last_sent = max(steady_acks.sent_at.values(), default=time.monotonic())
        total = len(first) + len(steady)
        await _await_replies(http, fake, total, last_sent + REPLY_BUDGET)
        cpu = meter.read()
        async with http.get(f"{fake}/bench/calls") as answer:
            calls = await answer.json()
        timeline = await _timeline(http, port, token)
    return (
        first_acks,
        steady_acks,
        _delivery(first_acks, steady_acks, len(first), calls, timeline, last_sent, cpu),
    )


def _delivery(
    first: Acks,
    steady: Acks,
    offset: int,
    calls: dict[str, Any],
    timeline: list[dict[str, Any]],
    last_sent: float,
    cpu: Cpu,
) -> Delivery:
    """Event k of the steady pass is event `offset` + k of the run (its text says so)."""
    posts: dict[str, list[float]] = {}
    by_channel: dict[str, list[float]] = {}
    for text, at, channel in calls["posts"]:
        posts.setdefault(text, []).append(at)
        by_channel.setdefault(channel, []).append(at)
    gaps = [b - a for times in by_channel.values() for a, b in itertools.pairwise(times)]
    sent = {text_of(k): t for k, t in first.sent_at.items()}
    steady_sent = {text_of(offset + k): t for k, t in steady.sent_at.items()}
    sent |= steady_sent
    said = Counter(
        e["text"]
        for e in timeline
        if e["kind"] == "message" and str(e["author"]).startswith("person:")
    )
    replied = Counter(
        e["text"] for e in timeline if e["kind"] == "message" and e["author"] == f"role:{ROLE}"
    )
    waits = [posts[t][0] - s for t, s in steady_sent.items() if t in posts]
    last_post = max((at[0] for t, at in posts.items() if t in steady_sent), default=last_sent)
    first_sent = min(steady_sent.values(), default=last_sent)
    return Delivery(
        expected=len(sent),
        posted=sum(t in posts for t in sent),
        missing=sum(t not in posts for t in sent),
        duplicate_posts=sum(len(at) - 1 for at in posts.values()),
        committed=sum(t in said for t in sent),
        duplicate_messages=sum(n - 1 for n in said.values()),
        duplicate_replies=sum(n - 1 for n in replied.values()),
        reply=Latency.of(waits or [float("nan")], max(last_post - last_sent, 1e-9)),
        drain_seconds=last_post - last_sent,
        steady_posted=sum(t in posts for t in steady_sent),
        posted_while_sending=sum(first_sent <= at[0] <= last_sent for at in posts.values()),
        sending_seconds=last_sent - first_sent,
        closest_seconds=min(gaps, default=float("nan")),
        calls=dict(calls["methods"]),
        refused=dict(calls["refused"]),
        cpu=cpu,
    )


def measure(
    rate: float = 500,
    seconds: float = 20,
    people: int = 500,
    *,
    pace: float = 1.0,
    connections: int = CONNECTIONS,
) -> Result:
    """The ceiling's passes, then the gateway's with the fake Slack behind it."""
    events = round(rate * seconds)
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        workdir = Path(tmp)
        fake_port = free_port()
        fake_args = ["-m", "bench.slack_events", "--fake", str(fake_port), "--people", str(people)]
        with server(fake_args, port=fake_port) as fake:
            base = f"http://127.0.0.1:{fake_port}"

            async def script() -> tuple[str, list[bytes], list[bytes]]:
                async with aiohttp.ClientSession() as http:
                    async with http.get(f"{base}/bench/info") as answer:
                        api_url = str((await answer.json())["api_url"])
                    first = await _script(http, base, 0, people)
                    return api_url, first, await _script(http, base, people, events)

            api_url, first, steady = asyncio.run(script())
            port = free_port()
            with server(["-m", "bench.slack_events", "--ceiling", str(port)], port=port) as bare:
                pids = bare.pid, fake.pid
                ceiling_first, ceiling = _passes(port, first, steady, rate, pids, connections)
            port, token = free_port(), secrets.token_urlsafe(24)
            env = gateway_env(
                workdir / "gateway", port, token, roles_dir=_gateway_role(workdir / "roles")
            )
            env |= {
                SIGNING: App().signing_secret,
                TOKEN: Bot().token,
                "ROLECALL_SLACK_API_URL": api_url,
                "ROLECALL_SLACK_PACE": str(pace),
            }
            with server(["-m", "gateway", "serve"], port=port, env=env) as gateway:
                first_acks, steady_acks, delivery = asyncio.run(
                    _run_gateway(
                        port,
                        token,
                        base,
                        first,
                        steady,
                        rate=rate,
                        pids=(gateway.pid, fake.pid),
                        connections=connections,
                    )
                )
    return Result(
        rate=rate,
        seconds=seconds,
        people=people,
        pace=pace,
        connections=connections,
        first=first_acks,
        steady=steady_acks,
        ceiling_first=ceiling_first,
        ceiling=ceiling,
        delivery=delivery,
    )


def _print(name: str, acks: Acks) -> None:
    latency = acks.latency
    print(
        f"{name:22} {acks.acknowledged:,}+{acks.retries_acknowledged:,} of "
        f"{acks.events:,}+{acks.retries:,} acknowledged ({acks.rate:,.0f}/s)  "
        f"p50 {latency.p50_ms:,.2f} ms  p99 {latency.p99_ms:,.2f} ms  max {acks.max_ms:,.1f} ms  "
        f"lag p99 {acks.lag.p99_ms:,.2f} ms  over 3 s {acks.late}  errors {acks.errors}  "
        f"not sent {acks.unsent}  server CPU {acks.cpu_us_per_event:,.0f} us/event  cores: "
        f"server {acks.cores.server:.2f}, fake {acks.cores.fake:.2f}, client "
        f"{acks.cores.client:.2f}, others {acks.cores.others:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500, help="events a second")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--people", type=int, default=500)
    parser.add_argument("--pace", type=float, default=1.0, help="ROLECALL_SLACK_PACE")
    parser.add_argument("--connections", type=int, default=CONNECTIONS)
    parser.add_argument("--fake", type=int, metavar="PORT", help="serve the fake Slack")
    parser.add_argument("--ceiling", type=int, metavar="PORT", help="serve the ceiling")
    args = parser.parse_args()
    if args.fake is not None:
        web.run_app(_fake_app(args.people), host="127.0.0.1", port=args.fake, print=None)
        return
    if args.ceiling is not None:
        web.run_app(_ceiling_app(), host="127.0.0.1", port=args.ceiling, print=None)
        return
    result = measure(
        args.rate, args.seconds, args.people, pace=args.pace, connections=args.connections
    )
    _print("ceiling, first pass", result.ceiling_first)
    _print("ceiling", result.ceiling)
    _print("gateway, first contact", result.first)
    _print("gateway, steady", result.steady)
    d = result.delivery
    print(
        f"replies: {d.posted:,} of {d.expected:,} posted, missing {d.missing}, posted twice "
        f"{d.duplicate_posts}; committed {d.committed:,}, twice {d.duplicate_messages} "
        f"(replies twice {d.duplicate_replies}); event → reply p50 {d.reply.p50_ms:,.0f} ms "
        f"p99 {d.reply.p99_ms:,.0f} ms; last reply {d.drain_seconds:.1f} s after the last "
        f"event; closest posts to one DM {d.closest_seconds:.2f} s apart; gateway CPU "
        f"{d.cpu_us_per_reply:,.0f} us/reply, fake CPU {d.cpu.fake:.1f} s; calls {d.calls}; "
        f"refused {d.refused}"
    )


if __name__ == "__main__":
    main()
