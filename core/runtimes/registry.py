"""Which runtime backs a role: chosen by the manifest's `runtime.kind`."""

from __future__ import annotations

from collections.abc import Mapping

from core.roles.role import Role
from core.runtimes.base import Runtime
from core.runtimes.builtin import AGENTS, BuiltinAgent, BuiltinRuntime


class Runtimes:
    def __init__(self, builtin_agents: Mapping[str, type[BuiltinAgent]] = AGENTS) -> None:
        self._builtin = BuiltinRuntime(builtin_agents)
        self._agents = sorted(builtin_agents)

    def problem(self, role: Role) -> tuple[str, str] | None:
        """(field, what is wrong) when this gateway cannot back the role; None when it can."""
        if not self._builtin.knows(role.runtime.agent):
            return (
                "runtime.agent",
                f"no built-in agent named {role.runtime.agent!r}; known: {', '.join(self._agents)}",
            )
        return None

    def for_role(self, role: Role) -> Runtime:
        return self._builtin
