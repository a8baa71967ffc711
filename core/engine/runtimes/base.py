"""The runtime interface: what the run host asks of whatever backs a role.

    runtime = runtimes.for_role(role)              # one per role
    session = await runtime.start(spec)            # a new session (its first turn is the opening)
    session = await runtime.resume(spec, state)    # wake a session that was put to sleep
    async for update in session.prompt(prompt, tools):
        ...                                        # Reply, Step, ToolCall — as they happen
    state = session.snapshot()                     # what resuming needs; stored after every turn
    await session.cancel()                         # stop the running turn at once
    await session.close()                          # release everything (idle sleep, shutdown)

Built-in Python agents implement it now; ACP agent processes, remote A2A agents and
OpenAI-compatible models implement the same interface. An agent sees "the conversation" —
events with their `seq`, authors and text — never storage ids it must carry around.

A runtime signals a failed turn by raising (any exception): the host retries it with backoff,
then marks the run failed. `AgentError` is the named one for failures the agent itself reports.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.model.approvals import ApprovalOption, ToolCallAsked
from core.model.roles.role import ApprovalSettings
from core.model.runs.prompt import Prompt, PromptEvent
from core.model.timeline import ApprovalRequested, ApprovalResolved

# `Prompt` and `PromptEvent` are the model's (what a driver tells a turn); they are part of
# the interface every runtime implements, so they are named here too.
__all__ = [
    "AgentError",
    "AgentSession",
    "Prompt",
    "PromptEvent",
    "Reply",
    "ReplyChunk",
    "Runtime",
    "SessionSpec",
    "Step",
    "ToolAccess",
    "ToolCall",
    "TurnTools",
    "Update",
]


class AgentError(Exception):
    """The agent could not do its turn (the message goes to the transcript, not to people)."""


@dataclass(frozen=True, slots=True)
class ToolAccess:
    """How an agent outside the gateway's process reaches its tools: its run's token (as the
    bearer) and where to send it — the MCP endpoint and the plain HTTP tools."""

    token: str
    mcp_url: str
    http_url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSpec:
    """What a runtime knows when it starts or resumes a session."""

    run_id: str
    session_id: str
    role: str
    display_name: str
    instructions: str
    options: Mapping[str, Any] = field(default_factory=dict)
    """The role's `runtime` section of the manifest."""
    tools: ToolAccess | None = None
    """A token of this run, minted for this session, for runtimes that `wants_tools`."""
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    """Who answers the permission requests the role's policy puts to people, and how long
    they have (the manifest's `approvals`)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole message the agent says to the conversation."""

    text: str


@dataclass(frozen=True, slots=True)
class Step:
    """Something the agent did or streamed that is not a message (for the transcript)."""

    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of a tool the agent made, with its result or error (for the transcript)."""

    name: str
    arguments: Mapping[str, Any]
    result: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReplyChunk:
    """A piece of the reply being written, for channels that show it as it comes (Slack's
    streaming). The whole `Reply` still follows: only it is said in the conversation."""

    text: str


Update = Reply | ReplyChunk | Step | ToolCall
"""What a session streams. `Reply`, `Step` and `ToolCall`, mended, are also the steps of the
turn's transcript (`core.engine.host.transcript`, where the host's own notes join them)."""


class TurnTools(Protocol):
    """What the host offers an agent during a turn (`core.engine.tools`)."""

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Call any tool by its name with JSON arguments (what a model's function call names);
        a bad name or argument raises `InvalidInput`/`NotFound` saying which."""
        ...

    async def peek_pending(self) -> Sequence[PromptEvent]:
        """Messages that arrived during this turn, without consuming them."""
        ...

    async def store(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Remember `payload` (a JSON object) in this conversation."""
        ...

    async def recall(
        self, query: str = "", *, limit: int | None = None, where: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """What the role remembers that this conversation may see, newest first: entries
        `{id, at, payload, here}` matching every word of `query` and the `where` fields."""
        ...

    async def send_message(
        self, text: str, *, context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Say something in this conversation now (it counts as the turn's answer)."""
        ...

    async def retract(self, message_id: str, *, reason: str | None = None) -> dict[str, Any]:
        """Retract one of the role's own earlier messages in this conversation."""
        ...

    async def subscribe(
        self, task_id: str | None = None, *, external_key: str | None = None
    ) -> dict[str, Any]:
        """Watch a task (or another system's item by its external key, `github:o/r#1`, before
        any task refers to it): its changes by others wake this conversation."""
        ...

    async def task_create(
        self, title: str, *, body: str | None = None, assignee: str | None = None
    ) -> dict[str, Any]:
        """Create a task, recorded as made by this run."""
        ...

    async def approve(
        self,
        tool: ToolCallAsked,
        options: Sequence[ApprovalOption],
        *,
        title: str,
        settings: ApprovalSettings,
    ) -> tuple[ApprovalRequested, ApprovalResolved]:
        """Ask the people of this conversation (or the approvers `settings` name, those of them
        who are in it) whether the agent may make the call `tool`, and wait for the answer:
        the turn's timeout does not count meanwhile. Raises `NotAllowed` when nobody could
        answer (a run on a task; none of the approvers is in the conversation)."""
        ...


class AgentSession(Protocol):
    """A session of an agent. One that woke without its memory of the conversation (an ACP
    agent that cannot load its sessions gets a new one) says so with a true `needs_opening`
    attribute: its next prompt is then an opening one
    (`core.engine.host.sessions.needs_opening`)."""

    @property
    def id(self) -> str: ...

    def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]: ...

    async def cancel(self) -> None: ...

    def snapshot(self) -> Mapping[str, Any]: ...

    async def close(self) -> None: ...


class Runtime(Protocol):
    wants_tools: bool
    """True for runtimes whose agents call the tools over MCP or HTTP (and so need a run
    token at every session start); built-in agents call them in process."""

    async def start(self, spec: SessionSpec) -> AgentSession: ...

    async def resume(self, spec: SessionSpec, state: Mapping[str, Any]) -> AgentSession: ...
