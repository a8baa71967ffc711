"""The README's walkthrough runs as written: a fresh `git clone` of the checkout (or, while changes
are uncommitted, the files a clone of the working tree would hold — what git tracks and what it
would add — and nothing else: no virtualenv, no `var/`), `make run` in it, then every `$ `
command of the walkthrough's console blocks pasted into one shell in that copy, in order. What
each command prints must be what the README shows, once ids, times and durations are masked
(they differ from run to run) and runs of spaces are one. The one liberty taken: the gateway
listens on a free port rather than on 8080, and the commands are told so (`ROLECALL_URL`, and
the URL in `curl` lines)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serving import free_port

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
START_TIMEOUT = 600.0
"""Seconds `make run` may take to install into a new virtualenv and listen."""

_MASKS = (
    (re.compile(r"\b[0-9a-f]{32}\b"), "<…>"),  # an id
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z"), "<…>"),  # a time
    (re.compile(r"\b\d+(\.\d+)? (ms|s)\b"), "<…>"),  # a duration
    (re.compile(r"(?<!<)…(?!>)"), "<…>"),  # where the README cuts an ID or AT column
)


@dataclass(frozen=True)
class Step:
    command: str
    shown: str
    """What the README shows the command printing."""


def walkthrough(readme: str) -> list[Step]:
    """The `$ ` commands of the console blocks between `## Walkthrough` and the next `## `
    heading, each with what the README shows after it (continuation lines ending in `\\` are
    part of the command)."""
    section = readme.split("\n## Walkthrough\n", 1)[1].split("\n## ", 1)[0]
    steps: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", section, re.S):
        command: list[str] | None = None
        shown: list[str] = []
        lines = block.splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            if line.startswith("$ "):
                if command is not None:
                    steps.append(Step("\n".join(command), "\n".join(shown)))
                command, shown = [line[2:]], []
                while command[-1].endswith("\\") and index + 1 < len(lines):
                    index += 1
                    command.append(lines[index])
            else:
                shown.append(line)
            index += 1
        if command is not None:
            steps.append(Step("\n".join(command), "\n".join(shown)))
    return steps


def masked(text: str) -> str:
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    lines = (re.sub(r"\s+", " ", line).strip() for line in text.strip().splitlines())
    return "\n".join(line for line in lines if line)


def _fresh_copy(into: Path) -> None:
    """A `git clone` of the checkout when nothing in it is uncommitted (as in CI); else the files
    a clone of the working tree would hold (tracked, or new and not ignored), so that what is
    being changed is what is tested."""
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    if not status.strip():
        into.rmdir()
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(into)], check=True)
        return
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / os.fsdecode(name)
        if source.is_file():
            target = into / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """`make run` in a fresh copy, on a free port: (the copy, the gateway's URL)."""
    copy = tmp_path_factory.mktemp("clone")
    _fresh_copy(copy)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLECALL_")}
    env["ROLECALL_PORT"] = str(port)
    log = copy / "make-run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["make", "run"], cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while f"listening on {url}" not in log.read_text(errors="replace"):
            assert process.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        yield copy, url
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_the_walkthrough_is_parsed_into_its_commands() -> None:
    steps = walkthrough(README.read_text())
    assert steps[0].command == ". .venv/bin/activate"
    assert any(s.command.startswith("curl -s -X POST") and "-d '" in s.command for s in steps)
    assert all("\n$ " not in s.shown for s in steps)


@pytest.mark.timeout(START_TIMEOUT + 300)
def test_the_walkthrough_prints_what_the_readme_shows(running: tuple[Path, str]) -> None:
    copy, url = running
    steps = walkthrough(README.read_text())
    marker = "::rolecall-walkthrough-step::"
    script = "\n".join(
        f"{step.command.replace('http://127.0.0.1:8080', url)} 2>&1\necho '{marker}'"
        for step in steps
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLECALL_")}
    env["ROLECALL_URL"] = url
    pasted = copy / "walkthrough.sh"
    pasted.write_text(script + "\n")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", str(pasted)],
        stdin=subprocess.DEVNULL,
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    printed = done.stdout.split(f"{marker}\n")
    assert len(printed) == len(steps) + 1, done.stdout + done.stderr
    differ = [
        f"$ {step.command}\n--- the README shows:\n{step.shown}\n--- printed:\n{got}"
        for step, got in zip(steps, printed, strict=False)
        if masked(got) != masked(step.shown)
    ]
    assert not differ, "\n\n".join(differ)
