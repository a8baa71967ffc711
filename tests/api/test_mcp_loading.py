"""The MCP SDK is loaded when `/mcp` is first needed: not at all for a gateway whose agents are
all built-in until a call comes (then it answers, loaded on the spot), and before serving when a
role's runtime hands its agents run tokens. Each case runs in a process of its own
(tests/api/mcp_loading_probe.py), where no other test has imported the SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def probe(directory: Path, mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.api.mcp_loading_probe", str(directory), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize(
    ("mode", "at_start"), [("builtin", False), ("wants-tools", True)], ids=["builtin", "remote"]
)
def test_the_sdk_is_loaded_when_first_needed(tmp_path: Path, mode: str, at_start: bool) -> None:
    seen = probe(tmp_path, mode)
    assert seen["at_start"] is at_start
    assert seen["before_call"] is at_start  # a run, its turn and a minted token: still not
    assert seen["status"] == 200 and seen["server_name"] == "rolecall"
    assert seen["after_call"] is True
