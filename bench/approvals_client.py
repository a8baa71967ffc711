"""What the approvals benchmark says to a gateway and hears from it, over HTTP on 127.0.0.1.

- `Committed` follows the committed-event stream (`GET /api/v1/events`, long-polled on a
  connection of its own) from where it was opened: the questions (`approval_requested`) by
  conversation, their resolutions (`approval_resolved`) by approval, the role's replies by
  conversation, and when this process saw each. Every wait on it is bounded (`DEADLINE`) and
  says how far it got on stderr every `PROGRESS_EVERY` seconds.
- `burst` sends a list of POSTs as fast as they are answered from a fixed set of keep-alive
  connections, opened beforehand so that the first wave leaves together; `Burst` is what came
  back, and when.
- `each`, `resolve`, `post_messages`, `pending_by_api` and `metrics`: the plain requests.

Requests go through `bench.loadgen.Connection` (raw HTTP/1.1, one request in flight each), which
costs this process little next to the gateway's two cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench import loadgen
from bench.harness import Latency

Event = dict[str, Any]
DEADLINE = 600.0
"""Seconds any one wait on the stream may take; what has not come by then is missing."""
PROGRESS_EVERY = 5.0
POSTERS = 16
"""Connections the plain requests come from."""


@dataclass(frozen=True, slots=True)
class Sent:
    """One request of a burst: what it was for, and what came back when."""

    key: str
    status: int
    code: str | None
    sent: float
    done: float


@dataclass(frozen=True, slots=True)
class Burst:
    """Requests sent as fast as they are answered from a fixed set of connections."""

    sent: list[Sent]

    @property
    def first(self) -> float:
        return min(s.sent for s in self.sent)

    def seconds(self, *, status: int | None = None) -> float:
        """First request sent → the last answer (with `status`, when given)."""
        done = [s.done for s in self.sent if status is None or s.status == status]
        return max(done, default=self.first) - self.first

    @property
    def latency(self) -> Latency:
        return Latency.of([s.done - s.sent for s in self.sent], self.seconds())

    @property
    def statuses(self) -> dict[int, int]:
        return dict(sorted(Counter(s.status for s in self.sent).items()))


class Committed:
    """Follows `GET /api/v1/events` from where it was opened: the questions by thread, their
    resolutions by approval, the role's replies by thread, and when each was seen."""

    def __init__(self, connection: loadgen.Connection, after: int, role: str) -> None:
        self._connection = connection
        self._role = role
        self.events: list[Event] = []
        self.requested: dict[str, list[Event]] = defaultdict(list)
        self.resolved: dict[str, list[Event]] = defaultdict(list)
        self.replies: dict[str, list[Event]] = defaultdict(list)
        self.seen_at: dict[str, float] = {}
        self._after = after
        self._news = asyncio.Event()

    @classmethod
    async def open(cls, port: int, token: str, role: str) -> Committed:
        """A follower from the stream's end, that counts `role`'s messages as replies."""
        connection = await loadgen.Connection.open(port, token)
        after = 0
        while (page := await loadgen.events_page(connection, after, wait=0))["events"]:
            after = page["next"]
        return cls(connection, after, role)

    def _note(self, event: Event, seen: float) -> None:
        self.events.append(event)
        self.seen_at[event["id"]] = seen
        if event["kind"] == "approval_requested":
            self.requested[event["thread_id"]].append(event)
        elif event["kind"] == "approval_resolved":
            self.resolved[event["target"]].append(event)
        elif event["kind"] == "message" and event["author"] == self._role:
            self.replies[event["thread_id"]].append(event)

    async def follow(self) -> None:
        while True:
            page = await loadgen.events_page(self._connection, self._after, wait=5)
            seen = time.perf_counter()
            for event in page["events"]:
                self._note(event, seen)
            self._after = page["next"]
            self._news.set()

    async def until(self, count: Callable[[], int], total: int, what: str) -> int:
        """Wait until `count()` reaches `total` (or `DEADLINE` passes), saying how far it got on
        stderr every `PROGRESS_EVERY` seconds; the count reached."""
        began = time.monotonic()
        said = began
        while (reached := count()) < total and time.monotonic() - began < DEADLINE:
            self._news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), PROGRESS_EVERY)
            if time.monotonic() - said >= PROGRESS_EVERY:
                said = time.monotonic()
                print(
                    f"  {what}: {count():,} of {total:,} after {said - began:.0f} s",
                    file=sys.stderr,
                )
        return reached

    def replies_after(self, thread: str, position: int) -> list[Event]:
        return [r for r in self.replies.get(thread, ()) if r["position"] > position]

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[Committed]:
        try:
            async with loadgen.in_background(self.follow()):
                yield self
        finally:
            self._connection.close()


async def each(
    port: int, token: str, work: Sequence[tuple[str, bytes]], clients: int
) -> list[tuple[int, Any]]:
    """POST (or GET, with an empty body) each of `work` from `clients` connections; each answer's
    status and JSON, in order."""
    answers: list[tuple[int, Any]] = [(0, None)] * len(work)

    async def client(first: int) -> None:
        connection = await loadgen.Connection.open(port, token)
        try:
            for i in range(first, len(work), clients):
                status, answer = await connection.request(*work[i])
                answers[i] = (status, json.loads(answer) if answer else None)
        finally:
            connection.close()

    await asyncio.gather(*(client(j) for j in range(min(clients, len(work)))))
    return answers


async def resolve(port: int, token: str, count: int, role: str) -> list[str]:
    """Conversations {person:uK, `role`}, K = 0 … count-1; their ids in order."""
    bodies = [body(participants=[f"person:u{k}", role]) for k in range(count)]
    answers = await each(port, token, [("/api/v1/threads", b) for b in bodies], POSTERS)
    assert all(status == 201 for status, _ in answers), Counter(s for s, _ in answers)
    return [answer["id"] for _, answer in answers]


async def post_messages(
    port: int, token: str, ids: Sequence[str], text: str
) -> tuple[dict[str, Event], float]:
    """One message from each conversation's person; the committed messages by thread, and when
    the first was sent."""
    work = [
        (f"/api/v1/threads/{thread}/messages", body(author=f"person:u{k}", text=f"{text} {k}"))
        for k, thread in enumerate(ids)
    ]
    began = time.perf_counter()
    answers = await each(port, token, work, POSTERS)
    assert all(status == 201 for status, _ in answers), Counter(s for s, _ in answers)
    return {answer["thread_id"]: answer for _, answer in answers}, began


async def pending_by_api(port: int, token: str, ids: Sequence[str]) -> dict[str, list[str]]:
    """Each conversation's pending approvals, as `GET …/approvals?state=pending` lists them."""
    work = [(f"/api/v1/threads/{thread}/approvals?state=pending", b"") for thread in ids]
    answers = await each(port, token, work, POSTERS)
    assert all(status == 200 for status, _ in answers), Counter(s for s, _ in answers)
    return {
        thread: [a["id"] for a in answer["approvals"]]
        for thread, (_, answer) in zip(ids, answers, strict=True)
    }


def body(**fields: object) -> bytes:
    return json.dumps(fields).encode()


async def burst(
    port: int, token: str, work: Sequence[tuple[str, str, bytes]], connections: int
) -> Burst:
    """POST each (key, path, body) of `work`, in order, each on the next free one of
    `connections` connections (all opened first, so the first wave leaves together)."""
    opened = [await loadgen.Connection.open(port, token) for _ in range(connections)]
    queue = iter(work)
    sent: list[Sent] = []

    async def worker(connection: loadgen.Connection) -> None:
        for key, path, body in queue:
            began = time.perf_counter()
            status, answer = await connection.request(path, body)
            sent.append(Sent(key, status, _code(answer), began, time.perf_counter()))

    try:
        await asyncio.gather(*(worker(c) for c in opened))
    finally:
        for connection in opened:
            connection.close()
    return Burst(sent)


def _code(answer: bytes) -> str | None:
    with contextlib.suppress(ValueError, LookupError, TypeError):
        return str(json.loads(answer)["error"]["code"])
    return None


async def metrics(port: int) -> dict[str, float]:
    """`/metrics` as `name{labels}` → value (the lines this benchmark reads)."""
    connection = await loadgen.Connection.open(port)
    try:
        status, text = await connection.request("/metrics", b"")
    finally:
        connection.close()
    assert status == 200, status
    wanted = re.compile(r"^(rolecall_turn[a-z_]*(?:\{[^}]*\})?) ([0-9.e+-]+)$", re.M)
    return {name: float(value) for name, value in wanted.findall(text.decode())}


def metric_sum(found: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in found.items() if k.startswith(prefix))


def at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
