"""Limits hold across replicas: real `rolecall serve` processes on one PostgreSQL database, an
agent's and a visitor's requests spread over them with no affinity.

- A run's tool budget (`max_tool_calls_per_turn`): the agent's HTTP tool calls to the replica
  running its turn and to the other one are counted together; the call past the limit is
  refused on either (429 `tool_budget_spent`); once the turn is cancelled, calls are not counted.
- The widget's posting rate: one identity's posts spread over two replicas get the burst, then
  429 with `Retry-After` on both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import aiohttp

from channels.web.limits import BURST
from tests.replicas.conftest import Cluster, Replica, echo_role
from tests.waiting import eventually

FAKE_ACP = Path(__file__).resolve().parents[1] / "runtimes" / "fake_acp_agent.py"
SLOW = f"""\
name: slow
display_name: Slow
runtime:
  kind: acp
  command: {sys.executable}
  args: [{FAKE_ACP}]
max_tool_calls_per_turn: 2
"""
"""An agent process that calls its tools from outside the gateway (over HTTP or MCP, so on any
replica): the fake ACP agent, told to `hang` so that its turn keeps running."""


async def _tool(http: aiohttp.ClientSession, replica: Replica, token: str) -> tuple[int, Any]:
    async with http.post(
        replica.api + "/tools/recall", json={}, headers={"Authorization": f"Bearer {token}"}
    ) as answer:
        return answer.status, await answer.json()


async def _owner_of(cluster: Cluster, run_id: str, replicas: list[Replica]) -> Replica:
    async def holder() -> str | None:
        rows = await cluster.db(
            "SELECT holder FROM leases WHERE kind = 'run' AND subject = $1 AND holder <> ''",
            run_id,
        )
        return rows[0]["holder"] if rows else None

    name = await eventually(holder, what="a replica claiming the run")
    return next(r for r in replicas if r.id == name)


async def test_a_turns_tool_calls_are_counted_together_on_every_replica(cluster: Cluster) -> None:
    (cluster.roles / "slow.yaml").write_text(SLOW)
    a, b = cluster.start("a", "b")
    thread = a.call("/threads", "POST", {"participants": ["person:ann", "role:slow"]})
    a.call(f"/threads/{thread['id']}/messages", "POST", {"author": "person:ann", "text": "hang"})
    [run] = await eventually(lambda: b.call(f"/runs?thread={thread['id']}")["runs"] or None)
    owner = await _owner_of(cluster, run["id"], [a, b])
    other = b if owner is a else a

    async def opened() -> bool:
        rows = await cluster.db("SELECT 1 FROM tool_budgets WHERE run_id = $1", run["id"])
        return bool(rows)

    await eventually(opened, what="the turn's attempt opening its budget")
    token = other.call(f"/runs/{run['id']}/token", "POST", {})["token"]
    async with aiohttp.ClientSession() as http:
        assert (await _tool(http, other, token))[0] == 200
        assert (await _tool(http, owner, token))[0] == 200
        for replica in (other, owner):
            status, body = await _tool(http, replica, token)
            assert status == 429, body
            assert body["error"]["code"] == "tool_budget_spent"
            assert "2 tool calls" in body["error"]["message"]
        [row] = await cluster.db(
            "SELECT used, refused FROM tool_budgets WHERE run_id = $1", run["id"]
        )
        assert (row["used"], row["refused"]) == (2, 2)

        assert other.call(f"/runs/{run['id']}/cancel", "POST", {})["cancelled"] is True
        turns = await eventually(lambda: owner.call(f"/runs/{run['id']}/turns")["turns"] or None)
        assert turns[-1]["outcome"] == "cancelled"
        for replica in (other, owner, other):  # no turn runs: not counted
            assert (await _tool(http, replica, token))[0] == 200
    assert await cluster.db("SELECT 1 FROM tool_budgets WHERE run_id = $1", run["id"]) == []


async def test_one_identitys_posts_over_two_replicas_share_one_bucket(cluster: Cluster) -> None:
    echo_role(cluster)
    a, b = cluster.start("a", "b", ROLECALL_WIDGET_POST_RATE="1")
    async with aiohttp.ClientSession() as http:
        async with http.post(a.url + "/widget/v1/sessions", json={"role": "echo"}) as answer:
            assert answer.status == 200, await answer.text()
            headers = {"Authorization": f"Bearer {(await answer.json())['session_token']}"}

        async def post(replica: Replica, n: int) -> tuple[int, Any, str | None]:
            async with http.post(
                replica.url + "/widget/v1/messages", json={"text": f"m{n}"}, headers=headers
            ) as answer:
                return answer.status, await answer.json(), answer.headers.get("Retry-After")

        for n in range(BURST):
            status, body, _ = await post((a, b)[n % 2], n)
            assert status in (200, 201), body
        for replica in (a, b):
            status, body, retry_after = await post(replica, BURST)
            assert status == 429, body
            assert body["error"]["code"] == "rate_limited"
            assert retry_after is not None and 1 <= int(retry_after) <= 60
