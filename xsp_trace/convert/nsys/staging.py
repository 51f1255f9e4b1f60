"""Staging of an Nsight Systems export: SQLite query results streamed into DuckDB tables.

xsp_trace.convert.nsys decides what to read (one SQLite query per staging table, from the
export's own tables and columns); this module moves the rows: ADBC's SQLite driver (native code)
yields Arrow batches and DuckDB inserts them -- no Python rows. Span ids are assigned on the way,
in the order the tables are listed.

With more than one usable core (nsys/staging_threads.py), big tables are cut into rowid ranges and
the pieces are read by one thread each (the SQLite driver releases the GIL while it reads), the
rows reaching DuckDB in the same order with the same span ids as one reader would give them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import adbc_driver_manager
import duckdb
import numpy as np
import pyarrow as pa

from ...errors import InputError
from ..common import Progress

# ADBC's SQLite driver reports a value whose SQLite type differs from its column's Arrow type
# (fixed by the first batch) as "[SQLite] Type mismatch in column N: ..." (c/driver/sqlite).
_ADBC_TYPE_MISMATCH = "Type mismatch"
FIX_VALUES = "export the report again with `nsys export --type sqlite`, or repair the file"
# DuckDB's message for string data that is not UTF-8 (ADBC's SQLite driver hands text bytes over as they are).
_DUCKDB_INVALID_UTF8 = "Invalid unicode"

_TYPE_ROW = "_xsp_type_row"
_TYPED_LITERALS = {pa.int64(): "0", pa.string(): "''", pa.float64(): "0.0"}
_DUCK_TYPES = {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.float64(): "DOUBLE"}


class Source(Protocol):
    """What the stager needs of an export (xsp_trace.convert.nsys._Export)."""

    path: Any

    def arrow_batches(self, sql: str, own_connection: bool = False) -> Any: ...

    def rowid_bounds(self, table: str) -> tuple[int, int] | None: ...

    def wrong_type(self, what: str, detail: str) -> InputError: ...

    def corrupt(self, exc: Exception) -> InputError: ...


def schema(*names: str, strings: tuple[str, ...] = ()) -> pa.Schema:
    """Staging columns: BIGINT, except the named VARCHAR ones."""
    return pa.schema([pa.field(n, pa.string() if n in strings else pa.int64()) for n in names])


@dataclass(frozen=True)
class Staging:
    """One staging table: its SQLite query (None: the table is absent, staged empty) and columns."""

    table: str
    sql: str | None
    schema: pa.Schema
    with_span_ids: bool = False
    what: str = ""
    # The SQLite table the query reads as `FROM "<name>"`: named, its rows may be read in rowid
    # ranges by several threads (row order, and so span ids, unchanged).
    split_table: str | None = None


class Plan:
    """The staging tables of one export, in span-id order, collected before any is read."""

    def __init__(self) -> None:
        self.items: list[Staging] = []

    def stage(
        self, table: str, sql: str | None, schema: pa.Schema, with_span_ids: bool = False, what: str = "", split_table: str | None = None
    ) -> None:
        self.items.append(Staging(table, sql, schema, with_span_ids, what, split_table))


def stage_in_order(plan: Plan, source: Source, con: duckdb.DuckDBPyConnection, progress: Progress) -> None:
    """Stage the plan's tables one after the other, span ids in the plan's order (one reader)."""
    stager = _Stager(source, con, progress)
    for item in plan.items:
        stager.stage(item)


def typed_query(item: Staging, sql: str) -> str:
    """`sql` behind one typed row (see _Stager) that fixes the Arrow types of its columns."""
    typed = ", ".join(f"{_TYPED_LITERALS[f.type]} AS {f.name}" for f in item.schema)
    return f"SELECT 1 AS {_TYPE_ROW}, {typed} UNION ALL SELECT 0, * FROM ({sql})"


def staging_columns(item: Staging) -> pa.Schema:
    """The staging table's columns: span_id first where the item assigns span ids."""
    return pa.schema(([pa.field("span_id", pa.int64())] if item.with_span_ids else []) + list(item.schema))


def create_table(con: duckdb.DuckDBPyConnection, table: str, columns: pa.Schema, temp: bool = True) -> None:
    cols = ", ".join(f"{f.name} {_DUCK_TYPES[f.type]}" for f in columns)
    con.execute(f"CREATE OR REPLACE {'TEMP ' if temp else ''}TABLE {table} ({cols})")


def batch_arrays(batch: pa.RecordBatch, first: bool, item: Staging, source: Source, failure: list) -> list[pa.Array]:
    """The staging columns of one batch of `typed_query`'s rows (its type row dropped), cast exactly."""
    if first:
        if batch.num_rows == 0 or batch.column(0)[0].as_py() != 1:
            raise RuntimeError(f"SQLite returned the type row of {item.table} out of place")
        batch = batch.slice(1)
    return [_cast(batch.column(i + 1), f, item.what or item.table, source, failure) for i, f in enumerate(item.schema)]


def reading_failure(exc: Exception, item: Staging, source: Source) -> InputError:
    """The one-line error for an exception of the SQLite driver while it streams `item`'s rows."""
    what = item.what or item.table
    if _ADBC_TYPE_MISMATCH in str(exc):
        return source.wrong_type(what, _column_named(str(exc), item.schema))
    return source.corrupt(exc)


def insert_failure(exc: duckdb.Error, item: Staging, source: Source) -> InputError | None:
    """The one-line error for DuckDB refusing staged rows, where the rows are at fault."""
    if _DUCKDB_INVALID_UTF8 in str(exc):  # the SQLite driver passes text bytes through unchecked
        return InputError(source.path, f"holds text that is not valid UTF-8 in its {item.what or item.table}", FIX_VALUES)
    return None


class _Stager:
    """Streams SQLite query results into DuckDB staging tables, assigning span ids on the way.

    ADBC's SQLite driver infers each column's Arrow type from the first batch (an all-NULL text
    column would become int64 and fail on its first string), so every query is prefixed with one
    typed row (marked by _TYPE_ROW) that fixes the types; that row is dropped here.
    """

    def __init__(self, export: Source, con: duckdb.DuckDBPyConnection, progress: Progress):
        self.export = export
        self.con = con
        self.progress = progress
        self.next_span_id = 1

    def stage(self, item: Staging) -> int:
        full = staging_columns(item)
        create_table(self.con, item.table, full)
        if item.sql is None:
            return 0
        what = item.what or item.table
        counted = [0]

        def span_ids(n: int) -> pa.Array | None:
            counted[0] += n
            self.progress(f"reading {what}: {counted[0]:,} rows", None)
            if not item.with_span_ids:
                return None
            self.next_span_id += n
            return pa.array(np.arange(self.next_span_id - n, self.next_span_id, dtype=np.int64))

        with self.export.arrow_batches(typed_query(item, item.sql)) as reader:
            return stream_into(self.con, item.table, full, item, reader, self.export, span_ids)


def stream_into(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: pa.Schema,
    item: Staging,
    reader: pa.RecordBatchReader,
    source: Source,
    span_ids: Callable[[int], pa.Array | None],
) -> int:
    """Insert the rows of `typed_query(item, ...)` from `reader` into `table` (one streaming INSERT);
    `span_ids(n)` gives each batch's span id column (None: the table has none). Returns the rows."""
    counted: list[int] = [0]
    failure: list[BaseException] = []

    def batches():
        first = True
        try:
            for batch in reader:
                arrays = batch_arrays(batch, first, item, source, failure)
                first = False
                n = len(arrays[0]) if arrays else 0
                ids = span_ids(n)
                if ids is not None:
                    arrays.insert(0, ids)
                counted[0] += n
                yield pa.RecordBatch.from_arrays(arrays, schema=columns)
        except (adbc_driver_manager.Error, OSError) as exc:  # the driver's errors while streaming are OSErrors
            failure.append(reading_failure(exc, item, source))
            raise

    stream_rows = batches()
    con.register("_xsp_batches", pa.RecordBatchReader.from_batches(columns, stream_rows))
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _xsp_batches")
    except duckdb.Error as exc:
        if failure:  # DuckDB reports the stream's exception as its own, unchained
            raise failure[0] from None
        rows_at_fault = insert_failure(exc, item, source)
        if rows_at_fault:
            raise rows_at_fault from None
        raise
    finally:
        con.unregister("_xsp_batches")
        stream_rows.close()
    return counted[0]


def _cast(column: pa.Array, field: pa.Field, what: str, source: Source, failure: list) -> pa.Array:
    """A column as its staging type; a value that does not convert exactly (text, blob, 1.5 in an
    integer column, a number beyond int64) is the wrong-type error, never a truncated value."""
    if column.type == field.type:
        return column
    try:
        return column.cast(field.type)  # safe cast: refuses fractions and overflow
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        failure.append(source.wrong_type(what, f"{field.name}: {str(exc).splitlines()[0][:120]}"))
        raise


def _column_named(message: str, schema: pa.Schema) -> str:
    """The driver's type-mismatch message with the staging column it names (its column 0 is the type row)."""
    first = message.strip().splitlines()[0] if message.strip() else message
    found = re.search(r"column (\d+)", first)
    if found and 1 <= int(found.group(1)) <= len(schema):
        return f"{schema[int(found.group(1)) - 1].name}: {first[:160]}"
    return first[:200]
