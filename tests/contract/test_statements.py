"""Driver statements (the hot paths' statements on the driver's cursor) behave as SQLAlchemy's own
execution would, on both backends: the same values read, and the same error family raised."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.exc import IntegrityError

from core.model.participants import ParticipantSet, parse_address
from core.model.timeline import MessageContext
from core.storage import schema
from core.storage.database import Database
from core.storage.statements import DriverStatement
from core.storage.threads_reads import RETRACTED

ALICE = parse_address("person:alice")
ROLE = parse_address("role:concierge")
_e = schema.events

_EVENTS = select(_e, RETRACTED).where(_e.c.thread_id == bindparam("t")).order_by(_e.c.seq)
_EVENTS_BY_DRIVER = DriverStatement(_EVENTS, ["t"])
_INSERT_ID_ONLY = DriverStatement(
    schema.threads.insert().values(
        id=bindparam("id"), set_key=bindparam("key"), created_at=bindparam("at")
    ),
    ["key", "id", "at"],  # not the statement's own order: the values are put in place
)


async def test_rows_read_by_the_driver_equal_sqlalchemys(database: Database) -> None:
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))
    quoted = MessageContext(kind="quote", originating_message="m0")
    first = await database.threads.post_message(thread.id, ALICE, "with context", quoted)
    await database.threads.post_message(thread.id, ALICE, "plain")
    await database.threads.retract(thread.id, first.id, ALICE, None)

    def both(c: Connection) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        ours = _EVENTS_BY_DRIVER.rows(c, (thread.id,))
        theirs = [tuple(row) for row in c.execute(_EVENTS, {"t": thread.id})]
        return ours, theirs

    ours, theirs = await database._reads.transact(both)
    assert ours == theirs
    assert len(ours) == 3
    context, retracted = ours[0][8], ours[0][-1]
    assert context == quoted.to_json()  # JSON decoded, not text
    assert retracted is True  # the driver's 1 made a bool


async def test_a_driver_error_is_raised_as_sqlalchemys_error_family(database: Database) -> None:
    thread, _ = await database.threads.resolve(ParticipantSet.of([ALICE, ROLE]))

    def insert_again(c: Connection) -> None:
        _INSERT_ID_ONLY.execute(c, ("another-key", thread.id, 0))

    with pytest.raises(IntegrityError):
        await database._writes.transact(insert_again)
    # The refused transaction left nothing behind, and the writer goes on.
    assert (await database.threads.get(thread.id)).id == thread.id
    assert (await database.threads.post_message(thread.id, ALICE, "still here")).seq == 1
