"""The `acp` runtime end to end: the whole gateway on loopback backs roles with real agent
processes (`fake_acp_agent.py`, the `agent-client-protocol` package's agent side on real stdio),
which reach our tools over MCP with the token their session was given.

Each test's agents write what they see to a journal (JSON lines) the test reads; everything
else is read from the gateway's HTTP API (timeline, runs, turns) as an operator would.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)
from aiohttp import web

from channels.edge.requests import DATABASE_KEY, HOST_KEY
from core.engine.host.drafts import Draft, DraftKind
from core.engine.runtimes.acp import AcpRuntime
from core.engine.runtimes.acp.policy import choose, names_in, offered
from core.engine.runtimes.acp.render import render
from core.engine.runtimes.acp.updates import TurnLog
from core.engine.runtimes.base import (
    AgentError,
    Prompt,
    PromptEvent,
    Reply,
    ReplyChunk,
    Step,
    ToolCall,
)
from core.engine.runtimes.registry import Runtimes
from core.model.roles import Role
from core.model.roles.manifests import ManifestError
from core.model.roles.permissions import Asked, Decision, asks_anyone, decide
from gateway.app import build_app
from tests.api.conftest import TOKEN, Api
from tests.serving import free_port, serve
from tests.settings import make_settings
from tests.waiting import eventually

FAKE = Path(__file__).with_name("fake_acp_agent.py").resolve()
SECRETS = {"FAKE_ACP_SECRET": "s3cret"}


def acp_role(
    name: str,
    journal: Path,
    *,
    args: tuple[str, ...] = (),
    permissions: Any = "deny",
    **limits: Any,
) -> Role:
    return Role.model_validate(
        {
            "name": name,
            "display_name": name.title(),
            "instructions": f"You are the {name} role. Be brief.",
            "runtime": {
                "kind": "acp",
                "command": sys.executable,
                "args": [str(FAKE), *args],
                "env": {"FAKE_ACP_JOURNAL": str(journal)},
                "secrets": {"FAKE_SECRET": "FAKE_ACP_SECRET"},
                "permissions": permissions,
                "max_processes": limits.pop("max_processes", 16),
            },
            **limits,
        }
    )


@dataclass
class Scene:
    api: Api
    app: web.Application
    journal_path: Path
    var_dir: Path
    port: int

    def journal(self, event: str | None = None) -> list[dict[str, Any]]:
        if not self.journal_path.exists():
            return []
        entries = [json.loads(line) for line in self.journal_path.read_text().splitlines()]
        return [e for e in entries if event is None or e["event"] == event]

    async def conversation(self, person: str, role: str) -> str:
        thread: str = (await self.api.thread(person, f"role:{role}"))["id"]
        return thread

    async def run(self, thread: str) -> dict[str, Any]:
        runs: list[dict[str, Any]] = await eventually(
            lambda: self._runs(thread), what=f"the run of {thread}", within=30
        )
        [run] = runs
        return run

    async def _runs(self, thread: str) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = (await self.api.get(f"/api/v1/runs?thread={thread}")).body[
            "runs"
        ]
        return runs

    async def turn(self, thread: str, number: int) -> dict[str, Any]:
        """The run's turn `number`, once it is finished."""
        run = await self.run(thread)

        async def finished() -> list[dict[str, Any]] | None:
            turns = await self._turns(run["id"])
            return turns if len(turns) >= number else None

        turns: list[dict[str, Any]] = await eventually(
            finished, what=f"turn {number} of {run['id']}", within=30
        )
        return turns[number - 1]

    async def _turns(self, run_id: str) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = (await self.api.get(f"/api/v1/runs/{run_id}/turns")).body[
            "turns"
        ]
        return turns

    async def said_by(self, thread: str, author: str) -> list[str]:
        page = await self.api.timeline(thread)
        events = page["events"]
        return [e["text"] for e in events if e["kind"] == "message" and e["author"] == author]

    async def journaled(self, event: str, count: int = 1) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]] | None:
            found = self.journal(event)
            return found if len(found) >= count else None

        journaled: list[dict[str, Any]] = await eventually(
            read, what=f"{count} {event!r} in the agent's journal", within=30
        )
        return journaled


@asynccontextmanager
async def serving(
    tmp_path: Path,
    *roles: Callable[[Path], Role],
    attempts: int = 2,
    runtime: Callable[[Path], AcpRuntime] | None = None,
) -> AsyncIterator[Scene]:
    port = free_port()
    journal = tmp_path / "journal.jsonl"
    var_dir = tmp_path / "var"
    settings = make_settings(
        tmp_path,
        var_dir=var_dir,
        port=port,
        turn_attempts=attempts,
        retry_backoff=0.01,
    )
    known = {role.name: role for role in (make(journal) for make in roles)}
    runtimes = Runtimes(kinds={"acp": runtime(var_dir)}) if runtime else None
    app = build_app(settings, api_token=TOKEN, roles=known, runtimes=runtimes, secrets=SECRETS)
    async with serve(app, port=port) as server, aiohttp.ClientSession() as session:
        yield Scene(Api(server, session), app, journal, var_dir, port)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def fake(**options: Any) -> Callable[[Path], Role]:
    name = options.pop("name", "fake")
    return lambda journal: acp_role(name, journal, **options)


# --- a conversation with an agent process ---------------------------------------------------


async def test_a_persons_message_reaches_the_agent_which_answers_over_mcp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ACP_GATEWAY_ONLY", "not for agents")
    async with serving(tmp_path, fake(args=("--load",))) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "my locker is 42")
        first = await scene.turn(thread, 1)
        assert first["outcome"] == "replied", first
        assert await scene.said_by(thread, "role:fake") == [
            "Fake heard: my locker is 42 (remembered 0)"
        ]

        run = await scene.run(thread)
        [started] = scene.journal("start")
        assert Path(started["cwd"]) == (scene.var_dir / "agents" / "fake" / run["id"]).resolve()
        assert started["secret"] == "s3cret"
        assert "FAKE_ACP_GATEWAY_ONLY" not in started["environment"]
        [opened] = scene.journal("new_session")
        [server] = opened["servers"]
        assert server["name"] == "rolecall"
        assert server["url"] == f"http://127.0.0.1:{scene.port}/mcp"
        assert server["headers"]["Authorization"].startswith("Bearer ")
        assert [e["tool"] for e in scene.journal("mcp")] == ["recall", "store", "send_message"]
        assert not any(e["error"] for e in scene.journal("mcp"))

        steps = first["steps"]
        assert {"kind": "thought", "text": "Let me look."} in steps
        assert {"kind": "plan", "text": "[in_progress] recall\n[pending] answer"} in steps
        calls = [s for s in steps if s["kind"] == "tool_call"]
        assert [c["name"] for c in calls] == [
            "mcp__rolecall__recall",
            "mcp__rolecall__store",
            "mcp__rolecall__send_message",
        ]
        assert calls[1]["arguments"] == {"payload": {"said": "my locker is 42"}}
        assert calls[2]["arguments"] == {"text": "Fake heard: my locker is 42 (remembered 0)"}
        assert set(calls[2]["result"]) == {"id", "seq"}
        assert all(c["error"] is None for c in calls)
        assert not [s for s in steps if s["kind"] == "reply"]  # it said it over MCP only

        [told] = scene.journal("prompt")
        assert "You are the fake role. Be brief." in told["text"]
        assert "1 message waits for your answer." in told["text"]
        assert first["prompt"]["opening"] is True

        await scene.api.say(thread, "person:ann", "and my desk is 4B")
        second = await scene.turn(thread, 2)
        assert second["outcome"] == "replied"
        assert (await scene.said_by(thread, "role:fake"))[-1] == (
            "Fake heard: and my desk is 4B (remembered 1)"
        )
        assert len(scene.journal("start")) == 1  # the same process, awake between turns
        told = scene.journal("prompt")[-1]
        assert "Your instructions" not in told["text"]
        assert told["said"] == "and my desk is 4B"


async def test_a_reply_the_agent_writes_is_streamed_then_posted(tmp_path: Path) -> None:
    async with serving(tmp_path, fake()) as scene:
        drafts: list[Draft] = []
        scene.app[HOST_KEY].watch_drafts(drafts.append)
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "say hello there")
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "replied"
        assert await scene.said_by(thread, "role:fake") == ["hello there"]
        chunks = [d.text for d in drafts if d.kind is DraftKind.CHUNK]
        assert chunks == ["hello ", "there "]
        assert drafts[-1].kind is DraftKind.END
        assert {"kind": "reply", "text": "hello there"} in turn["steps"]


async def test_a_turns_tool_calls_are_cut_at_the_roles_budget_and_the_next_turn_has_its_own(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, fake(max_tool_calls_per_turn=3)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "loop 5")
        first = await scene.turn(thread, 1)
        assert await scene.said_by(thread, "role:fake") == [
            "3 answered, 2 refused (tool_budget_spent)"
        ]
        assert [e["error"] for e in scene.journal("mcp")] == [False] * 3 + [True] * 2
        refusal = scene.journal("mcp")[-1]["result"]["error"]
        assert "3 tool calls" in refusal["message"], refusal
        calls = [s for s in first["steps"] if s["kind"] == "tool_call"]
        assert [c["error"] is None for c in calls] == [True] * 3 + [False] * 2
        assert {
            "kind": "limit",
            "text": "2 tool call(s) refused: the role allows 3 a turn (max_tool_calls_per_turn)",
        } in first["steps"]

        await scene.api.say(thread, "person:ann", "loop 3")
        second = await scene.turn(thread, 2)
        assert (await scene.said_by(thread, "role:fake"))[-1] == "3 answered, 0 refused (none)"
        assert not [s for s in second["steps"] if s["kind"] == "limit"]


# --- idle sleep and wake --------------------------------------------------------------------


async def test_idle_sleep_ends_the_process_and_the_next_message_loads_the_session(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, fake(args=("--load",), idle_sleep_after=0.2)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "my locker is 42")
        await scene.turn(thread, 1)
        [first] = scene.journal("start")
        [exited] = await scene.journaled("exit")  # idle sleep: end of input, and it left
        assert exited["pid"] == first["pid"]
        await eventually(lambda: not alive(first["pid"]), what="the agent gone", within=30)
        [opened] = scene.journal("new_session")

        await scene.api.say(thread, "person:ann", "what do you know?")
        second = await scene.turn(thread, 2)
        assert second["outcome"] == "replied"
        starts = scene.journal("start")
        assert len(starts) == 2 and starts[1]["pid"] != first["pid"]
        [loaded] = scene.journal("load_session")
        assert loaded["session_id"] == opened["session_id"] and loaded["found"] is True
        assert len(scene.journal("new_session")) == 1
        told = scene.journal("prompt")[-1]
        assert "The conversation so far" not in told["text"]  # the agent remembers
        assert second["prompt"]["opening"] is False
        # the replayed history is not this turn's reply
        assert (await scene.said_by(thread, "role:fake"))[-1] == (
            "Fake heard: what do you know? (remembered 1)"
        )
        assert not [s for s in second["steps"] if s["kind"] == "reply"]
        run = await scene.app[DATABASE_KEY].runs.get((await scene.run(thread))["id"])
        assert run.session.state == {"agent_session": opened["session_id"]}


async def test_an_agent_that_cannot_load_gets_a_new_session_with_an_opening_prompt(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, fake(idle_sleep_after=0.2)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "my locker is 42")
        await scene.turn(thread, 1)
        await scene.journaled("exit")

        await scene.api.say(thread, "person:ann", "what do you know?")
        second = await scene.turn(thread, 2)
        assert second["outcome"] == "replied", second
        assert not scene.journal("load_session")
        first_session, second_session = (e["session_id"] for e in scene.journal("new_session"))
        assert first_session != second_session
        told = scene.journal("prompt")[-1]
        assert told["session_id"] == second_session
        assert "You are the fake role. Be brief." in told["text"]
        assert "The conversation so far:" in told["text"]
        assert "person:ann: my locker is 42" in told["text"]
        assert "role:fake: Fake heard: my locker is 42 (remembered 0)" in told["text"]
        assert told["said"] == "what do you know?"
        prompt = second["prompt"]
        assert prompt["opening"] is True
        assert [e.get("text") for e in prompt["recent"]] == [
            "my locker is 42",
            "Fake heard: my locker is 42 (remembered 0)",
        ]
        [note] = [s for s in second["steps"] if s["kind"] == "note"]
        assert "new agent session" in note["text"]
        assert (await scene.said_by(thread, "role:fake"))[-1] == (
            "Fake heard: what do you know? (remembered 1)"
        )
        run = await scene.app[DATABASE_KEY].runs.get((await scene.run(thread))["id"])
        assert run.session.state == {"agent_session": second_session}


async def test_a_role_runs_at_most_max_processes_agents_at_once(tmp_path: Path) -> None:
    role = fake(max_processes=1, idle_sleep_after=0.3)
    async with serving(tmp_path, role) as scene:
        ann = await scene.conversation("person:ann", "fake")
        bob = await scene.conversation("person:bob", "fake")
        await scene.api.say(ann, "person:ann", "hello from ann")
        await scene.api.say(bob, "person:bob", "hello from bob")
        assert (await scene.turn(ann, 1))["outcome"] == "replied"
        assert (await scene.turn(bob, 1))["outcome"] == "replied"
        await scene.journaled("exit", 2)
        alive_at_once, most = 0, 0
        for entry in sorted(scene.journal(), key=lambda e: e["at"]):
            alive_at_once += {"start": 1, "exit": -1}.get(entry["event"], 0)
            most = max(most, alive_at_once)
        assert most == 1
        assert len(scene.journal("start")) == 2


# --- failures -------------------------------------------------------------------------------


async def _failed(scene: Scene, thread: str) -> dict[str, Any]:
    turn = await scene.turn(thread, 1)
    assert turn["outcome"] == "failed", turn
    assert len(turn["attempts"]) == 2  # retried, then given up
    run = await scene.run(thread)
    assert run["status"] == "failed"
    notices = [e for e in (await scene.api.timeline(thread))["events"] if e["kind"] == "system"]
    assert notices and "could not answer" in notices[-1]["text"]
    for start in scene.journal("start"):
        await eventually(_gone(start["pid"]), what="the agent gone", within=30)
    return turn


def _gone(pid: int) -> Callable[[], bool]:
    """A check that the process `pid` has ended."""
    return lambda: not alive(pid)


async def test_an_agent_that_dies_mid_turn_fails_the_attempt_and_the_run(tmp_path: Path) -> None:
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "crash")
        turn = await _failed(scene, thread)
        for attempt in turn["attempts"]:
            assert "exited with code 3" in attempt["error"], attempt
            assert "fake agent: crashing on purpose" in attempt["error"]
        assert len(scene.journal("start")) == 2  # each attempt started it again
        assert await scene.said_by(thread, "role:fake") == []

        await scene.api.say(thread, "person:ann", "hello again")  # the next message tries again
        assert (await scene.turn(thread, 2))["outcome"] == "replied"
        assert (await scene.run(thread))["status"] == "ready"


async def test_an_agent_that_never_answers_is_stopped_at_the_turn_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path, fake(turn_timeout=1.5)) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "hang")
        turn = await _failed(scene, thread)
        for attempt in turn["attempts"]:
            assert attempt["error"] == "the turn took longer than the role's turn_timeout"


async def test_garbage_on_stdout_stops_the_agent(tmp_path: Path) -> None:
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "garbage")
        turn = await _failed(scene, thread)
        for attempt in turn["attempts"]:
            assert "not a JSON-RPC message: 'this is not JSON'" in attempt["error"], attempt


async def test_a_line_longer_than_the_cap_stops_the_agent(tmp_path: Path) -> None:
    def runtime(var_dir: Path) -> AcpRuntime:
        return AcpRuntime(var_dir=var_dir, secrets=SECRETS, max_line=65_536, stop_grace=0.5)

    async with serving(tmp_path, fake(), runtime=runtime) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "huge 300000")
        turn = await _failed(scene, thread)
        for attempt in turn["attempts"]:
            assert "a line longer than 65536 bytes" in attempt["error"], attempt


# --- control and permissions ----------------------------------------------------------------


async def test_cancel_reaches_the_agent(tmp_path: Path) -> None:
    async with serving(tmp_path, fake()) as scene:
        thread = await scene.conversation("person:ann", "fake")
        await scene.api.say(thread, "person:ann", "wait")
        [told] = await scene.journaled("prompt")
        run = await scene.run(thread)
        reply = await scene.api.post(f"/api/v1/runs/{run['id']}/cancel")
        assert reply.status == 200, reply.text
        turn = await scene.turn(thread, 1)
        assert turn["outcome"] == "cancelled"
        [cancel] = scene.journal("cancel")
        assert cancel["session_id"] == told["session_id"]
        assert scene.journal("cancelled")  # the agent ended its prompt as cancelled
        await scene.journaled("exit")  # and its process was ended with the session
        assert (await scene.run(thread))["status"] == "ready"


async def test_permission_requests_are_answered_by_the_roles_policy(tmp_path: Path) -> None:
    roles = (
        fake(name="open", permissions="allow"),
        fake(name="shut", permissions="deny"),
        fake(name="picky", permissions=["read", "safe_*"]),
    )
    asked = [
        ("open", "rm execute", "rm: yes"),
        ("shut", "cat read", "cat: no"),
        ("picky", "rm execute", "rm: no"),
        ("picky", "cat read", "cat: yes"),  # by kind
        ("picky", "safe_tool other", "safe_tool: yes"),  # by the tool's name in `_meta`
    ]
    async with serving(tmp_path, *roles) as scene:
        for number, (role, ask, expected) in enumerate(asked):
            thread = await scene.conversation(f"person:p{number}", role)
            await scene.api.say(thread, f"person:p{number}", f"ask {ask}")
            turn = await scene.turn(thread, 1)
            assert await scene.said_by(thread, f"role:{role}") == [expected], turn
            [step] = [s for s in turn["steps"] if s["kind"] == "permission"]
            tool = ask.split()[0]
            verdict = "allowed" if expected.endswith("yes") else "refused"
            assert step["text"] == f"{tool}: {verdict} by the role's permissions"


async def test_a_role_whose_command_or_secret_is_missing_does_not_start(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    journal = tmp_path / "journal.jsonl"
    missing_command = acp_role("fake", journal).model_copy(
        update={
            "runtime": acp_role("fake", journal).runtime.model_copy(
                update={"command": "no-such-agent-on-path"}
            )
        }
    )
    with pytest.raises(
        ManifestError, match=re.escape("runtime.command: 'no-such-agent-on-path' is not on PATH")
    ):
        build_app(settings, api_token=TOKEN, roles={"fake": missing_command}, secrets=SECRETS)
    with pytest.raises(
        ManifestError,
        match=re.escape("runtime.secrets: FAKE_SECRET: the setting FAKE_ACP_SECRET is not set"),
    ):
        build_app(settings, api_token=TOKEN, roles={"fake": acp_role("fake", journal)}, secrets={})


# --- the pure parts -------------------------------------------------------------------------

AT = datetime(2026, 11, 30, 8, 24, tzinfo=UTC)


def _message(seq: int, author: str, text: str) -> PromptEvent:
    return PromptEvent(kind="message", id=f"e{seq}", seq=seq, at=AT, author=author, text=text)


def test_an_opening_prompt_says_who_how_and_what_came_before_a_later_one_only_the_news() -> None:
    news = [_message(3, "person:ann", "and now?")]
    opening = Prompt(
        role="fake",
        instructions="Be brief.",
        news=news,
        pending=1,
        opening=True,
        recent=[_message(1, "person:ann", "hi"), _message(2, "role:fake", "hello")],
    )
    text = render(opening, display_name="Fake")
    assert text.startswith("You are Fake (role:fake), an agent in a conversation")
    assert 'MCP server "rolecall"' in text
    assert "Your instructions:\nBe brief." in text
    assert "The conversation so far:\n#1 [2026-11-30 08:24] person:ann: hi\n#2" in text
    assert text.endswith(
        "New in the conversation:\n#3 [2026-11-30 08:24] person:ann: and now?\n\n"
        "1 message waits for your answer."
    )
    later = render(
        Prompt(role="fake", instructions="Be brief.", news=news, pending=1), display_name="Fake"
    )
    assert later == (
        "New in the conversation:\n#3 [2026-11-30 08:24] person:ann: and now?\n\n"
        "1 message waits for your answer."
    )


def test_the_permission_policy() -> None:
    bash = Asked(
        kind="execute", title="Run ls", names=names_in({"claudeCode": {"toolName": "Bash"}})
    )
    ours = Asked(kind="other", title="send", names=("mcp__rolecall__send_message",))
    assert bash.names == ("Bash",) and bash.described == "Bash"
    assert decide("allow", bash) == "allow" and decide("deny", ours) == "deny"
    assert decide("ask", ours) == "ask"
    assert decide(("read", "mcp__rolecall__*"), bash) == "deny"
    assert decide(("read", "mcp__rolecall__*"), ours) == "allow"
    assert all(decide((entry,), bash) == "allow" for entry in ("execute", "Bash", "Run ls"))
    # a mapping: the first entry that matches decides, in the order written; no match: deny
    mapping: dict[str, Decision] = {"mcp__rolecall__*": "allow", "execute": "ask"}
    assert decide(mapping, ours) == "allow" and decide(mapping, bash) == "ask"
    assert decide(mapping, Asked(kind="edit")) == "deny"
    assert decide({"*": "ask", "execute": "allow"}, bash) == "ask"  # first match, not best
    assert asks_anyone(mapping) and asks_anyone("ask")
    assert not asks_anyone(("execute",)) and not asks_anyone("allow")
    options = [("a", "allow_always"), ("b", "allow_once"), ("c", "reject_always")]
    assert choose(True, options) == "b"  # once rather than always
    assert choose(False, options) == "c"
    assert choose(False, [("a", "allow_once")]) is None  # answered "cancelled"


def test_an_agents_options_offered_to_people() -> None:
    made = offered(
        [
            ("proceed_once", "Allow once", "allow_once"),
            ("Proceed Always!", "Always", "allow_always"),
            ("x", "  ", "reject_once"),
            ("proceed-once", "Again", "something_new"),
        ]
    )
    assert [(o.id, o.label, o.kind.value, theirs) for o, theirs in made.values()] == [
        ("proceed-once", "Allow once", "allow_once", "proceed_once"),
        ("proceed-always", "Always", "allow_always", "Proceed Always!"),
        ("x", "x", "reject_once", "x"),
        ("proceed-once-2", "Again", "choice", "proceed-once"),
    ]
    assert list(made) == [o.id for o, _ in made.values()]
    again = offered([("proceed_once", "Allow once", "allow_once")])
    assert list(again) == ["proceed-once"]  # the same options make the same approval


def _chunk(text: str, message_id: str | None = None) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=message_id,
    )


def test_what_a_prompts_updates_amount_to() -> None:
    log = TurnLog()
    thought = AgentThoughtChunk(
        session_update="agent_thought_chunk", content=TextContentBlock(type="text", text="hmm")
    )
    got = [
        *log.take(thought),
        *log.take(_chunk("Let me ", "m1")),
        *log.take(_chunk("check.", "m1")),
        *log.take(
            ToolCallStart(
                session_update="tool_call",
                tool_call_id="t1",
                title="Run ls",
                kind="execute",
                raw_input={"command": "ls"},
            )
        ),
        *log.take(_chunk("Done.", "m2")),
        *log.take(
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id="t1",
                status="failed",
                raw_output="no such file",
            )
        ),
        *log.take(
            ToolCallStart(session_update="tool_call", tool_call_id="t2", title="Read", kind="read")
        ),
        *log.end("max_tokens"),
    ]
    assert got == [
        Step("thought", "hmm"),
        ReplyChunk("Let me "),
        ReplyChunk("check."),
        ReplyChunk("\n\nDone."),
        ToolCall(name="Run ls", arguments={"command": "ls"}, result=None, error="no such file"),
        ToolCall(name="Read", arguments={}, result=None, error="not finished (status pending)"),
        Step("stop", "the agent stopped: max_tokens"),
        Reply("Let me check.\n\nDone."),
    ]


def test_a_reply_longer_than_a_message_fails_the_turn() -> None:
    log = TurnLog(max_reply=10)
    log.take(_chunk("0123456789"))
    with pytest.raises(AgentError, match="reply grew past 10 characters"):
        log.take(_chunk("!"))
