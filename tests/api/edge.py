"""The whole gateway at its edge, on each backend: every surface a client can reach, over real HTTP.

`edge` starts `build_app` on 127.0.0.1, served as `rolecall serve` serves it (the `database_url`
fixture: a SQLite file, then the machine's PostgreSQL), with the roles `echo` and `slow`, the
widget's default site, and the three webhook sources of `tests/webhooks/conftest.py`. `Edge` is
the operator API (`Api`) plus deliveries to `/hooks/{source}` (`Hooks`), and:

- `raw(method, path, body, headers)`: send bytes as they are (no JSON encoding of ours), so a
  test exercises the gateway's own parser — `json.dumps(..., ensure_ascii=True)` writes a lone
  surrogate as the escape `\\ud800`, which is what a hostile client sends;
- `run_token(person)`: a conversation of `person` with `echo` and a run token for its run;
- `visitor()`: an anonymous widget session (its `Authorization` header).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any

import aiohttp
import pytest

from gateway.app import build_app
from gateway.settings import Settings
from tests.api.conftest import ECHO, SLOW, TOKEN, Reply
from tests.api.test_api_tools import _conversation
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.webhooks.conftest import SECRETS, Hooks, write_sources


def dumps(value: Any) -> bytes:
    """JSON as a hostile client writes it: ASCII only, lone surrogates as `\\udxxx` escapes."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")


class Edge(Hooks):
    async def raw(
        self,
        method: str,
        path: str,
        body: bytes | IO[bytes] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = TOKEN,
    ) -> Reply:
        sent = {"Content-Type": "application/json", **(headers or {})}
        return await self.call(method, path, data=body, token=token, headers=sent)

    async def run_token(self, person: str) -> tuple[str, str, str]:
        """(thread id, run id, run token) of `person`'s conversation with `echo`."""
        return await _conversation(self, person)

    async def visitor(self) -> dict[str, str]:
        """A new anonymous widget visitor's session, as the headers its calls carry."""
        reply = await self.raw("POST", "/widget/v1/sessions", dumps({"role": "echo"}), token=None)
        assert reply.status == 200, reply.text
        return {"Authorization": f"Bearer {reply.body['session_token']}"}


def edge_settings(tmp_path: Path, database_url: str, **overrides: Any) -> Settings:
    port = free_port()
    return make_settings(
        tmp_path,
        database_url=database_url,
        port=port,
        sources_dir=write_sources(tmp_path / "sources"),
        **({"widget_post_rate": 100_000} | overrides),  # the tests post fast; 429 is not theirs
    )


@pytest.fixture(name="edge")
async def edge_gateway(tmp_path: Path, database_url: str) -> AsyncIterator[Edge]:
    """The gateway at its edge (import `edge_gateway`, ask for `edge`)."""
    settings = edge_settings(tmp_path, database_url)
    app = build_app(settings, api_token=TOKEN, roles={"echo": ECHO, "slow": SLOW}, secrets=SECRETS)
    # the handlers run on when a client goes away, as under `rolecall serve`
    async with (
        serve(app, port=settings.port, as_in_production=True) as server,
        aiohttp.ClientSession() as session,
    ):
        yield Edge(server, session)
