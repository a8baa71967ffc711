"""A timeline as the console shows it: each event of the API's JSON as a line to read, and where
the one the page views as (`as`) was in the dark.

Pure functions over the API's JSON (`core.model.serialize`), no I/O:

- `shown(event, viewer)`: what one event says — who, what, when, and its marks (`retracted`,
  `erased`, where it was written, the hint it carries). A tombstone says "erased" in place of
  its text.
- The blackout. Viewing as P, P's own removal and re-add are the only events P sees around the
  time P was removed: everything between is hidden from P, for good (the visibility filter,
  `core.model.visibility`). So P's removal is marked as the start of the blackout and P's re-add
  as its end; in the operator's view (no `as`), every participant's are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Event = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    id: str
    seq: int
    at: str
    kind: str
    who: str | None
    text: str | None
    """What it says; None for a tombstone (`marks` has "erased")."""
    details: Sequence[str] = ()
    marks: Sequence[str] = ()
    blackout: str | None = None
    """A sentence when the viewer's blackout starts or ends here."""
    target: str | None = None
    """The id of the message a retraction or an answer is about (a link on the page)."""
    classes: Sequence[str] = field(default=())
    delivered: Sequence[tuple[str, str]] = ()
    """Where a message stands in each Slack DM of the conversation: (the DM, its state)."""


def shown(event: Event, viewer: str | None = None) -> Shown:
    kind = str(event.get("kind", "event"))
    common: dict[str, Any] = {
        "id": str(event["id"]),
        "seq": int(event["seq"]),
        "at": str(event["at"]),
        "kind": kind,
    }
    match kind:
        case "message":
            return _message(event, common)
        case "participant_state_changed":
            return _state_change(event, viewer, common)
        case "retraction":
            reason = event.get("reason")
            return Shown(
                **common,
                who=event.get("author"),
                text="retracted a message" + (f": {reason}" if reason else ""),
                target=event.get("target"),
            )
        case "system":
            return Shown(**common, who=None, text=event.get("text"), classes=("system",))
        case "approval_requested":
            options = ", ".join(str(o.get("label")) for o in event.get("options") or [])
            tool = event.get("tool")
            details = [f"options: {options}"] if options else []
            if tool:
                details.append(f"tool: {tool.get('name')}")
            return Shown(
                **common,
                who=event.get("author"),
                text=f"asks: {event.get('title')}",
                details=details,
                classes=("approval",),
            )
        case "approval_resolved":
            option = event.get("option") or {}
            by = event.get("by")
            what = str(event.get("outcome"))
            if option:
                what += f": {option.get('label')}"
            if by:
                what += f" by {by}"
            return Shown(
                **common,
                who=None,
                text=f"approval {what}",
                target=event.get("target"),
                classes=("approval",),
            )
        case "erased":
            return Shown(
                **common,
                who=event.get("participant"),
                text=f"was erased; {event.get('messages')} of their messages here are "
                "tombstones now",
                classes=("system",),
            )
    return Shown(**common, who=None, text=kind)


def _message(event: Event, common: dict[str, Any]) -> Shown:
    marks: list[str] = []
    classes: list[str] = ["message"]
    if event.get("erased"):
        marks.append("erased")
        classes.append("erased")
    if event.get("retracted"):
        marks.append("retracted")
        classes.append("retracted")
    if event.get("channel"):
        marks.append(f"via {event['channel']}")
    context = event.get("context")
    if context:
        marks.append(f"hint: {context.get('kind')}")
    return Shown(
        **common,
        who=event.get("author"),
        text=None if event.get("erased") else event.get("text"),
        marks=marks,
        target=event.get("in_reply_to"),
        classes=classes,
    )


def _state_change(event: Event, viewer: str | None, common: dict[str, Any]) -> Shown:
    participant = event.get("participant")
    from_state, to_state = event.get("from_state"), event.get("to_state")
    classes = ["state"]
    blackout = None
    if viewer is None or participant == viewer:
        if to_state == "removed":
            blackout = (
                f"Blackout begins: {participant} was removed here and sees nothing said after "
                "this until re-added — and never what was said meanwhile."
            )
            classes.append("blackout-start")
        elif to_state == "active":
            blackout = (
                f"Blackout ends: {participant} was re-added here; what was said while they were "
                "removed stays hidden from them."
            )
            classes.append("blackout-end")
    return Shown(
        **common,
        who=participant,
        text=f"{from_state} → {to_state}",
        blackout=blackout,
        classes=classes,
    )


def last_seq(*pages: Sequence[Event]) -> int:
    """The highest `seq` on the pages (0 when they are empty)."""
    return max((int(e["seq"]) for page in pages for e in page), default=0)
