"""Approvals in a Slack DM, as Block Kit messages: pure values in, message bodies out, no I/O.

A request (`approval_requested`) is posted as one message (`request_message`):

    *Restart the web service?*                      the question (a section)
    It is answering 502s.                           the details: at most `DETAILS_SHOWN`
    …the rest of them, smaller                      characters, the rest in a context block
    ```execute {"command": "systemctl restart…"}``` the tool call, compact and cut at `TOOL_SHOWN`
    Anyone in this conversation may answer · …      who may answer, when it expires
    [Allow once] [Reject]                           one button per option

Slack folds nothing, so what the widget folds (long details, the tool's arguments) is kept short
here and whole in the widget and the API. Each button names what it answers in its `action_id`,
`approval:<approval id>:<option id>` (`action_id`, `read_click`): a click says which approval
and which option without anything kept for the message. Allowing options are `primary`,
rejecting ones `danger`, a plain question's choices neither.

When the approval is resolved (`approval_resolved`), the message is updated to the same blocks
with the buttons and the "who may answer" line replaced by the outcome (`resolved_message`):
"Answered *Allow once* by Alice (widget)", "Expired unanswered", "Cancelled".

What a person is told when a click is not an answer is one sentence (`too_late`, `refusal`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from channels.slack.mrkdwn import escape, to_mrkdwn
from core.model.approvals import ApprovalOption, OptionKind, Outcome, Resolution, ToolCallAsked
from core.model.timeline import ApprovalRequested

ACTION_PREFIX = "approval:"
ACTIONS = re.compile("^" + re.escape(ACTION_PREFIX))
"""What the action ids of approval buttons begin with (bolt's matcher)."""
DETAILS_SHOWN = 600
"""Characters of the details in the section under the question; the rest goes, smaller, in a
context block (`CONTEXT_TEXT` characters an element)."""
CONTEXT_TEXT = 2_000
TOOL_SHOWN = 500
"""Characters of the tool call shown (its name and its arguments as compact JSON)."""
BUTTON_TEXT = 75
"""Slack's limit on a button's label."""
CHANNEL_NAMES = {"web": "widget", "slack": "Slack", "api": "API", "email": "email"}
"""Where an answer was given, as the outcome names it."""
ANSWERED_WHERE = {
    "web": "in the widget",
    "slack": "in Slack",
    "api": "through the API",
    "email": "by email",
}
"""Where an answer was given, as a refusal's sentence says it."""

Block = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """A message body: `text` is the fallback notifications and screen readers use."""

    text: str
    blocks: list[Block]


@dataclass(frozen=True, slots=True)
class Click:
    """What a click on an approval's button answers."""

    approval_id: str
    option_id: str


# --- buttons -----------------------------------------------------------------------------------


def action_id(approval_id: str, option_id: str) -> str:
    return f"{ACTION_PREFIX}{approval_id}:{option_id}"


def read_click(action: object) -> Click | None:
    """The approval and option an action id names; None when it names none. Whether the option
    is one of the approval's is the approval's rule, not the button's."""
    if not isinstance(action, str) or not action.startswith(ACTION_PREFIX):
        return None
    approval_id, _, option_id = action.removeprefix(ACTION_PREFIX).partition(":")
    return Click(approval_id, option_id) if approval_id and option_id else None


def _button(approval_id: str, option: ApprovalOption) -> Block:
    button: Block = {
        "type": "button",
        "action_id": action_id(approval_id, option.id),
        "value": option.id,
        "text": {"type": "plain_text", "text": _shortened(option.label, BUTTON_TEXT)},
    }
    if option.kind.allows:
        button["style"] = "primary"
    elif option.kind in (OptionKind.REJECT_ONCE, OptionKind.REJECT_ALWAYS):
        button["style"] = "danger"
    return button


# --- the messages ------------------------------------------------------------------------------


def request_message(asked: ApprovalRequested, *, approvers: Sequence[str]) -> SlackMessage:
    """The request with its buttons; `approvers`: the display names of `asked.approvers`."""
    labels = " / ".join(option.label for option in asked.options)
    footer = f"{_who_may_answer(approvers)} · {_expiry(asked)}"
    actions: Block = {
        "type": "actions",
        "block_id": f"{ACTION_PREFIX}{asked.id}",
        "elements": [_button(asked.id, option) for option in asked.options],
    }
    blocks = [*_question(asked), _context(footer), actions]
    return SlackMessage(escape(f"{asked.title} ({labels})"), blocks)


def resolved_message(
    asked: ApprovalRequested, resolution: Resolution, *, by_name: str | None
) -> SlackMessage:
    """The request as it was, its buttons replaced by how it was resolved; `by_name`: the
    display name of whoever answered."""
    shown = _section(outcome(resolution, by_name=by_name))
    plain = outcome(resolution, by_name=by_name, marked=False)
    return SlackMessage(f"{escape(asked.title)} ({plain})", [*_question(asked), shown])


def outcome(resolution: Resolution, *, by_name: str | None, marked: bool = True) -> str:
    """ "Answered *Allow once* by Alice (widget)", "Expired unanswered", "Cancelled" (mrkdwn;
    without `marked`, the label is not bold)."""
    if resolution.outcome is Outcome.ANSWERED and resolution.option is not None:
        label = escape(resolution.option.label)
        who = f" by {escape(by_name or resolution.by or 'someone')}"
        channel = resolution.channel
        where = f" ({CHANNEL_NAMES.get(channel, channel)})" if channel else ""
        return f"Answered {f'*{label}*' if marked else label}{who}{where}"
    if resolution.outcome is Outcome.EXPIRED:
        return "Expired unanswered"
    return "Cancelled"


def _question(asked: ApprovalRequested) -> list[Block]:
    blocks: list[Block] = [_section(f"*{escape(asked.title)}*")]
    details = to_mrkdwn(asked.description or "").strip()
    if details:  # cut as shown, so that no block is longer than Slack takes
        shown, rest = _cut(details, DETAILS_SHOWN)
        blocks.append(_section(shown))
        pieces = []
        while rest:
            piece, rest = _cut(rest, CONTEXT_TEXT)
            pieces.append(piece)
        if pieces:
            blocks.append(_context(*pieces))
    if asked.tool is not None:
        blocks.append(_section(_tool(asked.tool)))
    return blocks


def _tool(tool: ToolCallAsked) -> str:
    """The call on one line, as a preformatted block. Backticks become quotes: three of them
    would end the block early, and mrkdwn has no escape for them."""
    arguments = json.dumps(dict(tool.arguments), ensure_ascii=False, default=str)
    call = _shortened(f"{tool.name} {arguments}", TOOL_SHOWN).replace("`", "'")
    return f"```{escape(call)}```"


def _who_may_answer(approvers: Sequence[str]) -> str:
    if not approvers:
        return "Anyone in this conversation may answer"
    return f"{_one_of(approvers)} may answer"


def _one_of(names: Sequence[str]) -> str:
    """ "Alice", "Alice or Bob", "Alice, Bob or Cy" (escaped)."""
    shown = [escape(name) for name in names]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _expiry(asked: ApprovalRequested) -> str:
    """When it expires, in the reader's own time zone (Slack's date formatting; the fallback
    in UTC for clients that cannot)."""
    at = asked.expires_at.astimezone(UTC)
    fallback = at.strftime("%Y-%m-%d %H:%M UTC")
    return f"expires <!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(*texts: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in texts]}


def _cut(text: str, limit: int) -> tuple[str, str]:
    """`text` in two: at most `limit` characters, cut at the last line break or else space in
    the second half of those (never inside `&amp;`), and the rest."""
    if len(text) <= limit:
        return text, ""
    head = text[:limit]
    for mark in ("\n", " "):
        at = head.rfind(mark)
        if at >= limit // 2:
            return text[:at].rstrip(), text[at:].strip()
    return head, text[limit:].strip()


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- what a clicker is told ---------------------------------------------------------------------

UNKNOWN_PERSON = "unknown_person"
"""The refusal code of a click by a Slack user who is nobody's identity yet."""
INACTIVE_PERSON = "person_inactive"
"""The refusal code of a click by a deactivated (or merged) person."""


def too_late(resolution: Resolution | None, *, mine: bool, by_name: str | None) -> str:
    """Why an answer to a resolved approval was refused, for the person who gave it: how it
    was resolved, and by whom (`mine`: by them). None: resolved, but not in what they see."""
    if resolution is None:
        return "This request is closed: it can no longer be answered."
    if resolution.outcome is Outcome.EXPIRED:
        return "This request expired before anyone answered it."
    if resolution.outcome is Outcome.CANCELLED:
        return "This request was cancelled: it no longer needs an answer."
    who = "you" if mine else escape(by_name or resolution.by or "someone")
    channel = resolution.channel
    where = f" {ANSWERED_WHERE.get(channel, f'in {channel}')}" if channel else ""
    label = f": “{escape(resolution.option.label)}”" if resolution.option is not None else ""
    return f"Already answered by {who}{where}{label}."


def refusal(code: str, message: str, *, approvers: Sequence[str] = ()) -> str:
    """Why a click was not an answer, by the refusal's code (`message`: the error's own words,
    for a code without words of its own here); `approvers`: the names of those who may answer."""
    if code == "not_an_approver" and approvers:
        return f"Only {_one_of(approvers)} may answer this request."
    said = {
        "participant_removed": "You were removed from this conversation, so you cannot answer.",
        "not_a_member": "You are not in this conversation, so you cannot answer.",
        "not_an_approver": "You are not one of the people this request asks.",
        "unknown_option": "That is not one of this request's options: nothing was answered.",
        "approval_not_found": "That request is not one of this conversation's: nothing was "
        "answered.",
        UNKNOWN_PERSON: "I do not know you yet: write to me here first, then answer.",
        INACTIVE_PERSON: "Your account is deactivated, so you cannot answer.",
    }
    return said.get(code, f"That answer was not recorded: {escape(message)}")
