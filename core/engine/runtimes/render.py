"""The conversation as text, for runtimes whose agents read prose (ACP, A2A): one line an event."""

from __future__ import annotations

from core.engine.runtimes.base import PromptEvent


def event_line(event: PromptEvent, *, dated: bool = False) -> str:
    """One event of the conversation (a message's text may run over several lines), `#seq`
    first and, when `dated`, its time."""
    at = f"#{event.seq} [{event.at:%Y-%m-%d %H:%M}]" if dated else f"#{event.seq}"
    if event.kind == "message" and event.erased:
        return f"{at} {event.author}: (erased)"
    if event.kind == "message":
        marked = " (retracted)" if event.retracted else ""
        return f"{at} {event.author}{marked}: {event.text or ''}"
    if event.kind == "participant_state_changed":
        return f"{at} {event.participant} is now {event.state}"
    if event.kind == "retraction":
        target = f"#{event.target_seq}" if event.target_seq is not None else "an earlier message"
        reason = f": {event.text}" if event.text else ""
        return f"{at} {event.author} retracted {target}{reason}"
    if event.kind == "approval_requested":
        return f"{at} {event.author} asked: {event.text or ''}"
    if event.kind == "approval_resolved":
        target = f"#{event.target_seq}" if event.target_seq is not None else "a question"
        return f"{at} {target} was {event.text or 'resolved'}"
    if event.kind == "erased":
        return f"{at} (notice) what {event.participant} said here was erased"
    return f"{at} (notice) {event.text or ''}"
