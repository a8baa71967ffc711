"""Replicas behave as one gateway: real `rolecall serve` processes on one PostgreSQL database,
requests spread over them with no affinity.

- Messages posted across 2 and 3 replicas to 100 conversations get exactly one echo reply each,
  in order per conversation.
- A widget stream and a long poll on one replica see a commit made on another at once.
- Cancel and "start fresh" reach a turn wherever it runs.
- The replicas are listed (API and CLI), a stopped one hands its runs back, and a replica given
  another operator token than the cluster's is refused.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
import urllib.request
from typing import Any

import aiohttp
import pytest

from tests.cli.conftest import REPO, ROLECALL
from tests.replicas.conftest import (
    TOKEN,
    Cluster,
    Replica,
    echo_role,
    holder_of,
    said_and_echoed,
)
from tests.waiting import eventually

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
CONVERSATIONS = 100
PER_CONVERSATION = 5
POSTERS = 32


async def _post(
    http: aiohttp.ClientSession, replica: Replica, path: str, body: dict[str, Any]
) -> Any:
    async with http.post(replica.api + path, json=body, headers=HEADERS) as answer:
        assert answer.status in (200, 201), await answer.text()
        return await answer.json()


async def _echoes(cluster: Cluster) -> int:
    [row] = await cluster.db("SELECT count(*) AS n FROM events WHERE author = 'role:echo'")
    return int(row["n"])


@pytest.mark.parametrize("replicas", [2, 3])
async def test_messages_spread_over_replicas_get_one_reply_each_in_order(
    cluster: Cluster, replicas: int
) -> None:
    echo_role(cluster)
    started = cluster.start(*(f"r{i}" for i in range(1, replicas + 1)))
    spread = itertools.cycle(started)
    async with aiohttp.ClientSession() as http:
        threads: dict[str, str] = {}
        for i in range(CONVERSATIONS):
            members = {"participants": [f"person:p{i}", "role:echo"]}
            threads[(await _post(http, next(spread), "/threads", members))["id"]] = f"person:p{i}"
        work: asyncio.Queue[str] = asyncio.Queue()
        for thread_id in threads:
            work.put_nowait(thread_id)

        async def poster() -> None:
            # One conversation at a time, its messages one after another, each to the next
            # replica: so "in order" is the order they were sent.
            while not work.empty():
                thread_id = work.get_nowait()
                for n in range(PER_CONVERSATION):
                    body = {"author": threads[thread_id], "text": f"{thread_id} #{n}"}
                    await _post(http, next(spread), f"/threads/{thread_id}/messages", body)

        await asyncio.gather(*(poster() for _ in range(POSTERS)))
        total = CONVERSATIONS * PER_CONVERSATION
        await eventually(lambda: _reached(cluster, total), what=f"{total} echo replies", within=60)
        # Later than any doubled reply could come: one more message through each replica,
        # each answered.
        marker, person = next(iter(threads.items()))
        for replica in started:
            body = {"author": person, "text": f"marker {replica.id}"}
            await _post(http, replica, f"/threads/{marker}/messages", body)
        await eventually(lambda: _reached(cluster, total + replicas), what="the markers' replies")
    by_thread = await said_and_echoed(cluster)
    assert len(by_thread) == CONVERSATIONS
    for thread_id, (said, echoed) in by_thread.items():
        assert echoed == said, thread_id  # one reply each, in the order said
    # Every replica drove some of the runs: the work was spread.
    owners = await cluster.db("SELECT DISTINCT holder FROM leases WHERE kind = 'run'")
    assert len({row["holder"] for row in owners} - {""}) >= 2


async def _reached(cluster: Cluster, count: int) -> bool:
    return await _echoes(cluster) >= count


async def test_a_stream_on_one_replica_sees_a_commit_on_another_at_once(cluster: Cluster) -> None:
    echo_role(cluster)
    a, b = cluster.start("a", "b")
    async with aiohttp.ClientSession() as http:
        async with http.post(b.url + "/widget/v1/sessions", json={"role": "echo"}) as answer:
            assert answer.status == 200, await answer.text()
            session = await answer.json()
        token = session["session_token"]
        stream = await http.get(
            b.url + f"/widget/v1/stream?token={token}", timeout=aiohttp.ClientTimeout(total=30)
        )
        assert stream.status == 200
        head = (await _get(http, b, "/events?after=0"))["next"]
        polled = asyncio.create_task(_get(http, b, f"/events?after={head}&wait=20"))
        await _until_streaming(stream)
        sent_at = time.monotonic()
        async with http.post(
            a.url + "/widget/v1/messages",
            json={"text": "through a"},
            headers={"Authorization": f"Bearer {token}"},
        ) as answer:
            assert answer.status in (200, 201), await answer.text()
        data = await _next_message(stream, "through a")
        seen = time.monotonic() - sent_at
        assert data["text"] == "through a"
        assert seen < 1.0, f"replica b's stream saw replica a's commit after {seen:.2f} s"
        page = await polled
        assert any(e.get("text") == "through a" for e in page["events"])
        reply = await _next_message(stream, "through a", author="role:echo")
        assert reply["author"] == "role:echo"
        stream.close()


async def _get(http: aiohttp.ClientSession, replica: Replica, path: str) -> Any:
    async with http.get(replica.api + path, headers=HEADERS) as answer:
        assert answer.status == 200, await answer.text()
        return await answer.json()


async def _until_streaming(stream: aiohttp.ClientResponse) -> None:
    """The stream's first bytes (its opening comment or events): it is open and subscribed."""
    await stream.content.readany()


async def _next_message(
    stream: aiohttp.ClientResponse, text: str, *, author: str | None = None
) -> dict[str, Any]:
    async with asyncio.timeout(15):
        while True:
            line = (await stream.content.readline()).decode()
            if not line.startswith("data:"):
                continue
            data = json.loads(line[5:])
            if not isinstance(data, dict) or data.get("text") != text:
                continue
            if author is None or data.get("author") == author:
                return data


async def test_cancel_and_start_fresh_reach_the_turn_wherever_it_runs(cluster: Cluster) -> None:
    echo_role(cluster, delay_ms=4000)
    a, b = cluster.start("a", "b")
    thread = a.call("/threads", "POST", {"participants": ["person:ann", "role:echo"]})
    a.call(f"/threads/{thread['id']}/messages", "POST", {"author": "person:ann", "text": "one"})
    owner, other = await _owner_of(cluster, thread["id"], {"a": a, "b": b})
    [run] = owner.call(f"/runs?thread={thread['id']}")["runs"]
    await eventually(lambda: owner.call(f"/runs/{run['id']}")["running"], what="the turn running")
    cancelled = other.call(f"/runs/{run['id']}/cancel", "POST", {})
    assert cancelled["cancelled"] is True
    turns = await eventually(lambda: owner.call(f"/runs/{run['id']}/turns")["turns"] or None)
    assert turns[-1]["outcome"] == "cancelled"

    fresh = other.call(f"/runs/{run['id']}/sessions", "POST", {})
    new_session = fresh["session"]["id"]
    owner.call(f"/threads/{thread['id']}/messages", "POST", {"author": "person:ann", "text": "two"})

    def answered() -> list[dict[str, Any]] | None:
        done = owner.call(f"/runs/{run['id']}/turns")["turns"]
        return done if len(done) >= 2 else None

    turns = await eventually(answered, what="the turn after start fresh", within=30)
    assert turns[-1]["session_id"] == new_session  # the owner let the old session go


async def _owner_of(
    cluster: Cluster, thread_id: str, replicas: dict[str, Replica]
) -> tuple[Replica, Replica]:
    """The replica holding the thread's run (and the other one)."""

    owner = await eventually(lambda: holder_of(cluster, thread_id), what="a claimed run")
    [other] = [r for name, r in replicas.items() if name != owner]
    return replicas[owner], other


async def test_replicas_are_listed_and_a_clean_stop_hands_runs_back(cluster: Cluster) -> None:
    echo_role(cluster)
    a, b = cluster.start("a", "b")
    listed = a.call("/replicas")
    assert listed["this"] == "a"
    assert {r["id"]: r["live"] for r in listed["replicas"]} == {"a": True, "b": True}
    cli = await asyncio.to_thread(
        subprocess.run,
        [str(ROLECALL), "replica", "list", "--url", b.url, "--token", TOKEN],
        cwd=REPO, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "*b" in cli.stdout and " a " in f" {cli.stdout} ".replace("\n", " ")

    thread = b.call("/threads", "POST", {"participants": ["person:bo", "role:echo"]})
    b.call(f"/threads/{thread['id']}/messages", "POST", {"author": "person:bo", "text": "hi"})
    owner, other = await _owner_of(cluster, thread["id"], {"a": a, "b": b})
    await eventually(lambda: _reached(cluster, 1), what="the first reply")
    metrics = await asyncio.to_thread(_metrics, owner)
    assert "rolecall_replica_runs_owned 1.0" in metrics
    assert "rolecall_replica_takeovers_total" in metrics
    assert "rolecall_replica_delivery_leases" in metrics
    assert "rolecall_notify_lag_seconds_count" in metrics
    assert "rolecall_notify_lag_seconds_count 0.0" not in metrics  # the others' commits came
    cluster.stop(owner)
    rows = await cluster.db("SELECT holder, expires_at FROM leases WHERE kind = 'run'")
    assert all(row["holder"] == "" for row in rows)  # handed back, not left to expire
    stopped = other.call("/replicas?stopped=true")["replicas"]
    assert {r["id"]: r["stopped"] is not None for r in stopped} == {owner.id: True, other.id: False}
    other.call(
        f"/threads/{thread['id']}/messages", "POST", {"author": "person:bo", "text": "again"}
    )
    await eventually(lambda: _reached(cluster, 2), what="the other replica answering")


@pytest.mark.parametrize("setting", ["ROLECALL_API_TOKEN", "ROLECALL_WIDGET_KEY"])
async def test_a_replica_given_another_secret_than_the_clusters_is_refused(
    cluster: Cluster, setting: str
) -> None:
    echo_role(cluster)
    [first] = cluster.start("a")
    refused = cluster.spawn("b", {setting: "another-secret-" + "x" * 32})
    code = await asyncio.to_thread(refused.process.wait, 60)
    assert code != 0
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("rolecall: ") and setting in last, refused.stderr
    assert "other replicas" in last
    assert "Traceback" not in refused.stderr
    # With no replica left of the old secret, the new one is the cluster's: a full restart
    # changes it.
    cluster.stop(first)
    [changed] = cluster.start("c", **{setting: "another-secret-" + "x" * 32})
    assert changed.ready()


async def test_a_replica_restarted_under_its_id_after_a_crash_takes_its_place(
    cluster: Cluster,
) -> None:
    echo_role(cluster)
    [first] = cluster.start("fixed", ROLECALL_REPLICA_TIMEOUT="6")
    cluster.kill(first)
    [again] = cluster.start("fixed", ROLECALL_REPLICA_TIMEOUT="6")  # waits for the old to go
    assert "waiting for its previous process to fall silent" in again.stderr
    assert [r["id"] for r in again.call("/replicas")["replicas"]] == ["fixed"]


SERIAL = """\
name: serial
display_name: Serial
runtime: {kind: builtin, agent: echo, delay_ms: 300}
concurrent_threads: false
"""


async def test_a_role_without_concurrent_threads_takes_one_turn_at_a_time_in_the_cluster(
    cluster: Cluster,
) -> None:
    (cluster.roles / "serial.yaml").write_text(SERIAL)
    a, b = cluster.start("a", "b")
    spread = itertools.cycle([a, b])
    async with aiohttp.ClientSession() as http:
        threads = []
        for i in range(6):
            members = {"participants": [f"person:s{i}", "role:serial"]}
            threads.append(((await _post(http, next(spread), "/threads", members))["id"], i))
        await asyncio.gather(
            *(
                _post(
                    http,
                    next(spread),
                    f"/threads/{t}/messages",
                    {"author": f"person:s{i}", "text": "go"},
                )
                for t, i in threads
            )
        )

        async def all_answered() -> bool:
            [row] = await cluster.db(
                "SELECT count(*) AS n FROM events WHERE author = 'role:serial'"
            )
            return int(row["n"]) == len(threads)

        await eventually(all_answered, what="every conversation answered", within=60)
    turns = await cluster.db("SELECT started_at, finished_at FROM turns ORDER BY started_at")
    assert len(turns) == len(threads)
    for before, after in itertools.pairwise(turns):
        assert before["finished_at"] <= after["started_at"], "two turns of the role overlapped"
    owners = await cluster.db("SELECT DISTINCT holder FROM leases WHERE kind = 'run'")
    assert {row["holder"] for row in owners} - {""} == {"a", "b"}  # both replicas took turns


def _metrics(replica: Replica) -> str:
    with urllib.request.urlopen(replica.url + "/metrics", timeout=10) as answer:
        return str(answer.read().decode())
