"""An agent process does not outlive a gateway killed outright: a real parent process starts an
agent with `AgentProcess.spawn`, is SIGKILLed, and the agent is gone soon after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PARENT = """
import asyncio, sys
from pathlib import Path
from core.engine.runtimes.acp.process import AgentProcess

async def main() -> None:
    agent = await AgentProcess.spawn(
        sys.executable, ("-c", "import time; time.sleep(120)"),
        env={"PATH": "/usr/bin:/bin"}, cwd=Path("."), max_line=1 << 20,
    )
    print(agent.pid, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for init to reap it is gone too
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_an_agent_dies_with_a_gateway_that_was_killed_outright(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=root, stdout=subprocess.PIPE, text=True
    ) as parent:
        try:
            assert parent.stdout is not None
            agent = int(parent.stdout.readline())
            assert _alive(agent)
            parent.send_signal(signal.SIGKILL)
            parent.wait(10)
            deadline = time.monotonic() + 10
            while _alive(agent):
                assert time.monotonic() < deadline, "the agent outlived its gateway"
                time.sleep(0.05)
        finally:
            parent.kill()
