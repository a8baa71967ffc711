"""A real A2A agent for the tests, built with a2a-sdk's server side, served by uvicorn on
loopback in the test's own event loop.

What it does with a message depends on the newest person's message in it (the last line
`#<seq> person:<slug>: <text>` of what the gateway sent):

- it counts the turns of each A2A context and answers `turn N in context <contextId>` — so a
  test sees whether the gateway kept talking in the same context;
- `please fail`: the task fails with the reason `the agent refuses: it was asked to fail`;
- `take your time`: the task works until it is cancelled (the executor's `cancel` records it);
- `never mind`: the agent cancels the task itself, saying `nothing left to do`;
- `say a nul`: the answer holds a NUL (`a NUL \\x00 here`), which storage cannot hold;
- `which one?`: the task asks back (`input-required`); the next message in that task completes
  it with `you chose red` (or blue, or nothing).

With `streaming: true` on its card (the default) the answer comes as an artifact written in
pieces; without, as one artifact in the finished task. `legacy=True` makes it an A2A 0.3 agent
(its card in 0.3's shape, 0.3's JSON-RPC methods). Every request must carry the expected
`Authorization` (or API key header) or it gets a 401 — card included — and every header seen is
kept in `headers`.
"""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.waiting import eventually

CARD_PATH = "/.well-known/agent-card.json"


_SAID = re.compile(r"^#\d+ person:\S+: (.*)$", re.MULTILINE)


def newest(text: str) -> str:
    """What the newest person's message in the gateway's text says."""
    said = _SAID.findall(text)
    return str(said[-1]) if said else ""


@dataclass
class Executor(AgentExecutor):
    streaming: bool = True
    turns: dict[str, int] = field(default_factory=dict)
    """Messages received per A2A context."""
    inputs: list[str] = field(default_factory=list)
    """The text of every message received, in order."""
    cancelled: list[str] = field(default_factory=list)
    """Task ids whose cancel was asked for."""
    cancel_seen: asyncio.Event = field(default_factory=asyncio.Event)
    working: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a `take your time` task has started."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.inputs.append(context.get_user_input())
        text = newest(context.get_user_input())
        task_id, context_id = str(context.task_id), str(context.context_id)
        turn = self.turns[context_id] = self.turns.get(context_id, 0) + 1
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            submitted = new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(submitted)
        elif context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            choice = next((c for c in ("red", "blue") if c in text), "nothing")
            await self._answer(updater, f"you chose {choice}")
            return
        await updater.start_work(updater.new_agent_message([new_text_part("thinking")]))
        if "please fail" in text:
            reason = "the agent refuses: it was asked to fail"
            await updater.failed(updater.new_agent_message([new_text_part(reason)]))
        elif "take your time" in text:
            self.working.set()
            await asyncio.sleep(3600)  # until cancelled
        elif "never mind" in text:
            await updater.cancel(updater.new_agent_message([new_text_part("nothing left to do")]))
        elif "say a nul" in text:  # a NUL is valid JSON and protobuf; storage refuses it
            await self._answer(updater, "a NUL \x00 here")
        elif "which one?" in text:
            question = "Which one do you mean, the red or the blue?"
            await updater.requires_input(updater.new_agent_message([new_text_part(question)]))
        else:
            await self._answer(updater, f"turn {turn} in context {context_id}")

    async def _answer(self, updater: TaskUpdater, answer: str) -> None:
        if self.streaming:
            words = answer.split(" ")
            pieces = [word + " " for word in words[:-1]] + [words[-1]]
            for number, piece in enumerate(pieces):
                await updater.add_artifact(
                    [new_text_part(piece)],
                    artifact_id="answer",
                    name="answer",
                    append=number > 0,
                    last_chunk=number == len(pieces) - 1,
                )
                await asyncio.sleep(0.01)
        else:
            await updater.add_artifact([new_text_part(answer)], artifact_id="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.append(str(context.task_id))
        self.cancel_seen.set()
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel(new_text_message("stopped as asked"))


def agent_card(url: str, *, streaming: bool) -> AgentCard:
    return AgentCard(
        name="Counter",
        description="Counts the turns of each conversation it is in.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="count",
                name="Count turns",
                description="Says which turn of the conversation this is.",
                tags=["test"],
            )
        ],
    )


def _legacy_card(card: AgentCard) -> Any:
    """The card as an A2A 0.3 agent serves it."""
    [interface] = card.supported_interfaces
    body = {
        "name": card.name,
        "description": card.description,
        "version": card.version,
        "url": interface.url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": card.capabilities.streaming},
        "defaultInputModes": list(card.default_input_modes),
        "defaultOutputModes": list(card.default_output_modes),
        "skills": [],
    }

    async def serve(request: Request) -> JSONResponse:
        return JSONResponse(body)

    return serve


class _Guard:
    """The ASGI app behind a check of one header; every request's headers are kept."""

    def __init__(self, app: Any, header: str, value: str, seen: list[dict[str, str]]) -> None:
        self._app, self._header, self._value, self._seen = app, header.lower(), value, seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            self._seen.append(headers)
            if headers.get(self._header) != self._value:
                refused = JSONResponse({"error": "unauthorized"}, status_code=401)
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)


@dataclass
class RunningAgent:
    url: str
    """Where the agent answers (JSON-RPC)."""
    card_url: str
    port: int
    executor: Executor
    headers: list[dict[str, str]]


@asynccontextmanager
async def serve_agent(
    *,
    streaming: bool = True,
    header: str = "Authorization",
    value: str = "Bearer t",
    port: int = 0,
    legacy: bool = False,
) -> AsyncIterator[RunningAgent]:
    """The agent on 127.0.0.1 (on a free port unless `port` is given), until the block ends;
    it remembers nothing from an earlier agent on the same port. `legacy`: it speaks A2A 0.3
    (its card says so, in 0.3's shape) rather than 1.0."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/a2a"
    card = agent_card(url, streaming=streaming)
    executor = Executor(streaming=streaming)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    if legacy:
        card_routes = [Route(CARD_PATH, _legacy_card(card))]
    else:
        card_routes = create_agent_card_routes(card)
    rpc_routes = create_jsonrpc_routes(handler, "/a2a", enable_v0_3_compat=legacy)
    routes = [*card_routes, *rpc_routes]
    seen: list[dict[str, str]] = []
    app = _Guard(Starlette(routes=routes), header, value, seen)
    config = uvicorn.Config(app, lifespan="off", ws="none", log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:

        def started() -> bool:
            if serving.done():
                serving.result()  # it stopped: say why
            return bool(server.started)

        await eventually(started, what="the A2A agent serving")
        yield RunningAgent(
            url=url,
            card_url=f"http://127.0.0.1:{port}{CARD_PATH}",
            port=port,
            executor=executor,
            headers=seen,
        )
    finally:
        server.should_exit = True
        server.force_exit = True
        await handler.aclose()
        try:
            await asyncio.wait_for(serving, 5)
        finally:
            sock.close()
