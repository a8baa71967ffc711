"""PostgreSQL restarted, or stopped and started again, under load: nothing acknowledged is lost.

A real `rolecall serve` process on a PostgreSQL server of the test's own (`pg_cluster`), while
posters send messages without pause to their conversations with an echo role. Then the server
is restarted (`pg_ctl restart -m fast`), or stopped and, once the gateway has been seen to
report the outage, started again. What must hold:

- every request is answered within seconds: 201, or 503 `database_unavailable` with a
  `Retry-After` header while the server is away; never a 500, never a hang;
- `/healthz` answers 503 in that shape while the server is away, and 200 once it is back;
- the same gateway process serves again once the server is back: every poster's messages are
  acknowledged again, and the run host answers them;
- every acknowledged message is on its timeline exactly once, no message is there twice, and
  each person message there has its one echo.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.cli.conftest import running_gateway
from tests.faults.conftest import Cluster
from tests.waiting import eventually

TOKEN = "faults-test-operator-token-0123456789"
ECHO = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo}
"""
POSTERS = 8
ANSWER_WITHIN = 10.0
"""Seconds any request may take, outage or not (the engine's own bounds are shorter)."""
BEFORE = 3
"""Messages each poster has acknowledged before the fault."""
AFTER = 3
"""Messages each poster must have acknowledged once the server is back."""


@dataclass(frozen=True)
class Answer:
    text: str
    status: int
    """0: no answer within `ANSWER_WITHIN`."""
    seconds: float
    retry_after: str | None
    body: Any


@dataclass
class Load:
    """Posters, one per conversation, each sending its next message as soon as it is answered."""

    session: aiohttp.ClientSession
    base: str
    answers: list[Answer] = field(default_factory=list)
    acknowledged: Counter[str] = field(default_factory=Counter)
    """Per thread: messages acknowledged (201) since `phase` last changed."""
    phase: str = "before"

    refused: Counter[str] = field(default_factory=Counter)
    """Per thread: requests answered 503."""

    async def post(self, thread_id: str, author: str, *, patient: bool) -> None:
        """Post until `AFTER` messages were acknowledged after the fault. Refused, a `patient`
        poster waits as `Retry-After` says; the others try again at once, to keep the load on."""
        number = 0
        while self.phase != "after" or self.acknowledged[thread_id] < AFTER:
            text = f"{author} says {number}"
            number += 1
            answer = await self._send(thread_id, author, text)
            self.answers.append(answer)
            if answer.status == 201:
                self.acknowledged[thread_id] += 1
                continue
            self.refused[thread_id] += answer.status == 503
            wait = int(answer.retry_after or 0) if patient and answer.status == 503 else 0
            await asyncio.sleep(wait or 0.05)  # as a client would, before it tries again

    async def _send(self, thread_id: str, author: str, text: str) -> Answer:
        url = f"{self.base}/api/v1/threads/{thread_id}/messages"
        started = time.monotonic()
        try:
            async with self.session.post(
                url,
                json={"author": author, "text": text},
                timeout=aiohttp.ClientTimeout(total=ANSWER_WITHIN),
            ) as response:
                body = await response.json(content_type=None)
                status, retry_after = response.status, response.headers.get("Retry-After")
        except TimeoutError:
            status, retry_after, body = 0, None, None
        return Answer(text, status, time.monotonic() - started, retry_after, body)

    def enter(self, phase: str) -> None:
        self.phase = phase
        self.acknowledged.clear()

    def every_poster_acknowledged(self, threads: list[str], count: int) -> Callable[[], Any]:
        async def check() -> bool:
            return all(self.acknowledged[t] >= count for t in threads)

        return check


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any, str | None]:
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=ANSWER_WITHIN)) as response:
        body = await response.json(content_type=None)
        return response.status, body, response.headers.get("Retry-After")


def _is_unavailable(status: int, body: Any, retry_after: str | None) -> bool:
    """The one answer to a request the database could not serve."""
    return (
        status == 503
        and set(body) == {"error"}
        and set(body["error"]) == {"code", "message"}
        and body["error"]["code"] == "database_unavailable"
        and bool(body["error"]["message"])
        and retry_after is not None
        and retry_after.isdigit()
        and int(retry_after) >= 1
    )


async def _timeline(session: aiohttp.ClientSession, base: str, thread_id: str) -> list[Any]:
    events: list[Any] = []
    after = 0
    while True:
        status, page, _ = await _get(
            session, f"{base}/api/v1/threads/{thread_id}/timeline?after={after}&limit=500"
        )
        assert status == 200, page
        events += page["events"]
        after = page["next"]
        if not page["more"]:
            return events


async def _restart(cluster: Cluster, load: Load, health: str) -> None:
    await asyncio.to_thread(cluster.restart)


async def _stop_then_start(cluster: Cluster, load: Load, health: str) -> None:
    await asyncio.to_thread(cluster.stop)

    async def outage_reported() -> bool:
        status, body, retry_after = await _get(load.session, health)
        return _is_unavailable(status, body, retry_after)

    await eventually(outage_reported, within=ANSWER_WITHIN)
    # Every poster is refused twice: the patient ones wait `Retry-After` in between, so the
    # server stays away for seconds, with requests arriving all the while.
    await eventually(
        lambda: len(load.refused) == POSTERS and min(load.refused.values()) >= 2,
        what="every poster refused twice",
        within=ANSWER_WITHIN * 2,
    )
    await asyncio.to_thread(cluster.start)


Fault = Callable[[Cluster, Load, str], Awaitable[None]]


@pytest.mark.parametrize("fault", [_restart, _stop_then_start], ids=["restart", "stop-pause-start"])
async def test_the_gateway_keeps_what_it_acknowledged_across_a_postgres_outage(
    pg_cluster: Cluster, tmp_path: Path, fault: Fault
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "echo.yaml").write_text(ECHO)
    settings = {
        "ROLECALL_DATABASE_URL": pg_cluster.url,
        "ROLECALL_ROLES_DIR": str(roles),
        "ROLECALL_API_TOKEN": TOKEN,
    }
    with running_gateway(tmp_path / "var", **settings) as gateway:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            load = Load(session, gateway.url)
            threads = []
            for i in range(POSTERS):
                async with session.post(
                    gateway.url + "/api/v1/threads",
                    json={"participants": [f"person:p{i}", "role:echo"]},
                ) as response:
                    assert response.status in (200, 201), await response.text()
                    threads.append((await response.json())["id"])
            posters = [
                asyncio.create_task(load.post(t, f"person:p{i}", patient=i % 2 == 0))
                for i, t in enumerate(threads)
            ]
            try:
                await eventually(load.every_poster_acknowledged(threads, BEFORE))
                load.enter("during")
                await fault(pg_cluster, load, gateway.url + "/healthz")

                async def healthy() -> bool:
                    status, _, _ = await _get(session, gateway.url + "/healthz")
                    return status == 200

                await eventually(healthy, within=30)
                load.enter("after")
                try:
                    await asyncio.wait_for(asyncio.gather(*posters), timeout=30)
                except TimeoutError:
                    lately = Counter(a.status for a in load.answers[-4 * POSTERS :])
                    pytest.fail(f"not served again once the server was back: {lately}")
            finally:
                for poster in posters:
                    poster.cancel()
                await asyncio.gather(*posters, return_exceptions=True)

            wrong = [a for a in load.answers if a.status not in (201, 503)]
            assert not wrong, wrong[:5]
            refused = [a for a in load.answers if a.status == 503]
            assert all(_is_unavailable(a.status, a.body, a.retry_after) for a in refused), refused
            assert max(a.seconds for a in load.answers) < ANSWER_WITHIN
            if fault is _stop_then_start:
                assert refused, "no request was answered while the server was away"
            acknowledged = {a.text for a in load.answers if a.status == 201}

            async def everyone_answered() -> list[list[Any]] | None:
                timelines = [await _timeline(session, gateway.url, t) for t in threads]
                for events in timelines:
                    said = {e["text"] for e in events if e["author"].startswith("person:")}
                    echoed = {e["text"] for e in events if e["author"] == "role:echo"}
                    if said - echoed:
                        return None
                return timelines

            timelines = await eventually(everyone_answered, within=30)
            said: Counter[str] = Counter()
            echoed: Counter[str] = Counter()
            for events in timelines:
                said.update(e["text"] for e in events if e["author"].startswith("person:"))
                echoed.update(e["text"] for e in events if e["author"] == "role:echo")
            assert acknowledged <= set(said), sorted(acknowledged - set(said))[:5]
            assert [t for t, n in said.items() if n > 1] == []
            assert [t for t, n in echoed.items() if n > 1] == []
            assert set(echoed) == set(said)


SLOW_ECHO = """\
name: slow
display_name: Slow
runtime: {kind: builtin, agent: echo, delay_ms: 1500}
"""


async def test_a_turn_that_ends_while_postgres_is_away_is_taken_again_once_it_is_back(
    pg_cluster: Cluster, tmp_path: Path
) -> None:
    """A person's message was acknowledged; its turn is running when the server stops, and
    ends (its end cannot be stored) before the server is back. Nothing else is said in that
    conversation, and yet the reply comes once the server is back, once."""
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "slow.yaml").write_text(SLOW_ECHO)
    settings = {
        "ROLECALL_DATABASE_URL": pg_cluster.url,
        "ROLECALL_ROLES_DIR": str(roles),
        "ROLECALL_API_TOKEN": TOKEN,
        "ROLECALL_LOG_FORMAT": "text",
    }
    with running_gateway(tmp_path / "var", **settings) as gateway:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        api = gateway.url + "/api/v1"
        async with aiohttp.ClientSession(headers=headers) as session:
            async with session.post(
                api + "/threads", json={"participants": ["person:ann", "role:slow"]}
            ) as response:
                thread_id = (await response.json())["id"]
            async with session.post(
                api + f"/threads/{thread_id}/messages",
                json={"author": "person:ann", "text": "still there?"},
            ) as response:
                assert response.status == 201, await response.text()

            async def running() -> bool:
                _, body, _ = await _get(session, api + f"/runs?thread={thread_id}")
                return bool(body["runs"]) and body["runs"][0]["running"]

            await eventually(running)  # the reply is 1.5 s away: stop the server now
            await asyncio.to_thread(pg_cluster.stop)
            # The run host's driver logs that the run's turn (or read) failed, and tries again.
            failed = f"run of role:slow on thread {thread_id}"
            await eventually(lambda: failed in gateway.stderr, what="the failure in the log")
            await asyncio.to_thread(pg_cluster.start)

            async def replies() -> list[str]:
                try:
                    events = await _timeline(session, gateway.url, thread_id)
                except AssertionError:  # the database is not back yet
                    return []
                return [e["text"] for e in events if e["author"] == "role:slow"]

            assert await eventually(replies, within=30) == ["still there?"]
            async with session.post(
                api + f"/threads/{thread_id}/messages",
                json={"author": "person:ann", "text": "good"},
            ) as response:
                assert response.status == 201, await response.text()

            async def two_replies() -> list[str]:
                found = await replies()
                return found if len(found) >= 2 else []

            # Once the later message is answered, the first was answered once only.
            assert await eventually(two_replies) == ["still there?", "good"]
