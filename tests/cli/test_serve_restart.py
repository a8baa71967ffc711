"""Nothing is lost when the gateway dies mid-turn: a real `rolecall serve` process is killed
(SIGKILL, no chance to clean up) after a person's message is committed and before the reply;
the next `rolecall serve` on the same database answers it — once."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from tests.cli.conftest import Gateway

SLOW_ECHO = """\
name: echo
display_name: Echo
runtime: {kind: builtin, agent: echo, delay_ms: 1500}
"""
TOKEN = "restart-test-operator-token-0123456789"


def _call(url: str, method: str = "GET", body: Any = None) -> Any:
    request = urllib.request.Request(
        url,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _until(check: Any, within: float) -> Any:
    deadline = time.monotonic() + within
    while not (found := check()):
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)
    return found


def test_a_reply_interrupted_by_a_crash_comes_after_the_restart(
    serve: Callable[..., AbstractContextManager[Gateway]], tmp_path: Path
) -> None:
    roles = tmp_path / "roles"
    roles.mkdir()
    (roles / "echo.yaml").write_text(SLOW_ECHO)
    settings = {"ROLECALL_ROLES_DIR": str(roles), "ROLECALL_API_TOKEN": TOKEN}
    var = tmp_path / "var"

    with serve(var, **settings) as first:
        api = first.url + "/api/v1"
        thread = _call(api + "/threads", "POST", {"participants": ["person:ann", "role:echo"]})
        timeline = f"/threads/{thread['id']}/timeline"
        message = {"author": "person:ann", "text": "are you there?"}
        _call(api + f"/threads/{thread['id']}/messages", "POST", message)

        def running() -> bool:
            runs = _call(api + f"/runs?thread={thread['id']}")["runs"]
            return bool(runs) and runs[0]["running"]

        _until(running, within=10)  # the reply is 1.5 s away: kill the gateway now
        first.process.kill()
        first.process.wait(10)

    with serve(var, **settings) as second:
        api = second.url + "/api/v1"

        def replies() -> list[str]:
            events = _call(api + timeline)["events"]
            return [e["text"] for e in events if e.get("author") == "role:echo"]

        assert _until(replies, within=15) == ["are you there?"]
        time.sleep(0.3)
        assert replies() == ["are you there?"]  # answered once
        [run] = _call(api + f"/runs?thread={thread['id']}")["runs"]
        assert run["turns"] == 1 and run["status"] == "ready"
