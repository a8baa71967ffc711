"""Agent sessions: started, resumed after sleep, replaced on "start fresh", closed on idle.

A session's state is stored with every turn's end, so putting a session to sleep only has to
release it; waking resumes it from the stored state (the runtime's `resume`). The counts of
sessions awake and asleep are kept for metrics: asleep means "opened once, not held here now".

A runtime whose agents call their tools from outside the gateway gets a run token with each
session it starts or wakes (`grant`; it replaces the run's earlier session tokens), and the token
is revoked when the session is let go (`revoke`): an agent that has ended leaves no token that
still works.

Traced (`core.tracing`), starting or waking a session is a `rolecall.session.wake` span.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

from core import tracing
from core.engine.host.live import LiveRun
from core.engine.host.observer import HostObserver
from core.engine.runtimes.base import AgentSession, SessionSpec, ToolAccess
from core.engine.runtimes.registry import Runtimes
from core.model.roles.role import Role
from core.model.runs.run import Run

log = logging.getLogger("rolecall.host")


ToolGrant = Callable[[Run], Awaitable[ToolAccess]]
"""Mints a token of the run for its session and says where its tools are (wired by the gateway)."""
TokenRevoke = Callable[[str], Awaitable[None]]
"""Revokes a token `ToolGrant` minted."""


def needs_opening(session: AgentSession) -> bool:
    """A session that woke without its agent's memory of the conversation — an ACP agent that
    cannot load its sessions is given a new one — says so with a true `needs_opening`
    attribute: its next prompt is then made an opening one (the recent conversation, the tasks
    it follows), as for a session's first turn. Sessions without the attribute remember."""
    return getattr(session, "needs_opening", False) is True


class Sessions:
    def __init__(
        self,
        runtimes: Runtimes,
        observer: HostObserver,
        *,
        asleep: int = 0,
        grant: ToolGrant | None = None,
        revoke: TokenRevoke | None = None,
    ) -> None:
        self._runtimes = runtimes
        self._observer = observer
        self._grant = grant
        self._revoke = revoke
        self.awake = 0
        self.asleep = asleep

    def calls_tools_from_outside(self, role: Role) -> bool:
        """Whether the role's agent calls the gateway's tools over HTTP or MCP (so possibly on
        another replica), not in this process."""
        return self._runtimes.for_role(role).wants_tools

    async def for_turn(self, live: LiveRun, role: Role, run: Run) -> AgentSession:
        """The run's current session, woken or started if it is not held yet."""
        if live.session is not None and live.session_id == run.session.id:
            return live.session
        if live.session is not None:  # a fresh session was started: the old one is done
            live.resumable = False  # replaced for good
            await self.close(live)
        state: Mapping[str, object] | None = run.session.state
        woken = {
            "rolecall.runtime": role.runtime.kind,
            "rolecall.session.resumed": state is not None,
        }
        with tracing.span("rolecall.session.wake", attributes=woken):
            session = await self._open(live, role, run, state)
        if state is not None:
            self.asleep = max(self.asleep - 1, 0)
        live.session, live.session_id = session, run.session.id
        live.resumable = state is not None
        self.awake += 1
        self._report()
        return session

    async def _open(
        self, live: LiveRun, role: Role, run: Run, state: Mapping[str, object] | None
    ) -> AgentSession:
        """The session started (no `state`) or resumed, with a token for its tools if its
        runtime wants them (`live.token`)."""
        runtime = self._runtimes.for_role(role)
        tools = await self._grant(run) if runtime.wants_tools and self._grant else None
        spec = SessionSpec(
            run_id=run.id,
            session_id=run.session.id,
            role=role.name,
            display_name=role.display_name,
            instructions=role.instructions,
            options=role.runtime.model_dump(),
            tools=tools,
            approvals=role.approvals,
        )
        try:
            if state is None:
                session = await runtime.start(spec)
            else:
                session = await runtime.resume(spec, state)
        except BaseException:
            if tools is not None:
                await self._revoke_token(tools.token)
            raise
        live.token = tools.token if tools is not None else None
        return session

    async def close(self, live: LiveRun) -> None:
        """Let go of the run's session. If its state is stored it sleeps and can be woken."""
        session, live.session, live.session_id = live.session, None, None
        token, live.token = live.token, None
        if session is None:
            return
        self.awake -= 1
        if live.resumable:
            self.asleep += 1
        self._report()
        with contextlib.suppress(Exception):
            await session.close()
        if token is not None:
            await self._revoke_token(token)

    async def _revoke_token(self, token: str) -> None:
        if self._revoke is None:
            return
        try:
            await self._revoke(token)
        except Exception:  # the run's next session start replaces it anyway
            log.warning("a session's run token could not be revoked", exc_info=True)

    def _report(self) -> None:
        self._observer.sessions(awake=self.awake, asleep=self.asleep)
