"""GitHub deliveries over real HTTP: a signed comment on a watched issue wakes the conversation
once, however often GitHub delivers it; a bad signature stores nothing; a subscription by the
issue's key before the gateway has a task for it is woken by the first event about the issue."""

from __future__ import annotations

from tests.webhooks.conftest import (
    Hooks,
    comment_event,
    encode,
    github_headers,
    issues_event,
)

ITEM = "github:acme/app#7"


async def test_a_signed_comment_on_a_watched_issue_wakes_the_conversation_once(
    hooks: Hooks,
) -> None:
    _, run_id = await hooks.watching_run("person:ann")
    opened = await hooks.github(issues_event("opened"), event="issues")
    assert opened.status == 200, opened.text
    task = opened.body["task"]
    assert task["external"] == {"source": "github", "key": "acme/app#7",
                                "url": "https://github.com/acme/app/issues/7"}  # fmt: skip
    assert opened.body["events"][0]["actor"] == {"kind": "source", "name": "gh"}
    watched = await hooks.post(f"/api/v1/runs/{run_id}/subscriptions", {"external_key": ITEM})
    assert watched.status == 201, watched.text
    assert watched.body == {"task_id": task["id"], "external_key": ITEM, "subscribed": True,
                            "new": True}  # fmt: skip

    body = encode(comment_event("Fixed by #8, please check."))
    headers = github_headers(body, event="issue_comment", delivery="gh-delivery-1")
    commented = await hooks.deliver("gh", body, headers)
    assert commented.status == 200, commented.text
    assert commented.body["duplicate"] is False
    [news] = await hooks.news_turns(run_id, 1)
    [digest] = news["prompt"]["tasks"]
    assert digest["id"] == task["id"]
    [event] = digest["events"]
    assert event["kind"] == "commented" and event["by"] == "gh"  # the source
    assert event["text"] == "octocat: Fixed by #8, please check."
    assert news["outcome"] == "silent"  # echo says nothing on news

    again = await hooks.deliver("gh", body, headers)  # GitHub's redelivery
    assert again.status == 200, again.text
    assert again.body["duplicate"] is True and again.body["events"] == []
    assert [e["kind"] for e in await hooks.history(task["id"])] == ["created", "commented"]
    # a later comment wakes the next turn, which is told of that comment alone: the
    # redelivery woke none in between
    later = encode(comment_event("Checked, thanks."))
    headers = github_headers(later, event="issue_comment", delivery="gh-delivery-2")
    assert (await hooks.deliver("gh", later, headers)).status == 200
    first, second = await hooks.news_turns(run_id, 2)
    assert first == news
    [digest] = second["prompt"]["tasks"]
    assert [e["text"] for e in digest["events"]] == ["octocat: Checked, thanks."]


async def test_a_subscription_by_key_is_woken_by_the_first_event_about_the_issue(
    hooks: Hooks,
) -> None:
    _, run_id = await hooks.watching_run("person:ann")
    waiting = await hooks.post(f"/api/v1/runs/{run_id}/subscriptions", {"external_key": ITEM})
    assert waiting.status == 201, waiting.text
    assert waiting.body["task_id"] is None
    listed = await hooks.get(f"/api/v1/runs/{run_id}/subscriptions")
    assert listed.body == {"tasks": [], "awaiting": [ITEM]}

    reply = await hooks.github(comment_event("Any news?", state="closed"), event="issue_comment")
    assert reply.status == 200, reply.text
    task = reply.body["task"]
    assert task["status"] == "done"  # made from the issue the comment event carries
    [news] = await hooks.news_turns(run_id, 1)
    [digest] = news["prompt"]["tasks"]
    assert digest["id"] == task["id"] and digest["status"] == "done"
    assert [e["kind"] for e in digest["events"]] == ["created", "updated", "commented"]
    listed = await hooks.get(f"/api/v1/runs/{run_id}/subscriptions")
    assert [t["id"] for t in listed.body["tasks"]] == [task["id"]]
    assert listed.body["awaiting"] == []


async def test_an_agent_subscribes_by_key_with_its_own_tool(hooks: Hooks) -> None:
    _, run_id = await hooks.watching_run("person:ann")
    token = (await hooks.post(f"/api/v1/runs/{run_id}/token")).body["token"]
    tool = "/api/v1/tools/subscribe"
    called = await hooks.post(tool, {"external_key": "github:acme/app#9"}, token=token)
    assert called.status == 200, called.text
    assert called.body["result"] == {"task_id": None, "external_key": "github:acme/app#9",
                                     "subscribed": True, "new": True}  # fmt: skip
    (await hooks.post(tool, {"external_key": "acme/app#9"}, token=token)).error(
        422, "invalid_external_key"
    )
    (await hooks.post(tool, {}, token=token)).error(422, "invalid_argument")
    both = {"task_id": "t", "external_key": "github:acme/app#9"}
    (await hooks.post(tool, both, token=token)).error(422, "invalid_argument")

    reply = await hooks.github(issues_event("opened", number=9), event="issues")
    assert reply.status == 200, reply.text
    [news] = await hooks.news_turns(run_id, 1)
    assert news["prompt"]["tasks"][0]["events"][0]["kind"] == "created"
    gone = await hooks.post("/api/v1/tools/unsubscribe", {"external_key": "github:acme/app#9"},
                            token=token)  # fmt: skip
    assert gone.body["result"]["was"] is True
    assert gone.body["result"]["task_id"] == reply.body["task"]["id"]


async def test_a_tampered_or_unsigned_delivery_is_refused_and_nothing_is_stored(
    hooks: Hooks,
) -> None:
    body = encode(issues_event("opened"))
    headers = github_headers(body, event="issues", delivery="gh-delivery-2")
    tampered = body.replace(b"Door sticks", b"Door opens")
    (await hooks.deliver("gh", tampered, headers)).error(401, "invalid_signature")
    unsigned = {k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}
    (await hooks.deliver("gh", body, unsigned)).error(401, "invalid_signature")
    wrong = github_headers(body, event="issues", delivery="gh-delivery-2", secret="not-the-secret")
    (await hooks.deliver("gh", body, wrong)).error(401, "invalid_signature")
    assert (await hooks.get("/api/v1/tasks")).body["tasks"] == []

    accepted = await hooks.deliver("gh", body, headers)  # the id was not recorded: it acts now
    assert accepted.status == 200 and accepted.body["duplicate"] is False


async def test_pings_and_other_events_are_answered_and_do_nothing(hooks: Hooks) -> None:
    ping = await hooks.github({"zen": "Practicality beats purity.", "hook_id": 1}, event="ping")
    assert ping.status == 200, ping.text
    assert ping.body["ignored"].startswith("ping") and ping.body["task"] is None
    push = await hooks.github({"ref": "refs/heads/main"}, event="push")
    assert push.status == 200 and "push" in push.body["ignored"]
    edited = await hooks.github(comment_event("typo") | {"action": "edited"}, event="issue_comment")
    assert edited.status == 200 and edited.body["ignored"]
    assert (await hooks.get("/api/v1/tasks")).body["tasks"] == []


async def test_a_payload_that_does_not_map_is_422_with_the_reason(hooks: Hooks) -> None:
    broken = issues_event("opened")
    del broken["issue"]["number"]
    reply = await hooks.github(broken, event="issues", delivery="gh-broken")
    assert "issue.number" in reply.error(422, "unmappable_payload")
    body = b"{not json"
    headers = github_headers(body, event="issues", delivery="gh-not-json")
    (await hooks.deliver("gh", body, headers)).error(400, "invalid_json")
    body = encode(issues_event("opened"))
    headers = github_headers(body, event="issues", delivery="x")
    del headers["X-GitHub-Delivery"]
    assert "X-GitHub-Delivery" in (await hooks.deliver("gh", body, headers)).error(
        400, "missing_header"
    )
