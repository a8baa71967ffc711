"""An ACP agent program that does some work, then dies mid-turn: `fake_acp_agent.py` with one
more word.

    python tests/runtimes/failing_acp_agent.py

    store-then-crash <words>   thinks, calls `store` over MCP with <words> (the call completes),
                               starts another tool call it never finishes, writes a piece of a
                               reply, then exits with code 3

Everything else is `fake_acp_agent.py`'s. The gateway gives agents a bare environment, so the
checkout's root is put on the import path here.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx2
from acp import run_agent, update_agent_thought_text
from acp.schema import PromptResponse, ToolCallStart
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.runtimes.fake_acp_agent import FakeAgent, journal, last_person_message


class FailingAgent(FakeAgent):
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        said = last_person_message("".join(getattr(block, "text", "") for block in prompt))
        word, _, rest = said.partition(" ")
        if word != "store-then-crash":
            return await super().prompt(session_id, prompt, **kwargs)
        journal("prompt", session_id=session_id, said=said)
        await self._conn.session_update(session_id, update_agent_thought_text("Storing it."))
        server = self._servers[session_id]
        headers = {header.name: header.value for header in server.headers}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            await self._tool(session_id, client, "store", {"payload": {"said": rest}})
        opened = ToolCallStart(
            session_update="tool_call",
            tool_call_id=f"open-{uuid.uuid4().hex[:6]}",
            title="Look it up",
            kind="search",
            status="in_progress",
            raw_input={"query": rest},
        )
        await self._conn.session_update(session_id, opened)
        await self._say(session_id, "I stored it and was about to ")
        await asyncio.sleep(0.1)
        sys.stderr.write("failing agent: dying on purpose\n")
        sys.stderr.flush()
        os._exit(3)


def main() -> None:
    journal("start", cwd=os.getcwd(), argv=sys.argv[1:])
    try:
        agent = FailingAgent(load=False, name="Failing")
        asyncio.run(run_agent(agent))  # type: ignore[arg-type]  # a partial acp.Agent, on purpose
    finally:
        journal("exit")


if __name__ == "__main__":
    main()
