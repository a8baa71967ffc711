"""Which runtime backs a role: chosen by the manifest's `runtime.kind`.

`builtin` is always here. The other kinds (`acp`, `a2a`, `openai`) are runtimes the gateway
builds with what they need from outside the core (the settings a manifest names, where a
conversation's directory is) and hands in as `kinds`; a role whose kind is not among them cannot
be served (`problem` says so, and start-up stops).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from core.engine.runtimes.base import Runtime
from core.engine.runtimes.builtin import AGENTS, BuiltinAgent, BuiltinRuntime
from core.model.roles.role import BuiltinRuntime as BuiltinManifest
from core.model.roles.role import Role


class RuntimeKind(Runtime, Protocol):
    def problem(self, role: Role) -> tuple[str, str] | None:
        """(field, what is wrong) when this runtime cannot back the role; None when it can."""
        ...

    async def probe(self, role: Role) -> str:
        """Reach the role's agent once, as `rolecall doctor` does (an ACP agent answers
        `initialize`, an OpenAI-compatible endpoint lists its models, an A2A agent's card
        loads): what answered; an `AgentError` saying what is wrong."""
        ...


class Runtimes:
    def __init__(
        self,
        builtin_agents: Mapping[str, type[BuiltinAgent]] = AGENTS,
        *,
        kinds: Mapping[str, RuntimeKind] | None = None,
    ) -> None:
        self._builtin = BuiltinRuntime(builtin_agents)
        self._agents = sorted(builtin_agents)
        self._kinds = dict(kinds or {})

    def problem(self, role: Role) -> tuple[str, str] | None:
        """(field, what is wrong) when this gateway cannot back the role; None when it can."""
        runtime = role.runtime
        if isinstance(runtime, BuiltinManifest):
            if not self._builtin.knows(runtime.agent):
                known = ", ".join(self._agents)
                return (
                    "runtime.agent",
                    f"no built-in agent named {runtime.agent!r}; known: {known}",
                )
            return None
        kind = self._kinds.get(runtime.kind)
        if kind is None:
            return ("runtime.kind", f"runtime kind {runtime.kind!r} is not available here")
        return kind.problem(role)

    async def probe(self, role: Role) -> str:
        """What answered for the role's agent (`RuntimeKind.probe`); a built-in agent is here."""
        if isinstance(role.runtime, BuiltinManifest):
            return f"the built-in agent {role.runtime.agent!r} is part of the gateway"
        return await self._kinds[role.runtime.kind].probe(role)

    def for_role(self, role: Role) -> Runtime:
        if isinstance(role.runtime, BuiltinManifest):
            return self._builtin
        return self._kinds[role.runtime.kind]
