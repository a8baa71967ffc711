"""A fake OpenAI-compatible chat-completions server on loopback, scripted per test.

    fake = FakeOpenAI()
    base_url = await fake.start()          # http://127.0.0.1:<port>/v1 (`async with` starts it too)
    fake.script(call("store", {...}), say("Done."))
    ...
    fake.requests                          # every request: its JSON body and headers
    await fake.close()

It lists `models` at `GET /v1/models` (a key `wrong` is refused with 401), and answers
`POST /v1/chat/completions` with the next scripted answer — as one JSON body, or,
when the request says `stream: true`, as server-sent events the way OpenAI streams them (the
text word by word, each tool call's arguments in two pieces, `data: [DONE]` last). When the
script runs out it repeats `then` (set by `always`), or answers 500. An answer may instead be
an HTTP error (`fail`) or hold the request until the client goes away (`hang`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.serving import serve


@dataclass(frozen=True)
class Answer:
    content: str = ""
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    """(id, name, arguments as JSON text)."""
    status: int = 200
    error: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


def say(text: str) -> Answer:
    return Answer(content=text)


_ids = iter(range(1, 1_000_000))


def call(name: str, arguments: Any, *, text: str = "", raw: str | None = None) -> Answer:
    """The model asks for one tool call (`raw`: arguments exactly as written, even broken)."""
    written = raw if raw is not None else json.dumps(arguments)
    return Answer(content=text, tool_calls=((f"call_{next(_ids)}", name, written),))


def calls(*asked: tuple[str, Any]) -> Answer:
    """The model asks for several tool calls at once."""
    return Answer(
        tool_calls=tuple(
            (f"call_{next(_ids)}", name, args if isinstance(args, str) else json.dumps(args))
            for name, args in asked
        )
    )


def fail(status: int, error: Any = None, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status=status, error=error, headers=headers or {})


def hang() -> Answer:
    return Answer(hang=True)


@dataclass(frozen=True)
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body["messages"]
        return messages

    def contents(self, role: str) -> list[str]:
        return [m.get("content") or "" for m in self.messages if m["role"] == role]


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.base_url = ""
        """`http://127.0.0.1:<port>/v1`, once started."""
        self._script: list[Answer] = []
        self._then: Answer | None = None
        self.hanging = asyncio.Event()
        """Set when a `hang` answer holds a request."""
        self.gone = asyncio.Event()
        """Set when the client of a held request went away."""
        self._app = web.Application()
        self._app.router.add_post("/v1/chat/completions", self._complete)
        self._app.router.add_get("/v1/models", self._models)
        self.models: list[str] = ["fake-model"]
        """What `GET /v1/models` lists."""
        self._serving = contextlib.AsyncExitStack()

    async def start(self) -> str:
        server = await self._serving.enter_async_context(serve(self._app))
        self.base_url = str(server.make_url("/v1"))
        return self.base_url

    async def close(self) -> None:
        await self._serving.aclose()

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def script(self, *answers: Answer) -> None:
        self._script.extend(answers)

    def always(self, answer: Answer) -> None:
        """Answer this once the script is done (for as long as asked)."""
        self._then = answer

    async def _models(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization", "Bearer") == "Bearer wrong":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        listed = [{"id": name, "object": "model", "owned_by": "fake"} for name in self.models]
        return web.json_response({"object": "list", "data": listed})

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(Seen(body, dict(request.headers)))
        answer = self._script.pop(0) if self._script else self._then
        if answer is None:
            return web.json_response({"error": {"message": "the script ran out"}}, status=500)
        if answer.hang:
            self.hanging.set()
            try:
                await asyncio.Event().wait()  # until the client goes away (cancels the handler)
            finally:
                self.gone.set()
        if answer.status != 200:
            return web.json_response(
                {"error": answer.error} if answer.error is not None else {},
                status=answer.status,
                headers=answer.headers,
            )
        if body.get("stream"):
            return await self._stream(request, body, answer)
        return web.json_response(_completion(body, answer))

    async def _stream(
        self, request: web.Request, body: dict[str, Any], answer: Answer
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for word in re.findall(r"\S+\s*", answer.content):
            await send({"content": word})
        for index, (call_id, name, arguments) in enumerate(answer.tool_calls):
            half = len(arguments) // 2
            function = {"name": name, "arguments": arguments[:half]}
            first = {"index": index, "id": call_id, "type": "function", "function": function}
            await send({"tool_calls": [first]})
            rest = {"index": index, "function": {"arguments": arguments[half:]}}
            await send({"tool_calls": [rest]})
        await send({}, "tool_calls" if answer.tool_calls else "stop")
        await response.write(b": keep-alive comment\n\ndata: [DONE]\n\n")
        await response.write_eof()
        return response


def _completion(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.content or None}
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in answer.tool_calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if answer.tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
