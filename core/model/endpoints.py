"""Outbound endpoints: where the gateway delivers its committed events as Standard Webhooks.

An endpoint is a URL with a signing secret of its own (`whsec_…`), the kinds of event it wants
and filters on which conversations they come from. It follows two streams, each from a cursor
of its own: the timeline of every thread (`position`) and task events (`task_position`). A
cursor is the last position the endpoint has accepted (or that its filters passed over); it
moves only once the endpoint answered 2xx, so delivery is at least once, and the request for an
event is the same on every attempt (`webhook-id` is the event's id) so the receiver can tell a
repeat.

Status, the rules written here:

    active   -> active    a delivery answered 2xx (failures back to 0), or failed short of the limit
    active   -> parked    the `park_after`-th failure in a row: held until an operator replays it
    active   -> disabled  the endpoint answered 410 Gone
    parked   -> active    an operator replays it
    disabled -> active    an operator replays it

Any other move is an `IllegalEndpointMove`.

What an attempt's answer means: 2xx delivered; 410 gone; anything else — a redirect (never
followed), another 4xx, a 5xx, no answer, an address refused — failed. A failure is retried after
`base · 2^(n-1)` seconds for the n-th failure in a row, capped at `cap`, with ±20% jitter; a 429
or 503 with `Retry-After` is retried after what it asks instead.

Filters (each one given must match; an empty one matches everything):

- `kinds`: the timeline kinds (`message`, `retraction`, `participant_state_changed`, `system`,
  `approval_requested`, `approval_resolved`, `erased`) and `task` (every task event);
- `roles`: a timeline event's thread has one of these roles as a member; a task event's task is
  assigned to one (now, or by this very event), or a conversation of one of them watches it;
- `threads`: a timeline event is in one of these threads; a task event's task is watched by a
  conversation in one of them.

Addresses: an endpoint may not be reached at a loopback, private, link-local or otherwise
non-global address unless the operator allows it (`refusal`); the caller checks every address a
host resolves to, at registration and again at each connection.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any, NewType

from core.model.errors import Conflict, InvalidInput
from core.model.participants import parse_address
from core.model.timeline import EventKind, rfc3339

EndpointId = NewType("EndpointId", str)

TASK_KIND = "task"
KINDS: tuple[str, ...] = (*(kind.value for kind in EventKind), TASK_KIND)
"""Every kind an endpoint may ask for, in the order they are shown."""
TIMELINE_KINDS = frozenset(kind.value for kind in EventKind)

MAX_URL = 2_000
MAX_FILTER = 100
SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
JITTER = 0.2
MAX_RETRY_AFTER = 3_600.0
"""The longest `Retry-After` honoured, in seconds."""


class EndpointStatus(StrEnum):
    ACTIVE = "active"
    PARKED = "parked"
    DISABLED = "disabled"


MOVES: Mapping[EndpointStatus, frozenset[EndpointStatus]] = {
    EndpointStatus.ACTIVE: frozenset(EndpointStatus),
    EndpointStatus.PARKED: frozenset({EndpointStatus.ACTIVE}),
    EndpointStatus.DISABLED: frozenset({EndpointStatus.ACTIVE}),
}


class IllegalEndpointMove(Conflict):
    code = "illegal_endpoint_move"


def check_move(current: EndpointStatus, wanted: EndpointStatus) -> None:
    if wanted not in MOVES[current]:
        raise IllegalEndpointMove(f"an endpoint that is {current.value} cannot become {wanted}")


# --- values -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    kinds: frozenset[str] = frozenset(KINDS)
    roles: frozenset[str] = frozenset()
    threads: frozenset[str] = frozenset()

    @property
    def wants_timeline(self) -> bool:
        return bool(self.kinds & TIMELINE_KINDS)

    @property
    def wants_tasks(self) -> bool:
        return TASK_KIND in self.kinds

    @property
    def scoped(self) -> bool:
        """Whether the roles or threads filter narrows anything."""
        return bool(self.roles or self.threads)

    def wants_timeline_event(self, kind: str, thread_id: str, thread_roles: frozenset[str]) -> bool:
        """A timeline event of `kind` in `thread_id`, whose role members are `thread_roles`."""
        return (
            kind in self.kinds
            and (not self.threads or thread_id in self.threads)
            and (not self.roles or bool(self.roles & thread_roles))
        )

    def wants_task_event(self, scope: TaskScope) -> bool:
        return (
            self.wants_tasks
            and (not self.threads or bool(self.threads & scope.threads))
            and (not self.roles or bool(self.roles & scope.roles))
        )

    def to_json(self) -> dict[str, list[str]]:
        return {
            "kinds": [kind for kind in KINDS if kind in self.kinds],
            "roles": sorted(self.roles),
            "threads": sorted(self.threads),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskScope:
    """The conversations a task event concerns: the roles it is (or was by this event) assigned
    to and the roles of the conversations watching it; the threads of those conversations."""

    roles: frozenset[str]
    threads: frozenset[str]


def task_scope(
    assignee: str | None,
    changes: Mapping[str, Any],
    watchers: frozenset[tuple[str, str]],
) -> TaskScope:
    """The scope of a task event: the task's assignee now, any assignee the event's `changes`
    name (`created`: the field; `updated`: its from and to), and the (thread, role) of every
    conversation watching the task."""
    roles = {role for _, role in watchers}
    if assignee is not None:
        roles.add(assignee)
    named = changes.get("assignee")
    if isinstance(named, str):
        roles.add(named)
    elif isinstance(named, Mapping):
        roles.update(v for v in (named.get("from"), named.get("to")) if isinstance(v, str))
    return TaskScope(roles=frozenset(roles), threads=frozenset(t for t, _ in watchers))


@dataclass(frozen=True, slots=True, kw_only=True)
class Cursors:
    """How far an endpoint has accepted each stream: timeline and task-event positions."""

    position: int
    task_position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """What the latest attempt left: the status, the failures in a row, why (the last failure,
    or why it is parked or disabled), and when the next attempt is due (None: at once)."""

    status: EndpointStatus
    failures: int = 0
    reason: str | None = None
    next_attempt_at: datetime | None = None


DELIVERED = Standing(status=EndpointStatus.ACTIVE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    id: EndpointId
    url: str
    secret: str
    filters: Filters
    standing: Standing
    cursors: Cursors
    created_at: datetime
    updated_at: datetime

    @property
    def status(self) -> EndpointStatus:
        return self.standing.status

    def to_json(self) -> dict[str, Any]:
        """As the API shows it: everything but the secret."""
        at = self.standing.next_attempt_at
        return {
            "id": self.id,
            "url": self.url,
            **self.filters.to_json(),
            "status": self.standing.status.value,
            "reason": self.standing.reason,
            "failures": self.standing.failures,
            "position": self.cursors.position,
            "task_position": self.cursors.task_position,
            "next_attempt_at": rfc3339(at) if at is not None else None,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


# --- what operators send ------------------------------------------------------------------------


def parse_url(raw: object) -> str:
    """An absolute http(s) URL with a host, no credentials and no fragment."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("url must be an absolute http:// or https:// URL", code="invalid_url")
    url = raw.strip()
    if len(url) > MAX_URL or not url.isprintable() or any(c.isspace() for c in url):
        raise InvalidInput(
            f"url must be at most {MAX_URL} printable characters without spaces",
            code="invalid_url",
        )
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # a port that is not a number in range raises here
    except ValueError as error:
        raise InvalidInput(f"url is not a valid URL: {error}", code="invalid_url") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            f"url must be an absolute http:// or https:// URL with a host, not {url[:100]!r}",
            code="invalid_url",
        )
    if parts.username is not None or parts.password is not None:
        raise InvalidInput("url must not carry credentials (user:password@)", code="invalid_url")
    if parts.fragment or url.endswith("#"):
        raise InvalidInput("url must not have a fragment (#…)", code="invalid_url")
    return url


def parse_kinds(raw: object) -> frozenset[str]:
    """The kinds wanted; absent means every kind."""
    if raw is None:
        return frozenset(KINDS)
    listed = _strings(raw, "kinds", "invalid_kinds")
    unknown = sorted(set(listed) - set(KINDS))
    if not listed or unknown:
        raise InvalidInput(
            f"kinds must be a non-empty list of {', '.join(KINDS)}"
            + (f"; unknown: {', '.join(map(repr, unknown))}" if unknown else ""),
            code="invalid_kinds",
        )
    return frozenset(listed)


def parse_roles(raw: object) -> frozenset[str]:
    """Role names (`concierge` or `role:concierge`); absent or empty: every role."""
    names = set()
    for item in _strings(raw, "roles", "invalid_roles"):
        try:
            address = parse_address(item if item.startswith("role:") else f"role:{item}")
        except InvalidInput as error:
            message = f"{item!r} is not a role: {error.message}"
            raise InvalidInput(message, code="invalid_roles") from None
        if not address.startswith("role:"):
            raise InvalidInput(f"{item!r} is not a role", code="invalid_roles")
        names.add(address.removeprefix("role:"))
    return frozenset(names)


def parse_threads(raw: object) -> frozenset[str]:
    """Thread ids; absent or empty: every thread."""
    ids = _strings(raw, "threads", "invalid_threads")
    if any(not item or len(item) > 64 or not item.isalnum() for item in ids):
        raise InvalidInput("threads must be a list of thread ids", code="invalid_threads")
    return frozenset(ids)


def _strings(raw: object, name: str, code: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise InvalidInput(f"{name} must be a list of strings", code=code)
    if len(raw) > MAX_FILTER:
        raise InvalidInput(f"{name} may list at most {MAX_FILTER} items", code=code)
    return [item.strip().lower() if name != "threads" else item.strip() for item in raw]


MAX_POSITION = 2**53 - 1


def parse_position(raw: object) -> int | None:
    """A stream position to deliver from (inclusive), 0 to 2^53-1; None when absent."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_POSITION:
        raise InvalidInput(
            f"must be a whole number from 0 to {MAX_POSITION}, not {raw!r}",
            code="invalid_position",
        )
    return raw


def cursor_before(from_position: int | None, head: int, *, name: str = "position") -> int:
    """The cursor that delivers everything from `from_position` on (inclusive); the head of the
    stream (only what comes next) when none is given. `name` is the field it came in."""
    if from_position is None:
        return head
    if from_position > head + 1:
        raise InvalidInput(
            f"{name}: {from_position} is beyond the stream's head ({head}); "
            f"{head + 1} is the next to come",
            code="invalid_position",
        )
    return max(from_position - 1, 0)


def new_secret(random: bytes) -> str:
    """A signing secret in Standard Webhooks' format: `whsec_` and the key in base64."""
    if len(random) < 24:
        raise ValueError("a signing key needs at least 24 random bytes")
    return SECRET_PREFIX + base64.b64encode(random).decode("ascii")


# --- addresses ----------------------------------------------------------------------------------


def refusal(address: str) -> str | None:
    """Why an endpoint may not be reached at this IP address ("loopback address"), or None
    for a global one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 scope (`fe80::1%eth0`)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for what in ("unspecified", "loopback", "link_local", "private", "multicast", "reserved"):
        if getattr(ip, f"is_{what}"):
            return f"{what.replace('_', '-')} address"
    return None if ip.is_global else "non-global address"


def ip_literal(host: str) -> str | None:
    """The host as an IP address when it is written as one (`[::1]` or `10.0.0.1`)."""
    bare = host.strip("[]")
    try:
        return str(ipaddress.ip_address(bare.split("%", 1)[0]))
    except ValueError:
        return None


# --- what is sent -------------------------------------------------------------------------------


def timeline_type(kind: str) -> str:
    return f"timeline.{kind}"


def task_type(kind: str) -> str:
    return f"task.{kind}"


def payload(event_type: str, at: datetime, data: Mapping[str, Any]) -> str:
    """The body of a delivery, as the JSON text that is signed and sent byte for byte:
    `{"type", "timestamp" (the event's time), "data" (the event as the API shows it)}`."""
    envelope = {"type": event_type, "timestamp": rfc3339(at), "data": data}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


# --- attempts and their consequences ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    base: float = 1.0
    cap: float = 300.0
    park_after: int = 10

    def delay(self, failures: int, jitter: float) -> float:
        """Seconds before the next attempt after `failures` in a row; `jitter` in [0, 1)."""
        exponent = min(max(failures - 1, 0), 62)
        planned = min(self.cap, self.base * 2.0**exponent)
        return min(self.cap, planned * (1 + JITTER * (2 * jitter - 1)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One request's outcome: the HTTP status, or why there was none; `retry_after` in seconds
    when a 429 or 503 asked for it."""

    status: int | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def gone(self) -> bool:
        return self.status == 410

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        text = f"HTTP {self.status}"
        if 300 <= self.status < 400:
            text += " (redirects are not followed)"
        if self.retry_after is not None:
            text += f" (Retry-After {self.retry_after:g} s)"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Tried:
    """An attempt with the event it tried to deliver: its id, its type (`timeline.message`,
    `task.updated`) and its position in its stream."""

    event_id: str
    event_type: str
    position: int
    attempt: Attempt


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One attempt of the endpoint's delivery log, numbered per endpoint (`seq`), with the
    standing it left: the endpoint's status and its failures in a row after it."""

    seq: int
    at: datetime
    event_id: str
    event_type: str
    position: int
    http_status: int | None
    outcome: str
    delivered: bool
    status: EndpointStatus
    failures: int

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": rfc3339(self.at),
            "event_id": self.event_id,
            "type": self.event_type,
            "stream": "task" if self.event_type.startswith("task.") else "timeline",
            "position": self.position,
            "delivered": self.delivered,
            "http_status": self.http_status,
            "outcome": self.outcome,
            "status": self.status.value,
            "failures": self.failures,
        }


def after_attempt(
    current: Standing,
    attempt: Attempt,
    *,
    now: datetime,
    policy: RetryPolicy,
    jitter: float,
) -> Standing:
    """The endpoint's standing after `attempt`. Only an active endpoint is delivered to: a
    parked or disabled one waits for an operator's replay."""
    if current.status is not EndpointStatus.ACTIVE:
        raise IllegalEndpointMove(f"an endpoint that is {current.status} takes no deliveries")
    if attempt.delivered:
        wanted = DELIVERED
    elif attempt.gone:
        wanted = Standing(
            status=EndpointStatus.DISABLED,
            failures=current.failures + 1,
            reason="disabled: the endpoint answered 410 Gone",
        )
    else:
        failures = current.failures + 1
        what = attempt.describe()
        if failures >= policy.park_after:
            wanted = Standing(
                status=EndpointStatus.PARKED,
                failures=failures,
                reason=f"parked after {failures} failed attempts in a row; the last: {what}",
            )
        else:
            wait = attempt.retry_after
            if wait is None:
                wait = policy.delay(failures, jitter)
            wanted = Standing(
                status=EndpointStatus.ACTIVE,
                failures=failures,
                reason=f"attempt {failures} failed: {what}",
                next_attempt_at=now + timedelta(seconds=wait),
            )
    check_move(current.status, wanted.status)
    return wanted


def replayed(current: Standing) -> Standing:
    """An operator's replay: active again, with a clean slate."""
    check_move(current.status, EndpointStatus.ACTIVE)
    return DELIVERED


def retry_after(header: str | None, now: datetime) -> float | None:
    """Seconds a `Retry-After` header asks for (a number of seconds or an HTTP date), at most
    `MAX_RETRY_AFTER`; None when absent or unreadable."""
    if header is None or not header.strip():
        return None
    text = header.strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = (when - now).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
