"""A fake OpenAI-compatible model for the approvals benchmark: it asks, then says what was answered.

    python -m bench.fake_model PORT

`POST /v1/chat/completions` (`stream: false` only) answers from the conversation it is sent:

- its last message is the result of an `ask` call: a text reply saying what was answered
  (`Answered: Yes.`), so the role's reply shows the turn resumed with the answer;
- its last user message says `PLAIN` (`bench.approvals.PLAIN`): a text reply at once, no
  question (the benchmark's ordinary turns, its ceiling for a turn);
- anything else: one tool call of `ask` with `{"question": "Go ahead?", "expires_in": 3600}`.

`GET /v1/models` lists the one model, `GET /healthz` answers for the harness. It listens on
127.0.0.1 only and keeps nothing between requests.
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

from aiohttp import web

MODEL = "fake-asker"
ASK = {"question": "Go ahead?", "expires_in": 3600}
PLAIN = "PLAIN"
"""A person message holding this word is answered at once, without a question."""

_call_ids = itertools.count(1)


def main() -> None:
    web.run_app(app(), host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)


def app() -> web.Application:
    served = web.Application()
    served.router.add_post("/v1/chat/completions", _complete)
    served.router.add_get("/v1/models", _models)
    served.router.add_get("/healthz", _healthz)
    return served


async def _healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _models(_request: web.Request) -> web.Response:
    listed = [{"id": MODEL, "object": "model", "owned_by": "bench"}]
    return web.json_response({"object": "list", "data": listed})


async def _complete(request: web.Request) -> web.Response:
    body = await request.json()
    if body.get("stream"):
        return web.json_response({"error": {"message": "this fake does not stream"}}, status=400)
    return web.json_response(_completion(body["model"], answer(body["messages"])))


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message that answers `messages` (the rules in the module's docstring)."""
    answered = _ask_result(messages)
    if answered is not None:
        return {"role": "assistant", "content": f"Answered: {answered}."}
    users = [m for m in messages if m.get("role") == "user"]
    if users and PLAIN in str(users[-1].get("content") or ""):
        return {"role": "assistant", "content": "Nothing to ask."}
    call = {
        "id": f"call_{next(_call_ids)}",
        "type": "function",
        "function": {"name": "ask", "arguments": json.dumps(ASK)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _ask_result(messages: list[dict[str, Any]]) -> str | None:
    """The answer's label, when the last message is the result of an `ask` call (`?` when the
    result says no answer, e.g. the question expired)."""
    if not messages or messages[-1].get("role") != "tool":
        return None
    call_id = messages[-1].get("tool_call_id")
    for message in reversed(messages[:-1]):
        for call in message.get("tool_calls") or ():
            if call.get("id") == call_id and call["function"]["name"] == "ask":
                return _label(messages[-1].get("content"))
    return None


def _label(content: object) -> str:
    try:
        result = json.loads(str(content))
    except ValueError:
        return "?"
    label = result.get("answer") if isinstance(result, dict) else None
    return label if isinstance(label, str) else f"? ({str(content)[:80]})"


def _completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


if __name__ == "__main__":
    main()
