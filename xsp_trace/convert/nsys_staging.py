"""Staging of an Nsight Systems export: SQLite query results streamed into DuckDB tables.

xsp_trace.convert.nsys decides what to read (one SQLite query per staging table, from the
export's own tables and columns); this module moves the rows: ADBC's SQLite driver (native code)
yields Arrow batches and DuckDB inserts them -- no Python rows. Span ids are assigned on the way,
in the order the tables are listed. Reading ahead by a thread, and staging two groups of tables
at once, were measured and not kept: BENCHMARKS.md (nsys: convert speed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

import adbc_driver_manager
import duckdb
import numpy as np
import pyarrow as pa

from ..errors import InputError
from .common import Progress

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

    def arrow_batches(self, sql: str) -> Any: ...

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


class Plan:
    """The staging tables of one export, in span-id order, collected before any is read."""

    def __init__(self) -> None:
        self.items: list[Staging] = []

    def stage(self, table: str, sql: str | None, schema: pa.Schema, with_span_ids: bool = False, what: str = "") -> None:
        self.items.append(Staging(table, sql, schema, with_span_ids, what))


def stage_in_order(plan: Plan, source: Source, con: duckdb.DuckDBPyConnection, progress: Progress) -> None:
    """Stage the plan's tables one after the other, span ids in the plan's order."""
    stager = _Stager(source, con, progress)
    for item in plan.items:
        stager.stage(item)


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
        fields = ([pa.field("span_id", pa.int64())] if item.with_span_ids else []) + list(item.schema)
        full = pa.schema(fields)
        cols = ", ".join(f"{f.name} {_DUCK_TYPES[f.type]}" for f in full)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {item.table} ({cols})")
        if item.sql is None:
            return 0
        typed = ", ".join(f"{_TYPED_LITERALS[f.type]} AS {f.name}" for f in item.schema)
        with self.export.arrow_batches(f"SELECT 1 AS {_TYPE_ROW}, {typed} UNION ALL SELECT 0, * FROM ({item.sql})") as reader:
            return self._insert(item.table, reader, item.schema, full, item.with_span_ids, item.what or item.table)

    def _insert(self, table: str, reader: pa.RecordBatchReader, schema: pa.Schema, full: pa.Schema, with_span_ids: bool, what: str) -> int:
        counted: list[int] = [0]
        failure: list[BaseException] = []

        def batches():
            first = True
            try:
                for batch in reader:
                    if first:
                        if batch.num_rows == 0 or batch.column(0)[0].as_py() != 1:
                            raise RuntimeError(f"SQLite returned the type row of {table} out of place")
                        batch, first = batch.slice(1), False
                    n = batch.num_rows
                    arrays = [self._cast(batch.column(i + 1), f, what, failure) for i, f in enumerate(schema)]
                    if with_span_ids:
                        arrays.insert(0, pa.array(np.arange(self.next_span_id, self.next_span_id + n, dtype=np.int64)))
                        self.next_span_id += n
                    counted[0] += n
                    self.progress(f"reading {what}: {counted[0]:,} rows", None)
                    yield pa.RecordBatch.from_arrays(arrays, schema=full)
            except (adbc_driver_manager.Error, OSError) as exc:  # the driver's errors while streaming are OSErrors
                if _ADBC_TYPE_MISMATCH in str(exc):
                    failure.append(self.export.wrong_type(what, _column_named(str(exc), schema)))
                else:
                    failure.append(self.export.corrupt(exc))
                raise

        source = batches()
        stream = pa.RecordBatchReader.from_batches(full, source)
        self.con.register("_xsp_batches", stream)
        try:
            self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _xsp_batches")
        except duckdb.Error as exc:
            if failure:  # DuckDB reports the stream's exception as its own, unchained
                raise failure[0] from None
            if _DUCKDB_INVALID_UTF8 in str(exc):  # the SQLite driver passes text bytes through unchecked
                raise InputError(self.export.path, f"holds text that is not valid UTF-8 in its {what}", FIX_VALUES) from None
            raise
        finally:
            self.con.unregister("_xsp_batches")
            source.close()
        return counted[0]

    def _cast(self, column: pa.Array, field: pa.Field, what: str, failure: list) -> pa.Array:
        """A column as its staging type; a value that does not convert exactly (text, blob, 1.5 in an
        integer column, a number beyond int64) is the wrong-type error, never a truncated value."""
        if column.type == field.type:
            return column
        try:
            return column.cast(field.type)  # safe cast: refuses fractions and overflow
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            failure.append(self.export.wrong_type(what, f"{field.name}: {str(exc).splitlines()[0][:120]}"))
            raise


def _column_named(message: str, schema: pa.Schema) -> str:
    """The driver's type-mismatch message with the staging column it names (its column 0 is the type row)."""
    first = message.strip().splitlines()[0] if message.strip() else message
    found = re.search(r"column (\d+)", first)
    if found and 1 <= int(found.group(1)) <= len(schema):
        return f"{schema[int(found.group(1)) - 1].name}: {first[:160]}"
    return first[:200]
