"""One session with an ACP agent: its process, the agent's session in it, its turns.

- **Opening** (`open`, by the runtime): `initialize`; then `session/load` of the agent's earlier
  session when there is one and the agent can load (its capabilities say so), else
  `session/new`. Either way the session's MCP servers hold ours — `rolecall`, over HTTP, with
  this session's run token as the bearer — when the agent takes MCP over HTTP. A session opened
  anew says so (`needs_opening`): the host then makes its next prompt an opening one, carrying
  the recent conversation, as for any session's first turn.
- **A turn** (`prompt`) is one `session/prompt` with the turn rendered as text (`render.py`); its
  `session/update`s become the turn's updates as they come (`updates.py`), and a prompt that
  fails still yields what it had begun before its error is raised. The agent's
  permission requests are answered by the role's policy (`core.model.roles.permissions`):
  allowed, refused, or put to the people of the conversation as an approval, the turn waiting
  for the answer (`TurnTools.approve`); each is noted in the transcript. Updates that come
  outside a turn (`session/load` replays the history) are dropped.
- **Cancel** sends `session/cancel` and gives the agent a moment to end its prompt.
- **Close** ends the connection, then the process, and gives the role's process slot back. The
  host closes a session at idle sleep, after a failed or cancelled attempt, and when it stops.
- **Snapshot**: the agent's session id — what `session/load` takes.

A failure is an `AgentError` that says what happened: the process died (its exit code and the
end of its stderr), wrote what is not JSON-RPC or a line too long, or the agent answered with an
error. Time is the host's: an attempt runs under the role's `turn_timeout`, and the host closes
the session of an attempt that ran out of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar, cast

from acp import PROTOCOL_VERSION, Client, RequestError, connect_to_agent, text_block
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    SseMcpServer,
    ToolCallUpdate,
)
from pydantic import ValidationError

from core.engine.runtimes.acp.policy import choose, names_in, offered
from core.engine.runtimes.acp.process import AgentProcess
from core.engine.runtimes.acp.render import MCP_SERVER, render
from core.engine.runtimes.acp.updates import TurnLog
from core.engine.runtimes.base import AgentError, Prompt, SessionSpec, Step, TurnTools, Update
from core.model.approvals import Outcome, ToolCallAsked, shown_arguments
from core.model.errors import NotAllowed
from core.model.roles.permissions import Asked, Policy, decide
from core.model.values import clean_text

T = TypeVar("T")
log = logging.getLogger("rolecall.acp")

try:
    _VERSION = version("rolecall")
except PackageNotFoundError:  # running from a checkout that is not installed
    _VERSION = "0"

_CLIENT = Implementation(name="rolecall", title="Rolecall", version=_VERSION)
_CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
)
"""We offer the agent no file system and no terminal of ours: it works in its own directory
with its own tools."""

_AUTH_REQUIRED = -32000

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

_END = object()


_NO_SUCH_OPTION = " (the agent offered no such option: answered cancelled)"


def _if_none(chosen: str | None) -> str:
    return _NO_SUCH_OPTION if chosen is None else ""


def _response(chosen: str | None) -> RequestPermissionResponse:
    """The agent's option `chosen`; none: "cancelled", which agents take as a refusal."""
    if chosen is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))


@dataclass(frozen=True, slots=True)
class _Asking:
    """A permission request to put to people, handed from the agent's request to the turn."""

    asked: Asked
    tool_call: ToolCallUpdate
    options: Sequence[PermissionOption]
    answer: asyncio.Future[str | None]
    """The agent's option chosen (None: "cancelled")."""


class Refused(AgentError):
    """The agent answered a request with a JSON-RPC error."""


class AcpSession:
    def __init__(
        self,
        spec: SessionSpec,
        process: AgentProcess,
        *,
        cwd: Path,
        policy: Policy,
        grace: float,
        release: Callable[[], None],
    ) -> None:
        self._spec = spec
        self._process = process
        self._cwd = cwd
        self._policy = policy
        self._grace = grace
        self._release = release
        self._agent_session: str | None = None
        self.needs_opening = False
        """The agent's session is new though ours is not: the next prompt must open it."""
        self._notes: list[str] = []
        """What happened while opening, for the next turn's transcript."""
        self._turn: asyncio.Queue[object] | None = None
        self._prompting: asyncio.Task[Any] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._conn = connect_to_agent(cast(Client, _Client(self)), process.transport)

    @property
    def id(self) -> str:
        return self._spec.session_id

    @property
    def pid(self) -> int:
        return self._process.pid

    # --- opening ----------------------------------------------------------------------------

    async def open(self, earlier: str | None) -> None:
        """Initialise the agent and load its session `earlier`, or open a new one."""
        started = await self._call(
            "initialize",
            self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=_CAPABILITIES,
                client_info=_CLIENT,
            ),
        )
        if started.protocol_version != PROTOCOL_VERSION:
            raise AgentError(
                f"the agent speaks ACP version {started.protocol_version}; the gateway speaks "
                f"version {PROTOCOL_VERSION}"
            )
        capabilities = started.agent_capabilities or AgentCapabilities()
        servers = self._servers(capabilities)
        cwd = str(self._cwd)
        if earlier is not None and capabilities.load_session:
            try:
                await self._call(
                    "session/load",
                    self._conn.load_session(cwd=cwd, session_id=earlier, mcp_servers=servers),
                )
            except Refused as refused:
                self._notes.append(f"the agent could not load its session: {refused}")
            else:
                self._agent_session = earlier
                return
        created = await self._call(
            "session/new", self._conn.new_session(cwd=cwd, mcp_servers=servers)
        )
        self._agent_session = created.session_id
        self.needs_opening = True
        if earlier is not None:
            self._notes.append(
                f"a new agent session was opened ({created.session_id}): the agent does not "
                "keep its sessions, so this prompt carries the recent conversation"
            )

    def _servers(self, capabilities: AgentCapabilities) -> list[McpServer]:
        access = self._spec.tools
        if access is None:
            return []
        mcp = capabilities.mcp_capabilities
        if mcp is None or not mcp.http:
            self._notes.append(
                "the agent does not take MCP servers over HTTP: it works without the gateway's "
                "tools (its answers are still posted)"
            )
            return []
        bearer = HttpHeader(name="Authorization", value=f"Bearer {access.token}")
        return [HttpMcpServer(type="http", name=MCP_SERVER, url=access.mcp_url, headers=[bearer])]

    # --- turns ------------------------------------------------------------------------------

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        """One `session/prompt`: its updates as they come, then what is left at its end.
        (`tools` are for agents in the gateway's process; this one calls them over MCP.)"""
        if self._closing is not None or self._agent_session is None:
            raise AgentError("the session with the agent is closed")
        if not self._process.running:
            raise AgentError(await self._process.why_it_ended(wait=0))
        for note in self._notes:
            yield Step("note", note)
        self._notes.clear()
        queue: asyncio.Queue[object] = asyncio.Queue()
        turn = TurnLog()
        sent = self._conn.prompt(
            session_id=self._agent_session,
            prompt=[text_block(render(prompt, display_name=self._spec.display_name))],
        )
        self._turn = queue
        self._prompting = asyncio.ensure_future(sent)
        self._prompting.add_done_callback(lambda _: queue.put_nowait(_END))
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, Step):
                    yield item
                    continue
                if isinstance(item, _Asking):
                    # asked here, in the turn's own task: the turn's cancel, timeout or the
                    # host's stop reach the wait (`core.engine.approvals.wait_for_answer`)
                    chosen, note = await self._put_to_people(item, tools)
                    yield Step("permission", note)
                    if not item.answer.done():
                        item.answer.set_result(chosen)
                    continue
                for update in turn.take(item):
                    yield update
            answered = await self._call("session/prompt", self._prompting)
        except Exception:  # the attempt fails: what the agent had begun is its transcript's
            for update in turn.unfinished():
                yield update
            raise
        else:
            self.needs_opening = False
            for update in turn.end(answered.stop_reason):
                yield update
        finally:
            self._turn = None  # an abandoned prompt is the business of `cancel` and `close`

    def on_update(self, session_id: str, update: Any) -> None:
        if self._turn is not None and session_id == self._agent_session:
            self._turn.put_nowait(update)

    async def on_permission(
        self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> RequestPermissionResponse:
        asked = Asked(
            kind=tool_call.kind, title=tool_call.title, names=names_in(tool_call.field_meta)
        )
        decision = decide(self._policy, asked)
        queue = self._turn
        if decision == "ask" and queue is not None:
            asking = _Asking(asked, tool_call, options, asyncio.get_running_loop().create_future())
            queue.put_nowait(asking)
            return _response(await asking.answer)
        theirs = [(option.option_id, option.kind) for option in options]
        chosen = choose(decision == "allow", theirs)
        said = "allowed" if decision == "allow" else "refused"
        note = f"{asked.described}: {said} by the role's permissions"
        if decision == "ask":
            note = f"{asked.described}: refused: asked outside a turn, with nobody to ask"
        if chosen is None:
            note += _NO_SUCH_OPTION
        if queue is not None:
            queue.put_nowait(Step("permission", note))
        return _response(chosen)

    async def _put_to_people(self, asking: _Asking, tools: TurnTools) -> tuple[str | None, str]:
        """The agent's option the people chose (its refusal when nobody answered in time, or
        nobody could be asked), and the transcript's note of it."""
        asked, tool_call, options = asking.asked, asking.tool_call, asking.options
        refuse = choose(False, [(option.option_id, option.kind) for option in options])
        made = offered([(option.option_id, option.name, option.kind) for option in options])
        call = ToolCallAsked(
            name=clean_text(asked.described), arguments=shown_arguments(tool_call.raw_input)
        )
        try:
            approval, resolved = await tools.approve(
                call,
                [option for option, _ in made.values()],
                title=clean_text(tool_call.title or f"Use {asked.described}"),
                settings=self._spec.approvals,
            )
        except NotAllowed as nobody:
            return refuse, f"{asked.described}: refused: {nobody}" + _if_none(refuse)
        except Exception as error:  # the question could not be stored: fail closed
            log.warning("a permission request could not be put to people: %s", error)
            note = f"{asked.described}: refused: the people could not be asked ({error})"
            return refuse, note + _if_none(refuse)
        note = f"{asked.described}: asked the people (approval {approval.id}): "
        note += resolved.resolution.says()
        if resolved.outcome is Outcome.ANSWERED and resolved.option is not None:
            return made[resolved.option.id][1], note
        return refuse, note + _if_none(refuse)

    async def cancel(self) -> None:
        """Tell the agent to stop its prompt, and give it a moment to do so."""
        if self._agent_session is None or self._closing is not None:
            return
        with contextlib.suppress(Exception):
            await self._conn.cancel(session_id=self._agent_session)
        prompting = self._prompting
        if prompting is not None and not prompting.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._grace):
                    await asyncio.wait({prompting})

    def snapshot(self) -> Mapping[str, Any]:
        return {"agent_session": self._agent_session} if self._agent_session else {}

    # --- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """End the process and give its slot back, once. A caller cancelled meanwhile (the
        host stopping while a session goes to sleep) still waits for the end — bounded by the
        grace periods — so that no agent process outlives the host."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shut_down())
        try:
            await asyncio.shield(self._closing)
        except asyncio.CancelledError:
            await asyncio.wait({self._closing})
            raise

    async def _shut_down(self) -> None:
        try:
            if self._prompting is not None:
                if not self._prompting.done():
                    self._prompting.cancel()
                    await asyncio.wait({self._prompting})
                if not self._prompting.cancelled():
                    self._prompting.exception()  # an abandoned prompt's end is nobody's news
            with contextlib.suppress(Exception):
                await self._conn.close()
            await self._process.stop(self._grace)
        finally:
            self._release()

    # --- requests ---------------------------------------------------------------------------

    async def _call(self, what: str, request: Awaitable[T]) -> T:
        """Await a request to the agent; its failure as an `AgentError` that says why."""
        try:
            return await request
        except RequestError as error:
            raise Refused(_refusal(what, error)) from None
        except ConnectionError:
            raise AgentError(f"{what}: {await self._process.why_it_ended()}") from None
        except ValidationError as error:
            raise AgentError(f"{what}: the agent's answer is not valid ACP: {error}") from None


async def introduce(process: AgentProcess, *, grace: float) -> str:
    """Ask a freshly started agent `initialize` alone and stop it: who it says it is, for
    `rolecall doctor`; an `AgentError` saying why it did not answer as an ACP agent."""
    conn = connect_to_agent(cast(Client, _Silent()), process.transport)
    try:
        started = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=_CAPABILITIES,
            client_info=_CLIENT,
        )
    except RequestError as error:
        raise Refused(_refusal("initialize", error)) from None
    except ConnectionError:
        raise AgentError(f"initialize: {await process.why_it_ended()}") from None
    except ValidationError as error:
        raise AgentError(f"initialize: the agent's answer is not valid ACP: {error}") from None
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
        await process.stop(grace)
    if started.protocol_version != PROTOCOL_VERSION:
        raise AgentError(
            f"the agent speaks ACP version {started.protocol_version}; the gateway speaks "
            f"version {PROTOCOL_VERSION}"
        )
    info = started.agent_info
    named = f"{info.name} {info.version}" if info is not None else "the agent"
    return f"{named} answered initialize (ACP version {started.protocol_version})"


class _Silent:
    """The client side of an `introduce`: the agent has nothing to ask of us before a session."""


def _refusal(what: str, error: RequestError) -> str:
    said = f"the agent answered {what} with error {error.code}: {error}"
    if error.data:
        said += f" {json.dumps(error.data, default=str)[:500]}"
    if error.code == _AUTH_REQUIRED:
        said += (
            " — it needs to be authenticated: give it its API key (the manifest's `secrets`) or "
            "log it in on this machine as the gateway's user"
        )
    return said


class _Client:
    """What the agent may ask of us: to hear its session's updates, and permission. Everything
    else (files, terminals) is refused as unknown: we do not offer it."""

    def __init__(self, session: AcpSession) -> None:
        self._session = session

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._session.on_update(session_id, update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        return await self._session.on_permission(tool_call, options)
