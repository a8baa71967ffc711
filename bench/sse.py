"""Widget streams: 2,000 Server-Sent Events streams on one conversation, each message fanned out.

`rolecall serve` on a fresh SQLite file with one role, `quiet`, that is never prompted: the
messages are posted through the operator API *as the role* (only people's messages start turns),
so the fan-out to the streams is all that happens. One anonymous widget session; `streams`
streams on its conversation (`GET /widget/v1/stream?token=…&after=…`), opened from this process
with aiohttp, `OPEN_AT_ONCE` at a time (the server's listen backlog is 128).

- Memory: the server's VmRSS before the streams are opened and once all are open.
- Fan-out: one warm-up message, then `messages` messages posted one after another, each once the
  previous one reached every stream (or `DELIVERY_TIMEOUT` passed). Latency runs from the POST's
  answer (the commit) to each stream's read returning the frame, and to the last stream's.
- Reconnect: `reconnect` streams are closed, `missed` messages posted while they are away, then all
  of them reopened at once with `Last-Event-ID` (the last id each saw, on the URL they first used,
  as a browser does); the time until every one has the missed messages.
- Checks: after one last message to every stream, each stream (across its connections) must have
  every message exactly once, in seq order, its data's `seq` equal to its `id`.

The ceiling, in the same run with the same client: `python -m bench.sse --ceiling PORT`, a bare
aiohttp server that keeps its streams in a list and, on each POST, writes the same pre-encoded
frame to each (and replays its list of frames after `Last-Event-ID`). The client runs on the same
machine as the server (2 cores): its parsing is in every latency, for both servers alike.

Everything listens on 127.0.0.1; every wait is bounded (`DELIVERY_TIMEOUT`, `BUDGET`): what did
not arrive is counted, not waited for.

    python -m bench.sse [--streams 2000] [--messages 30] [--reconnect 100] [--missed 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import resource
import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

from bench.harness import Latency, cpu_seconds, free_port, gateway_env, machine_busy_seconds, server
from bench.sleep_memory import Memory

ROLE = "quiet"
OPEN_AT_ONCE = 64
"""Streams being opened at a time: under the server's listen backlog (128), so no SYN is
dropped and retried a second later."""
DELIVERY_TIMEOUT = 10.0
"""Seconds to wait for a message to reach every stream (or the reconnected ones to catch up)."""
ASKING = aiohttp.ClientTimeout(total=DELIVERY_TIMEOUT)
"""For a request that is not a stream (a stream's connection has no timeout but its opening)."""
BUDGET = 240.0
"""Seconds one server's pass may take: no message is posted after it, no wait goes past it."""


# --- the client: streams, their frames, who has what ------------------------------------------


class Tally:
    """How many streams have received each seq; wakes the one waiting for a count."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self._waiting: tuple[int, int, asyncio.Event] | None = None

    def note(self, seq: int) -> None:
        count = self.counts[seq] = self.counts.get(seq, 0) + 1
        if self._waiting is not None and self._waiting[:2] == (seq, count):
            self._waiting[2].set()

    async def wait(self, seq: int, count: int, until: float) -> bool:
        """Until `count` streams have `seq`; False when the perf_counter time `until` came first."""
        if self.counts.get(seq, 0) >= count:
            return True
        reached = asyncio.Event()
        self._waiting = (seq, count, reached)
        try:
            async with asyncio.timeout(max(until - time.perf_counter(), 0)):
                await reached.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting = None


class Stream:
    """One stream as a browser holds it: frames parsed as they come (`field: value` lines ending
    in CRLF, a blank line ends an event, `:` lines are comments), the first arrival of each id
    timed; across reconnects it keeps what it received and its last event id."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.received: list[int] = []
        self.arrived: dict[int, float] = {}
        self.last_id: str | None = None
        self.bad_frames = 0
        self.ended = 0
        """Times the server ended the stream."""
        self._buffer = b""
        self._response: aiohttp.ClientResponse | None = None
        self._reader: asyncio.Task[None] | None = None

    async def open(self, client: aiohttp.ClientSession, url: str) -> float:
        """Connect (with `Last-Event-ID` once an id was seen); the time the headers came back."""
        headers = {"Last-Event-ID": self.last_id} if self.last_id is not None else {}
        async with asyncio.timeout(DELIVERY_TIMEOUT):
            response = await client.get(url, headers=headers)
        opened = time.perf_counter()
        if response.status != 200:
            text = await response.text()
            response.close()
            raise RuntimeError(f"the stream answered {response.status}: {text[:200]}")
        self._response, self._buffer = response, b""
        self._reader = asyncio.create_task(self._read(response))
        return opened

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._response is not None:
            self._response.close()

    async def _read(self, response: aiohttp.ClientResponse) -> None:
        with contextlib.suppress(aiohttp.ClientError):
            async for chunk in response.content.iter_any():
                self.feed(chunk, time.perf_counter())
        self.ended += 1

    def feed(self, chunk: bytes, now: float) -> None:
        *frames, self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n").split(b"\n\n")
        for frame in frames:
            self._event(frame, now)

    def _event(self, frame: bytes, now: float) -> None:
        fields: dict[bytes, bytes] = {}
        data: list[bytes] = []
        for line in frame.split(b"\n"):
            if not line or line.startswith(b":"):
                continue  # a comment: the keep-alive ping
            name, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if name == b"data":
                data.append(value)
            else:
                fields[name] = value
        if b"id" in fields:
            self.last_id = fields[b"id"].decode()
        if not data or fields.get(b"event") != b"timeline":
            return  # no event (a ping), or `working`: no id, not counted
        raw_id = fields.get(b"id", b"")
        if not raw_id.isdigit() or json.loads(b"\n".join(data)).get("seq") != int(raw_id):
            self.bad_frames += 1
            return
        seq = int(raw_id)
        self.received.append(seq)
        if seq not in self.arrived:
            self.arrived[seq] = now
            self.tally.note(seq)


@dataclass(frozen=True, slots=True)
class Post:
    seq: int
    sent: float
    answered: float
    """When the POST's answer (the commit) was read: latencies count from here."""


async def _post(client: aiohttp.ClientSession, path: str, token: str, text: str) -> Post:
    sent = time.perf_counter()
    async with client.post(
        path,
        json={"author": f"role:{ROLE}", "text": text},
        headers={"Authorization": f"Bearer {token}"},
        timeout=ASKING,
    ) as response:
        body = await response.json()
        answered = time.perf_counter()
    if response.status != 201:
        raise RuntimeError(f"posting answered {response.status}: {body}")
    return Post(int(body["seq"]), sent, answered)


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """What every stream should have: every message posted after it opened, once, in order."""

    streams: int
    messages: int
    missing: int
    """(stream, message) pairs never received."""
    duplicates: int
    out_of_order: int
    unexpected: int
    """Ids received that were never posted."""
    bad_frames: int
    ended: int
    """Streams the server ended."""
    late: int
    """Waits for a message to reach every stream that timed out."""

    @classmethod
    def of(cls, streams: Sequence[Stream], expected: Sequence[int], late: int) -> Check:
        wanted = set(expected)
        return cls(
            streams=len(streams),
            messages=len(expected),
            missing=sum(len(wanted - set(s.received)) for s in streams),
            duplicates=sum(len(s.received) - len(set(s.received)) for s in streams),
            out_of_order=sum(b < a for s in streams for a, b in itertools.pairwise(s.received)),
            unexpected=sum(len(set(s.received) - wanted) for s in streams),
            bad_frames=sum(s.bad_frames for s in streams),
            ended=sum(s.ended > 0 for s in streams),
            late=late,
        )

    @property
    def clean(self) -> bool:
        return not (
            self.missing or self.duplicates or self.out_of_order or self.unexpected
        ) and not (self.bad_frames or self.ended or self.late)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconnect:
    streams: int
    missed: int
    reopened: Latency
    """Per reconnecting stream: from all being reopened at once to its headers."""
    caught_up_seconds: float
    """From the reopening until the last of them had every missed message."""
    caught_up: int
    """Streams that had every missed message within `DELIVERY_TIMEOUT`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pass:
    """One server measured: the gateway or the ceiling."""

    server: str
    streams: int
    open_seconds: float
    """Opening every stream, `OPEN_AT_ONCE` at a time, until the last one's headers."""
    rss_before: int
    rss_open: int
    rss_after: int
    """After the messages and the reconnect, every stream open again."""
    everyone: Latency
    """Per message: the POST's answer → the last stream receiving it (complete messages only)."""
    single: Latency
    """Per message and stream: the POST's answer → that stream receiving it."""
    posted: Latency
    """Per message: the POST sent → its answer."""
    early: int
    """Deliveries read before the POST's answer was (negative samples of `single`)."""
    seconds: float
    """The measured messages, first sent to last delivered."""
    server_cpu: float
    client_cpu: float
    others_cpu: float
    """CPU seconds the rest of the machine (other processes) used meanwhile."""
    reconnect: Reconnect
    check: Check

    @property
    def bytes_per_stream(self) -> float:
        return (self.rss_open - self.rss_before) / self.streams

    @property
    def deliveries(self) -> int:
        return self.single.count

    def cpu_us_per_delivery(self, cpu: float) -> float:
        return cpu / max(self.deliveries, 1) * 1e6


@dataclass(frozen=True, slots=True)
class Result:
    gateway: Pass
    ceiling: Pass
    messages: int


# --- one pass -----------------------------------------------------------------------------------


class Audience:
    """The client's side of one pass: the streams on the conversation, the messages posted to
    them (in order: what every stream must end up with), and the waits that timed out."""

    def __init__(self, client: aiohttp.ClientSession, path: str, token: str, until: float):
        self.client, self.path, self.token, self.until = client, path, token, until
        self.tally = Tally()
        self.streams: list[Stream] = []
        self.expected: list[int] = []
        self.late = 0

    async def open(self, url: str, count: int) -> None:
        """Open `count` streams, `OPEN_AT_ONCE` at a time, until every one's headers came."""
        gate = asyncio.Semaphore(OPEN_AT_ONCE)
        self.streams = [Stream(self.tally) for _ in range(count)]

        async def open_one(stream: Stream) -> None:
            async with gate:
                await stream.open(self.client, url)

        await asyncio.gather(*(open_one(s) for s in self.streams))

    async def post(self, text: str, *, live: int | None = None) -> Post:
        """Post a message; wait until `live` streams (all, unless told) have it."""
        post = await _post(self.client, self.path, self.token, text)
        self.expected.append(post.seq)
        count = len(self.streams) if live is None else live
        until = min(post.answered + DELIVERY_TIMEOUT, self.until)
        self.late += not await self.tally.wait(post.seq, count, until)
        return post

    async def reconnect(self, url: str, away: int, missed: int) -> Reconnect:
        """Close `away` streams, post `missed` messages to the rest, reopen them all at once."""
        leaving = self.streams[:away]
        await asyncio.gather(*(s.close() for s in leaving))
        live = len(self.streams) - away
        posts = [await self.post(f"while away {n}", live=live) for n in range(missed)]
        began = time.perf_counter()
        opened = await asyncio.gather(*(s.open(self.client, url) for s in leaving))
        for post in posts:
            await self.tally.wait(
                post.seq, len(self.streams), min(began + DELIVERY_TIMEOUT, self.until)
            )
        caught = [
            max((s.arrived[p.seq] for p in posts), default=began)
            for s in leaving
            if all(p.seq in s.arrived for p in posts)
        ]
        return Reconnect(
            streams=away,
            missed=missed,
            reopened=Latency.of([t - began for t in opened] or [float("nan")], 1.0),
            caught_up_seconds=max(caught, default=began) - began,
            caught_up=len(caught),
        )

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.streams))

    def latencies(self, posts: Sequence[Post]) -> tuple[list[float], list[float]]:
        """From each POST's answer: to each stream's read of it, and to the last stream's (of
        the messages that reached every stream)."""
        single = [
            s.arrived[p.seq] - p.answered for p in posts for s in self.streams if p.seq in s.arrived
        ]
        everyone = [
            max(s.arrived[p.seq] for s in self.streams) - p.answered
            for p in posts
            if self.tally.counts.get(p.seq, 0) >= len(self.streams)
        ]
        return single, everyone


async def _pass(
    name: str, port: int, pid: int, token: str, count: int, messages: int, away: int, missed: int
) -> Pass:
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession(base, connector=connector, timeout=timeout) as client:
        sessions = "/widget/v1/sessions"
        async with client.post(sessions, json={"role": ROLE}, timeout=ASKING) as response:
            session = await response.json()
        path = f"/api/v1/threads/{session['conversation']}/messages"
        audience = Audience(client, path, token, time.perf_counter() + BUDGET)
        before = await _post(client, path, token, "before the streams")
        rss_before = Memory.of(pid).rss
        url = f"/widget/v1/stream?token={session['session_token']}&after={before.seq}"
        began = time.perf_counter()
        await audience.open(url, count)
        open_seconds = time.perf_counter() - began
        rss_open = Memory.of(pid).rss
        try:
            await audience.post("warm-up")
            cpu_server, cpu_client, busy = (
                cpu_seconds(pid),
                time.process_time(),
                machine_busy_seconds(),
            )
            posts: list[Post] = []
            while len(posts) < messages and time.perf_counter() < audience.until:
                posts.append(await audience.post(f"message {len(posts)}"))
            cpu_server, cpu_client = cpu_seconds(pid) - cpu_server, time.process_time() - cpu_client
            busy = machine_busy_seconds() - busy
            last = max((t for s in audience.streams for t in s.arrived.values()), default=began)
            reconnect = await audience.reconnect(url, away, missed)
            await audience.post("after the reconnect")
            await asyncio.sleep(0.1)  # a second copy of the last message would be here by now
            rss_after = Memory.of(pid).rss
        finally:
            await audience.close()
    single, everyone = audience.latencies(posts)
    seconds = last - posts[0].sent if posts else 0.0
    return Pass(
        server=name,
        streams=count,
        open_seconds=open_seconds,
        rss_before=rss_before,
        rss_open=rss_open,
        rss_after=rss_after,
        everyone=Latency.of(everyone or [float("nan")], seconds),
        single=Latency.of(single or [float("nan")], seconds),
        posted=Latency.of([p.answered - p.sent for p in posts] or [float("nan")], seconds),
        early=sum(sample < 0 for sample in single),
        seconds=seconds,
        server_cpu=cpu_server,
        client_cpu=cpu_client,
        others_cpu=max(busy - cpu_server - cpu_client, 0.0),
        reconnect=reconnect,
        check=Check.of(audience.streams, audience.expected, audience.late),
    )


# --- the servers --------------------------------------------------------------------------------


def _quiet_role(directory: Path) -> Path:
    """A roles directory with one manifest: a role that is in the conversation but only ever
    posts (as the benchmark), never prompted — no person speaks."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{ROLE}.yaml").write_text(
        f"name: {ROLE}\ndisplay_name: Quiet\nruntime: {{kind: builtin, agent: echo}}\n"
    )
    return directory


def _gateway(workdir: Path, count: int, messages: int, away: int, missed: int) -> Pass:
    port, token = free_port(), secrets.token_urlsafe(24)
    env = gateway_env(workdir, port, token, roles_dir=_quiet_role(workdir / "roles"))
    with server(["-m", "gateway", "serve"], port=port, env=env) as process:
        return asyncio.run(
            _pass("gateway", port, process.pid, token, count, messages, away, missed)
        )


def _ceiling(count: int, messages: int, away: int, missed: int) -> Pass:
    port = free_port()
    with server(["-m", "bench.sse", "--ceiling", str(port)], port=port) as process:
        return asyncio.run(_pass("ceiling", port, process.pid, "-", count, messages, away, missed))


def ceiling_app() -> web.Application:
    """The ceiling: streams in a list; each POST's frame encoded once and written to each, in
    order; a stream opened with `Last-Event-ID` (or `after`) is first sent the frames past it."""
    frames: list[bytes] = []
    streams: dict[web.StreamResponse, asyncio.Future[None]] = {}
    writing = asyncio.Lock()

    async def fan_out(frame: bytes) -> None:
        async with writing:
            for response in list(streams):
                try:
                    await response.write(frame)
                except ConnectionResetError:
                    streams.pop(response).set_result(None)

    async def post(request: web.Request) -> web.Response:
        text = (await request.json())["text"]
        seq = len(frames) + 1
        event = {
            "id": secrets.token_hex(13), "seq": seq, "at": "2026-01-01T00:00:00.000000Z",
            "kind": "message", "author": f"role:{ROLE}", "author_name": "Quiet", "mine": False,
            "text": text, "retracted": False, "channel": "api",
        }  # fmt: skip
        data = json.dumps(event).encode()
        frames.append(b"id: %d\r\nevent: timeline\r\ndata: %s\r\n\r\n" % (seq, data))
        answer = web.json_response({"seq": seq}, status=201)
        await answer.prepare(request)
        await answer.write_eof()  # the answer goes out first (the commit), then the frames
        await fan_out(frames[-1])
        return answer

    async def stream(request: web.Request) -> web.StreamResponse:
        after = int(request.headers.get("Last-Event-ID") or request.query.get("after") or 0)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        gone = asyncio.get_running_loop().create_future()
        async with writing:
            for frame in frames[after:]:
                await response.write(frame)
            streams[response] = gone
        await gone
        return response

    async def session(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"session_token": "-", "conversation": "c", "last_seq": 0})

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/widget/v1/sessions", session)
    app.router.add_get("/widget/v1/stream", stream)
    app.router.add_post("/api/v1/threads/{id}/messages", post)
    app.router.add_get("/healthz", healthz)
    return app


# --- running it ---------------------------------------------------------------------------------


def _allow_open_files(streams: int) -> None:
    """Room for every stream's socket, here and in the servers (they inherit the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = streams + 1_024
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


def measure(
    streams: int = 2_000, messages: int = 30, reconnect: int = 100, missed: int = 5
) -> Result:
    _allow_open_files(streams)
    reconnect = min(reconnect, streams)
    with tempfile.TemporaryDirectory(prefix="rolecall-bench-") as tmp:
        gateway = _gateway(Path(tmp), streams, messages, reconnect, missed)
    ceiling = _ceiling(streams, messages, reconnect, missed)
    return Result(gateway, ceiling, messages)


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2_000)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--reconnect", type=int, default=100)
    parser.add_argument("--missed", type=int, default=5)
    parser.add_argument("--ceiling", type=int, metavar="PORT", help="serve the ceiling alone")
    args = parser.parse_args()
    if args.ceiling is not None:
        web.run_app(ceiling_app(), host="127.0.0.1", port=args.ceiling, access_log=None, print=None)
        return
    result = measure(args.streams, args.messages, args.reconnect, args.missed)
    for p in (result.gateway, result.ceiling):
        r = p.reconnect
        print(
            f"{p.server:8} {p.streams} streams opened in {p.open_seconds:.1f} s  "
            f"every stream p50 {p.everyone.p50_ms:.1f} p99 {p.everyone.p99_ms:.1f} ms  "
            f"one stream p50 {p.single.p50_ms:.1f} p99 {p.single.p99_ms:.1f} ms  "
            f"POST p50 {p.posted.p50_ms:.1f} ms  early {p.early}  "
            f"server CPU {p.cpu_us_per_delivery(p.server_cpu):.0f} µs/delivery  "
            f"client CPU {p.cpu_us_per_delivery(p.client_cpu):.0f} µs/delivery  "
            f"RSS {_mib(p.rss_before)} → {_mib(p.rss_open)} → {_mib(p.rss_after)} MiB "
            f"({p.bytes_per_stream:,.0f} B/stream)  reconnect {r.streams}: reopened p50 "
            f"{r.reopened.p50_ms:.1f} ms, caught up {r.caught_up} in "
            f"{r.caught_up_seconds * 1000:.0f} ms  {p.check}"
        )
    g, c = result.gateway.everyone, result.ceiling.everyone
    print(f"gateway ÷ ceiling, every stream: p50 {g.p50_ms / c.p50_ms:.2f}, ", end="")
    print(f"p99 {g.p99_ms / c.p99_ms:.2f}")


if __name__ == "__main__":
    main()
