"""What a request to a Slack route must be before anything of it is parsed: signed by Slack.

The order is the point. An Events API request is checked, over its raw bytes, against the
signature Slack computes with the app's signing secret (`v0=HMAC-SHA256("v0:{timestamp}:{body}")`,
the timestamp within `MAX_AGE` seconds of now) before a byte of it is decoded; a request that
fails is refused with 401 in the gateway's shape, whatever its headers or body hold — nothing of
an unauthenticated body is decoded, parsed or logged. Only then is the body read as what Slack
sends: UTF-8 JSON holding an object (400 otherwise), whose values obey `core.model.values` (422): no
Slack id, timestamp or number a backend cannot store reaches storage.

An interactivity request (a click on a button: `/slack/<role>/interactivity`) is signed the same
way and checked the same way first; its body is then a form whose one field, `payload`, holds
the interaction as JSON (`read_interaction`), of a type the app handles (`block_actions`), whose
every value obeys `core.model.values` — the text of the clicked message is ours, so nothing in it
is left out.

A person's own words are the exception: the text (and the blocks and attachments that repeat
it) of a message, an edit or a deletion is left out of that check, so that a message whose text
breaks the rule is refused politely in the DM (`channels/slack/inbound.py`), and acknowledged,
rather than retried by Slack and lost without a word.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from channels.edge.errors import ApiError
from core.model.errors import InvalidInput
from core.model.values import check_value

MAX_AGE = 300
"""Seconds a signature stays good (Slack's own advice: five minutes)."""
TIMESTAMP = "X-Slack-Request-Timestamp"
SIGNATURE = "X-Slack-Signature"
PERSON_TEXT = frozenset({"text", "blocks", "attachments", "files"})
"""The fields of a message that hold what the person wrote."""


def check_signature(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> None:
    """Nothing, when Slack signed `body` at most `MAX_AGE` seconds from `now`; else 401."""
    stamp, given = headers.get(TIMESTAMP), headers.get(SIGNATURE)
    if not stamp or not given:
        raise _unsigned(f"the request has no {TIMESTAMP if not stamp else SIGNATURE} header")
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 12):
        raise _unsigned(f"{TIMESTAMP} is not a number of seconds")
    if abs(now - int(stamp)) > MAX_AGE:
        raise _unsigned(f"the request was signed more than {MAX_AGE} seconds from now")
    mac = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    expected = f"v0={mac.hexdigest()}".encode()
    if not hmac.compare_digest(expected, given.encode("utf-8", "replace")):
        raise _unsigned("the signature does not match the body")


def read_event(body: bytes) -> dict[str, Any]:
    """The signed body as Slack sends it: a JSON object (400 otherwise) whose values, but for
    a person's own text, `core.model.values` accepts (422 otherwise)."""
    value = _json_object(_utf8(body), "the body")
    check_value(without_person_text(value), "the event")
    _check_shape(value)
    return value


def read_interaction(body: bytes) -> dict[str, Any]:
    """The signed body of an interactivity request as Slack sends it: a form whose one field is
    `payload`, a JSON object (400 otherwise) of a type the app handles, whose values
    `core.model.values` accepts and whose ids are short strings (422 otherwise)."""
    try:
        form = urllib.parse.parse_qs(_utf8(body), strict_parsing=True, max_num_fields=8)
    except ValueError as error:
        raise ApiError(400, "invalid_body", f"the body is not a form: {error}") from None
    if set(form) != {"payload"} or len(form["payload"]) != 1:
        raise ApiError(400, "invalid_body", "the form's one field must be payload")
    value = _json_object(form["payload"][0], "the payload")
    check_value(value, "the interaction")
    _check_interaction(value)
    return value


def _utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError(400, "invalid_body", f"the body is not UTF-8: {error.reason}") from None


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as error:  # too deep, or an integer of too many digits
        reason = str(error) if isinstance(error, ValueError) else "it nests too deeply"
        raise ApiError(400, "invalid_json", f"{what} is not JSON: {reason}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", f"{what} is not a JSON object")
    return value


def _check_shape(body: dict[str, Any]) -> None:
    """The fields the handlers read and store are what Slack sends: objects where Slack sends
    objects, and ids and timestamps short strings (422 `invalid_slack_event` otherwise)."""
    _ids(body, "the event", ID_FIELDS)
    if body.get("type") not in EVENTS_API_TYPES:  # bolt would take it for another kind
        raise _malformed(f"its type is not one of {', '.join(sorted(EVENTS_API_TYPES))}")
    if "event" not in body:
        return
    event = body["event"]
    if not isinstance(event, dict):
        raise _malformed("the event's event is not an object")
    _ids(event, "event", EVENT_FIELDS)
    for inner in ("message", "previous_message"):
        found = event.get(inner)
        if found is None:
            continue
        if not isinstance(found, dict):
            raise _malformed(f"event.{inner} is not an object")
        _ids(found, f"event.{inner}", EVENT_FIELDS)


def _check_interaction(body: dict[str, Any]) -> None:
    """The fields the click's handler reads are what Slack sends (422 otherwise)."""
    if body.get("type") not in INTERACTION_TYPES:
        raise _not_interaction(f"its type is not one of {', '.join(sorted(INTERACTION_TYPES))}")
    _ids(body, "the interaction", {"api_app_id": 32, "trigger_id": 128}, _not_interaction)
    for name, fields in INTERACTION_OBJECTS.items():
        found = body.get(name)
        if found is None:
            continue
        if not isinstance(found, dict):
            raise _not_interaction(f"its {name} is not an object")
        _ids(found, name, fields, _not_interaction)
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions:
        raise _not_interaction("its actions are not a list of actions")
    for i, action in enumerate(actions):
        if not isinstance(action, dict):
            raise _not_interaction(f"actions[{i}] is not an object")
        _ids(action, f"actions[{i}]", ACTION_FIELDS, _not_interaction)


INTERACTION_TYPES = frozenset({"block_actions"})
"""What Slack posts to the interactivity request URL that the app handles: clicks on buttons."""
INTERACTION_OBJECTS = {
    "team": {"id": 32},
    "user": {"id": 32, "team_id": 32},
    "channel": {"id": 32},
    "container": {"type": 32, "channel_id": 32, "message_ts": 32},
}
ACTION_FIELDS = {"type": 32, "action_id": 255, "block_id": 255, "value": 2000, "action_ts": 32}
"""Slack's own limits on a button's `action_id`, `block_id` and `value`."""

EVENTS_API_TYPES = frozenset({"event_callback", "url_verification", "app_rate_limited"})
"""What Slack posts to an app's Events API request URL."""
ID_FIELDS = {"event_id": 64, "team_id": 32, "api_app_id": 32, "type": 64}
"""Fields of the envelope: the longest each may be (the columns that store them)."""
EVENT_FIELDS = {
    "type": 64,
    "subtype": 64,
    "channel": 32,
    "channel_type": 16,
    "team": 32,
    "user": 32,
    "bot_id": 32,
    "ts": 32,
    "thread_ts": 32,
    "deleted_ts": 32,
    "text": None,
}
"""Fields of a message event (None: any length)."""


def _ids(
    found: dict[str, Any],
    where: str,
    fields: Mapping[str, int | None],
    refused: Callable[[str], InvalidInput] | None = None,
) -> None:
    refused = refused or _malformed
    for name, longest in fields.items():
        value = found.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise refused(f"{where}.{name} is not a string")
        if longest is not None and len(value) > longest:
            raise refused(f"{where}.{name} is longer than {longest} characters")


def _malformed(reason: str) -> InvalidInput:
    return InvalidInput(f"not an event as Slack sends it: {reason}", code="invalid_slack_event")


def _not_interaction(reason: str) -> InvalidInput:
    return InvalidInput(
        f"not an interaction as Slack sends it: {reason}", code="invalid_slack_interaction"
    )


def without_person_text(body: dict[str, Any]) -> dict[str, Any]:
    """`body` without what a person wrote in its message event (see the module)."""
    event = body.get("event")
    if not isinstance(event, dict):
        return body
    kept = {k: v for k, v in event.items() if k not in PERSON_TEXT}
    for inner in ("message", "previous_message"):
        if isinstance(kept.get(inner), dict):
            kept[inner] = {k: v for k, v in kept[inner].items() if k not in PERSON_TEXT}
    return {**body, "event": kept}


def _unsigned(reason: str) -> ApiError:
    return ApiError(401, "invalid_signature", f"not a request signed by Slack: {reason}")
