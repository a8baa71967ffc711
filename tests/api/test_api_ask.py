"""The `ask` tool over HTTP behind a run token: the question is an approval in the conversation,
the call waits for the first answer (or the expiry, a no), and a run that asks again what it
asked earlier in the same turn gets that approval back instead of asking the people twice."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

import aiohttp

from channels.edge.requests import DATABASE_KEY
from core.model.approvals import YES_NO, ApprovalRequest
from core.model.participants import Address
from core.storage.database import Database, open_database
from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import ECHO, TOKEN, Api, Reply
from tests.api.test_api_tools import _conversation, _tool
from tests.serving import serve
from tests.waiting import eventually


def _db(api: Api) -> Database:
    return api.server.app[DATABASE_KEY]


async def _pending(api: Api, thread: str) -> list[Any]:
    return [r for r, _ in await _db(api).approvals.of_thread(thread, pending=True)]  # type: ignore[arg-type]


async def _ask(api: Api, token: str, arguments: dict[str, Any]) -> asyncio.Task[Reply]:
    return asyncio.create_task(_tool(api, token, "ask", arguments))


async def test_ask_waits_for_the_first_answer_and_says_who_gave_it(gateway: Api) -> None:
    thread, run_id, token = await _conversation(gateway, "person:ann")
    asking = await _ask(
        gateway,
        token,
        {
            "question": "Deploy to production?",
            "details": "v2.3, 14 commits",
            "options": ["Deploy", "Not now"],
        },
    )
    [request] = await eventually(lambda: _pending(gateway, thread), what="the question")
    assert request.title == "Deploy to production?" and request.run_id == run_id
    assert [o.id for o in request.options] == ["deploy", "not-now"]
    assert not asking.done()

    await _db(gateway).approvals.answer(request, Address("person:ann"), "deploy", channel="web")
    asked = await asyncio.wait_for(asking, 10)
    assert asked.status == 200, asked.text
    assert asked.body["result"] == {
        "approval": request.id,
        "outcome": "answered",
        "answer": "Deploy",
        "option": "deploy",
        "by": "person:ann",
        "channel": "web",
    }
    kinds = [e["kind"] for e in (await gateway.timeline(thread, "?as=person:ann"))["events"]]
    assert kinds[-2:] == ["approval_requested", "approval_resolved"]


async def test_a_question_nobody_answers_expires_and_reads_as_a_no(gateway: Api) -> None:
    thread, _, token = await _conversation(gateway, "person:bob")
    asked = await _tool(gateway, token, "ask", {"question": "Shall I?", "expires_in": 1})
    assert asked.status == 200, asked.text
    result = asked.body["result"]
    assert (result["outcome"], result["answer"], result["by"]) == ("expired", None, None)
    events = (await gateway.timeline(thread))["events"]
    assert events[-1]["kind"] == "approval_resolved" and events[-1]["outcome"] == "expired"
    assert await _pending(gateway, thread) == []


async def test_asking_again_in_the_same_turn_finds_the_first_question(gateway: Api) -> None:
    """As after a restart: the turn is run again, its agent asks again — the people are not
    asked twice, and an answer given meanwhile is the answer."""
    thread, run_id, token = await _conversation(gateway, "person:cy")
    question = {"question": "Restart the web service?", "options": ["Yes", "No"]}
    first = await _ask(gateway, token, question)
    [request] = await eventually(lambda: _pending(gateway, thread), what="the question")
    second = await _ask(gateway, token, question)
    other = await _ask(gateway, token, {**question, "question": "Restart the database?"})

    async def two() -> list[Any] | None:
        found = await _pending(gateway, thread)
        return found if len(found) == 2 else None

    both = await eventually(two, what="the other question")
    assert both[0].id == request.id  # the same question was not asked twice
    await _db(gateway).approvals.answer(request, Address("person:cy"), "yes", channel="api")
    for call in (first, second):
        answered = await asyncio.wait_for(call, 10)
        assert answered.body["result"]["approval"] == request.id
        assert answered.body["result"]["answer"] == "Yes"
    assert not other.done()
    await _db(gateway).approvals.answer(both[1], Address("person:cy"), "no", channel="api")
    assert (await asyncio.wait_for(other, 10)).body["result"]["answer"] == "No"

    # Answered while nobody waited (the run's replica was down): asking again is answered at once.
    db = _db(gateway)
    lone = await db.approvals.request(
        thread,  # type: ignore[arg-type]
        run_id,
        Address("role:echo"),
        ApprovalRequest(
            title="Book the room?",
            description=None,
            options=YES_NO,
            tool=None,
            approvers=(),
            expires_at=db.approvals.now() + timedelta(minutes=5),
        ),
    )
    await db.approvals.answer(lone, Address("person:cy"), "no", channel="slack")
    again = await _tool(gateway, token, "ask", {"question": "Book the room?"})
    assert again.body["result"]["approval"] == lone.id
    assert (again.body["result"]["answer"], again.body["result"]["channel"]) == ("No", "slack")
    assert await _pending(gateway, thread) == []


async def test_bad_questions_are_refused_and_ask_nothing(gateway: Api) -> None:
    thread, _, token = await _conversation(gateway, "person:dee")
    for arguments, code in [
        ({}, "missing_field"),
        ({"question": ""}, "invalid_title"),
        ({"question": "x" * 301}, "title_too_long"),
        ({"question": "Ok?", "options": []}, "invalid_options"),
        ({"question": "Ok?", "options": [str(i) for i in range(7)]}, "invalid_options"),
        ({"question": "Ok?", "options": ["Same", "Same"]}, "invalid_options"),
        ({"question": "Ok?", "options": "Yes"}, "invalid_options"),
        ({"question": "Ok?", "expires_in": 0}, "invalid_expiry"),
        ({"question": "Ok?", "expires_in": "soon"}, "invalid_expiry"),
    ]:
        refused = await _tool(gateway, token, "ask", arguments)
        assert refused.status in (413, 422), (arguments, refused.text)
        assert refused.body["error"]["code"] == code, (arguments, refused.text)
    assert await _pending(gateway, thread) == []


async def test_a_gateway_that_stops_leaves_an_agents_question_open(settings: Settings) -> None:
    """The agent's `ask` call is cut short by the gateway stopping (not by anyone's choice):
    the question stays pending for the turn that runs again after the restart."""
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO})
    serving = serve(app, as_in_production=True)  # the call runs on as under `rolecall serve`
    async with serving as server, aiohttp.ClientSession() as session:
        api = Api(server, session)
        thread, _, token = await _conversation(api, "person:di")
        asking = await _ask(api, token, {"question": "Rotate the keys?"})
        [request] = await eventually(lambda: _pending(api, thread), what="the question")
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asking, 10)  # cut short with the server
    database = await open_database(settings.database)
    try:
        approval = await database.approvals.get(request.id)
        assert approval[1] is None  # still pending: not cancelled by the stop
    finally:
        await database.close()
