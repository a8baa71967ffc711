"""Where a conversation's message stands in a channel it is bound to — the rule the console's
"delivered where" marks come from, read off what the channels store.

A Slack DM bound to a thread (`slack_conversations`) receives the thread's messages after the
position at which it was bound (`since`), in position order, as far as the role's Slack delivery
has gone (its cursor, `slack_cursors`). What the gateway stores per message is enough to say
where each one is:

- a record of the Slack message (`slack_messages`), outbound (we posted it, with its `ts`) or
  inbound (the person wrote it in that DM);
- an intent (`slack_outbox`): the post was begun and not yet recorded as done;
- the message's retraction, with the position at which it was committed: our post is deleted
  in Slack once the delivery goes past that position;
- whether it is an erased person's tombstone: erasure deletes our posts in Slack and then
  forgets their records, so a tombstone with a record is still being deleted.

Anything else past the cursor that should have been posted was given up on: Slack refused it for
good (`msg_too_long`, `channel_not_found`, the app not installed) and the delivery moved on
(`SlackStore.give_up` keeps no other record). While Slack is unavailable the cursor does not move
past a message: it stays pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SlackDelivery(StrEnum):
    POSTED = "posted"
    """Posted in the DM by the gateway (its Slack `ts` is known)."""
    RECEIVED = "received"
    """Written in this DM by the person: it came from Slack."""
    PENDING = "pending"
    """Not posted yet: the delivery has not reached it, or its post is under way."""
    FAILED = "failed"
    """The delivery went past it without posting it: Slack refused it for good."""
    DELETING = "deleting"
    """Retracted or erased after it was posted; not deleted in Slack yet."""
    DELETED = "deleted"
    """Retracted after it was posted, and deleted in Slack."""
    WITHDRAWN = "withdrawn"
    """Retracted before it was posted: it never reached Slack."""
    ERASED = "erased"
    """Erased with its person; whatever of it was posted is deleted in Slack."""
    BEFORE = "before"
    """Said before the DM became this conversation's: not posted there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackFacts:
    """What is stored about one message and one DM the thread is bound to."""

    position: int
    from_slack: bool
    """Written by a person on the Slack channel (not posted back: it is there already)."""
    since: int
    """The position at which the DM became the thread's."""
    cursor: int | None
    """How far the role's Slack delivery has gone; None when it has never run."""
    posted_ts: str | None = None
    """The Slack `ts` of our post of it in this DM."""
    received: bool = False
    """Recorded as written in this DM."""
    intent: bool = False
    """A post of it was begun (an intent) and not recorded as done."""
    withdrawn_at: int | None = None
    """The position of its retraction, if any."""
    erased: bool = False
    """A tombstone: its person was erased."""


def slack_delivery(facts: SlackFacts) -> SlackDelivery:
    if facts.position <= facts.since:
        return SlackDelivery.BEFORE
    if facts.erased:
        return SlackDelivery.DELETING if facts.posted_ts is not None else SlackDelivery.ERASED
    if facts.received or facts.from_slack:
        return SlackDelivery.RECEIVED
    if facts.posted_ts is not None:
        if facts.withdrawn_at is None:
            return SlackDelivery.POSTED
        gone = facts.cursor is not None and facts.cursor >= facts.withdrawn_at
        return SlackDelivery.DELETED if gone else SlackDelivery.DELETING
    if facts.intent:
        return SlackDelivery.PENDING
    if facts.withdrawn_at is not None:
        return SlackDelivery.WITHDRAWN  # nothing posts a retracted or erased message
    if facts.cursor is None or facts.position > facts.cursor:
        return SlackDelivery.PENDING
    return SlackDelivery.FAILED
