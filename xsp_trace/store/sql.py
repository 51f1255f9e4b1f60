"""The one place for SQL text helpers: quoting identifiers and literals, setting DuckDB variables, reading one value,
and the one line for a database whose values DuckDB cannot compute with."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

from ..errors import InputError


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, relation: Any) -> Iterator[str]:
    """`relation` (Arrow, a dict of numpy arrays, ...) as the view `name` for the block. Named, never
    found by DuckDB's replacement scan of Python variables: a reading connection has no external
    access (data_only.lock_reading), and DuckDB then scans no Python variable."""
    con.register(name, relation)
    try:
        yield name
    finally:
        con.unregister(name)


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """A DuckDB string literal in single quotes (embedded quotes doubled), for statements that take no parameters (COPY, ATTACH)."""
    return "'" + text.replace("'", "''") + "'"


def set_variables(con: duckdb.DuckDBPyConnection, variables: Mapping[str, Any]) -> None:
    """SET VARIABLE name = value for each entry (values bound as parameters; names must be identifiers)."""
    for name, value in variables.items():
        if not name.isidentifier():
            raise ValueError(f"not a variable name: {name!r}")
        con.execute(f"SET VARIABLE {name} = ?", [value])


@contextmanager
def one_transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block's statements in one transaction -- the caller's, if it has one open: DuckDB commits
    each statement of a file database on its own otherwise, and a commit per DDL statement is most of
    the time of creating a schema or a library of views. Rolled back if the block fails."""
    try:
        con.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:  # already in one: the caller commits
        yield
        return
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Sequence[Any]]) -> None:
    """INSERT `rows` into `table` (a quoted or plain name) in one statement: executemany runs one per row,
    which costs milliseconds each in DuckDB."""
    if not rows:
        return
    row = f"({', '.join('?' * len(rows[0]))})"
    con.execute(f"INSERT INTO {table} VALUES {', '.join([row] * len(rows))}", [value for r in rows for value in r])


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> tuple:
    """The first row `sql` returns (an aggregate's row); LookupError when it returns no row."""
    # The whole result (one row), not fetchone(): DuckDB 2.0 refuses the connection's next
    # register() while a result is unfinished.
    rows = con.execute(sql, params).fetchall()
    if not rows:
        raise LookupError(f"expected a row, got none from: {' '.join(sql.split())[:200]}")
    return rows[0]


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Any:
    """The first column of the first row `sql` returns (e.g. a count or max); LookupError when it returns no row."""
    return one_row(con, sql, params)[0]


def is_temp_view(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether `name` is a TEMP view of the connection (a staging relation may be a table or a view)."""
    return bool(scalar(con, "SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND temporary", [name]))


@contextmanager
def values_readable(path: object) -> Iterator[None]:
    """Turn a DuckDB error raised while reading the database at `path` into one line naming it.

    A database that passes the schema check may still hold values convert never writes -- a time
    past +-2^62 ns whose duration overflows BIGINT, a count no cast fits -- when it was edited by
    hand; the query meeting such a value fails in DuckDB, and that is the user's data, not a bug to
    show as a traceback (--debug still shows it). An interrupt (Ctrl-C, --timeout) passes through."""
    try:
        yield
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(path, f"holds values xsp-trace cannot compute with ({what})", "edited by hand? convert the traces again") from exc
