"""The chat-completions wire: one request to the model, its answer as it comes.

    async for piece in complete(http, endpoint, body, inflight):
        str               a piece of the answer's text, as it is written (streaming only)
        AssistantMessage  the whole answer, always last

Both shapes of an answer — one JSON body, or server-sent events (`data: {chunk}` … `data:
[DONE]`) whose deltas `Assembler` puts together — end in the same `AssistantMessage`. A server
that answers a streaming request with plain JSON is understood too.

Failures are `AgentError`s saying what the operator should look at: 401/403 (the key), 404
(the model or the URL), 429 and 5xx (the host retries the turn with its backoff; a
`Retry-After` of a few seconds is honoured here first), garbage or a stream cut short. The API
key is never in them, nor in any log: it only ever leaves in the `Authorization` header.

The HTTP client is aiohttp, the gateway's own: the protocol is one POST and a few lines of SSE,
and owning them keeps retries with the host (no second retry loop inside a client library),
cancellation with the turn, and the size of what a model may send us bounded.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from core.engine.runtimes.base import AgentError

log = logging.getLogger("rolecall.runtimes.openai")

MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""What one answer of the model may weigh, streamed or not."""
MAX_LINE_BYTES = 2 * 1024 * 1024
RETRY_AFTER_LIMIT = 10.0
"""Seconds of a 429/503's `Retry-After` waited out within the attempt; longer ones fail it."""
RETRIES_AFTER = 2
_DETAIL_LIMIT = 300


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    base_url: str
    model: str
    key: str | None = field(repr=False)
    key_setting: str | None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def where(self) -> str:
        """The base URL as errors name it (without any user or password in it)."""
        return str(URL(self.base_url).with_user(None))

    def headers(self, *, stream: bool) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        return headers

    def scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A tool call the model asked for; `arguments` as it wrote them (JSON, hopefully)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[RequestedCall, ...] = ()
    reasoning: str = ""
    finish_reason: str | None = None

    def to_chat(self) -> dict[str, Any]:
        """As the history keeps it (reasoning is not sent back)."""
        if not self.tool_calls:
            return {"role": "assistant", "content": self.content}
        return {
            "role": "assistant",
            "content": self.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ],
        }


class InFlight:
    """The request of a turn running now, so that `cancel` can stop it from outside."""

    def __init__(self) -> None:
        self.cancelled = False
        self.sending: asyncio.Task[aiohttp.ClientResponse] | None = None
        self.response: aiohttp.ClientResponse | None = None

    def stop(self) -> None:
        self.cancelled = True
        if self.sending is not None:
            self.sending.cancel()
        if self.response is not None:
            self.response.close()


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _first_choice(body: Any) -> Mapping[str, Any] | None:
    choices = body.get("choices") if isinstance(body, Mapping) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0]
    return None


class Assembler:
    """Puts a streamed answer together from its chunks' deltas: text pieces are appended,
    tool calls by their `index` (id and name arrive once, arguments in pieces)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None

    def feed(self, chunk: Any) -> str:
        """Take one chunk; return the piece of text it adds ("" if none)."""
        choice = _first_choice(chunk)
        if choice is None:
            return ""  # e.g. the usage chunk at the end
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return ""
        reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        self._reasoning.append(reasoning)
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if not isinstance(call, Mapping):
                continue
            index = call.get("index")
            slot = self._calls.setdefault(
                index if isinstance(index, int) else len(self._calls) + position,
                {"id": "", "name": "", "arguments": ""},
            )
            slot["id"] = slot["id"] or _text(call.get("id"))
            function = call.get("function")
            if isinstance(function, Mapping):
                slot["name"] += _text(function.get("name"))
                slot["arguments"] += _text(function.get("arguments"))
        text = _text(delta.get("content"))
        self._content.append(text)
        return text

    def message(self) -> AssistantMessage:
        calls = tuple(
            RequestedCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"])
            for index, slot in sorted(self._calls.items())
        )
        return AssistantMessage(
            content="".join(self._content),
            tool_calls=calls,
            reasoning="".join(self._reasoning),
            finish_reason=self.finish_reason,
        )


def parse_message(body: Any) -> AssistantMessage:
    """A whole (not streamed) answer: `choices[0].message`."""
    choice = _first_choice(body)
    message = choice.get("message") if choice is not None else None
    if choice is None or not isinstance(message, Mapping):
        raise AgentError("the model endpoint's answer has no choices[0].message")
    calls = []
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send the object itself
            arguments = json.dumps(arguments) if arguments is not None else ""
        call_id = _text(call.get("id")) or f"call_{index}"
        calls.append(RequestedCall(call_id, _text(function.get("name")), arguments))
    reasoning = _text(message.get("reasoning_content")) or _text(message.get("reasoning"))
    reason = choice.get("finish_reason")
    return AssistantMessage(
        content=_text(message.get("content")),
        tool_calls=tuple(calls),
        reasoning=reasoning,
        finish_reason=reason if isinstance(reason, str) else None,
    )


class SseDecoder:
    """Server-sent events, line by line: the `data` of each event (its lines joined), when a
    blank line ends it. Comments and other fields are skipped."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def line(self, line: str) -> str | None:
        if not line:
            return self.end()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def end(self) -> str | None:
        data, self._data = self._data, []
        return "\n".join(data) if data else None


async def complete(
    http: aiohttp.ClientSession,
    endpoint: Endpoint,
    body: Mapping[str, Any],
    inflight: InFlight,
) -> AsyncIterator[str | AssistantMessage]:
    """Ask the model once; the pieces of its answer as they come, then the whole answer."""
    stream = bool(body.get("stream"))
    response = await _send(http, endpoint, body, inflight, stream=stream)
    inflight.response = response
    try:
        if inflight.cancelled:
            raise AgentError("the turn was cancelled")
        kind = response.headers.get("Content-Type", "")
        if stream and kind.startswith("text/event-stream"):
            async for piece in _streamed(response, endpoint, inflight):
                yield piece
        else:
            yield parse_message(_decode(await _whole(response, endpoint, inflight), endpoint))
    finally:
        inflight.response = None
        response.release()


async def _send(
    http: aiohttp.ClientSession,
    endpoint: Endpoint,
    body: Mapping[str, Any],
    inflight: InFlight,
    *,
    stream: bool,
) -> aiohttp.ClientResponse:
    """POST the request; the response once its status is good. A 429 or 503 whose
    `Retry-After` is short is waited out and asked again (a few times)."""

    async def post() -> aiohttp.ClientResponse:
        return await http.post(endpoint.url, json=body, headers=endpoint.headers(stream=stream))

    for retry in range(RETRIES_AFTER + 1):
        inflight.sending = asyncio.create_task(post())
        try:
            response = await inflight.sending
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if inflight.cancelled and not (task is not None and task.cancelling()):
                raise AgentError("the turn was cancelled") from None
            raise
        except aiohttp.ClientError as error:
            detail = endpoint.scrub(str(error) or type(error).__name__)
            raise AgentError(
                f"could not reach the model endpoint at {endpoint.where}: {detail}"
            ) from None
        finally:
            inflight.sending = None
        if response.status < 400:
            return response
        wait = _retry_after(response) if retry < RETRIES_AFTER else None
        if wait is None:
            try:
                detail = endpoint.scrub(await _detail(response))
            finally:
                response.release()
            raise AgentError(_http_error(endpoint, response.status, detail))
        response.release()
        log.info(
            "model endpoint %s: HTTP %d, asking again in %.1fs",
            endpoint.where,
            response.status,
            wait,
        )
        await asyncio.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    if response.status not in (429, 503):
        return None
    try:
        wait = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return wait if 0 <= wait <= RETRY_AFTER_LIMIT else None


def _http_error(endpoint: Endpoint, status: int, detail: str) -> str:
    at = f"the model endpoint at {endpoint.where}"
    said = f": {detail}" if detail else ""
    if status in (401, 403):
        key = (
            f"check the API key in the setting {endpoint.key_setting}"
            if endpoint.key_setting
            else "the manifest names no API key setting (runtime.api_key)"
        )
        return f"{at} refused the request (HTTP {status}): {key}"  # its words may quote the key
    if status == 404:
        return f"{at} has no model {endpoint.model!r} or no /chat/completions (HTTP 404){said}"
    if status == 429:
        return f"{at} is limiting the rate of requests (HTTP 429){said}"
    if status >= 500:
        return f"{at} failed (HTTP {status}){said}"
    return f"{at} rejected the request (HTTP {status}){said}"


async def _detail(response: aiohttp.ClientResponse) -> str:
    """What an error response says, briefly: its `error.message` (or `error`, `detail`), or
    the start of its text."""
    raw = (await response.content.read(16_384)).decode("utf-8", "replace")
    try:
        body = json.loads(raw)
    except ValueError:
        return raw.strip()[:_DETAIL_LIMIT]
    said: Any = body
    if isinstance(body, Mapping):
        said = body.get("error", body.get("detail", body.get("message", body)))
        if isinstance(said, Mapping):
            said = said.get("message", said)
    return (said if isinstance(said, str) else json.dumps(said))[:_DETAIL_LIMIT]


def _decode(raw: bytes | str, endpoint: Endpoint) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
        said = endpoint.scrub(text.strip()[:_DETAIL_LIMIT])
        raise AgentError(
            f"the model endpoint answered something that is not JSON: {said!r}"
        ) from None
    if isinstance(value, Mapping) and "error" in value:
        error = value["error"]
        said = error.get("message", error) if isinstance(error, Mapping) else error
        raise AgentError(f"the model endpoint reported an error: {endpoint.scrub(str(said))}")
    return value


async def _whole(response: aiohttp.ClientResponse, endpoint: Endpoint, inflight: InFlight) -> bytes:
    raw = bytearray()
    try:
        async for data in response.content.iter_any():
            raw += data
            if len(raw) > MAX_ANSWER_BYTES:
                raise AgentError(f"the model's answer is larger than {MAX_ANSWER_BYTES} bytes")
    except aiohttp.ClientError as error:
        raise _broken(endpoint, inflight, error) from None
    if inflight.cancelled:
        raise AgentError("the turn was cancelled")
    return bytes(raw)


async def _streamed(
    response: aiohttp.ClientResponse, endpoint: Endpoint, inflight: InFlight
) -> AsyncIterator[str | AssistantMessage]:
    decoder, assembler = SseDecoder(), Assembler()
    done = False
    async for line in _lines(response, endpoint, inflight):
        data = decoder.line(line) if line is not None else decoder.end()
        if data is None:
            continue
        if data.strip() == "[DONE]":
            done = True
            break
        piece = assembler.feed(_decode(data, endpoint))
        if piece:
            yield piece
    if inflight.cancelled:
        raise AgentError("the turn was cancelled")
    if not done and assembler.finish_reason is None:
        raise AgentError("the model's stream ended before its answer was complete")
    yield assembler.message()


async def _lines(
    response: aiohttp.ClientResponse, endpoint: Endpoint, inflight: InFlight
) -> AsyncIterator[str | None]:
    """The stream's lines (without their ending); None once it is over."""
    buffer = bytearray()
    total = 0
    try:
        async for data in response.content.iter_any():
            total += len(data)
            if total > MAX_ANSWER_BYTES:
                raise AgentError(f"the model's answer is larger than {MAX_ANSWER_BYTES} bytes")
            start = len(buffer)
            buffer += data
            while (end := buffer.find(b"\n", start)) >= 0:
                yield bytes(buffer[:end]).rstrip(b"\r").decode("utf-8", "replace")
                del buffer[: end + 1]
                start = 0
            if len(buffer) > MAX_LINE_BYTES:
                raise AgentError(f"a line of the model's stream is longer than {MAX_LINE_BYTES}")
    except aiohttp.ClientError as error:
        raise _broken(endpoint, inflight, error) from None
    if buffer:
        yield bytes(buffer).rstrip(b"\r").decode("utf-8", "replace")
    yield None


def _broken(endpoint: Endpoint, inflight: InFlight, error: Exception) -> AgentError:
    if inflight.cancelled:
        return AgentError("the turn was cancelled")
    detail = endpoint.scrub(str(error) or type(error).__name__)
    return AgentError(f"the model endpoint at {endpoint.where} broke off its answer: {detail}")
