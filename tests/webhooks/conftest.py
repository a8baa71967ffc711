"""The gateway with three webhook sources, over real HTTP on loopback, on a SQLite file of its own.

Sources (in a temporary `ROLECALL_SOURCES_DIR`): `gh` (GitHub), `tracker` (Standard Webhooks,
the generic shape) and `forms` (the generic shape, `X-Hub-Signature-256`). Their secrets are
handed to `build_app` as `secrets=`, as `rolecall serve` reads them from the environment. The
role `echo` answers people and says nothing on task news, so a news turn is seen only in the
run's transcript (`GET /api/v1/runs/{id}/turns`: the turn's prompt carries the task digest).

A test signs as the senders do, independently of the gateway's own code: Standard Webhooks with
the `standardwebhooks` package, `X-Hub-Signature-256` with `hmac`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from standardwebhooks import Webhook

from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import ECHO, TOKEN, Api, Reply
from tests.serving import serve
from tests.settings import make_settings
from tests.waiting import eventually

GH_SECRET = "gh-webhook-secret-0123456789"
TRACKER_KEY = b"tracker-signing-key-0123456789ab"
TRACKER_SECRET = "whsec_" + base64.b64encode(TRACKER_KEY).decode()
FORMS_SECRET = "forms-webhook-secret-0123456789"
SECRETS = {
    "GH_WEBHOOK_SECRET": GH_SECRET,
    "TRACKER_WEBHOOK_SECRET": TRACKER_SECRET,
    "FORMS_WEBHOOK_SECRET": FORMS_SECRET,
}
SOURCES = {
    "gh": "name: gh\nkind: github\nsecret: GH_WEBHOOK_SECRET\n",
    "tracker": "name: tracker\nkind: standard\nsecret: TRACKER_WEBHOOK_SECRET\n",
    "forms": "name: forms\nkind: generic\nsecret: FORMS_WEBHOOK_SECRET\n",
}


def write_sources(directory: Path, sources: dict[str, str] = SOURCES) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        (directory / f"{name}.yaml").write_text(text)
    return directory


def issue(number: int = 7, **fields: Any) -> dict[str, Any]:
    return {
        "number": number,
        "title": "Door sticks",
        "body": "It squeaks too.",
        "html_url": f"https://github.com/acme/app/issues/{number}",
        "state": "open",
        "state_reason": None,
    } | fields


def issues_event(action: str, **fields: Any) -> dict[str, Any]:
    return {"action": action, "issue": issue(**fields), "repository": {"full_name": "acme/app"}}


def comment_event(text: str, login: str = "octocat", **fields: Any) -> dict[str, Any]:
    return issues_event("created", **fields) | {"comment": {"body": text, "user": {"login": login}}}


def github_headers(
    body: bytes, *, event: str, delivery: str, secret: str = GH_SECRET
) -> dict[str, str]:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={signature}",
    }


def standard_headers(
    body: bytes,
    *,
    delivery: str,
    at: datetime | None = None,
    keys: tuple[bytes, ...] = (TRACKER_KEY,),
) -> dict[str, str]:
    """Signed with each key (a sender rotating its key signs with the old and the new one)."""
    at = at or datetime.now(UTC)
    signatures = [Webhook(key).sign(delivery, at, body.decode()) for key in keys]
    return {
        "Content-Type": "application/json",
        "webhook-id": delivery,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
    }


def forms_headers(body: bytes, *, delivery: str) -> dict[str, str]:
    signature = hmac.new(FORMS_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": f"sha256={signature}", "X-Delivery-Id": delivery}


def new_id() -> str:
    return str(uuid.uuid4())


def encode(payload: Any) -> bytes:
    return json.dumps(payload).encode()


class Hooks(Api):
    """The operator API plus deliveries to `/hooks/{source}`."""

    async def deliver(self, source: str, body: bytes, headers: dict[str, str]) -> Reply:
        return await self.call("POST", f"/hooks/{source}", data=body, token=None, headers=headers)

    async def github(self, payload: Any, *, event: str, delivery: str | None = None) -> Reply:
        body = encode(payload)
        headers = github_headers(body, event=event, delivery=delivery or new_id())
        return await self.deliver("gh", body, headers)

    async def tracker(self, payload: Any, *, delivery: str | None = None, **kw: Any) -> Reply:
        body = encode(payload)
        return await self.deliver(
            "tracker", body, standard_headers(body, delivery=delivery or new_id(), **kw)
        )

    async def watching_run(self, person: str) -> tuple[str, str]:
        """A conversation of `person` with echo whose run exists: (thread id, run id)."""
        thread = (await self.thread(person, "role:echo"))["id"]
        await self.say(thread, person, "hello")
        runs = await eventually(
            lambda: self._runs(thread), what=f"the run of {person}'s conversation"
        )
        await eventually(lambda: self._turns(runs[0]["id"], 1), what="the greeting's turn")
        return thread, runs[0]["id"]

    async def _runs(self, thread: str) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await self.get(f"/api/v1/runs?thread={thread}")).body["runs"]
        return runs

    async def _turns(self, run_id: str, count: int) -> list[dict[str, Any]] | None:
        turns: list[dict[str, Any]] = (await self.get(f"/api/v1/runs/{run_id}/turns")).body["turns"]
        return turns if len(turns) >= count else None

    async def turns(self, run_id: str) -> list[dict[str, Any]]:
        return await self._turns(run_id, 0) or []

    async def news_turns(self, run_id: str, count: int) -> list[dict[str, Any]]:
        """The run's turns woken by task news, once there are `count` of them."""

        async def enough() -> list[dict[str, Any]] | None:
            news = [t for t in await self.turns(run_id) if t["cause"] == "news"]
            return news if len(news) >= count else None

        return await eventually(enough, what=f"{count} news turns of run {run_id}")

    async def history(self, task_id: str) -> list[dict[str, Any]]:
        reply = await self.get(f"/api/v1/tasks/{task_id}")
        assert reply.status == 200, reply.text
        history: list[dict[str, Any]] = reply.body["history"]
        return history


def old(minutes: int) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=minutes)


@pytest.fixture
def sources_dir(tmp_path: Path) -> Path:
    return write_sources(tmp_path / "sources")


@pytest.fixture
def hook_settings(tmp_path: Path, sources_dir: Path) -> Settings:
    return make_settings(tmp_path, sources_dir=sources_dir)


@pytest.fixture
async def hooks(hook_settings: Settings) -> AsyncIterator[Hooks]:
    app = build_app(hook_settings, api_token=TOKEN, roles={"echo": ECHO}, secrets=SECRETS)
    async with serve(app) as server, aiohttp.ClientSession() as session:
        yield Hooks(server, session)
