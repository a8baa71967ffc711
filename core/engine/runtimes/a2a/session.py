"""One session with a remote A2A agent: an A2A context, a message per turn.

The session's state is `{"context_id", "task_id"}`: the context the agent assigned on the first
answer (every later message is sent in it, so a session resumed after sleep or a restart goes
on in the same context), and the task the agent left waiting for the person
(`input-required`, `auth-required`), which the next turn's message continues. A task id the
agent no longer knows, or one that has ended since, is dropped and the message sent again as a
new task in the context.

A turn's exchange — the message sent, the events read back — runs in a task of its own, so
that stopping the turn does not lose the agent's task: `cancel` (and `close`, after a failed or
timed-out turn) asks the agent to cancel the task in flight (A2A `CancelTask`), waiting
briefly for a stream to name it when the stop came before its first event. An agent that does
not stream names its task only when it has finished: a turn sent to it cannot be cancelled at
the agent, only abandoned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from a2a.client import Client, ClientCallContext
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
)
from a2a.utils.errors import A2AError, TaskNotFoundError, UnsupportedOperationError

from core.engine.runtimes.a2a.reading import Ending, TurnReading
from core.engine.runtimes.a2a.render import render
from core.engine.runtimes.base import (
    AgentError,
    Prompt,
    Reply,
    SessionSpec,
    Step,
    TurnTools,
    Update,
)

log = logging.getLogger("rolecall.runtimes.a2a")

CANCEL_TIMEOUT = 5.0
"""Seconds a cancel may take at the agent (naming the task included) before we let go."""

_PROTOCOL_ERRORS = (A2AError, httpx.HTTPError, ValueError)
"""What the SDK raises for a failed exchange: the agent's errors, the network's, a reply that
is not A2A."""

_Item = list[Update] | Exception | None


class _Exchange:
    """One message sent and the events read back, in a task of its own."""

    def __init__(self, events: AsyncIterator[StreamResponse], reading: TurnReading) -> None:
        self.reading = reading
        self.named = asyncio.Event()
        """Set once the agent's task is known, or the exchange is over."""
        if reading.task_id is not None:
            self.named.set()
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(events))

    async def _read(self, events: AsyncIterator[StreamResponse]) -> None:
        try:
            async for event in events:
                updates = self.reading.read(event)
                if self.reading.task_id is not None:
                    self.named.set()
                self._queue.put_nowait(updates)
                if self.reading.end is not None:
                    break
        except Exception as failure:  # handed to the turn, which says what it was
            self._queue.put_nowait(failure)
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
            self.named.set()
            self._queue.put_nowait(None)

    async def updates(self) -> AsyncIterator[Update]:
        while (item := await self._queue.get()) is not None:
            if isinstance(item, Exception):
                raise item
            for update in item:
                yield update

    async def stop(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class A2aSession:
    def __init__(
        self,
        spec: SessionSpec,
        client: Client,
        http: httpx.AsyncClient,
        *,
        where: str,
        streaming: bool,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self._spec = spec
        self._client = client
        self._http = http
        self._where = where
        self._streaming = streaming
        state = state or {}
        self._context_id: str | None = _text(state.get("context_id"))
        self._task_id: str | None = _text(state.get("task_id"))
        self._exchange: _Exchange | None = None

    @property
    def id(self) -> str:
        return self._spec.session_id

    def snapshot(self) -> Mapping[str, Any]:
        state: dict[str, Any] = {}
        if self._context_id is not None:
            state["context_id"] = self._context_id
        if self._task_id is not None:
            state["task_id"] = self._task_id
        return state

    async def prompt(self, prompt: Prompt, tools: TurnTools) -> AsyncIterator[Update]:
        parts = render(prompt)
        continuing = self._task_id
        while True:
            exchange = self._exchange = self._send(parts, continuing)
            try:
                async for update in exchange.updates():
                    yield update
            except (TaskNotFoundError, UnsupportedOperationError) as stale:
                await exchange.stop()
                if continuing is None or exchange.reading.events:
                    raise AgentError(f"the agent at {self._where} refused: {stale}") from stale
                yield Step("status", f"task {continuing} cannot go on ({stale}); a new one starts")
                continuing = None
                continue
            except _PROTOCOL_ERRORS as failure:
                raise AgentError(f"A2A with {self._where} failed: {_said(failure)}") from failure
            break
        await exchange.stop()
        self._exchange = None
        reading = exchange.reading
        end = reading.finish()
        if reading.context_id != self._context_id:
            yield Step("context", f"the agent's context is {reading.context_id}")
        self._context_id = reading.context_id
        self._task_id = reading.task_id if end.ending is Ending.ASKED else None
        if end.ending is Ending.FAILED:
            raise AgentError(f"the agent's task {reading.task_id} ended: {end.text}")
        if end.ending is Ending.CANCELLED:
            yield Step("cancelled", end.text)
            return
        yield Reply(end.text)

    def _send(self, parts: list[str], task_id: str | None) -> _Exchange:
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[Part(text=text) for text in parts],
            context_id=self._context_id or "",
            task_id=task_id or "",
        )
        events = self._client.send_message(SendMessageRequest(message=message))
        return _Exchange(events, TurnReading(context_id=self._context_id, task_id=task_id))

    async def cancel(self) -> None:
        """Ask the agent to cancel the turn's task (the host has stopped the turn already)."""
        exchange, self._exchange = self._exchange, None
        if exchange is None:
            return
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT):
                if self._streaming:
                    await exchange.named.wait()
                task_id = exchange.reading.in_flight
                if task_id is not None:
                    if task_id == self._task_id:
                        self._task_id = None
                    context = ClientCallContext(timeout=CANCEL_TIMEOUT)
                    request = CancelTaskRequest(id=task_id)
                    await self._client.cancel_task(request, context=context)
        except (*_PROTOCOL_ERRORS, TimeoutError) as failure:
            log.warning("a2a %s: cancelling a task failed: %s", self._where, _said(failure))
        finally:
            await exchange.stop()

    async def close(self) -> None:
        """Cancel a task a failed turn left running, and let go of the connection."""
        try:
            await self.cancel()
        finally:
            try:
                await self._client.close()
            finally:
                await self._http.aclose()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _said(error: BaseException) -> str:
    return str(error) or error.__class__.__name__
