"""Events as the widget shows them (docs/widget.md, "An event as the widget shows it"), and the
role as a session presents it (its name, greeting, suggested prompts and avatar)."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from core.model.errors import NotFound
from core.model.participants import Address, ParticipantKind, kind_of
from core.model.roles import Role
from core.model.runs.conversation import FRESH_SESSION_NOTICE
from core.model.timeline import AnyEvent, Message, Retraction, SystemNote, rfc3339
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


async def widget_event(event: AnyEvent, *, viewer: Address, names: Names) -> dict[str, Any] | None:
    """The event as the viewer's widget shows it; None for what the widget does not show
    (membership changes)."""
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
    return None


class Frames:
    """Server-Sent Events frames of timeline events, rendered once per event and viewer: a
    message to a conversation with many open widgets is encoded once, not once per stream."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, Address, bool], bytes] = OrderedDict()

    async def of(self, event: AnyEvent, viewer: Address, names: Names) -> bytes:
        """The frame (empty when the widget does not show the event)."""
        key = (event.id, viewer, isinstance(event, Message) and event.retracted)
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


def working_frame(role: str, working: bool) -> bytes:
    data = json.dumps({"role": role, "working": working})
    return f"event: working\r\ndata: {data}\r\n\r\n".encode()
