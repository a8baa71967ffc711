"""Merging one person into another, inside the writer's batch: re-addressing their threads.

`core.model.people.plan_merge` decides, per thread of the merged person, whether it is renamed
(their address becomes the other's), kept as a predecessor of the other's thread of the same other
members, or left alone. Here that plan is carried out in the batch's transaction:

- A rename rewrites the thread's `set_key`, its `thread_participants` row (the state carries
  over) and the `author` / `participant` columns of its events. Ids, `seq`, `position` and `at`
  stay: no event is added, moved or removed, so every reader's cursor (runs, deliveries) stays
  valid; runs, memory entries and subscriptions follow the thread by id.
- The batch holds state of its own that a rename must follow, because other commands of the same
  batch may have used the thread before this one: the thread's `ThreadState` (members, changed
  states; `SELECT … FOR UPDATE`-locked by `Batch.load`) and the events staged but not yet
  inserted (they are written at flush, after these statements). Both are re-addressed here.
- A predecessor is a row of `thread_predecessors`; both threads keep all their events.

Nothing outside the batch caches participant sets or members by person (the run host caches a
thread's *roles* only, which a rename does not change).
"""

from __future__ import annotations

from sqlalchemy import bindparam, select, update

from core.model.participants import Address
from core.model.people import MergePlan, plan_merge, readdressed
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.batch import Batch
from core.storage.engine import dialect_of

_t, _p, _e = schema.threads, schema.thread_participants, schema.events
_THREADS_OF = select(_p.c.thread_id).where(_p.c.address == bindparam("address"))
_BY_KEY = select(_t.c.id, _t.c.set_key).where(_t.c.set_key.in_(bindparam("keys", expanding=True)))
_SET_KEY = update(_t).where(_t.c.id == bindparam("b_id")).values(set_key=bindparam("b_key"))
_RENAME_MEMBER = (
    update(_p)
    .where(_p.c.thread_id == bindparam("b_id"), _p.c.address == bindparam("b_old"))
    .values(address=bindparam("b_new"))
)
_RENAME_AUTHOR = (
    update(_e)
    .where(_e.c.thread_id == bindparam("b_id"), _e.c.author == bindparam("b_old"))
    .values(author=bindparam("b_new"))
)
_RENAME_PARTICIPANT = (
    update(_e)
    .where(_e.c.thread_id == bindparam("b_id"), _e.c.participant == bindparam("b_old"))
    .values(participant=bindparam("b_new"))
)


def merge_threads(batch: Batch, old: Address, new: Address) -> MergePlan:
    """Re-address the threads of `old` to `new` (or record predecessors), in this batch."""
    connection = batch.connection
    ids = [ThreadId(i) for i in connection.execute(_THREADS_OF, {"address": old}).scalars()]
    batch.load(ids)  # locks them, in id order, and gives their members as this batch sees them
    members = {i: tuple(batch.thread(i).states) for i in ids}
    targets = [s for m in members.values() if (s := readdressed(m, old, new)) is not None]
    existing: dict[str, ThreadId] = {}
    if targets:
        rows = connection.execute(_BY_KEY, {"keys": [s.key for s in targets]})
        existing = {row.set_key: ThreadId(row.id) for row in rows}
    plan = plan_merge(old, new, members, existing)
    if plan.renames:
        renamed = [{"b_id": i, "b_old": old, "b_new": new} for i in plan.renames]
        connection.execute(_RENAME_MEMBER, renamed)
        connection.execute(_RENAME_AUTHOR, renamed)
        connection.execute(_RENAME_PARTICIPANT, renamed)
        connection.execute(_SET_KEY, [{"b_id": i, "b_key": s.key} for i, s in plan.renames.items()])
        for thread_id in plan.renames:
            _rename_in_batch(batch, thread_id, old, new)
    if plan.predecessors:
        dialect = dialect_of(connection)
        connection.execute(
            dialect.insert(schema.thread_predecessors).on_conflict_do_nothing(),
            [
                {"thread_id": successor, "predecessor_id": predecessor, "created_at": batch.now}
                for successor, predecessor in plan.predecessors.items()
            ],
        )
    return plan


def _rename_in_batch(batch: Batch, thread_id: ThreadId, old: Address, new: Address) -> None:
    """What this batch holds of the thread follows the rename: its members and changed states,
    and the events other commands staged in it (inserted only at flush)."""
    state = batch.thread(thread_id)
    state.states[new] = state.states.pop(old)
    if old in state.changed_states:
        state.changed_states.discard(old)
        state.changed_states.add(new)
    for _kind, fields, staged_in, _seq, _at in batch.staged:
        if staged_in == thread_id:
            for name in ("author", "participant"):
                if fields.get(name) == old:
                    fields[name] = new
