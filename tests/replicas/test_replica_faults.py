"""Replicas that die, stall or lose their listening connection lose nothing and double nothing.

- kill -9 of the replica running turns, several times under load: every acknowledged message is
  on its timeline once, every person message gets exactly one reply, the killed replica's runs
  are taken over by the others (within the replica timeout and a heartbeat), and an outbound
  endpoint gets every message, in order, whichever replica holds its delivery.
- A stalled owner (SIGSTOP past its lease, then SIGCONT) cannot commit its turn's end: another
  replica took the run over and answered; the stalled one's answer is refused (fencing).
- The listening connection cut (`pg_terminate_backend`): the replica reconnects and misses
  nothing.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from tests.outbound.conftest import Receiver
from tests.replicas.conftest import (
    TOKEN,
    Cluster,
    Replica,
    echo_role,
    holder_of,
    said_and_echoed,
)
from tests.replicas.test_replicas import _next_message
from tests.waiting import eventually

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
FAST_TIMEOUT = {"ROLECALL_REPLICA_TIMEOUT": "2"}
KILLS = 3
BACKGROUND = 20


async def _all_answered(cluster: Cluster) -> bool:
    return all(len(e) >= len(s) for s, e in (await said_and_echoed(cluster)).values())


async def _running_on(replica: Replica, thread_id: str) -> bool:
    runs = await asyncio.to_thread(replica.call, f"/runs?thread={thread_id}")
    return bool(runs["runs"]) and bool(runs["runs"][0]["running"])


async def test_killed_replicas_runs_are_taken_over_and_every_message_answered_once(
    cluster: Cluster,
) -> None:
    echo_role(cluster, delay_ms=800)
    live = cluster.start("r1", "r2", "r3", **FAST_TIMEOUT, ROLECALL_ENDPOINTS_ALLOW_PRIVATE="true")
    acknowledged: list[str] = []
    stop_load = asyncio.Event()

    async with (
        Receiver() as receiver,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as http,
    ):
        endpoint = {"url": receiver.url("/hook"), "kinds": ["message"]}
        await _post(http, live[1], "/endpoints", endpoint)
        background: dict[str, str] = {}
        for i in range(BACKGROUND):
            thread = await _post(http, live[i % 3], "/threads", _pair(f"bg{i}"))
            background[thread["id"]] = f"person:bg{i}"

        async def load() -> None:
            n = 0
            while not stop_load.is_set():
                thread_id, person = random.choice(list(background.items()))
                replica = random.choice([r for r in live if r.process.poll() is None])
                n += 1
                body = {"author": person, "text": f"load {n}"}
                try:
                    posted = await _post(http, replica, f"/threads/{thread_id}/messages", body)
                except (aiohttp.ClientError, AssertionError, TimeoutError):
                    continue  # not acknowledged: the replica was killed under it
                acknowledged.append(posted["id"])
                await asyncio.sleep(0.02)

        loading = asyncio.create_task(load())
        takeovers: list[float] = []
        try:
            for kill in range(KILLS):
                takeovers.append(await _kill_the_owner(cluster, http, live, kill))
                live += cluster.start(
                    f"r{4 + kill}", **FAST_TIMEOUT, ROLECALL_ENDPOINTS_ALLOW_PRIVATE="true"
                )
        finally:
            stop_load.set()
            await loading

        await eventually(lambda: _all_answered(cluster), what="every message answered", within=60)
        # Later than a doubled reply could come: a marker through each live replica, answered.
        marker, person = next(iter(background.items()))
        for replica in live:
            body = {"author": person, "text": f"marker {replica.id}"}
            await _post(http, replica, f"/threads/{marker}/messages", body)
        await eventually(lambda: _all_answered(cluster), what="the markers answered")
        rows = await cluster.db("SELECT id FROM events WHERE kind = 'message' ORDER BY position")
        stored = [row["id"] for row in rows]

        def delivered() -> list[str] | None:
            # At least once (a killed holder may have sent what it had not yet recorded),
            # every message, the first time each in timeline order.
            first = list(dict.fromkeys(r.id for r in receiver.accepted("/hook")))
            return first if len(first) >= len(stored) else None

        assert await eventually(delivered, what="every message at the endpoint") == stored

    assert acknowledged and all(stored.count(i) == 1 for i in acknowledged)
    for thread_id, (said, echoed) in (await said_and_echoed(cluster)).items():
        assert echoed == said, thread_id  # exactly one reply each, in order
    # Taken over within the timeout (2 s), a heartbeat (0.4 s) and the echo's delay (0.8 s),
    # with room for a loaded machine.
    assert max(takeovers) < 10, takeovers


async def _kill_the_owner(
    cluster: Cluster, http: aiohttp.ClientSession, live: list[Replica], kill: int
) -> float:
    """A message to a new conversation; kill -9 its run's owner mid-turn; the seconds until
    another replica's reply."""
    thread_id = (await _post(http, live[0], "/threads", _pair(f"k{kill}")))["id"]
    body = {"author": f"person:k{kill}", "text": f"before kill {kill}"}
    await _post(http, random.choice(live), f"/threads/{thread_id}/messages", body)
    owner_id = await eventually(lambda: holder_of(cluster, thread_id), what="an owner")
    [owner] = [r for r in live if r.id == owner_id]
    await eventually(lambda: _running_on(owner, thread_id), what="its turn running")
    killed_at = time.monotonic()
    cluster.kill(owner)
    live.remove(owner)

    async def answered() -> bool:
        said, echoed = (await said_and_echoed(cluster))[thread_id]
        return echoed == said

    await eventually(answered, what=f"the reply after kill {kill}", within=30)
    return time.monotonic() - killed_at


def _pair(person: str) -> dict[str, Any]:
    return {"participants": [f"person:{person}", "role:echo"]}


async def _post(http: aiohttp.ClientSession, replica: Replica, path: str, body: Any) -> Any:
    async with http.post(replica.api + path, json=body, headers=HEADERS) as answer:
        assert answer.status in (200, 201), await answer.text()
        return await answer.json()


async def test_a_stalled_owner_cannot_commit_its_turns_end(cluster: Cluster) -> None:
    echo_role(cluster, delay_ms=3000)
    a, b = cluster.start("a", "b", **FAST_TIMEOUT)
    thread = a.call("/threads", "POST", _pair("ann"))
    a.call(f"/threads/{thread['id']}/messages", "POST", {"author": "person:ann", "text": "hi"})
    owner_id = await eventually(lambda: holder_of(cluster, thread["id"]), what="an owner")
    owner, other = (a, b) if owner_id == "a" else (b, a)
    await eventually(lambda: _running_on(owner, thread["id"]), what="its turn running")
    owner.process.send_signal(signal.SIGSTOP)
    try:

        async def taken_over() -> bool:
            return await holder_of(cluster, thread["id"]) == other.id

        await eventually(taken_over, what="the other replica claiming the run", within=20)

        async def answered() -> list[str] | None:
            _said, echoed = (await said_and_echoed(cluster))[thread["id"]]
            return echoed or None

        assert await eventually(answered, what="the new owner's reply", within=20) == ["hi"]
    finally:
        owner.process.send_signal(signal.SIGCONT)
    # The stalled owner wakes with its turn done: its end is refused, and it says so.
    await eventually(
        lambda: (
            "another replica holds it now" in owner.stderr
            or "moved on while its turn ran" in owner.stderr
        ),
        what="the stalled owner's end refused",
    )
    _said, echoed = (await said_and_echoed(cluster))[thread["id"]]
    assert echoed == ["hi"]  # one reply: the stalled owner's was not committed
    turns = other.call(f"/runs?thread={thread['id']}")["runs"][0]["turns"]
    assert turns == 1


async def test_a_run_its_owner_let_go_is_answered_once_that_owner_dies(cluster: Cluster) -> None:
    """A replica that found a run held by another leaves it to that one while it beats; the
    holder lets the run go (its session slept) and is killed: the next message is answered by
    the replica still alive once it sees the heartbeat stopped, not when what it knew of the
    lease would have run out (a minute)."""
    (cluster.roles / "echo.yaml").write_text(
        "name: echo\ndisplay_name: Echo\nruntime: {kind: builtin, agent: echo}\n"
        "idle_sleep_after: 1\n"
    )
    a, b = cluster.start("a", "b", **FAST_TIMEOUT)
    thread = a.call("/threads", "POST", _pair("ann"))
    said = f"/threads/{thread['id']}/messages"

    def echoed(count: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return len((await said_and_echoed(cluster))[thread["id"]][1]) >= count

        return check

    for n, replica in enumerate((a, b), start=1):  # the second: the non-owner reads the lease
        replica.call(said, "POST", {"author": "person:ann", "text": f"m{n}"})
        await eventually(echoed(n), what=f"the reply to m{n}")
    owner_id = await eventually(lambda: holder_of(cluster, thread["id"]), what="an owner")
    owner, other = (a, b) if owner_id == "a" else (b, a)

    async def let_go() -> bool:
        return await holder_of(cluster, thread["id"]) is None

    await eventually(let_go, what="the owner letting the idle run go")
    cluster.kill(owner)
    other.call(said, "POST", {"author": "person:ann", "text": "m3"})
    await eventually(echoed(3), what="the reply from the replica still alive")
    assert (await said_and_echoed(cluster))[thread["id"]] == (["m1", "m2", "m3"],) * 2


async def test_a_cut_listening_connection_is_reopened_and_nothing_is_missed(
    cluster: Cluster,
) -> None:
    echo_role(cluster)
    a, b = cluster.start("a", "b")
    async with aiohttp.ClientSession() as http:
        async with http.post(b.url + "/widget/v1/sessions", json={"role": "echo"}) as answer:
            token = (await answer.json())["session_token"]
        stream = await http.get(
            b.url + f"/widget/v1/stream?token={token}", timeout=aiohttp.ClientTimeout(total=60)
        )
        await stream.content.readany()
        cut = await cluster.db(
            "SELECT pg_terminate_backend(pid) AS cut FROM pg_stat_activity "
            "WHERE application_name = 'rolecall-listen' AND datname = current_database()"
        )
        assert len(cut) == 2 and all(row["cut"] for row in cut)
        await _say(http, a, token, "while cut")  # committed on a while nobody listens
        assert (await _next_message(stream, "while cut"))["text"] == "while cut"

        async def reopened() -> bool:
            rows = await cluster.db(
                "SELECT count(*) AS n FROM pg_stat_activity "
                "WHERE application_name = 'rolecall-listen' AND datname = current_database()"
            )
            return int(rows[0]["n"]) == 2

        await eventually(reopened, what="both listening connections reopened")
        await eventually(lambda: b.ready() and a.ready(), what="both ready again")
        # And b hears a's commits at once again: well before the slow poll (5 s) would.
        sent = time.monotonic()
        await _say(http, a, token, "after")
        await _next_message(stream, "after")
        assert time.monotonic() - sent < 2.0
        stream.close()


async def _say(http: aiohttp.ClientSession, replica: Replica, token: str, text: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with http.post(
        replica.url + "/widget/v1/messages", json={"text": text}, headers=headers
    ) as answer:
        assert answer.status in (200, 201), await answer.text()
