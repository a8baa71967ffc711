"""An approval as a role's run asks it, for every suite that needs one asked: the ops role asks
whether to restart the web service (allow once or reject), ten minutes to answer by default."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from core.model.approvals import ApprovalOption, ApprovalRequest, OptionKind, ToolCallAsked
from core.model.participants import Address

ALLOW = ApprovalOption(id="allow", label="Allow once", kind=OptionKind.ALLOW_ONCE)
REJECT = ApprovalOption(id="reject", label="Reject", kind=OptionKind.REJECT_ONCE)
RESTART = ToolCallAsked(name="execute", arguments={"command": "systemctl restart web"})


def restart_request(
    *,
    title: str = "Restart the web service?",
    description: str | None = "It is answering 502s.",
    approvers: Iterable[str] = (),
    now: datetime | None = None,
    expires_in: timedelta = timedelta(minutes=10),
) -> ApprovalRequest:
    """The request, made `now` (default: the wall clock's now)."""
    return ApprovalRequest(
        title=title,
        description=description,
        options=(ALLOW, REJECT),
        tool=RESTART,
        approvers=tuple(Address(a) for a in approvers),
        expires_at=(now or datetime.now(UTC)) + expires_in,
    )
