"""The generic shape over real HTTP, signed the Standard Webhooks way (`tracker`) and with
`X-Hub-Signature-256` (`forms`): create and update by key, comment, set status; stale timestamps
and wrong signatures refused, several signatures during a key rotation accepted; an unknown
source is 404; a bad source configuration stops start-up naming the file, field and setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.model.roles import ManifestError
from gateway.app import build_app
from tests.api.conftest import ECHO, TOKEN
from tests.cli.conftest import REPO
from tests.settings import make_settings
from tests.webhooks.conftest import (
    SECRETS,
    TRACKER_KEY,
    Hooks,
    encode,
    forms_headers,
    old,
    standard_headers,
    write_sources,
)


async def test_the_generic_shape_creates_updates_and_comments_by_key(hooks: Hooks) -> None:
    _, run_id = await hooks.watching_run("person:ann")
    waiting = await hooks.post(f"/api/v1/runs/{run_id}/subscriptions",
                               {"external_key": "tracker:INC-42"})  # fmt: skip
    assert waiting.status == 201 and waiting.body["task_id"] is None

    created = await hooks.tracker(
        {"key": "INC-42", "url": "https://tracker.example/INC-42", "title": "Printer on fire",
         "body": "Third floor."}, delivery="msg_1",
    )  # fmt: skip
    assert created.status == 200, created.text
    task = created.body["task"]
    assert (task["title"], task["body"], task["status"]) == (
        "Printer on fire",
        "Third floor.",
        "open",
    )
    assert task["external"] == {"source": "tracker", "key": "INC-42",
                                "url": "https://tracker.example/INC-42"}  # fmt: skip
    await hooks.news_turns(run_id, 1)

    updated = await hooks.tracker(
        {"key": "INC-42", "status": "done", "comment": {"author": "dana", "text": "Put out."}},
        delivery="msg_2",
    )
    assert updated.status == 200, updated.text
    assert updated.body["task"]["status"] == "done"
    assert [e["kind"] for e in updated.body["events"]] == ["updated", "commented"]
    news = await hooks.news_turns(run_id, 2)
    events = news[1]["prompt"]["tasks"][0]["events"]
    assert [e["text"] for e in events] == [None, "dana: Put out."]
    assert (await hooks.tracker({"key": "INC-42", "status": "done"}, delivery="msg_2")).body[
        "duplicate"
    ]

    unknown = await hooks.tracker({"key": "INC-43", "status": "done"}, delivery="msg_3")
    assert "tracker:INC-43" in unknown.error(422, "unknown_item")
    (await hooks.tracker({"key": "INC-42", "priority": "high"})).error(422, "unknown_field")


async def test_the_generic_kind_signs_with_x_hub_signature_256(hooks: Hooks) -> None:
    body = encode({"key": "F-1", "title": "Callback request"})
    reply = await hooks.deliver("forms", body, forms_headers(body, delivery="f-1"))
    assert reply.status == 200, reply.text
    assert reply.body["task"]["external"] == {"source": "forms", "key": "F-1"}
    headers = forms_headers(body, delivery="f-2")
    (await hooks.deliver("forms", body + b" ", headers)).error(401, "invalid_signature")
    del headers["X-Delivery-Id"]
    (await hooks.deliver("forms", body, headers)).error(400, "missing_header")


async def test_a_stale_timestamp_or_a_wrong_key_is_refused_and_stores_nothing(hooks: Hooks) -> None:
    payload = {"key": "INC-1", "title": "Old news"}
    stale = await hooks.tracker(payload, delivery="msg_old", at=old(minutes=6))
    assert "too old" in stale.error(401, "invalid_signature")
    ahead = await hooks.tracker(payload, delivery="msg_old", at=old(minutes=-6))
    ahead.error(401, "invalid_signature")
    wrong = await hooks.tracker(payload, delivery="msg_old", keys=(b"another-key-0123456789",))
    wrong.error(401, "invalid_signature")
    body = encode(payload)
    headers = standard_headers(body, delivery="msg_old")
    headers["webhook-signature"] = "v1"  # malformed
    (await hooks.deliver("tracker", body, headers)).error(401, "invalid_signature")
    del headers["webhook-signature"]
    (await hooks.deliver("tracker", body, headers)).error(401, "invalid_signature")
    assert (await hooks.get("/api/v1/tasks")).body["tasks"] == []
    fresh = await hooks.tracker(payload, delivery="msg_old")
    assert fresh.status == 200 and fresh.body["duplicate"] is False


async def test_several_signatures_during_a_key_rotation_are_accepted(hooks: Hooks) -> None:
    retired = b"the-old-tracker-key-0123456789ab"
    for keys in ((retired, TRACKER_KEY), (TRACKER_KEY, retired)):
        reply = await hooks.tracker({"key": f"R-{keys[0][:3]!r}", "title": "Rotated"}, keys=keys)
        assert reply.status == 200, reply.text


async def test_an_unknown_source_is_404(hooks: Hooks) -> None:
    body = encode({"key": "k", "title": "t"})
    reply = await hooks.deliver("nobody", body, standard_headers(body, delivery="m"))
    assert "nobody" in reply.error(404, "source_not_found")


# --- start-up ------------------------------------------------------------------------------


def _build(tmp_path: Path, sources: Path, secrets: dict[str, str] = SECRETS) -> None:
    settings = make_settings(tmp_path, sources_dir=sources)
    build_app(settings, api_token=TOKEN, roles={"echo": ECHO}, secrets=secrets)


def test_a_source_whose_secret_is_not_set_stops_start_up(tmp_path: Path) -> None:
    sources = write_sources(tmp_path / "sources")
    with pytest.raises(ManifestError) as stopped:
        _build(tmp_path, sources, {k: v for k, v in SECRETS.items() if k != "GH_WEBHOOK_SECRET"})
    assert stopped.value.message == (
        f"{sources / 'gh.yaml'}: secret: the setting GH_WEBHOOK_SECRET is not set"
    )
    with pytest.raises(ManifestError, match=r"tracker\.yaml: secret: .*whsec_"):
        _build(tmp_path, sources, SECRETS | {"TRACKER_WEBHOOK_SECRET": "not base64!"})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: gh\nkind: gitlab\nsecret: GH_WEBHOOK_SECRET\n", "gh.yaml: kind: Input should be"),
        ("name: gh\nkind: github\nsecret: hunter2\n", "gh.yaml: secret: must be the NAME"),
        ("name: gh\nkind: github\n", "gh.yaml: secret: Field required"),
        ("name: hub\nkind: github\nsecret: GH_WEBHOOK_SECRET\n", "gh.yaml: name: is 'hub'"),
        ("name: gh\nkind: github\nsecret: GH_WEBHOOK_SECRET\nassignees: {bot: nobody}\n",
         "gh.yaml: assignees.bot: no role named 'nobody'"),
        ("name: [\n", "gh.yaml: not valid YAML"),
    ],
)  # fmt: skip
def test_a_bad_source_manifest_stops_start_up_naming_the_file_and_field(
    tmp_path: Path, text: str, problem: str
) -> None:
    sources = write_sources(tmp_path / "sources", {"gh": text})
    with pytest.raises(ManifestError, match=problem.replace(".", r"\.").replace("(", r"\(")):
        _build(tmp_path, sources)


def test_without_a_sources_directory_there_are_no_sources(tmp_path: Path) -> None:
    build_app(make_settings(tmp_path), api_token=TOKEN, roles={"echo": ECHO}, secrets={})
    with pytest.raises(ManifestError, match=r"ROLECALL_SOURCES_DIR: .* is not a directory"):
        _build(tmp_path, tmp_path / "missing")


def test_no_source_is_shipped_so_the_default_start_needs_no_secret() -> None:
    shipped = REPO / "manifests" / "sources"
    assert not shipped.exists() or not [
        p for p in shipped.iterdir() if p.suffix in (".yaml", ".yml")
    ]
