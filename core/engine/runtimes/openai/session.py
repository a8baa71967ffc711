"""Sessions with a model behind an OpenAI-compatible chat-completions endpoint.

A turn, as the session takes it:

1. The turn's messages (the news; on a fresh session's opening turn, the recent conversation
   too) join a working copy of the history (`history.py`).
2. The model is asked with the system message, the history and our tools as function tools;
   its answer streams in (`wire.py`): text pieces become `ReplyChunk`s, and an answer with
   text becomes one `Reply`.
3. If it asked for tool calls, the gateway runs each (`TurnTools.call`): a call that cannot be
   run — unknown tool, arguments that are not a JSON object or that a tool refuses — answers
   the model with its error, as any result would. Every call is a `ToolCall` in the transcript.
   The role's `permissions` (`core.model.roles.permissions`) may refuse a call, or put it to
   the people of the conversation first (`TurnTools.approve`: the turn waits for the answer);
   a call not allowed answers the model "not run: …" and the transcript notes why. Then the
   model is asked again with the results.
4. **The bound**: a turn runs at most `max_tool_calls` calls. When the model asks for more, the
   turn ends there with a `limit` step in the transcript: with what the model said in it (its
   text, or a message it sent with `send_message`), or — if it said nothing — as a failed
   attempt (`AgentError`). Calls it asked for past the bound
   are answered "not run", so the history stays well formed. So a turn asks the model at most
   `max_tool_calls + 1` times.
5. Only a turn that ends well becomes history (bounded, and stored as the session's state by
   the host); a failed attempt leaves the history as it was, and its retry starts over from it.

The API key is read from the settings the runtime was built with, by the name the manifest
gives; it goes into the `Authorization` header and nowhere else (not the state, not the
transcript, not the errors). `max_tool_calls: 0` offers the model no tools at all.

The HTTP connections are shared by all the sessions of the runtime: one aiohttp client,
opened with the first session and closed with the last (sessions are closed at idle sleep and
when the host stops).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from core.engine.runtimes.base import (
    AgentError,
    AgentSession,
    Prompt,
    Reply,
    ReplyChunk,
    SessionSpec,
    Step,
    ToolCall,
    TurnTools,
    Update,
)
from core.engine.runtimes.openai.history import (
    ChatMessage,
    HistoryLimits,
    bounded,
    cut,
    function_tools,
    history_of,
    state_of,
    system_message,
    tool_result_message,
    turn_messages,
)
from core.engine.runtimes.openai.probe import list_models
from core.engine.runtimes.openai.wire import (
    AssistantMessage,
    Endpoint,
    InFlight,
    RequestedCall,
    complete,
)
from core.model.approvals import ALLOW_REJECT, ToolCallAsked, shown_arguments
from core.model.errors import NotAllowed, RolecallError
from core.model.roles.permissions import Asked, Policy, decide
from core.model.roles.role import OpenAIRuntime as Manifest
from core.model.roles.role import Role
from core.model.values import clean_value

_ARGUMENTS_SHOWN = 2_000
"""Characters of unreadable arguments the transcript keeps."""


class _Client:
    """One aiohttp client for the runtime's sessions: opened with the first, closed with the
    last."""

    def __init__(self) -> None:
        self._http: aiohttp.ClientSession | None = None
        self._users = 0

    def take(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30)
            )
        self._users += 1
        return self._http

    async def give_back(self) -> None:
        self._users -= 1
        if self._users <= 0 and self._http is not None:
            http, self._http, self._users = self._http, None, 0
            await http.close()


class ChatSession:
    def __init__(
        self,
        spec: SessionSpec,
        manifest: Manifest,
        endpoint: Endpoint,
        client: _Client,
        history: list[ChatMessage],
        limits: HistoryLimits,
    ) -> None:
        self._spec = spec
        self._manifest = manifest
        self._endpoint = endpoint
        self._client = client
        self._http = client.take()
        self._history = history
        self._limits = limits
        self._inflight = InFlight()
        self._closed = False

    @property
    def id(self) -> str:
        return self._spec.session_id

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        self._inflight = inflight = InFlight()
        bound = self._manifest.max_tool_calls
        policy = self._manifest.permissions
        offered = function_tools(on_task=prompt.task is not None) if bound else []
        turn = turn_messages(prompt, with_recent=not self._history)
        calls = 0
        said = False
        while True:
            message: AssistantMessage | None = None
            async for update in self._ask(prompt, turn, offered, inflight):
                if isinstance(update, AssistantMessage):
                    message = update
                else:
                    yield update
            assert message is not None
            # What the model said joins the history mended (a lone surrogate, a NUL): the history
            # is sized in UTF-8, sent back to the model, and stored as the session's state.
            turn.append(clean_value(message.to_chat())[0])
            if message.reasoning.strip():
                yield Step("thought", cut(message.reasoning.strip()))
            if message.content.strip():
                said = True
                yield Reply(message.content.strip())
            if message.finish_reason not in (None, "stop", "tool_calls", "function_call"):
                yield Step("model", f"the model stopped: {message.finish_reason}")
            if not message.tool_calls:
                break
            room = bound - calls
            for call in message.tool_calls[:room]:
                done, result, noted = await _run(call, tools, self._spec, policy)
                if noted is not None:
                    yield noted
                yield done
                turn.append(result)
                calls += 1
                said = said or (done.name == "send_message" and done.error is None)
            if len(message.tool_calls) > room:
                for call in message.tool_calls[room:]:
                    turn.append(tool_result_message(call.id, error=_not_run(bound)))
                yield Step("limit", _cut_off(bound, said))
                if not said:
                    raise AgentError(_cut_off(bound, said))
                break
        self._history = bounded([*self._history, *turn], self._limits)

    async def _ask(
        self,
        prompt: Prompt,
        turn: list[ChatMessage],
        offered: list[dict[str, Any]],
        inflight: InFlight,
    ) -> AsyncIterator[ReplyChunk | AssistantMessage]:
        """One request: the pieces of the answer's text as they come (leading whitespace
        held back: a draft begins with something to show), then the answer."""
        if inflight.cancelled:
            raise AgentError("the turn was cancelled")
        system = system_message(prompt, display_name=self._spec.display_name)
        body: dict[str, Any] = {
            "model": self._manifest.model,
            "messages": [system, *self._history, *turn],
            "stream": self._manifest.stream,
        }
        if self._manifest.temperature is not None:
            body["temperature"] = self._manifest.temperature
        if offered:
            body["tools"] = offered
        held: str | None = ""
        async for piece in complete(self._http, self._endpoint, body, inflight):
            if isinstance(piece, AssistantMessage):
                yield piece
            elif held is None:
                yield ReplyChunk(piece)
            else:
                held += piece
                if held.strip():
                    yield ReplyChunk(held.lstrip())
                    held = None

    async def cancel(self) -> None:
        self._inflight.stop()

    def snapshot(self) -> Mapping[str, Any]:
        return state_of(self._history)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inflight.stop()
        await self._client.give_back()


def _not_run(bound: int) -> str:
    return f"not run: this turn already made the {bound} tool calls it may make"


def _cut_off(bound: int, said: bool) -> str:
    ending = "the turn ends with what it said" if said else "it said nothing, so the turn fails"
    return f"the model asked for more than {bound} tool calls in one turn; {ending}"


async def _run(
    call: RequestedCall, tools: TurnTools, spec: SessionSpec, policy: Policy
) -> tuple[ToolCall, ChatMessage, Step | None]:
    """Run one tool call the model asked for — when the role's `permissions` allow it, or the
    people allowed it when the policy puts it to them: the transcript's record of it, the `tool`
    message answering the model, and the note of a permission asked or refused. A call that
    cannot be run, or may not be, answers with its error."""
    try:
        arguments = json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError as error:
        shown = {"unreadable": call.arguments[:_ARGUMENTS_SHOWN]}
        said = f"the arguments are not JSON ({error}); send a JSON object"
        return _failed(call, shown, said)
    if not isinstance(arguments, dict):
        said = "the arguments must be a JSON object"
        shown = {"unreadable": call.arguments[:_ARGUMENTS_SHOWN]}
        return _failed(call, shown, said)
    permitted, note = await _permitted(call.name, arguments, tools, spec, policy)
    if not permitted:
        return _failed(call, arguments, f"not run: {note}", note)
    try:
        result = await tools.call(call.name, arguments)
    except RolecallError as error:
        said = f"{error.code}: {error.message}"
    except (TypeError, ValueError, KeyError) as error:  # arguments of the wrong type
        said = f"invalid arguments: {error}"
    else:
        noted = Step("permission", note) if note else None
        done = ToolCall(call.name, arguments, result=result)
        return done, tool_result_message(call.id, result), noted
    return _failed(call, arguments, said, note)


def _failed(
    call: RequestedCall, shown: Mapping[str, Any], said: str, note: str | None = None
) -> tuple[ToolCall, ChatMessage, Step | None]:
    noted = Step("permission", note) if note else None
    return ToolCall(call.name, shown, error=said), tool_result_message(call.id, error=said), noted


async def _permitted(
    name: str, arguments: Mapping[str, Any], tools: TurnTools, spec: SessionSpec, policy: Policy
) -> tuple[bool, str | None]:
    """Whether the call may be run, and the note of a permission asked or refused (None for a
    call the policy allows outright)."""
    decision = decide(policy, Asked(names=(name,)))
    if decision == "allow":
        return True, None
    if decision == "deny":
        return False, f"{name}: refused by the role's permissions"
    try:
        approval, resolved = await tools.approve(
            ToolCallAsked(name=name, arguments=shown_arguments(arguments)),
            ALLOW_REJECT,
            title=f"{spec.display_name} wants to use {name}",
            settings=spec.approvals,
        )
    except NotAllowed as nobody:
        return False, f"{name}: refused: {nobody}"
    note = f"{name}: asked the people (approval {approval.id}): {resolved.resolution.says()}"
    return resolved.resolution.allows, note


class ChatCompletionsRuntime:
    """The `openai` runtime kind: roles backed by a model behind any OpenAI-compatible
    chat-completions endpoint. Built with the settings manifests name (`secrets`)."""

    wants_tools = False  # the gateway runs the model's tool calls itself

    def __init__(self, secrets: Mapping[str, str], *, limits: HistoryLimits | None = None) -> None:
        self._secrets = secrets
        self._limits = limits or HistoryLimits()
        self._client = _Client()

    def problem(self, role: Role) -> tuple[str, str] | None:
        manifest = role.runtime
        if not isinstance(manifest, Manifest):
            return ("runtime.kind", "the openai runtime backs only roles of kind openai")
        if manifest.api_key is not None and not self._secrets.get(manifest.api_key):
            return ("runtime.api_key", f"the setting {manifest.api_key} is not set")
        return None

    async def probe(self, role: Role) -> str:
        """The endpoint lists its models, the role's among them (what `rolecall doctor`
        checks)."""
        manifest = role.runtime
        assert isinstance(manifest, Manifest)
        return await list_models(self._endpoint(manifest))

    async def start(self, spec: SessionSpec) -> AgentSession:
        return self._session(spec, [])

    async def resume(self, spec: SessionSpec, state: Mapping[str, Any]) -> AgentSession:
        return self._session(spec, history_of(state))

    def _session(self, spec: SessionSpec, history: list[ChatMessage]) -> ChatSession:
        manifest = Manifest.model_validate(dict(spec.options))
        endpoint = self._endpoint(manifest)
        return ChatSession(spec, manifest, endpoint, self._client, history, self._limits)

    def _endpoint(self, manifest: Manifest) -> Endpoint:
        key = None
        if manifest.api_key is not None:
            key = self._secrets.get(manifest.api_key)
            if not key:
                raise AgentError(f"the setting {manifest.api_key} (runtime.api_key) is not set")
        return Endpoint(
            base_url=manifest.base_url, model=manifest.model, key=key, key_setting=manifest.api_key
        )
