"""Which channels a thread is bound to, and where each of a span of its messages stands in
them (`core.model.deliveries`), read off what the channels store — for the operator API's
`GET /api/v1/threads/{id}/channels` and the console's conversation page.

Every read is by key or by an index: the thread's Slack DMs (`slack_conversations` by
`(role, thread_id)`), the roles' cursors, the span's messages (`events` by `(thread_id, seq)`),
their Slack records and intents (`slack_messages` by `(role, message_id)`, `slack_outbox` by
its key), and their retractions (the partial index on `target`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from core.model.deliveries import SlackDelivery, SlackFacts, slack_delivery
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Reads
from core.storage.slack_store import CHANNEL

_cv = schema.slack_conversations
_cu = schema.slack_cursors
_m = schema.slack_messages
_out = schema.slack_outbox
_e = schema.events
_id = schema.identities
_tp = schema.thread_participants


@dataclass(frozen=True, slots=True)
class MessageDelivery:
    message_id: str
    seq: int
    state: SlackDelivery
    ts: str | None


@dataclass(frozen=True, slots=True)
class SlackDm:
    role: str
    team_id: str
    channel_id: str
    since: int
    cursor: int | None
    bound_at: int
    deliveries: list[MessageDelivery]


@dataclass(frozen=True, slots=True)
class WidgetReach:
    """A widget user who can open this conversation: a person of it with a web identity."""

    person: str
    identity: str


@dataclass(frozen=True, slots=True)
class ThreadChannels:
    slack: list[SlackDm]
    widget: list[WidgetReach]


def thread_channels(
    connection: Reads, thread_id: ThreadId, first_seq: int, last_seq: int
) -> ThreadChannels:
    """The thread's channels, with the Slack state of its messages whose seq is in
    `first_seq..last_seq` (the caller bounds the span)."""
    dms = connection.execute(
        select(_cv.c.role, _cv.c.team_id, _cv.c.channel_id, _cv.c.since_position, _cv.c.created_at)
        .where(_cv.c.thread_id == thread_id)
        .order_by(_cv.c.created_at)
    ).all()
    slack: list[SlackDm] = []
    if dms:
        messages = connection.execute(
            select(_e.c.id, _e.c.seq, _e.c.position, _e.c.author, _e.c.channel, _e.c.detail).where(
                _e.c.thread_id == thread_id,
                _e.c.seq >= first_seq,
                _e.c.seq <= last_seq,
                _e.c.kind == "message",
            )
        ).all()
        ids = [row.id for row in messages]
        withdrawn = _retractions(connection, ids)
        for dm in dms:
            slack.append(_dm(connection, dm, messages, withdrawn))
    return ThreadChannels(slack, _widget(connection, thread_id))


def _retractions(connection: Reads, ids: list[str]) -> dict[str, int]:
    """The position of each retracted message's retraction."""
    if not ids:
        return {}
    rows = connection.execute(
        select(_e.c.target, _e.c.position).where(_e.c.kind == "retraction", _e.c.target.in_(ids))
    ).all()
    return {row.target: row.position for row in rows}


def _dm(connection: Reads, dm: Any, messages: Sequence[Any], withdrawn: dict[str, int]) -> SlackDm:
    cursor = connection.execute(select(_cu.c.position).where(_cu.c.role == dm.role)).scalar()
    ids = [row.id for row in messages]
    records = (
        connection.execute(
            select(_m.c.message_id, _m.c.ts, _m.c.outbound).where(
                _m.c.role == dm.role, _m.c.channel_id == dm.channel_id, _m.c.message_id.in_(ids)
            )
        ).all()
        if ids
        else []
    )
    posts = {row.message_id: row for row in records}
    intents = (
        set(
            connection.execute(
                select(_out.c.message_id).where(_out.c.role == dm.role, _out.c.message_id.in_(ids))
            ).scalars()
        )
        if ids
        else set()
    )
    deliveries = []
    for row in messages:
        post = posts.get(row.id)
        facts = SlackFacts(
            position=row.position,
            from_slack=row.channel == CHANNEL and str(row.author).startswith("person:"),
            since=dm.since_position,
            cursor=cursor,
            posted_ts=post.ts if post is not None and post.outbound else None,
            received=post is not None and not post.outbound,
            intent=row.id in intents,
            withdrawn_at=withdrawn.get(row.id),
            erased=isinstance(row.detail, dict) and bool(row.detail.get("erased")),
        )
        ts = post.ts if post is not None else None
        deliveries.append(MessageDelivery(row.id, row.seq, slack_delivery(facts), ts))
    return SlackDm(
        dm.role, dm.team_id, dm.channel_id, dm.since_position, cursor, dm.created_at, deliveries
    )


def _widget(connection: Reads, thread_id: ThreadId) -> list[WidgetReach]:
    people = select(_tp.c.address).where(
        _tp.c.thread_id == thread_id, _tp.c.address.startswith("person:")
    )
    rows = connection.execute(
        select(_id.c.person_slug, _id.c.address)
        .where(_id.c.address.startswith("web:"), ("person:" + _id.c.person_slug).in_(people))
        .order_by(_id.c.person_slug, _id.c.address)
    ).all()
    return [WidgetReach(f"person:{row.person_slug}", row.address) for row in rows]
