"""What schemas/xsp_schema.sql declares, read from the DDL itself, and the check that a database holds it.

The expected tables, columns and types are never kept by hand: the schema is created in an
in-memory DuckDB and read back from `duckdb_columns()`, so a column added to the DDL is checked
(and stood in for) without another edit. A database whose version row says the current version
but whose tables were dropped, or whose columns were dropped or retyped by hand, is refused on
open with one line naming the first difference -- not a traceback from whichever query meets it.
"""

from __future__ import annotations

import re
from functools import cache

import duckdb

from .connection import duckdb_connect
from .resources import schema_text

Columns = list[tuple[str, str]]  # (column, DuckDB type) in schema order
_COMMENT = re.compile(r"\s*(--[^\n]*\n\s*)*COMMENT\s+ON\s", re.IGNORECASE)


def table_columns(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, Columns]:
    """table -> [(column, type)] in column order, for the base tables of `catalog`.main."""
    rows = con.execute(
        "SELECT c.table_name, list((c.column_name, c.data_type) ORDER BY c.column_index) "
        "FROM duckdb_columns() c JOIN duckdb_tables() t USING (database_name, schema_name, table_name) "
        "WHERE c.database_name = ? AND c.schema_name = 'main' GROUP BY c.table_name ORDER BY c.table_name",
        [catalog],
    ).fetchall()
    return {name: [tuple(col.values()) if isinstance(col, dict) else tuple(col) for col in cols] for name, cols in rows}


@cache
def expected_tables() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every table of schemas/xsp_schema.sql with its columns and types, read from the DDL run in memory."""
    con = duckdb_connect()
    try:
        for statement in con.extract_statements(schema_text()):
            if not _COMMENT.match(statement.query):  # (the comments are 9 in 10 statements, and no column)
                con.execute(statement)
        return {table: tuple(columns) for table, columns in table_columns(con, "memory").items()}
    finally:
        con.close()


def table_ddl(table: str) -> str:
    """The column list of `table` as in the schema ("run_id INTEGER, ..."), for an empty stand-in."""
    return ", ".join(f'"{column}" {kind}' for column, kind in expected_tables()[table])


def schema_difference(con: duckdb.DuckDBPyConnection, catalog: str, missing_ok: tuple[tuple[str, str | None], ...] = ()) -> str | None:
    """The first way `catalog` differs from the schema (a missing table, a missing or retyped column),
    or None. Extra tables and columns are allowed: they change no query the package runs; so are the
    (table, column) and whole (table, None) of `missing_ok`, which an older schema version lacks."""
    present = table_columns(con, catalog)
    for table, columns in expected_tables().items():
        if table not in present:
            if (table, None) in missing_ok:
                continue
            return f"has no table {table}"
        have = dict(present[table])
        for column, kind in columns:
            if column not in have:
                if (table, column) in missing_ok:
                    continue
                return f"has no column {table}.{column}"
            if have[column] != kind:
                return f"has column {table}.{column} of type {have[column]}, not {kind}"
    return None
