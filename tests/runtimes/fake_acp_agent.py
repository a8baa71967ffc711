"""A small ACP agent program for the tests: the `agent-client-protocol` package's agent side on
real stdio, reaching the gateway's tools over MCP (the `mcp` SDK's client) with the server and
token its session was given.

    python tests/runtimes/fake_acp_agent.py [--load] [--name NAME]

`--load` advertises `loadSession`; sessions are then kept in `.fake-acp-sessions.json` in the
working directory (the run's own), so a new process can load them. What it does with a prompt
depends on the newest person message in it:

    say <words>       writes <words> back as its reply, one word a chunk
    ask <tool> <kind> asks permission for a tool call; replies with the option it was given
    crash             writes a piece of a reply, a line on stderr, and exits with code 3
    hang              never answers
    garbage           writes a line that is not JSON on stdout, then never answers
    huge <bytes>      writes one line of that many bytes on stdout, then never answers
    flood <chunks>    writes that many one-word reply chunks at once (a reply past any limit)
    spew <bytes>      writes that many bytes on stderr, then replies "spewed"
    mangle            replies, thinks and calls a tool with text that breaks the rule of
                      acceptable values (lone surrogates, a NUL, 1e999), then ends the turn
    wait              waits for `session/cancel`, then ends the prompt as cancelled
    loop <n>          calls `recall` over MCP n times, then says how many calls were refused
    anything else     `recall`, `store` and `send_message` over MCP — and writes nothing

Everything it sees is appended to the JSON-lines journal named by FAKE_ACP_JOURNAL, and for
each prompt it ends, `answered` with the seconds it spent on it (its own time, for the
benchmarks).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Literal, cast

import httpx2
from acp import (
    PROTOCOL_VERSION,
    RequestError,
    run_agent,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PromptResponse,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

STORE = Path(".fake-acp-sessions.json")
PERSON_LINE = re.compile(r"^#\d+ \[[^\]]*\] person:[a-z0-9._-]+: (.*)$")


def journal(event: str, **details: Any) -> None:
    path = os.environ.get("FAKE_ACP_JOURNAL")
    if path:
        entry = {"event": event, "pid": os.getpid(), "at": time.time(), **details}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def write_raw(data: bytes, fd: int = 1) -> None:
    """Write past the protocol, all of it (stdout is non-blocking under the event loop)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            time.sleep(0.01)


def update_line(session_id: str, update: Any) -> bytes:
    """A `session/update` notification written by hand (json.dumps writes a lone surrogate as
    its `\\ud800` escape, and infinity as `Infinity`; an SDK would refuse both)."""
    if not isinstance(update, dict):
        update = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    return json.dumps(message).encode() + b"\n"


def last_person_message(text: str) -> str:
    said = [m.group(1) for line in text.splitlines() if (m := PERSON_LINE.match(line))]
    return said[-1] if said else ""


class FakeAgent:
    def __init__(self, *, load: bool, name: str) -> None:
        self._load = load
        self._name = name
        self._conn: Any = None
        self._servers: dict[str, Any] = {}
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        journal("initialize", protocol_version=protocol_version)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=self._load, mcp_capabilities=McpCapabilities(http=True)
            ),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = f"fake-{uuid.uuid4().hex[:8]}"
        self._servers[session_id] = (mcp_servers or [None])[0]
        self._remember(session_id, [])
        journal("new_session", session_id=session_id, cwd=cwd, servers=_shown(mcp_servers))
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        sessions = _sessions()
        journal("load_session", session_id=session_id, cwd=cwd, found=session_id in sessions)
        if session_id not in sessions:
            raise RequestError.resource_not_found(session_id)
        self._servers[session_id] = (mcp_servers or [None])[0]
        for said in sessions[session_id]:  # replayed, as ACP wants: not a turn's reply
            await self._conn.session_update(session_id, update_user_message_text(said))
            await self._conn.session_update(session_id, update_agent_message_text("(replayed)"))
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        journal("cancel", session_id=session_id)
        self._cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        began = time.perf_counter()
        text = "".join(getattr(block, "text", "") for block in prompt)
        said = last_person_message(text)
        journal("prompt", session_id=session_id, text=text, said=said)
        self._remember(session_id, [*_sessions().get(session_id, []), said])
        word, _, rest = said.partition(" ")
        if word == "say":
            for piece in rest.split(" "):
                await self._say(session_id, piece + " ")
        elif word == "ask":
            await self._ask(session_id, *rest.split(" "))
        elif word == "crash":
            await self._say(session_id, "I was about to ")
            await asyncio.sleep(0.1)
            sys.stderr.write("fake agent: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif word in ("hang", "garbage", "huge"):
            if word == "garbage":
                write_raw(b"this is not JSON\n")
            if word == "huge":
                write_raw(b"x" * int(rest))
            await asyncio.Event().wait()
        elif word == "flood":
            chunk = update_line(session_id, update_agent_message_text("flood "))
            write_raw(chunk * int(rest))
        elif word == "spew":
            write_raw(b"e" * int(rest), fd=2)
            await self._say(session_id, "spewed")
        elif word == "mangle":
            self._mangle(session_id)
        elif word == "wait":
            await self._cancelled.setdefault(session_id, asyncio.Event()).wait()
            journal("cancelled", session_id=session_id)
            return PromptResponse(stop_reason="cancelled")
        elif word == "loop":
            await self._loop(session_id, int(rest))
        else:
            await self._use_tools(session_id, said)
        journal("answered", session_id=session_id, said=said, seconds=time.perf_counter() - began)
        return PromptResponse(stop_reason="end_turn")

    def _mangle(self, session_id: str) -> None:
        """Updates a well-behaved SDK would not send: text with lone surrogates and a NUL, a
        tool call whose input holds an infinite number."""
        mangled = [
            update_agent_thought_text("thinking \udfff hard"),
            update_agent_message_text("lone \ud800 surrogate "),
            update_agent_message_text("and a NUL \x00 here"),
        ]
        call = {
            "sessionUpdate": "tool_call",
            "toolCallId": "mangled-1",
            "title": "Measure \ud83d",
            "kind": "other",
            "status": "completed",
            "rawInput": {"size": float("inf"), "name": "nul\x00"},
        }
        write_raw(b"".join(update_line(session_id, u) for u in [*mangled, call]))

    async def _say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(session_id, update_agent_message_text(text))

    async def _ask(self, session_id: str, tool: str, kind: str) -> None:
        call = ToolCallUpdate(
            tool_call_id="ask-1",
            title=f"Run {tool}",
            kind=cast(ToolKind, kind),  # as the prompt said it: acp refuses a kind it does not know
            field_meta={"fake": {"toolName": tool}},
            raw_input={"command": tool},
        )
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="always", name="Always", kind="allow_always"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        journal("permission_asked", tool=tool, kind=kind)
        answer = await self._conn.request_permission(session_id, call, options)
        outcome = answer.outcome
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else "cancelled"
        journal("permission", tool=tool, kind=kind, chosen=chosen)
        await self._say(session_id, f"{tool}: {chosen}")

    async def _use_tools(self, session_id: str, said: str) -> None:
        server = self._servers.get(session_id)
        if server is None:
            await self._say(session_id, "no tools")
            return
        await self._conn.session_update(session_id, update_agent_thought_text("Let me look."))
        await self._conn.session_update(
            session_id,
            update_plan(
                [
                    PlanEntry(content="recall", priority="high", status="in_progress"),
                    PlanEntry(content="answer", priority="medium", status="pending"),
                ]
            ),
        )
        headers = {header.name: header.value for header in server.headers}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            recalled = await self._tool(session_id, client, "recall", {"query": ""})
            count = len(recalled.get("entries", []))
            await self._tool(session_id, client, "store", {"payload": {"said": said}})
            reply = f"{self._name} heard: {said} (remembered {count})"
            await self._tool(session_id, client, "send_message", {"text": reply})

    async def _loop(self, session_id: str, times: int) -> None:
        server = self._servers[session_id]
        headers = {header.name: header.value for header in server.headers}
        refused: list[str] = []
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            for _ in range(times):
                result = await self._tool(session_id, client, "recall", {"query": ""})
                if "error" in result:
                    refused.append(result["error"]["code"])
        codes = ", ".join(sorted(set(refused))) or "none"
        await self._say(session_id, f"{times - len(refused)} answered, {len(refused)} refused")
        await self._say(session_id, f" ({codes})")

    async def _tool(
        self, session_id: str, client: Client, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        call_id = f"{name}-{uuid.uuid4().hex[:6]}"
        start = ToolCallStart(
            session_update="tool_call",
            tool_call_id=call_id,
            title=f"rolecall {name}",
            kind="other",
            status="in_progress",
            raw_input=arguments,
            field_meta={"fake": {"toolName": f"mcp__rolecall__{name}"}},
        )
        await self._conn.session_update(session_id, start)
        result = await client.call_tool(name, arguments)
        structured = dict(result.structured_content or {})
        journal("mcp", tool=name, error=result.is_error, result=structured)
        status: Literal["failed", "completed"] = "failed" if result.is_error else "completed"
        await self._conn.session_update(
            session_id, update_tool_call(call_id, status=status, raw_output=structured)
        )
        return structured

    def _remember(self, session_id: str, said: list[str]) -> None:
        if self._load:
            sessions = _sessions()
            sessions[session_id] = said
            STORE.write_text(json.dumps(sessions))


def _sessions() -> dict[str, list[str]]:
    return json.loads(STORE.read_text()) if STORE.exists() else {}


def _shown(servers: list[Any] | None) -> list[dict[str, Any]]:
    return [
        {
            "name": server.name,
            "url": server.url,
            "headers": {header.name: header.value for header in server.headers},
        }
        for server in servers or []
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--name", default="Fake")
    args = parser.parse_args()
    journal(
        "start",
        cwd=os.getcwd(),
        argv=sys.argv[1:],
        secret=os.environ.get("FAKE_SECRET"),
        environment=sorted(os.environ),
    )
    try:
        # The fake implements only what the gateway asks of an agent; acp answers any other
        # request "method not found", as it does for every agent missing a method.
        agent = FakeAgent(load=args.load, name=args.name)
        asyncio.run(run_agent(agent))  # type: ignore[arg-type]  # a partial acp.Agent, on purpose
    finally:
        journal("exit")


if __name__ == "__main__":
    main()
