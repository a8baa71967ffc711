"""Events as the widget shows them (docs/widget.md, "An event as the widget shows it"), and the
role as a session presents it (its name, greeting, suggested prompts and avatar).

An approval is two events, shown so: `approval_requested` is the card (what the role asks, the
options, the tool call it is about, who may answer and until when), with its `state` and
`resolution` when the caller knows them (history does; the stream sends the request as it was
asked, and the resolution follows as its own event); `approval_resolved` names the request it
resolves (`target`), the outcome, the option chosen, and who answered, by name, from where.

Erasure (`core.model.erasure`): a tombstone is a message with `erased: true` and no text; the
`erased` event names the person erased (`participant`, `mine` when it is the viewer) and how many
of the conversation's messages became tombstones."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from core.model.approvals import Outcome
from core.model.errors import NotFound
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.roles import Role
from core.model.runs.conversation import FRESH_SESSION_NOTICE
from core.model.timeline import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Erased,
    Message,
    Retraction,
    SystemNote,
    rfc3339,
)
from core.storage.database import Database

NAMES_KEPT = 10_000
FRAMES_KEPT = 4_096
"""Rendered frames kept: the latest events, once per viewer."""


class Names:
    """Display names of authors: roles from their manifests, people from the database (kept,
    so a stream does not read a name per event)."""

    def __init__(self, database: Database, roles: Mapping[str, Role]) -> None:
        self._db = database
        self._roles = roles
        self._people: OrderedDict[Address, str] = OrderedDict()

    async def of(self, address: Address) -> str:
        name = address.partition(":")[2]
        if kind_of(address) is ParticipantKind.ROLE:
            role = self._roles.get(name)
            return role.display_name if role is not None else name
        if (known := self._people.get(address)) is not None:
            return known
        try:
            display = (await self._db.people.get(name)).display_name
        except NotFound:  # an address no person record stands behind (made through the API)
            display = name
        self._people[address] = display
        while len(self._people) > NAMES_KEPT:
            self._people.popitem(last=False)
        return display

    def forget(self, address: Address) -> None:
        self._people.pop(address, None)


def widget_role(role: Role) -> dict[str, Any]:
    """The role as the widget presents it to a visitor (the manifest's `widget:` section)."""
    look = role.widget
    return {
        "name": role.name,
        "display_name": role.display_name,
        "greeting": look.greeting,
        "suggestions": list(look.suggestions),
        "avatar_url": look.avatar_url,
        "initials": role.initials,
    }


async def widget_event(
    event: AnyEvent,
    *,
    viewer: Address,
    names: Names,
    resolution: ApprovalResolved | None = None,
) -> dict[str, Any] | None:
    """The event as the viewer's widget shows it; None for what the widget does not show
    (membership changes). `resolution`: for an approval request, how it was resolved, when the
    viewer sees that (None: pending, as far as the viewer knows)."""
    common: dict[str, Any] = {"id": event.id, "seq": event.seq, "at": rfc3339(event.at)}
    match event:
        case Message():
            return common | {
                "kind": "message",
                "author": event.author,
                "author_name": await names.of(event.author),
                "mine": event.author == viewer,
                "text": event.text,
                "retracted": event.retracted,
                "erased": event.erased,
                "channel": event.channel,
            }
        case Retraction():
            return common | {
                "kind": "retraction",
                "author": event.author,
                "author_name": await names.of(event.author),
                "mine": event.author == viewer,
                "target": event.target,
            }
        case SystemNote():
            fresh = event.text == FRESH_SESSION_NOTICE
            shown = common | {"kind": "system", "text": event.text, "fresh": fresh}
            if fresh:
                shown["archive_before"] = event.seq
            return shown
        case ApprovalRequested():
            return common | await _approval_request(event, viewer, names, resolution)
        case ApprovalResolved():
            return common | await _approval_resolution(event, viewer, names)
        case Erased():
            return common | {
                "kind": "erased",
                "participant": event.participant,
                "mine": event.participant == viewer,
                "messages": event.messages,
            }
    return None


async def _approval_request(
    event: ApprovalRequested, viewer: Address, names: Names, resolution: ApprovalResolved | None
) -> dict[str, Any]:
    resolved: dict[str, Any] | None = None
    if resolution is not None:  # the resolution event as the widget shows it
        resolved = {"id": resolution.id, "seq": resolution.seq, "at": rfc3339(resolution.at)}
        resolved |= await _approval_resolution(resolution, viewer, names)
    return {
        "kind": "approval_requested",
        "author": event.author,
        "author_name": await names.of(event.author),
        "mine": event.author == viewer,
        "title": event.title,
        "description": event.description,
        "options": [option.to_json() for option in event.options],
        "tool": event.tool.to_json() if event.tool is not None else None,
        "approvers": [
            {"address": address, "name": await names.of(address)} for address in event.approvers
        ],
        "can_answer": not event.approvers or viewer in event.approvers,
        "expires_at": rfc3339(event.expires_at),
        "state": resolution.outcome.value if resolution is not None else "pending",
        "resolution": resolved,
    }


async def _approval_resolution(
    event: ApprovalResolved, viewer: Address, names: Names
) -> dict[str, Any]:
    return {
        "kind": "approval_resolved",
        "target": event.target,
        "outcome": event.outcome.value,
        "option": event.option.to_json() if event.option is not None else None,
        "by": event.by,
        "by_name": await names.of(event.by) if event.by is not None else None,
        "mine": event.by == viewer,
        "channel": event.channel,
    }


ANSWERED_WHERE = {"slack": "in Slack", "api": "through the API", "email": "by email"}
"""Where an answer was given, as a sentence ends; an answer in the widget (`web`) says nothing."""


async def too_late(resolution: ApprovalResolved | None, *, viewer: Address, names: Names) -> str:
    """Why an answer is refused, for the person who gave it: how the approval was resolved, and
    by whom (None: it was, but not in what the viewer sees)."""
    if resolution is None:
        return "This request is closed: it can no longer be answered."
    if resolution.outcome is Outcome.EXPIRED:
        return "This request expired before anyone answered it."
    if resolution.outcome is Outcome.CANCELLED:
        return "This request was cancelled: it no longer needs an answer."
    if resolution.by is None:
        who = "someone"
    else:
        who = "you" if resolution.by == viewer else await names.of(resolution.by)
    where = ""
    if resolution.channel and resolution.channel != "web":
        where = " " + ANSWERED_WHERE.get(resolution.channel, f"in {resolution.channel}")
    label = f": “{resolution.option.label}”" if resolution.option is not None else ""
    return f"Already answered by {who}{where}{label}."


class Frames:
    """Server-Sent Events frames of timeline events, rendered once per event and viewer: a
    message to a conversation with many open widgets is encoded once, not once per stream."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, Address, bool, bool], bytes] = OrderedDict()

    async def of(self, event: AnyEvent, viewer: Address, names: Names) -> bytes:
        """The frame (empty when the widget does not show the event): a message's frame as it
        is now — retracted, or a tombstone — is another frame."""
        retracted = erased = False
        if isinstance(event, Message):
            retracted, erased = event.retracted, event.erased
        key = (event.id, viewer, retracted, erased)
        if (frame := self._kept.get(key)) is not None:
            return frame
        shown = await widget_event(event, viewer=viewer, names=names)
        frame = b""
        if shown is not None:  # json.dumps escapes newlines: the data is one line
            data = json.dumps(shown)
            frame = f"id: {event.seq}\r\nevent: timeline\r\ndata: {data}\r\n\r\n".encode()
        self._kept[key] = frame
        while len(self._kept) > FRAMES_KEPT:
            self._kept.popitem(last=False)
        return frame

    def clear(self) -> None:
        """Forget every frame (a person was erased: nothing of theirs is kept)."""
        self._kept.clear()


def working_frame(role: str, working: bool) -> bytes:
    data = json.dumps({"role": role, "working": working})
    return f"event: working\r\ndata: {data}\r\n\r\n".encode()
