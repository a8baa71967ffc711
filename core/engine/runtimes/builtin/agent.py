"""The built-in runtime: an agent is a Python class; its session lives in the gateway's process.

A `BuiltinAgent` keeps its session's state in `self.state` (JSON values only): that is what is
stored after every turn and handed back when a sleeping session wakes, so a built-in agent
resumes exactly where it was. `delay_ms` in the manifest makes every turn take at least that
long — for tests and benchmarks of slow agents. Cancelling a turn cancels the task running it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from core.engine.runtimes.base import AgentSession, Prompt, SessionSpec, TurnTools, Update


class BuiltinAgent:
    """Subclasses implement `turn`; `state` is theirs to keep (JSON values)."""

    name: ClassVar[str]

    def __init__(self, spec: SessionSpec, state: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.state: dict[str, Any] = dict(state or {})

    def turn(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        raise NotImplementedError


class _Session:
    def __init__(self, spec: SessionSpec, agent: BuiltinAgent, delay: float) -> None:
        self._spec = spec
        self._agent = agent
        self._delay = delay

    @property
    def id(self) -> str:
        return self._spec.session_id

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        if self._delay:
            await asyncio.sleep(self._delay)
        async for update in self._agent.turn(prompt, tools):
            yield update

    async def cancel(self) -> None:
        """Nothing to tell: the host cancels the task that iterates `prompt`."""

    def snapshot(self) -> Mapping[str, Any]:
        return dict(self._agent.state)

    async def close(self) -> None:
        """Nothing to release but memory."""


class BuiltinRuntime:
    """Sessions of built-in agents, chosen by the manifest's `runtime.agent`."""

    wants_tools = False  # they call `RunTools` in process

    def __init__(self, agents: Mapping[str, type[BuiltinAgent]]) -> None:
        self._agents = dict(agents)

    def knows(self, agent: str) -> bool:
        return agent in self._agents

    def _agent(self, spec: SessionSpec, state: Mapping[str, Any] | None) -> AgentSession:
        name = str(spec.options.get("agent"))
        cls = self._agents.get(name)
        if cls is None:
            raise LookupError(f"no built-in agent named {name!r}; known: {sorted(self._agents)}")
        delay = float(spec.options.get("delay_ms", 0) or 0) / 1000
        return _Session(spec, cls(spec, state), delay)

    async def start(self, spec: SessionSpec) -> AgentSession:
        return self._agent(spec, None)

    async def resume(self, spec: SessionSpec, state: Mapping[str, Any]) -> AgentSession:
        return self._agent(spec, state)
