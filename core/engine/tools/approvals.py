"""The `ask` tool: put a question to the people of this conversation and wait for the answer;
and `approve`, the same for a runtime whose agent asks permission before a tool call its role's
`permissions` put to people (an ACP agent's `session/request_permission`, a model's call of a
tool marked `ask`).

The question is an approval (`core.model.approvals`): it is in the conversation's timeline, shown
on every channel the conversation is bound to, and the first answer from any of them counts.
The call returns when someone answered, or when the question expired unanswered. While it
waits, the turn's timeout does not count (up to the question's expiry), and the turn gives its
slots back (`HoldTurn`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any

from core.engine.approvals import ask, wait_for_answer
from core.engine.tools.base import Arg, Effects, tool
from core.engine.tools.context import ToolContext
from core.engine.tools.results import STRING, described, nullable, obj
from core.model.approvals import (
    DEFAULT_EXPIRY,
    MAX_DESCRIPTION_LENGTH,
    MAX_EXPIRY,
    MAX_OPTION_LABEL,
    MAX_OPTIONS,
    MAX_TITLE_LENGTH,
    ApprovalOption,
    ApprovalRequest,
    ToolCallAsked,
    check_description,
    check_expiry,
    check_options,
    check_title,
)
from core.model.errors import NotAllowed
from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.roles.role import ApprovalSettings
from core.model.timeline import ApprovalRequested, ApprovalResolved

ASKED = obj(
    {
        "approval": described(STRING, "the approval's id (the question's event in the timeline)"),
        "outcome": described(
            {"type": "string", "enum": ["answered", "expired", "cancelled"]},
            "answered: someone chose an option; expired: no answer in time",
        ),
        "answer": described(nullable(STRING), "the chosen option's label (null: no answer)"),
        "option": described(nullable(STRING), "the chosen option's id (null: no answer)"),
        "by": described(nullable(STRING), "who answered: a person's address (null: no answer)"),
        "channel": described(nullable(STRING), "where they answered: web, slack, api…"),
    }
)


class ApprovalTools(ToolContext):
    @tool(
        description="Ask the people of this conversation a question and wait for their "
        "answer: before an action that needs a person's yes, or when you need them to choose. "
        "It is shown on every channel they use (with a button per option); the first answer "
        "counts. Returns when someone answers, or when the question expires unanswered "
        f"(default {DEFAULT_EXPIRY.seconds // 60} minutes) — treat that as a no.",
        result='`{"approval", "outcome", "answer", "option", "by", "channel"}`: `outcome` '
        "`answered` with the chosen option's label and id, or `expired` (no answer in time: "
        "a no)",
        output=ASKED,
        effects=Effects(),
    )
    async def ask(
        self,
        question: Annotated[
            str, Arg(doc=f"what to ask, one line, up to {MAX_TITLE_LENGTH} characters")
        ],
        *,
        details: Annotated[
            str | None,
            Arg(
                doc=f"more about it (what you will do), up to {MAX_DESCRIPTION_LENGTH:,} characters"
            ),
        ] = None,
        options: Annotated[
            list[str] | None,
            Arg(
                doc=f"the answers to choose from, as button labels (1 to {MAX_OPTIONS}); "
                "default Yes and No",
                schema={
                    "items": {"type": "string", "minLength": 1, "maxLength": MAX_OPTION_LABEL},
                    "minItems": 1,
                    "maxItems": MAX_OPTIONS,
                },
            ),
        ] = None,
        expires_in: Annotated[
            int | None,
            Arg(
                doc="seconds to wait for an answer before it counts as a no",
                minimum=1,
                maximum=int(MAX_EXPIRY.total_seconds()),
            ),
        ] = None,
    ) -> dict[str, Any]:
        request = ApprovalRequest(
            title=check_title(question),
            description=check_description(details),
            options=check_options(options),
            tool=None,
            approvers=(),
            expires_at=check_expiry(expires_in, now=self._db.approvals.now()),
        )
        asked, resolution = await self._asked(request)
        self.sent += 1  # the question is the role's word to the people: the turn has spoken
        option = resolution.option
        return {
            "approval": asked.id,
            "outcome": resolution.outcome.value,
            "answer": option.label if option else None,
            "option": option.id if option else None,
            "by": resolution.by,
            "channel": resolution.channel,
        }

    async def approve(
        self,
        tool: ToolCallAsked,
        options: Sequence[ApprovalOption],
        *,
        title: str,
        settings: ApprovalSettings,
    ) -> tuple[ApprovalRequested, ApprovalResolved]:
        """Ask whether the agent may make the call `tool` (`TurnTools.approve`)."""
        thread_id = self._conversation()
        approvers: tuple[Address, ...] = ()
        if settings.approvers:
            states = (await self._db.threads.get(thread_id)).states
            approvers = tuple(
                Address(a)
                for a in settings.approvers
                if states.get(Address(a)) is ParticipantState.ACTIVE
            )
            if not approvers:
                raise NotAllowed(
                    "none of the role's approvers "
                    f"({', '.join(settings.approvers)}) is a person of this conversation",
                    code="no_approver",
                )
        request = ApprovalRequest(
            title=title[:MAX_TITLE_LENGTH],
            description=None,
            options=tuple(options),
            tool=tool,
            approvers=approvers,
            expires_at=self._db.approvals.now() + timedelta(seconds=settings.expires_in),
        )
        return await self._asked(request)

    async def _asked(self, request: ApprovalRequest) -> tuple[ApprovalRequested, ApprovalResolved]:
        """`request` asked (or found asked earlier in this turn), and its resolution: waited
        for, the turn held meanwhile."""
        asked, resolution = await ask(
            self._db,
            thread_id=self._conversation(),
            run_id=self._run.id,
            role=self._run.role_address,
            cursor=self._run.cursor,
            request=request,
        )
        if resolution is None:
            waiting = (asked.expires_at - self._db.approvals.now()).total_seconds()
            async with self.hold(max(waiting, 0.0)):
                resolution = await wait_for_answer(self._db, asked, stopping=self.stopping)
        return asked, resolution
