"""Statements of the hot paths, compiled once per dialect and run on the driver's own cursor.

A batch of the writer and a turn's read run the same few statements thousands of times a second.
Through `Connection.execute`, each run looks the statement up in SQLAlchemy's compiled cache,
builds and processes a parameter dictionary per row, and wraps the cursor and every row it
returns — several times what SQLite itself takes for a statement by index. A `DriverStatement` is
compiled once per dialect; each run hands the driver's cursor the SQL and plain tuples of values,
in the order of `names`. What SQLAlchemy would still do is kept: values pass the bind processors
of their types (JSON, say), rows read pass the result processors, and driver errors are raised as
SQLAlchemy's `DBAPIError` family, so callers tell an `IntegrityError` from the rest as before.

Only for statements run inside a transaction the caller began (`Transactor.transact`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

Row = tuple[Any, ...]


class DriverStatement:
    def __init__(self, statement: ClauseElement, names: Sequence[str]) -> None:
        self._statement = statement
        self._names = tuple(names)
        self._compiled: weakref.WeakKeyDictionary[Dialect, _Compiled] = weakref.WeakKeyDictionary()

    def _for(self, dialect: Dialect) -> _Compiled:
        compiled = self._compiled.get(dialect)
        if compiled is None:
            compiled = self._compiled[dialect] = _Compiled.of(self._statement, self._names, dialect)
        return compiled

    def execute(self, connection: Connection, params: Row | list[Row]) -> Any:
        """Run with one row of values (a tuple) or many (a list: an executemany); the driver's
        cursor, for what the statement returns."""
        compiled = self._for(connection.dialect)
        if compiled.convert is not None:
            params = (
                [compiled.convert(r) for r in params]
                if isinstance(params, list)
                else compiled.convert(params)
            )
        driver = connection.connection.dbapi_connection
        assert driver is not None, "the connection was closed"
        cursor = driver.cursor()
        dbapi_error = connection.dialect.loaded_dbapi.Error
        try:
            if isinstance(params, list):
                cursor.executemany(compiled.sql, params)
            else:
                cursor.execute(compiled.sql, params)
        except dbapi_error as error:
            cursor.close()
            raise DBAPIError.instance(
                compiled.sql, params, error, dbapi_error, dialect=connection.dialect
            ) from error
        return cursor

    def rows(self, connection: Connection, params: Row) -> list[Row]:
        """Every row the statement reads, its values as SQLAlchemy would give them."""
        cursor = self.execute(connection, params)
        try:
            rows = cursor.fetchall()
        finally:
            cursor.close()
        results = self._for(connection.dialect).results
        if not results:
            return [tuple(row) for row in rows]
        processed = []
        for row in rows:
            values = list(row)
            for i, p in results:
                values[i] = p(values[i])
            processed.append(tuple(values))
        return processed

    def scalar(self, connection: Connection, params: Row) -> Any:
        """The first column of the one row the statement returns."""
        cursor = self.execute(connection, params)
        try:
            row = cursor.fetchone()
        finally:
            cursor.close()
        if row is None:
            raise LookupError("the statement returned no row")
        return row[0]


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    convert: Callable[[Row], Row] | None
    """From a row in the statement's `names` order to the driver's parameters (None: as is)."""
    results: Sequence[tuple[int, Callable[[Any], Any]]]
    """The columns read that have a result processor, by index."""

    @classmethod
    def of(cls, statement: ClauseElement, names: tuple[str, ...], dialect: Dialect) -> _Compiled:
        compiled = statement.compile(dialect=dialect)
        if not isinstance(compiled, SQLCompiler) or compiled.positiontup is None:
            raise ValueError(f"{dialect.name}: DriverStatement needs a positional paramstyle")
        processors = [
            column.type._cached_result_processor(dialect, None)
            for column in compiled._result_columns
        ]
        results = [(i, p) for i, p in enumerate(processors) if p is not None]
        return cls(compiled.string, _converter(compiled, names, dialect), results)


def _converter(
    compiled: SQLCompiler, names: tuple[str, ...], dialect: Dialect
) -> Callable[[Row], Row] | None:
    order = compiled.positiontup
    assert order is not None
    processors = [
        compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in order
    ]
    if list(order) != list(names):  # reordered, or values fixed in the statement itself
        fixed = compiled.params
        steps = [
            (names.index(name) if name in names else None, fixed.get(name), p)
            for name, p in zip(order, processors, strict=True)
        ]

        def rebuild(row: Row) -> Row:
            values = []
            for i, value, p in steps:
                v = value if i is None else row[i]
                values.append(v if p is None else p(v))
            return tuple(values)

        return rebuild
    if not (processed := [(i, p) for i, p in enumerate(processors) if p is not None]):
        return None

    def process(row: Row) -> Row:
        values = list(row)
        for i, p in processed:
            values[i] = p(values[i])
        return tuple(values)

    return process
