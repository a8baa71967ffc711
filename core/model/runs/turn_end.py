"""What becomes of the end of a turn: the rules, over plain values.

A finished turn is committed only where it began: its end is **superseded** (dropped) when the
run's stored cursors are no longer the ones the turn started from — someone else moved the run
on meanwhile. The same compare-and-set moves the cursors over what needs no turn.

What a conversation turn **posts**: its messages (and a notice, if any) are posted only while the
run's role is an active member of the thread. A removed role posts nothing, and the turn's record
says so in its error.

The **cursor after a conversation turn** is where the turn read up to (`cursor_to`) — unless it
had read everything in the thread (`last_seq == cursor_to`): then what it posts itself is behind
the cursor too, so the run does not wake for its own words. Only what the run has looked at, plus
what it says now, ever lies behind the cursor.

The **standing of a run after a turn**: every end of a turn is numbered (the run's last turn plus
one). A failed turn makes the run `failed`, one more failure in a row, its error the run's last
error; a turn that did not fail makes it `ready` again with no failures in a row (the last error
is kept, for the operator).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.model.membership import ParticipantState
from core.model.participants import Address
from core.model.runs.run import RunStatus


def is_superseded(stored: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    """Whether a run's stored (cursor, task cursor) moved away from where a turn (or a cursor
    move) began."""
    return stored != expected


@dataclass(frozen=True, slots=True, kw_only=True)
class Posting:
    """What a conversation turn's end posts: all it said (`speaks`) or nothing; and the error
    its record keeps."""

    speaks: bool
    error: str | None


def posting(
    role: Address, state: ParticipantState | None, *, says: bool, error: str | None
) -> Posting:
    """Whether the role, in this state in the thread, posts what it `says`; its record's error."""
    speaks = state is ParticipantState.ACTIVE
    if says and not speaks:
        error = (error + "; " if error else "") + f"{role} was removed; nothing was posted"
    return Posting(speaks=speaks, error=error)


def cursor_after_turn(*, last_seq: int, cursor_to: int, posted: int) -> int:
    """A conversation run's cursor after a turn that read up to `cursor_to` in a thread whose
    last `seq` is `last_seq`, and posts `posted` events."""
    return last_seq + posted if last_seq == cursor_to else cursor_to


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """A run's status, its failures in a row and its last error."""

    status: RunStatus
    failures: int
    last_error: str | None


def standing_after(before: Standing, *, failed: bool, error: str | None) -> Standing:
    """The run's standing after a turn that `failed` (with `error`) or not."""
    if failed:
        return Standing(status=RunStatus.FAILED, failures=before.failures + 1, last_error=error)
    return Standing(status=RunStatus.READY, failures=0, last_error=before.last_error)


def turn_number(last_turn: int) -> int:
    """The number of the turn ending now, after the run's `last_turn`."""
    return last_turn + 1
