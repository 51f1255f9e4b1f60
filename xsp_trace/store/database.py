"""The output database: its schema (create, check, the older versions still read), atomic writing,
run registration and bulk inserts. The DuckDB session itself (connect, threads, memory) is
xsp_trace.store.opening.connection."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from .. import __version__
from ..errors import InputError
from ..output_files import atomic_output
from ..resources import schema_text
from ..vocabulary import SourceKind
from .connection import duckdb_connect
from .data_only import lock_reading, refuse_code
from .schema import schema_difference, table_columns, table_ddl
from .sql import one_transaction, registered, scalar

SCHEMA_VERSION = "8"


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    with one_transaction(con):
        con.execute(schema_text())
        con.execute(
            "INSERT OR REPLACE INTO schema_info VALUES ('schema_version', ?), ('created_by', ?)",
            [SCHEMA_VERSION, f"xsp-trace {__version__}"],
        )


# Older schema versions a read-only connection still reads, and the (table, column) each lacks
# (column None: the whole table, read as an empty TEMP table): version 5 has no runs.origin_ns,
# which a TEMP table of runs computes as correlate/origin.sql stores it; versions before 7 have no
# memory_events and no CPU sampling tables (cpu_samples, cpu_sample_frames, thread_states).
_TABLES_OF_7 = (("memory_events", None), ("cpu_samples", None), ("cpu_sample_frames", None), ("thread_states", None))
_TABLES_OF_8 = (("span_sources", None), ("one_execution_alignments", None))
READABLE_OLDER: dict[str, tuple[tuple[str, str | None], ...]] = {
    "5": (("runs", "origin_ns"), *_TABLES_OF_7, *_TABLES_OF_8),
    "6": (*_TABLES_OF_7, *_TABLES_OF_8),
    "7": _TABLES_OF_8,
}


def runs_with_origin(con: duckdb.DuckDBPyConnection, catalog: str) -> str:
    """The name of a TEMP table of the `runs` rows of `catalog` with origin_ns computed, for a database
    older than version 6; made once per connection (a view would scan every span at each use)."""
    main = f'"{catalog.replace(chr(34), chr(34) * 2)}".main'
    con.execute(
        "CREATE TEMP TABLE IF NOT EXISTS _xsp_runs_origin AS "
        f"SELECT r.*, o.origin_ns FROM {main}.runs AS r LEFT JOIN (SELECT run_id, min(t) AS origin_ns FROM ("
        f"SELECT run_id, min(start_ns) AS t FROM {main}.spans GROUP BY run_id "
        f"UNION ALL SELECT run_id, min(ts_ns) FROM {main}.marks GROUP BY run_id "
        f"UNION ALL SELECT run_id, min(ts_ns) FROM {main}.counters GROUP BY run_id) GROUP BY run_id) AS o USING (run_id)"
    )
    return "_xsp_runs_origin"


def check_schema(con: duckdb.DuckDBPyConnection, path: Path, read_only: bool = False) -> None:
    """Refuse a database of another schema version, or one edited by hand. Read-only, a version in
    READABLE_OLDER is accepted: `runs` is shadowed by a TEMP view of it with origin_ns computed, a
    missing table by an empty TEMP table.
    First of all, a file that holds code (data_only.refuse_code): no other query may run before."""
    refuse_code(con, path, xsp_replaced=not read_only)
    try:
        row = con.execute("SELECT value FROM schema_info WHERE key = 'schema_version'").fetchone()
    except duckdb.Error:
        row = None
    if row is None:
        raise InputError(path, "is a DuckDB file but not an xsp-trace database", "choose another output path")
    older = read_only and row[0] in READABLE_OLDER
    if row[0] != SCHEMA_VERSION and not older:
        raise InputError(
            path,
            f"has xsp-trace schema version {row[0]}, this xsp-trace writes version {SCHEMA_VERSION}",
            "convert into a new database",
        )
    catalog = scalar(con, "SELECT current_database()")
    difference = schema_difference(con, catalog, missing_ok=READABLE_OLDER[row[0]] if older else ())
    if difference is not None:
        raise InputError(path, f"{difference}, which xsp-trace schema version {SCHEMA_VERSION} has: edited by hand?", "convert the traces again")
    if older and ("runs", "origin_ns") in READABLE_OLDER[row[0]]:
        con.execute(f"CREATE OR REPLACE TEMP VIEW runs AS SELECT * FROM {runs_with_origin(con, catalog)}")
    if older:
        present = table_columns(con, catalog)
        for table, column in READABLE_OLDER[row[0]]:
            if column is None and table not in present:
                con.execute(f"CREATE OR REPLACE TEMP TABLE {table} ({table_ddl(table)})")


@contextmanager
def atomic_database(
    output: Path,
    *,
    append: bool = False,
    overwrite: bool = False,
    inputs: Iterable[Path] = (),
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a temporary copy of `output` that replaces it only if the block succeeds.
    It installs no analyses: the commands that write a database do that as a step of their own
    (xsp_trace.analyze.install), so opening one loads no analysis code.

    A failure (or Ctrl-C/SIGTERM) leaves the previous file, or none, in place -- never a
    half-written one; concurrent appends to one output wait for each other (output_files).
    """
    output = Path(output)
    with atomic_output(
        output,
        replace=append or overwrite,
        keep_existing=append,
        inputs=inputs,
        exists_fix="pass --append to add runs to it or --overwrite to replace it",
    ) as tmp:
        try:
            con = duckdb_connect(tmp)
        except duckdb.Error as exc:
            raise InputError(output, f"cannot be opened as a DuckDB database ({str(exc).splitlines()[0]})", "choose another output path") from exc
        try:
            if append and output.exists():
                check_schema(con, output)
            else:
                create_schema(con)
            yield con
            con.execute("CHECKPOINT")
        finally:
            con.close()


def connect(path: Path, read_only: bool = True, external_access: bool = False) -> duckdb.DuckDBPyConnection:
    """Open an existing xsp-trace database file (xsp_trace.store.opening.opening.open_store also takes a Parquet dataset).
    Read-only, the connection has no file access (data_only.lock_reading) unless `external_access`:
    only the callers that write files themselves (a Parquet copy, `query --allow-external-access`) ask."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "is a folder, not an xsp-trace database", "pass a .duckdb file written by xsp-trace convert")
    if not path.exists():
        raise InputError(path, "does not exist", "convert a trace first: xsp-trace convert TRACE -o " + path.name)
    try:
        con = duckdb_connect(path, read_only=read_only)
    except duckdb.Error as exc:
        raise InputError(path, f"is not a readable DuckDB database ({exc})", "pass a database written by xsp-trace convert") from exc
    try:
        check_schema(con, path, read_only=read_only)
        if read_only and not external_access:
            lock_reading(con)
    except BaseException:
        con.close()
        raise
    return con


def next_run_id(con: duckdb.DuckDBPyConnection) -> int:
    return scalar(con, "SELECT coalesce(max(run_id), 0) + 1 FROM runs")


RUN_FIELDS = (
    "source_kind source_path source_format_version tool tool_version level model batch_size rank world_size host started_at clock_origin_utc_ns label"
).split()


def insert_run(con: duckdb.DuckDBPyConnection, run_id: int, *, source_kind: SourceKind, **fields) -> None:
    fields = {"source_kind": source_kind, **fields}
    unknown = set(fields) - set(RUN_FIELDS)
    if unknown:
        raise TypeError(f"unknown run fields: {sorted(unknown)}")
    names = ["run_id", *fields, "converted_at"]
    values = [run_id, *fields.values(), datetime.now(timezone.utc).replace(tzinfo=None)]
    con.execute(
        f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        values,
    )


def insert_relation(con: duckdb.DuckDBPyConnection, table: str, relation, name: str = "_xsp_batch") -> None:
    """Append an Arrow table / record batch (or anything DuckDB can scan) to `table`, matching columns by name."""
    with registered(con, name, relation):
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")


def run_script(con: duckdb.DuckDBPyConnection, sql: str, run_id: int) -> None:
    """Run a multi-statement SQL file whose statements read the run as getvariable('xsp_run_id')."""
    con.execute(f"SET VARIABLE xsp_run_id = {int(run_id)}")
    con.execute(sql)
