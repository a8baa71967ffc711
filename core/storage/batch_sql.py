"""The statements of a writer's batch (`core.storage.batch`), built once, run on the driver.

A batch reads the rows it changes under lock and writes back, at its one flush, what its
commands staged. These are those reads and writes, as small functions over a connection:

- `thread_rows` reads threads with their members (and which of them are erased persons),
  `FOR UPDATE` and in id order (so batches of several replicas lock in the same order and
  cannot deadlock); `run_rows` reads runs.
- Positions come from `core.storage.positions` (the batch's `take_positions`).
- The rest insert the staged events and update thread, member and run rows, one executemany
  each; `insert_rows` inserts the rows commands asked for after the flush.

Reads of many ids are padded to a power of two (repeating the last id), so few statement sizes
are ever compiled.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sqlalchemy import Connection, Table, and_, bindparam, func, select, update

from core.model.leases import LeaseKind
from core.model.participants import Address
from core.model.timeline import ThreadId
from core.storage import schema
from core.storage.rows import EVENT_COLUMNS
from core.storage.statements import DriverStatement, Row

_t, _p, _r = schema.threads, schema.thread_participants, schema.runs
_l, _pe = schema.leases, schema.persons
PERSON_PREFIX = "person:"
LOAD_MOST = 256
"""Ids read by one statement, at most."""


def thread_rows(connection: Connection, ids: Sequence[str]) -> list[Row]:
    """(id, created_at, memory_thread_only, last_seq, last_at, address, state, erased) of each
    member of these threads (distinct ids, sorted), the thread rows locked; `erased`: the member
    is a person who was erased."""
    rows: list[Row] = []
    for chunk in _padded(ids):
        rows += _load_threads(len(chunk)).rows(connection, chunk)
    return rows


def run_rows(connection: Connection, ids: Sequence[str]) -> list[Row]:
    """(id, cursor, task_cursor, status, failures, last_error, last_turn, lease holder, lease
    fence) of these runs (the lease's two None when the run has no lease row). The lease is
    read unlocked: a conversation run's claim takes its thread's lock, which this batch holds
    (`core.storage.leases_store`)."""
    rows: list[Row] = []
    for chunk in _padded(ids):
        rows += _load_runs(len(chunk)).rows(connection, chunk)
    return rows


def insert_events(connection: Connection, rows: list[Row]) -> None:
    """Rows in `EVENT_COLUMNS` order (`core.storage.rows.event_values`)."""
    _INSERT_EVENTS.execute(connection, rows)


def advance_threads(connection: Connection, rows: list[tuple[int, int, ThreadId]]) -> None:
    """(last_seq, last_at, id) per thread."""
    _ADVANCE_THREADS.execute(connection, rows)


def set_policies(connection: Connection, rows: list[tuple[ThreadId, bool]]) -> None:
    """(id, memory_thread_only) per thread."""
    connection.execute(_SET_POLICY, [{"b_id": i, "b_thread_only": only} for i, only in rows])


def set_states(connection: Connection, rows: list[tuple[ThreadId, Address, str]]) -> None:
    """(thread id, address, state) per member whose state changed."""
    connection.execute(_SET_STATES, [{"b_id": i, "b_address": a, "b_state": s} for i, a, s in rows])


def update_runs(connection: Connection, rows: list[Row]) -> None:
    """(cursor, task_cursor, status, failures, last_error, last_turn, updated_at, id) per run."""
    _UPDATE_RUNS.execute(connection, rows)


def insert_rows(
    connection: Connection, table: Table, columns: tuple[str, ...], rows: list[Row]
) -> None:
    """INSERT INTO table (columns…), one executemany."""
    _insert_into(table, columns).execute(connection, rows)


def _padded(ids: Sequence[str]) -> list[Row]:
    chunks: list[Row] = []
    for start in range(0, len(ids), LOAD_MOST):
        chunk = list(ids[start : start + LOAD_MOST])
        size = 1 << (len(chunk) - 1).bit_length()
        chunks.append(tuple(chunk + chunk[-1:] * (size - len(chunk))))
    return chunks


@functools.cache
def _load_threads(size: int) -> DriverStatement:
    ids = [bindparam(f"id_{j}", type_=_t.c.id.type) for j in range(size)]
    statement = (
        select(
            _t.c.id,
            _t.c.created_at,
            _t.c.memory_thread_only,
            _t.c.last_seq,
            _t.c.last_at,
            _p.c.address,
            _p.c.state,
            _pe.c.erased_at.is_not(None),
        )
        .select_from(_t)
        .join(_p, _p.c.thread_id == _t.c.id)
        .outerjoin(
            _pe,
            and_(
                _p.c.address.startswith(PERSON_PREFIX, autoescape=True),
                _pe.c.slug == func.substr(_p.c.address, len(PERSON_PREFIX) + 1),
            ),
        )
        .where(_t.c.id.in_(ids))
        .order_by(_t.c.id)
        .with_for_update(of=_t)
    )
    return DriverStatement(statement, [f"id_{j}" for j in range(size)])


@functools.cache
def _load_runs(size: int) -> DriverStatement:
    ids = [bindparam(f"id_{j}", type_=_r.c.id.type) for j in range(size)]
    lease = and_(_l.c.kind == LeaseKind.RUN.value, _l.c.subject == _r.c.id)
    statement = (
        select(
            _r.c.id,
            _r.c.cursor,
            _r.c.task_cursor,
            _r.c.status,
            _r.c.failures,
            _r.c.last_error,
            _r.c.last_turn,
            _l.c.holder,
            _l.c.fence,
        )
        .select_from(_r.outerjoin(_l, lease))
        .where(_r.c.id.in_(ids))
    )
    return DriverStatement(statement, [f"id_{j}" for j in range(size)])


@functools.cache
def _insert_into(table: Table, columns: tuple[str, ...]) -> DriverStatement:
    statement = table.insert().values(
        {c: bindparam(f"v_{c}", type_=table.c[c].type) for c in columns}
    )
    return DriverStatement(statement, [f"v_{c}" for c in columns])


_INSERT_EVENTS = DriverStatement(
    schema.events.insert().values({c: bindparam(f"e_{c}") for c in EVENT_COLUMNS}),
    [f"e_{c}" for c in EVENT_COLUMNS],
)
_ADVANCE_THREADS = DriverStatement(
    update(_t)
    .where(_t.c.id == bindparam("b_id"))
    .values(last_seq=bindparam("b_seq"), last_at=bindparam("b_at")),
    ["b_seq", "b_at", "b_id"],
)
_SET_POLICY = (
    update(_t)
    .where(_t.c.id == bindparam("b_id"))
    .values(memory_thread_only=bindparam("b_thread_only"))
)
_SET_STATES = (
    update(_p)
    .where(_p.c.thread_id == bindparam("b_id"), _p.c.address == bindparam("b_address"))
    .values(state=bindparam("b_state"))
)
_UPDATE_RUNS = DriverStatement(
    update(_r)
    .where(_r.c.id == bindparam("b_id"))
    .values(
        cursor=bindparam("b_cursor"),
        task_cursor=bindparam("b_task_cursor"),
        status=bindparam("b_status"),
        failures=bindparam("b_failures"),
        last_error=bindparam("b_last_error"),
        last_turn=bindparam("b_last_turn"),
        updated_at=bindparam("b_now"),
    ),
    ["b_cursor", "b_task_cursor", "b_status", "b_failures", "b_last_error", "b_last_turn",
     "b_now", "b_id"],
)  # fmt: skip
