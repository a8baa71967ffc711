"""The `acp` runtime: a role's sessions are agent processes spoken to over the Agent Client
Protocol (stdio JSON-RPC).

    runtime:
      kind: acp
      command: claude-agent-acp         # on the PATH, or a path
      args: []
      env: {}                           # given to the process as written
      secrets: {ANTHROPIC_API_KEY: CODER_ANTHROPIC_KEY}   # {VARIABLE: SETTING holding it}
      permissions: [read, search, "mcp__rolecall__*"]      # allow | deny | what is allowed
      max_processes: 16

- **One process a session.** The process starts when a session starts or wakes, and ends when
  the session closes: idle sleep, a failed attempt (the next attempt wakes it again), shutdown.
- **A directory of its own.** A run's agent works in `<var_dir>/agents/<role>/<run id>/`, made
  the first time and kept: one conversation (or task) of one role, across its sessions — start
  fresh included — and across restarts. Agents that keep their sessions on disk key them by it.
- **Resuming** a session that slept starts the process again and loads the agent's session
  (its id is the state stored after every turn) when the agent can; otherwise the agent gets a
  new session, and the host makes its next prompt an opening one.
- **Limits.** At most `max_processes` processes of a role are alive at once; a session that
  would start one more waits for a slot, within its turn's time. Turn time is the host's
  (`turn_timeout`); lines on stdout are capped at `max_line` bytes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.engine.runtimes.acp.process import AgentProcess, agent_environment
from core.engine.runtimes.acp.session import AcpSession, introduce
from core.engine.runtimes.base import AgentError, AgentSession, SessionSpec
from core.model.roles.role import AcpRuntime as Manifest
from core.model.roles.role import Role

log = logging.getLogger("rolecall.acp")

MAX_LINE = 16 * 1024 * 1024
"""The longest line an agent may write (one JSON-RPC message): 16 MiB."""

STOP_GRACE = 2.0
"""Seconds an agent has to exit at end of input, then again after SIGTERM."""


class AcpRuntime:
    wants_tools = True

    def __init__(
        self,
        *,
        var_dir: Path,
        secrets: Mapping[str, str],
        max_line: int = MAX_LINE,
        stop_grace: float = STOP_GRACE,
    ) -> None:
        self._agents_dir = Path(var_dir).resolve() / "agents"
        self._secrets = dict(secrets)
        self._max_line = max_line
        self._grace = stop_grace
        self._slots: dict[str, asyncio.Semaphore] = {}

    def problem(self, role: Role) -> tuple[str, str] | None:
        manifest = role.runtime
        if not isinstance(manifest, Manifest):
            return ("runtime.kind", "the acp runtime backs only roles of kind acp")
        if self._executable(manifest) is None:
            where = "is not an executable file" if "/" in manifest.command else "is not on PATH"
            return ("runtime.command", f"{manifest.command!r} {where}")
        for variable, setting in manifest.secrets.items():
            if setting not in self._secrets:
                return ("runtime.secrets", f"{variable}: the setting {setting} is not set")
        return None

    async def probe(self, role: Role) -> str:
        """Start the role's agent in a scratch directory and ask it `initialize` (what
        `rolecall doctor` checks); an `AgentError` says why it did not answer."""
        manifest = role.runtime
        assert isinstance(manifest, Manifest)
        executable = self._executable(manifest)
        if executable is None:
            raise AgentError(f"{manifest.command!r} is not an executable file on PATH")
        with tempfile.TemporaryDirectory(prefix="rolecall-probe-") as scratch:
            try:
                process = await AgentProcess.spawn(
                    executable,
                    manifest.args,
                    env=self._environment(manifest),
                    cwd=Path(scratch),
                    max_line=self._max_line,
                )
            except OSError as failed:
                raise AgentError(f"could not start {manifest.command!r}: {failed}") from None
            return await introduce(process, grace=self._grace)

    def directory(self, role: str, run_id: str) -> Path:
        """The working directory of a run's agent."""
        return self._agents_dir / role / run_id

    async def start(self, spec: SessionSpec) -> AgentSession:
        return await self._open(spec, None)

    async def resume(self, spec: SessionSpec, state: Mapping[str, Any]) -> AgentSession:
        earlier = state.get("agent_session")
        return await self._open(spec, earlier if isinstance(earlier, str) else None)

    async def _open(self, spec: SessionSpec, earlier: str | None) -> AcpSession:
        manifest = Manifest.model_validate(dict(spec.options))
        executable = self._executable(manifest)
        if executable is None:
            raise AgentError(f"{manifest.command!r} is not an executable file on PATH")
        slot = self._slots.setdefault(spec.role, asyncio.Semaphore(manifest.max_processes))
        if slot.locked():
            log.info(
                "role:%s run %s: waiting for one of the role's %d agent processes to end",
                spec.role,
                spec.run_id,
                manifest.max_processes,
            )
        await slot.acquire()
        cwd = self.directory(spec.role, spec.run_id)
        try:
            cwd.mkdir(parents=True, exist_ok=True)
            process = await AgentProcess.spawn(
                executable,
                manifest.args,
                env=self._environment(manifest),
                cwd=cwd,
                max_line=self._max_line,
            )
        except OSError as failed:
            slot.release()
            raise AgentError(f"could not start {manifest.command!r}: {failed}") from None
        except BaseException:
            slot.release()
            raise
        session = None
        try:
            session = AcpSession(
                spec,
                process,
                cwd=cwd,
                policy=manifest.permissions,
                grace=self._grace,
                release=slot.release,
            )
            await session.open(earlier)
        except BaseException:
            if session is not None:
                await session.close()  # the process, and the slot with it
            else:
                await process.stop(self._grace)
                slot.release()
            raise
        log.info(
            "role:%s run %s: agent process %d started in %s",
            spec.role,
            spec.run_id,
            session.pid,
            cwd,
        )
        return session

    def _environment(self, manifest: Manifest) -> dict[str, str]:
        given = dict(manifest.env)
        given.update({var: self._secrets[setting] for var, setting in manifest.secrets.items()})
        return agent_environment(given)

    def _executable(self, manifest: Manifest) -> str | None:
        """The command as it will be run: found on the PATH the agent gets, made absolute (the
        agent starts in its own directory, not the gateway's)."""
        path = manifest.env.get("PATH") or agent_environment({}).get("PATH")
        found = shutil.which(manifest.command, path=path)
        # absolute, but symlinks kept: a virtualenv's python knows its environment by its path
        return os.path.abspath(found) if found else None
