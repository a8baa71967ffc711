"""Approvals: an agent asks the people of its conversation before it acts, and one answer counts.

An approval is two timeline events of the conversation (`core.model.timeline`):

- `approval_requested`, by the role whose run asks: a title, an optional description, the tool
  and its arguments as the agent gave them (when it asks about a tool call), the options (each
  an id, a label and a kind), who may answer, and when it expires.
- `approval_resolved`, at most one per request: the option chosen, by whom and from which
  channel (`answered`); or `expired` (no answer in time) or `cancelled` (the run stopped asking,
  e.g. its turn was cancelled). An approval that is not answered is refused: `expired` and
  `cancelled` reach the agent as a rejection.

The lifecycle is a small state machine:

    pending --answer(option, by)--> answered
    pending --expiry passed-------> expired
    pending --the run lets go-----> cancelled

Any move out of a state other than `pending` is refused with `ApprovalClosed` (409), whose
message says who answered what; this is how "exactly once" reads to a second answerer. The
writer checks and appends under the thread's lock, so of two answers at the same moment, on any
replica, the first commits and the second is told.

Who may answer: the approvers the request names (people by address), or — when it names none —
the conversation's active people. Either way the answerer must be an active member when they
answer: a removed participant is refused. Roles never answer approvals.

Visibility: both events obey the timeline's filter like every other event.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from core.model.errors import Conflict, InvalidInput, NotAllowed, TooLarge
from core.model.membership import ParticipantState
from core.model.participants import Address, ParticipantKind, kind_of, parse_address
from core.model.values import clean_value

MAX_TITLE_LENGTH = 300
MAX_DESCRIPTION_LENGTH = 4_000
MAX_OPTIONS = 6
MAX_OPTION_LABEL = 80
MAX_APPROVERS = 20
DEFAULT_EXPIRY = timedelta(minutes=10)
MAX_EXPIRY = timedelta(days=7)
MIN_EXPIRY = timedelta(seconds=1)


class OptionKind(StrEnum):
    """What choosing an option means. The first four are the Agent Client Protocol's permission
    kinds; `choice` is an answer to a plain question (the `ask` tool)."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    CHOICE = "choice"

    @property
    def allows(self) -> bool:
        return self in (OptionKind.ALLOW_ONCE, OptionKind.ALLOW_ALWAYS)


class Outcome(StrEnum):
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalOption:
    id: str
    label: str
    kind: OptionKind = OptionKind.CHOICE

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "label": self.label, "kind": self.kind.value}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallAsked:
    """The tool call an approval is about, as the agent gave it."""

    name: str
    arguments: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments)}


ALLOW_REJECT = (
    ApprovalOption(id="allow", label="Allow", kind=OptionKind.ALLOW_ONCE),
    ApprovalOption(id="reject", label="Reject", kind=OptionKind.REJECT_ONCE),
)
"""The options of a tool call put to people by a role's `permissions` (a model's call)."""

MAX_ARGUMENTS_SHOWN = 16_000
"""Characters of a call's arguments (as JSON) an approval carries; longer ones are cut."""


def shown_arguments(raw: object) -> dict[str, Any]:
    """A tool call's arguments as an agent gave them, as an approval carries them: an object
    (anything else under `input`), made storable (`clean_value`), cut to `MAX_ARGUMENTS_SHOWN`
    characters of JSON."""
    mended, _ = clean_value(raw)
    given = (
        {str(key): value for key, value in mended.items()}
        if isinstance(mended, dict)
        else ({} if mended is None else {"input": mended})
    )
    written = json.dumps(given, ensure_ascii=False)
    if len(written) > MAX_ARGUMENTS_SHOWN:
        return {"input (cut)": written[:MAX_ARGUMENTS_SHOWN]}
    return given


YES_NO = (
    ApprovalOption(id="yes", label="Yes", kind=OptionKind.CHOICE),
    ApprovalOption(id="no", label="No", kind=OptionKind.CHOICE),
)
"""The options of a question asked without any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """What an agent asks: checked values, ready to become an `approval_requested` event."""

    title: str
    description: str | None
    options: tuple[ApprovalOption, ...]
    tool: ToolCallAsked | None
    approvers: tuple[Address, ...]
    """Who may answer; empty: the conversation's active people."""
    expires_at: datetime


# --- checking what an agent or a manifest gives ------------------------------------------------


def check_title(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("the question (title) must be a non-empty string", code="invalid_title")
    if len(raw) > MAX_TITLE_LENGTH:
        raise TooLarge(
            f"the question is {len(raw)} characters; the limit is {MAX_TITLE_LENGTH}",
            code="title_too_long",
        )
    return raw


def check_description(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidInput("the details (description) must be a string", code="invalid_description")
    if len(raw) > MAX_DESCRIPTION_LENGTH:
        raise TooLarge(
            f"the details are {len(raw)} characters; the limit is {MAX_DESCRIPTION_LENGTH}",
            code="description_too_long",
        )
    return raw or None


_OPTION_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


def option_id_for(label: str, taken: set[str]) -> str:
    """A short id made from a label ("Allow once" → `allow-once`), unique among `taken`."""
    base = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:32] or "option"
    found, n = base, 2
    while found in taken:
        found, n = f"{base}-{n}", n + 1
    return found


def check_options(raw: object) -> tuple[ApprovalOption, ...]:
    """Options as labels (`["Ship it", "Wait"]`, ids made from them) or as objects `{id?, label,
    kind?}`; none given: Yes and No."""
    if raw is None:
        return YES_NO
    if not isinstance(raw, list | tuple) or not raw:
        raise InvalidInput("options must be a non-empty list", code="invalid_options")
    if len(raw) > MAX_OPTIONS:
        raise InvalidInput(
            f"{len(raw)} options; at most {MAX_OPTIONS} may be offered", code="invalid_options"
        )
    options: list[ApprovalOption] = []
    taken: set[str] = set()
    for i, item in enumerate(raw):
        fields: Mapping[str, object] = {"label": item} if isinstance(item, str) else item
        if not isinstance(fields, Mapping):
            raise InvalidInput(
                f"options[{i}] must be a label or an object {{id, label, kind}}",
                code="invalid_options",
            )
        unknown = sorted(set(fields) - {"id", "label", "kind"})
        if unknown:
            raise InvalidInput(
                f"options[{i}] has unknown fields {unknown}; allowed: id, label, kind",
                code="invalid_options",
            )
        label = fields.get("label")
        if not isinstance(label, str) or not label.strip() or len(label) > MAX_OPTION_LABEL:
            raise InvalidInput(
                f"options[{i}].label must be a non-empty string of at most {MAX_OPTION_LABEL} "
                "characters",
                code="invalid_options",
            )
        if any(o.label == label for o in options):
            raise InvalidInput(
                f"options[{i}].label {label!r} is offered twice", code="invalid_options"
            )
        given = fields.get("id")
        if given is None:
            option_id = option_id_for(label, taken)
        elif isinstance(given, str) and _OPTION_ID.fullmatch(given):
            option_id = given
        else:
            raise InvalidInput(
                f"options[{i}].id must be lower case letters, digits, '-' or '_' (at most 40)",
                code="invalid_options",
            )
        if option_id in taken:
            raise InvalidInput(f"options[{i}].id {option_id!r} is taken", code="invalid_options")
        kind = fields.get("kind", OptionKind.CHOICE.value)
        if kind not in set(OptionKind):
            raise InvalidInput(
                f"options[{i}].kind must be one of {', '.join(OptionKind)}", code="invalid_options"
            )
        taken.add(option_id)
        options.append(ApprovalOption(id=option_id, label=label, kind=OptionKind(str(kind))))
    return tuple(options)


def check_approvers(raw: object) -> tuple[Address, ...]:
    """People by address; none: the conversation's active people."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise InvalidInput(
            "approvers must be a list of people's addresses", code="invalid_approvers"
        )
    if len(raw) > MAX_APPROVERS:
        raise InvalidInput(f"at most {MAX_APPROVERS} approvers", code="invalid_approvers")
    found: list[Address] = []
    for item in raw:
        address = parse_address(item)
        if kind_of(address) is not ParticipantKind.PERSON:
            raise InvalidInput(
                f"approvers are people: {address} is not a person:… address",
                code="invalid_approvers",
            )
        if address not in found:
            found.append(address)
    return tuple(found)


def check_expiry(
    seconds: object, *, now: datetime, default: timedelta = DEFAULT_EXPIRY
) -> datetime:
    """When a request made `now` expires: after `seconds` (1 s to 7 days), or the default."""
    if seconds is None:
        return now + default
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidInput("expires_in must be a number of seconds", code="invalid_expiry")
    wait = timedelta(seconds=seconds)
    if not MIN_EXPIRY <= wait <= MAX_EXPIRY:
        raise InvalidInput(
            f"expires_in must be between {MIN_EXPIRY.total_seconds():.0f} second and "
            f"{MAX_EXPIRY.days} days",
            code="invalid_expiry",
        )
    return now + wait


# --- the rules of answering ---------------------------------------------------------------------


class ApprovalClosed(Conflict):
    """The approval was resolved already: the message says how, and by whom."""

    code = "approval_closed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """How an approval was resolved (the `approval_resolved` event's fields)."""

    outcome: Outcome
    option: ApprovalOption | None = None
    by: Address | None = None
    channel: str | None = None

    @property
    def allows(self) -> bool:
        """Whether the agent may go ahead: only an answer whose option allows (or a plain
        question's answer, which the agent reads itself)."""
        return (
            self.outcome is Outcome.ANSWERED
            and self.option is not None
            and (self.option.kind.allows or self.option.kind is OptionKind.CHOICE)
        )

    def says(self) -> str:
        """One sentence: "answered 'Allow once' by person:alice (slack)", "expired"…"""
        if self.outcome is Outcome.ANSWERED and self.option is not None:
            where = f" ({self.channel})" if self.channel else ""
            return f"answered {self.option.label!r} by {self.by}{where}"
        return {Outcome.EXPIRED: "expired unanswered", Outcome.CANCELLED: "cancelled"}.get(
            self.outcome, self.outcome.value
        )


def check_open(resolved: Resolution | None) -> None:
    """Refuse every move out of a resolved approval, saying how it was resolved."""
    if resolved is not None:
        raise ApprovalClosed(f"this approval was already {resolved.says()}")


def check_answer(
    *,
    options: Sequence[ApprovalOption],
    approvers: Sequence[Address],
    states: Mapping[Address, ParticipantState],
    resolved: Resolution | None,
    expires_at: datetime,
    answerer: Address,
    option_id: object,
    now: datetime,
) -> ApprovalOption:
    """The option `answerer` chose, when they may answer now; a named error otherwise. Who may
    not answer at all is told so before anything about the approval's state (who answered it)."""
    if kind_of(answerer) is not ParticipantKind.PERSON:
        raise NotAllowed("approvals are answered by people", code="not_an_approver")
    state = states.get(answerer)
    if state is None:
        raise NotAllowed(f"{answerer} is not a member of this conversation", code="not_a_member")
    if state is not ParticipantState.ACTIVE:
        raise NotAllowed(
            f"{answerer} has been removed from this conversation", code="participant_removed"
        )
    if approvers and answerer not in approvers:
        raise NotAllowed(
            f"{answerer} may not answer this approval; its approvers are {', '.join(approvers)}",
            code="not_an_approver",
        )
    check_open(resolved)
    if now >= expires_at:
        raise ApprovalClosed("this approval expired before it was answered")
    if not isinstance(option_id, str):
        raise InvalidInput("option must be an option's id", code="unknown_option")
    for option in options:
        if option.id == option_id:
            return option
    raise InvalidInput(
        f"no option {option_id!r}; the options are {', '.join(o.id for o in options)}",
        code="unknown_option",
    )


def check_approvers_are_members(
    approvers: Sequence[Address], states: Mapping[Address, ParticipantState]
) -> None:
    """The approvers a request names must be people of the conversation."""
    if outside := [a for a in approvers if a not in states]:
        raise InvalidInput(
            f"approvers must be members of this conversation: {', '.join(outside)} is not",
            code="invalid_approvers",
        )


def check_expire(*, resolved: Resolution | None, expires_at: datetime, now: datetime) -> None:
    """An approval expires once, and not before its time."""
    check_open(resolved)
    if now < expires_at:
        raise Conflict("this approval has not expired yet", code="not_expired")
