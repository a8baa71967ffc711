"""The `a2a` runtime end to end: the whole gateway on loopback, a role backed by a real A2A agent
(`tests/runtimes/a2a_agent.py`, a2a-sdk's server side under uvicorn) on loopback too.

A person's message becomes one A2A message in the conversation's context (streamed or sent, A2A
1.0 or 0.3); the agent's answer is the role's reply; the next turn, and a session woken after a
restart, stay in the same context; streaming shows the reply as it is written; a failed task
fails the turn with the agent's reason; cancel and a timeout reach the agent's executor; a
question from the agent is the reply and the answer continues its task (or a new one, when the
agent forgot it); the credential goes in the header the manifest says, and nowhere else.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from a2a.types.a2a_pb2 import Artifact, Part, StreamResponse, TaskArtifactUpdateEvent

from channels.edge.requests import DATABASE_KEY, HOST_KEY
from core.engine.host.drafts import Draft, DraftKind
from core.engine.runtimes.a2a.reading import TurnReading
from core.engine.runtimes.a2a.render import render
from core.engine.runtimes.base import Prompt, PromptEvent, ReplyChunk
from core.model.roles import Role
from core.model.roles.manifests import ManifestError
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import TOKEN, Api
from tests.runtimes.a2a_agent import RunningAgent, serve_agent
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

ANN = "person:ann"
SECRET = "t"


def remote(card_url: str, *, turn_timeout: float = 20, **auth: str) -> Role:
    return Role.model_validate(
        {
            "name": "remote",
            "display_name": "Remote",
            "runtime": {
                "kind": "a2a",
                "card_url": card_url,
                "auth": {"token": "A2A_TOKEN", **auth},
            },
            "turn_timeout": turn_timeout,
        }
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(
        tmp_path,
        turn_attempts=2,
        retry_backoff=0.01,
    )


@asynccontextmanager
async def gateway(
    settings: Settings, role: Role, secrets: dict[str, str] | None = None
) -> AsyncIterator[Api]:
    app = build_app(
        settings,
        api_token=TOKEN,
        roles={role.name: role},
        secrets={"A2A_TOKEN": SECRET} if secrets is None else secrets,
    )
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Api(server, session)


async def replies(api: Api, thread_id: str, count: int) -> list[str]:
    async def said() -> list[str] | None:
        page = await api.timeline(thread_id, "?limit=500")
        said = [e["text"] for e in page["events"] if e.get("author") == "role:remote"]
        return said if len(said) >= count else None

    return await eventually(said, what=f"{count} replies by role:remote")


async def notes(api: Api, thread_id: str, count: int) -> list[str]:
    async def said() -> list[str] | None:
        page = await api.timeline(thread_id, "?limit=500")
        said = [e["text"] for e in page["events"] if e["kind"] == "system"]
        return said if len(said) >= count else None

    return await eventually(said, what=f"{count} system notes")


async def run_of(api: Api, thread_id: str) -> dict[str, Any]:
    reply = await api.get(f"/api/v1/runs?thread={thread_id}")
    [run] = reply.body["runs"]
    result: dict[str, Any] = run
    return result


async def turns(api: Api, run_id: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = (await api.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
    return result


def the_context(agent: RunningAgent) -> str:
    [context] = agent.executor.turns
    return context


@pytest.mark.parametrize(
    ("streaming", "legacy"),
    [(True, False), (False, False), (True, True), (False, True)],
    ids=["stream", "send", "stream-a2a-0.3", "send-a2a-0.3"],
)
async def test_each_turn_is_a_message_in_the_conversations_context(
    settings: Settings, streaming: bool, legacy: bool
) -> None:
    async with (
        serve_agent(streaming=streaming, legacy=legacy) as agent,
        gateway(settings, remote(agent.card_url)) as api,
    ):
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")
        [first] = await replies(api, thread["id"], 1)
        context = the_context(agent)
        assert first == f"turn 1 in context {context}"

        await api.say(thread["id"], ANN, "and again")
        assert (await replies(api, thread["id"], 2))[1] == f"turn 2 in context {context}"
        assert agent.executor.turns == {context: 2}

        # What the agent was told: the news, who said it, and that an answer is awaited.
        assert f"{ANN}: hello" in agent.executor.inputs[0]
        assert f"{ANN}: and again" in agent.executor.inputs[1]
        assert "hello" not in agent.executor.inputs[1]
        assert "1 message waits for your answer." in agent.executor.inputs[1]

        run = await run_of(api, thread["id"])
        stored = await api.server.app[DATABASE_KEY].runs.get(run["id"])
        assert stored.session.state == {"context_id": context}
        [turn1, turn2] = await turns(api, run["id"])
        assert turn1["outcome"] == turn2["outcome"] == "replied"
        assert {"kind": "context", "text": f"the agent's context is {context}"} in turn1["steps"]
        assert any(s["kind"] == "status" and s["text"] == "completed" for s in turn2["steps"])

        # Every request, the card's included, carried the role's credential.
        assert agent.headers and all(h["authorization"] == "Bearer t" for h in agent.headers)


async def test_a_session_woken_after_a_restart_goes_on_in_the_same_context(
    settings: Settings,
) -> None:
    async with serve_agent() as agent:
        async with gateway(settings, remote(agent.card_url)) as api:
            thread = await api.thread(ANN, "role:remote")
            await api.say(thread["id"], ANN, "hello")
            await replies(api, thread["id"], 1)
        context = the_context(agent)

        async with gateway(settings, remote(agent.card_url)) as api:
            await api.say(thread["id"], ANN, "still there?")
            said = await replies(api, thread["id"], 2)
            assert said[1] == f"turn 2 in context {context}"
            assert agent.executor.turns == {context: 2}


async def test_streaming_shows_the_reply_as_it_is_written_then_says_it_once(
    settings: Settings,
) -> None:
    async with (
        serve_agent(streaming=True) as agent,
        gateway(settings, remote(agent.card_url)) as api,
    ):
        drafts: list[Draft] = []
        api.server.app[HOST_KEY].watch_drafts(drafts.append)
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")

        [reply] = await replies(api, thread["id"], 1)
        chunks = [d.text for d in drafts if d.kind is DraftKind.CHUNK]
        assert len(chunks) == 5 and "".join(chunks) == reply
        assert [d.kind for d in drafts][-1] is DraftKind.END
        assert DraftKind.ABANDONED not in {d.kind for d in drafts}
        page = await api.timeline(thread["id"])
        assert [e["text"] for e in page["events"] if e.get("author") == "role:remote"] == [reply]


async def test_a_failed_task_fails_the_turn_with_the_agents_reason(settings: Settings) -> None:
    async with serve_agent() as agent, gateway(settings, remote(agent.card_url)) as api:
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")
        await replies(api, thread["id"], 1)
        context = the_context(agent)
        await api.say(thread["id"], ANN, "please fail")

        [notice] = await notes(api, thread["id"], 1)
        assert notice == (
            "Remote could not answer because of an error. Send another message to try again."
        )
        run = await run_of(api, thread["id"])
        assert run["status"] == "failed"
        assert "the agent refuses: it was asked to fail" in run["last_error"]
        [_, turn] = await turns(api, run["id"])
        assert turn["outcome"] == "failed"
        assert len(turn["attempts"]) == 2  # retried, then given up
        assert all("the agent refuses" in a["error"] for a in turn["attempts"])
        assert turn["error"].startswith("AgentError: the agent's task ")
        assert agent.executor.turns == {context: 3}
        assert len(await replies(api, thread["id"], 1)) == 1

        # The run is usable again, in the same context.
        await api.say(thread["id"], ANN, "hello again")
        assert (await replies(api, thread["id"], 2))[1] == f"turn 4 in context {context}"
        assert (await run_of(api, thread["id"]))["status"] == "ready"


async def test_cancel_reaches_the_agent(settings: Settings) -> None:
    async with serve_agent() as agent, gateway(settings, remote(agent.card_url)) as api:
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")
        await replies(api, thread["id"], 1)
        context = the_context(agent)
        await api.say(thread["id"], ANN, "take your time")
        await asyncio.wait_for(agent.executor.working.wait(), 10)
        run = await run_of(api, thread["id"])

        reply = await api.post(f"/api/v1/runs/{run['id']}/cancel")
        assert reply.status == 200, reply.text
        assert reply.body["cancelled"] is True
        await asyncio.wait_for(agent.executor.cancel_seen.wait(), 5)
        assert len(agent.executor.cancelled) == 1

        [notice] = await notes(api, thread["id"], 1)
        assert notice == "Remote's turn was stopped by an operator before it answered."
        [_, turn] = await turns(api, run["id"])
        assert turn["outcome"] == "cancelled"

        await api.say(thread["id"], ANN, "hello again")
        assert (await replies(api, thread["id"], 2))[1] == f"turn 3 in context {context}"


async def test_a_turn_that_times_out_is_cancelled_at_the_agent_then_retried(
    settings: Settings,
) -> None:
    async with (
        serve_agent() as agent,
        gateway(settings, remote(agent.card_url, turn_timeout=1)) as api,
    ):
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "take your time")

        await notes(api, thread["id"], 1)
        run = await run_of(api, thread["id"])
        [turn] = await turns(api, run["id"])
        assert turn["outcome"] == "failed"
        assert [a["error"] for a in turn["attempts"]] == [
            "the turn took longer than the role's turn_timeout"
        ] * 2
        # Each attempt's task was cancelled at the agent before the next attempt began.
        assert len(set(agent.executor.cancelled)) == 2


async def test_a_task_the_agent_cancels_itself_ends_the_turn_without_an_answer(
    settings: Settings,
) -> None:
    async with serve_agent() as agent, gateway(settings, remote(agent.card_url)) as api:
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "never mind")

        [notice] = await notes(api, thread["id"], 1)
        assert notice == "Remote did not answer this time. Send another message to try again."
        run = await run_of(api, thread["id"])
        [turn] = await turns(api, run["id"])
        assert turn["outcome"] == "no_answer" and turn["error"] is None
        assert {"kind": "cancelled", "text": "nothing left to do"} in turn["steps"]
        assert agent.executor.cancelled == []  # nobody asked the agent to


async def test_a_question_from_the_agent_is_the_reply_and_the_answer_continues_its_task(
    settings: Settings,
) -> None:
    async with serve_agent() as agent, gateway(settings, remote(agent.card_url)) as api:
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "which one?")
        [question] = await replies(api, thread["id"], 1)
        assert question == "Which one do you mean, the red or the blue?"
        run = await run_of(api, thread["id"])
        stored = await api.server.app[DATABASE_KEY].runs.get(run["id"])
        assert stored.session.state is not None
        assert set(stored.session.state) == {"context_id", "task_id"}

        await api.say(thread["id"], ANN, "the red one")
        assert (await replies(api, thread["id"], 2))[1] == "you chose red"
        stored = await api.server.app[DATABASE_KEY].runs.get(run["id"])
        assert stored.session.state is not None
        assert set(stored.session.state) == {"context_id"}  # the task is done

        await api.say(thread["id"], ANN, "hello")
        assert (await replies(api, thread["id"], 3))[2].startswith("turn 3 in context ")


async def test_a_task_the_agent_has_forgotten_gives_way_to_a_new_one_in_the_context(
    settings: Settings,
) -> None:
    async with serve_agent() as agent, gateway(settings, remote(agent.card_url)) as api:
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "which one?")
        await replies(api, thread["id"], 1)
        context = the_context(agent)
        port = agent.port

    # The agent restarts and remembers no task; the gateway's session still names its task.
    async with serve_agent(port=port) as agent, gateway(settings, remote(agent.card_url)) as api:
        await api.say(thread["id"], ANN, "the red one")
        assert (await replies(api, thread["id"], 2))[1] == f"turn 1 in context {context}"
        run = await run_of(api, thread["id"])
        [_, turn] = await turns(api, run["id"])
        assert any("cannot go on" in s["text"] for s in turn["steps"] if s["kind"] == "status")


async def test_an_api_key_goes_in_the_header_the_manifest_names(settings: Settings) -> None:
    async with (
        serve_agent(header="X-Api-Key", value=SECRET) as agent,
        gateway(settings, remote(agent.card_url, kind="api_key", header="X-Api-Key")) as api,
    ):
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")
        [reply] = await replies(api, thread["id"], 1)
        assert reply.startswith("turn 1 in context ")
        assert all(h["x-api-key"] == SECRET for h in agent.headers)
        assert not any("authorization" in h for h in agent.headers)


async def test_a_refused_credential_fails_the_turn_without_saying_the_secret(
    settings: Settings,
) -> None:
    async with (
        serve_agent(value="Bearer something-else") as agent,
        gateway(settings, remote(agent.card_url), {"A2A_TOKEN": "wrong-secret-1234"}) as api,
    ):
        thread = await api.thread(ANN, "role:remote")
        await api.say(thread["id"], ANN, "hello")
        await notes(api, thread["id"], 1)
        run = await run_of(api, thread["id"])
        [turn] = await turns(api, run["id"])
        assert turn["outcome"] == "failed" and "401" in turn["error"]
        assert "agent card" in turn["error"]
        everything = str(turn) + str(run)
        assert "wrong-secret-1234" not in everything


def test_a_role_whose_credential_setting_is_not_set_cannot_be_served(settings: Settings) -> None:
    role = remote("http://127.0.0.1:9/.well-known/agent-card.json")
    with pytest.raises(ManifestError, match=r"runtime\.auth\.token: the setting A2A_TOKEN"):
        build_app(settings, api_token=TOKEN, roles={"remote": role}, secrets={})


# --- the pure parts: what the agent is told, and how a stream is read ----------------------


def test_an_opening_prompt_carries_the_conversation_so_far_and_the_news() -> None:
    when = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    recent = [
        PromptEvent(kind="message", id="a", seq=1, at=when, author=ANN, text="hi"),
        PromptEvent(kind="message", id="b", seq=2, at=when, author="role:remote", text="hello"),
    ]
    news = [
        PromptEvent(kind="retraction", id="c", seq=3, at=when, author=ANN, target_seq=1),
        PromptEvent(kind="message", id="d", seq=4, at=when, author=ANN, text="what now?"),
    ]
    task = {
        "id": "t1",
        "title": "Ship it",
        "status": "open",
        "assignee": None,
        "events": [
            {
                "seq": 1,
                "kind": "updated",
                "by": ANN,
                "changes": {"status": {"from": "open", "to": "done"}},
            }
        ],
    }
    prompt = Prompt(
        role="remote",
        instructions="Be brief.",
        news=news,
        pending=1,
        opening=True,
        recent=recent,
        tasks=[task],
    )
    assert render(prompt) == [
        "Your instructions as role:remote:\nBe brief.",
        "The conversation so far:\n#1 person:ann: hi\n#2 role:remote: hello",
        "Task news:\n- Ship it [open] (task t1)\n  #1 updated by person:ann: status: open -> done",
        "New in the conversation:\n#3 person:ann retracted #1\n#4 person:ann: what now?"
        "\n\n1 message waits for your answer.",
    ]


def test_replaced_artifact_text_is_not_drafted_twice() -> None:
    def piece(text: str, *, append: bool) -> StreamResponse:
        artifact = Artifact(artifact_id="a", parts=[Part(text=text)])
        update = TaskArtifactUpdateEvent(
            task_id="t", context_id="c", artifact=artifact, append=append
        )
        return StreamResponse(artifact_update=update)

    reading = TurnReading()
    assert reading.read(piece("Hel", append=False)) == [ReplyChunk("Hel")]
    assert reading.read(piece("lo", append=True)) == [ReplyChunk("lo")]
    assert reading.read(piece("Hello there", append=False)) == [ReplyChunk(" there")]
    assert reading.read(piece("Goodbye", append=False)) == []
    assert reading.context_id == "c" and reading.in_flight == "t"
