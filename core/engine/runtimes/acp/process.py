"""One agent process: spawned in its directory with the environment it is given, spoken to in
newline-delimited JSON-RPC over its stdin and stdout, stopped for good when its session closes.

What the process writes is trusted for nothing:

- **stdout** carries JSON-RPC messages only, one a line, each at most `max_line` bytes. A line
  that is not a JSON object, or one longer than that, ends the connection (the receive side
  reports end of stream) and is kept as `failure`: the turn in flight fails with it, and the
  session is closed by the host, which stops the process.
- **stderr** is read all the time (a full pipe would block the agent) and only its last few
  kilobytes are kept, to say why a process died.
- **Stopping** closes stdin first (a well-behaved agent exits at end of input), then sends
  SIGTERM, then SIGKILL, each after `grace` seconds, to the process's whole group: the agent is
  started in a session of its own, so launchers like `npx` take their children with them.
- **A gateway killed outright** (SIGKILL, OOM) cannot stop its agents; on Linux the kernel does
  it: each agent is started with `PR_SET_PDEATHSIG` = SIGKILL, so it dies with the gateway's
  process rather than running on with nobody reading it. (Its own children see their stdin
  close, which ends a well-behaved one.)

The environment is the few variables every program needs (PATH, HOME, USER, …, as the
`agent-client-protocol` package picks them) plus what the manifest gives; nothing else of the
gateway's (its operator token, its database URL) reaches the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from acp.transports import default_environment

log = logging.getLogger("rolecall.acp")

STDERR_TAIL = 4_000
"""Characters of the agent's stderr kept for the error of a process that died."""

_EXTRA_ENVIRONMENT = ("LANG", "LC_ALL", "TMPDIR", "TZ")

_PR_SET_PDEATHSIG = 1


def _dies_with_parent() -> Callable[[], None] | None:
    """On Linux, what the child runs between fork and exec so that the kernel SIGKILLs it when
    the gateway's process ends (`PR_SET_PDEATHSIG`); elsewhere nothing. The C function is looked
    up here, before the fork: the child only calls it, then checks that its parent did not end
    before the request took hold."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:
            os._exit(1)

    return in_child


def agent_environment(given: Mapping[str, str]) -> dict[str, str]:
    """The environment an agent process starts with: the basics, then `given`."""
    env = default_environment()
    env.update({name: os.environ[name] for name in _EXTRA_ENVIRONMENT if name in os.environ})
    env.update(given)
    return env


class LineTransport:
    """JSON-RPC messages over the process's stdin and stdout, one a line (the `Transport` the
    `acp` connection is built on). A bad line ends the stream and is kept as `failure`."""

    def __init__(
        self, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader, max_line: int
    ) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._max_line = max_line
        self.failure: str | None = None

    async def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        try:
            self._stdin.write(line.encode())
            await self._stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as gone:
            raise ConnectionError("the agent process no longer reads its input") from gone

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return None  # end of stream (a last line without its newline is dropped)
            except asyncio.LimitOverrunError:
                self.failure = f"the agent wrote a line longer than {self._max_line} bytes"
                return None
            except (ConnectionError, ValueError) as broken:
                self.failure = f"the agent's output could not be read: {broken}"
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                shown = line[:200].decode(errors="replace").strip()
                self.failure = (
                    f"the agent wrote something that is not a JSON-RPC message: {shown!r}"
                )
                return None
            return message

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._stdin.can_write_eof():
                self._stdin.write_eof()
            self._stdin.close()


class AgentProcess:
    def __init__(self, process: asyncio.subprocess.Process, max_line: int, name: str) -> None:
        assert process.stdin and process.stdout and process.stderr
        self._process = process
        self._name = name
        self.transport = LineTransport(process.stdin, process.stdout, max_line)
        self._stderr: list[str] = []
        self._stderr_size = 0
        self._reading = asyncio.create_task(self._read_stderr(process.stderr))

    @classmethod
    async def spawn(
        cls,
        executable: str,
        args: tuple[str, ...],
        *,
        env: Mapping[str, str],
        cwd: Path,
        max_line: int,
    ) -> AgentProcess:
        """Start the agent; `OSError` when it cannot be started at all."""
        process = await asyncio.create_subprocess_exec(
            executable,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=max_line,
            start_new_session=True,
            preexec_fn=_dies_with_parent(),
        )
        return cls(process, max_line, Path(executable).name)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process.returncode is None

    async def why_it_ended(self, wait: float = 2.0) -> str:
        """Why the connection to the agent ended: its output was refused, or it exited (with
        the end of its stderr)."""
        if self.transport.failure is not None:
            return self.transport.failure
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await self._process.wait()
                await asyncio.wait({self._reading})
        code = self._process.returncode
        if code is None:
            said = "the agent closed its output but is still running"
        elif code < 0:
            said = f"the agent process was killed by signal {-code}"
        else:
            said = f"the agent process exited with code {code}"
        tail = self.stderr_tail()
        return f"{said}; its last words on stderr: {tail}" if tail else said

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-STDERR_TAIL:].strip()

    async def stop(self, grace: float) -> None:
        """End the process: end of input, then SIGTERM, then SIGKILL to its group."""
        await self.transport.close()
        for sent in (None, signal.SIGTERM, signal.SIGKILL):
            if sent is not None:
                self._signal(sent)
            try:
                async with asyncio.timeout(grace if sent is not signal.SIGKILL else None):
                    await self._process.wait()
                break
            except TimeoutError:
                continue
        self._signal(signal.SIGKILL)  # whatever of its group outlived it
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reading
        # A pipe nobody read to its end (output refused mid-line) keeps the transport open:
        # close it, or it is only closed (with a ResourceWarning) when collected.
        transport = getattr(self._process, "_transport", None)
        if transport is not None:
            transport.close()

    def _signal(self, sent: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, sent)

    async def _read_stderr(self, stderr: asyncio.StreamReader) -> None:
        while True:
            try:
                chunk = await stderr.read(4096)
            except (ConnectionError, ValueError):
                return
            if not chunk:
                return
            text = chunk.decode(errors="replace")
            log.debug("%s (pid %d) stderr: %s", self._name, self._process.pid, text.rstrip())
            self._stderr.append(text)
            self._stderr_size += len(text)
            while self._stderr_size - len(self._stderr[0]) >= STDERR_TAIL:
                self._stderr_size -= len(self._stderr.pop(0))
