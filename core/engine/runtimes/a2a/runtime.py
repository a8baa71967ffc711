"""The `a2a` runtime: roles backed by remote agents spoken to over A2A (the `a2a-sdk` client).

    runtime:
      kind: a2a
      card_url: https://agents.example.com/support/.well-known/agent-card.json
      auth: {kind: bearer, token: SUPPORT_AGENT_TOKEN}  # or api_key, with header: X-Api-Key

A session starts (or wakes) by reading the agent card — with the role's credentials, as every
request is sent — and making a client for the interface the card names (JSON-RPC or HTTP+JSON;
A2A 1.0, or 0.3 through the SDK's compatibility layer): it streams (`SendStreamingMessage`,
`message/stream` in 0.3) when the card says the agent can, else sends and waits (`SendMessage`,
`message/send`). The credential is read from the setting the manifest names, put in a header of
the session's HTTP client, and nowhere else: never logged, never in the session's state or the
transcript. A2A agents do not get the gateway's tools (`wants_tools` is false): they answer with
what they are told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import A2AError

from core.engine.runtimes.a2a.session import A2aSession
from core.engine.runtimes.base import AgentError, AgentSession, SessionSpec
from core.model.roles.role import A2aAuth, Role
from core.model.roles.role import A2aRuntime as A2aManifest

TIMEOUT = httpx.Timeout(30.0, connect=10.0, read=None)
"""No read timeout: an agent may think long between two events; the role's `turn_timeout`
bounds the whole turn."""

CARD_TIMEOUT = 30.0
"""Seconds reading the agent card may take."""

BINDINGS: list[str] = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON]


class A2aRuntime:
    wants_tools = False  # A2A agents are not offered the gateway's tools (yet)

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """`secrets`: the values of the settings manifests name, by name."""
        self._secrets = dict(secrets)

    def problem(self, role: Role) -> tuple[str, str] | None:
        manifest = role.runtime
        if not isinstance(manifest, A2aManifest):
            return ("runtime.kind", "the a2a runtime backs only roles of kind a2a")
        if manifest.auth is not None and manifest.auth.token not in self._secrets:
            return ("runtime.auth.token", f"the setting {manifest.auth.token} is not set")
        return None

    async def probe(self, role: Role) -> str:
        """Load the role's agent card (what `rolecall doctor` checks)."""
        manifest = role.runtime
        assert isinstance(manifest, A2aManifest)
        async with httpx.AsyncClient(headers=self._headers(manifest.auth), timeout=TIMEOUT) as http:
            resolver = A2ACardResolver(http, manifest.card_url, agent_card_path="")
            try:
                card = await resolver.get_agent_card(http_kwargs={"timeout": CARD_TIMEOUT})
            except (A2AError, ValueError, httpx.HTTPError) as failure:
                raise AgentError(f"the agent card at {manifest.card_url}: {failure}") from None
        return f"the agent card of {card.name or 'an unnamed agent'} {card.version} loaded"

    async def start(self, spec: SessionSpec) -> AgentSession:
        return await self._open(spec, None)

    async def resume(self, spec: SessionSpec, state: Mapping[str, Any]) -> AgentSession:
        return await self._open(spec, state)

    async def _open(self, spec: SessionSpec, state: Mapping[str, Any] | None) -> AgentSession:
        manifest = A2aManifest.model_validate(dict(spec.options))
        http = httpx.AsyncClient(headers=self._headers(manifest.auth), timeout=TIMEOUT)
        try:
            resolver = A2ACardResolver(http, manifest.card_url, agent_card_path="")
            card = await resolver.get_agent_card(http_kwargs={"timeout": CARD_TIMEOUT})
            config = ClientConfig(
                httpx_client=http, streaming=True, supported_protocol_bindings=BINDINGS
            )
            client = ClientFactory(config).create(card)
        except (A2AError, ValueError) as failure:
            await http.aclose()
            raise AgentError(f"the agent card at {manifest.card_url}: {failure}") from failure
        except BaseException:
            await http.aclose()
            raise
        where = card.name or manifest.card_url
        streaming = card.capabilities.streaming
        return A2aSession(spec, client, http, where=where, streaming=streaming, state=state)

    def _headers(self, auth: A2aAuth | None) -> dict[str, str]:
        if auth is None:
            return {}
        secret = self._secrets.get(auth.token)
        if secret is None:
            raise AgentError(f"the setting {auth.token} is not set")
        if auth.kind == "bearer":
            return {"Authorization": f"Bearer {secret}"}
        return {auth.header: secret}
