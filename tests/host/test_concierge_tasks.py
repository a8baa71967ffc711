"""The demo role's agent (`concierge`) on task news of every shape, through the whole gateway
over real HTTP on loopback, on a SQLite file: a task assigned to it over the operator API is
answered with one comment on the task (a task run cannot send messages) and its later news
leaves it silent, never failing; a conversation subscribed by external key to an item a
webhook source then creates is not told of an error, and a later status change is told."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.model.roles import Role
from gateway.app import build_app
from tests.api.conftest import TOKEN
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually
from tests.webhooks.conftest import SECRETS, Hooks, write_sources

ANN = "person:ann"
CONCIERGE = Role.model_validate(
    {
        "name": "concierge",
        "display_name": "Concierge",
        "runtime": {"kind": "builtin", "agent": "concierge"},
    }
)


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Hooks]:
    """The gateway serving the concierge, with the webhook sources of `tests/webhooks`."""
    settings = make_settings(tmp_path, sources_dir=write_sources(tmp_path / "sources"))
    app = build_app(settings, api_token=TOKEN, roles={"concierge": CONCIERGE}, secrets=SECRETS)
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Hooks(server, session)


async def _run_of(api: Hooks, query: str) -> dict[str, Any]:
    """The concierge's run of a thread (`thread=<id>`) or a task (`task=<id>`), once it exists."""

    async def found() -> dict[str, Any] | None:
        runs: list[dict[str, Any]] = (await api.get(f"/api/v1/runs?{query}")).body["runs"]
        return runs[0] if runs else None

    return await eventually(found, what=f"the run of {query}")


async def _turns(api: Hooks, run_id: str, count: int) -> list[dict[str, Any]]:
    async def enough() -> list[dict[str, Any]] | None:
        turns = await api.turns(run_id)
        return turns if len(turns) >= count else None

    return await eventually(enough, what=f"{count} turns of run {run_id}")


def _ran_clean(turn: dict[str, Any]) -> None:
    """One attempt, and it succeeded."""
    assert turn["outcome"] in ("replied", "silent"), turn
    assert [a["error"] for a in turn["attempts"]] == [None], turn
    assert turn["error"] is None, turn


async def test_a_task_assigned_to_the_concierge_gets_one_comment_and_never_fails(
    gateway: Hooks,
) -> None:
    """Created over the operator API with the concierge as its assignee: its task run reads the
    `created` event, answers with one comment saying it cannot do the work (recorded on the
    task as the run's), and a later comment and status change are read without a word."""
    created = await gateway.post(
        "/api/v1/tasks",
        {"author": ANN, "title": "Order six blue chairs", "assignee": "concierge"},
    )
    assert created.status == 201, created.text
    task_id = created.body["id"]

    async def commented() -> list[dict[str, Any]] | None:
        found = [e for e in await gateway.history(task_id) if e["kind"] == "commented"]
        return found or None

    [comment] = await eventually(commented, what="the concierge's comment on its task")
    assert comment["actor"]["kind"] == "run" and comment["actor"]["name"] == "role:concierge"
    assert comment["text"].startswith("Hello, I'm Concierge. I cannot work on ")
    assert '"Order six blue chairs"' in comment["text"]
    run = await _run_of(gateway, f"task={task_id}")
    assert comment["actor"]["run_id"] == run["id"]
    [first] = await _turns(gateway, run["id"], 1)
    _ran_clean(first)
    assert first["outcome"] == "replied"
    assert [e["kind"] for e in first["prompt"]["tasks"][0]["events"]] == ["created"]
    assert {"kind": "thought", "text": f"the task {task_id} was assigned to me"} in first["steps"]

    said = await gateway.post(
        f"/api/v1/tasks/{task_id}/comments", {"author": ANN, "text": "Any news?"}
    )
    assert said.status == 201, said.text
    moved = await gateway.call(
        "PATCH", f"/api/v1/tasks/{task_id}", json={"author": ANN, "status": "in_progress"}
    )
    assert moved.status == 200, moved.text

    async def read_both() -> list[dict[str, Any]] | None:
        turns = await gateway.turns(run["id"])
        kinds = [e["kind"] for t in turns[1:] for e in t["prompt"]["tasks"][0]["events"]]
        return turns if kinds == ["commented", "updated"] else None

    _, *later = await eventually(read_both, what="the comment and the status change read")
    for turn in later:
        _ran_clean(turn)
        assert turn["outcome"] == "silent"
    after = (await gateway.get(f"/api/v1/runs/{run['id']}")).body
    assert after["status"] == "ready" and after["failures"] == 0 and after["last_error"] is None
    history = await gateway.history(task_id)
    assert [e["kind"] for e in history] == ["created", "commented", "commented", "updated"]


async def test_a_conversation_watching_an_item_by_key_hears_no_error_and_then_its_status(
    gateway: Hooks,
) -> None:
    """A conversation subscribed to `tracker:INC-7` before any task refers to it: the delivery
    that creates the task wakes it with the `created` event, which the concierge reads without
    an error (no notice to the person, a silent turn); a later status change is told."""
    thread = (await gateway.thread(ANN, "role:concierge"))["id"]
    await gateway.say(thread, ANN, "hello")
    run_id = (await _run_of(gateway, f"thread={thread}"))["id"]
    await _turns(gateway, run_id, 1)
    watching = await gateway.post(
        f"/api/v1/runs/{run_id}/subscriptions", {"external_key": "tracker:INC-7"}
    )
    assert watching.status == 201 and watching.body["task_id"] is None, watching.text

    created = await gateway.tracker(
        {"key": "INC-7", "title": "Printer on fire", "body": "Third floor."}, delivery="msg_1"
    )
    assert created.status == 200, created.text
    [news] = await gateway.news_turns(run_id, 1)
    [digest] = news["prompt"]["tasks"]
    assert [e["kind"] for e in digest["events"]] == ["created"]
    _ran_clean(news)
    assert news["outcome"] == "silent"
    events = (await gateway.timeline(thread))["events"]
    assert [e for e in events if e["kind"] == "system"] == []  # no "could not answer" notice

    moved = await gateway.tracker({"key": "INC-7", "status": "done"}, delivery="msg_2")
    assert moved.status == 200, moved.text

    async def told() -> list[str] | None:
        page = await gateway.timeline(thread)
        said = [e["text"] for e in page["events"] if e.get("author") == "role:concierge"]
        return said if len(said) >= 2 else None

    greeting, status = await eventually(told, what="the concierge telling of the status")
    assert greeting.startswith("Hello, I'm Concierge.")
    assert status == 'The task "Printer on fire" is now done.'
    _, second = await gateway.news_turns(run_id, 2)
    _ran_clean(second)
    assert second["outcome"] == "replied"
    [call] = [s for s in second["steps"] if s["kind"] == "tool_call"]
    assert call["name"] == "send_message" and call["arguments"] == {"text": status}
    events = (await gateway.timeline(thread))["events"]
    assert [e for e in events if e["kind"] == "system"] == []
