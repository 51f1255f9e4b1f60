"""The Parquet form of an xsp-trace database: one folder per table, partitioned by run.

Layout (hive partitioning, what DuckDB, Spark, Trino, Polars and pyarrow.dataset all read):

    DIR/xsp_dataset.json                       marker: schema version, tables
    DIR/<table>/run_id=<N>/<uuid>.parquet      every table that has a run_id column
    DIR/schema_info/data.parquet               the one table without runs

`open_dataset` gives a DuckDB connection in which every table of the schema is a view over
its files (typed and ordered exactly as in schemas/xsp_schema.sql; a table without files is an
empty table), so the same queries/ and analyses run unchanged on a database or a dataset.
Writing is atomic: a temporary folder beside DIR, renamed at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ..errors import InputError
from ..output_files import atomic_output
from .connection import duckdb_connect
from .database import SCHEMA_VERSION, connect, create_schema
from .schema import expected_tables, table_columns
from .sql import quote_identifier as _quote
from .sql import quote_literal as _literal
from .sql import scalar

MARKER = "xsp_dataset.json"
FORMAT_NAME = "xsp-trace parquet dataset"


def is_dataset(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / MARKER).is_file()


def copy_tables_to_parquet(con: duckdb.DuckDBPyConnection, catalog: str, folder: Path, run_offset: int = 0) -> None:
    """Append the tables of `catalog` (a database attached to con) to the dataset folder being written."""
    for table, columns in table_columns(con, catalog).items():
        names = [c for c, _ in columns]
        target = folder / table
        source = f"{_quote(catalog)}.main.{_quote(table)}"
        if "run_id" in names:
            if not scalar(con, f"SELECT EXISTS (SELECT 1 FROM {source})"):
                continue  # no files: the view layer shows the empty table
            con.execute(
                f"COPY (SELECT * REPLACE (run_id + {int(run_offset)} AS run_id) FROM {source}) TO {_literal(str(target))} "
                "(FORMAT parquet, PARTITION_BY (run_id), APPEND, COMPRESSION zstd)"
            )
        elif not target.exists():
            target.mkdir()
            con.execute(f"COPY {source} TO {_literal(str(target / 'data.parquet'))} (FORMAT parquet)")


def write_dataset(database: Path, output: Path, *, overwrite: bool = False, inputs=()) -> None:
    """Write the xsp-trace database at `database` as a Parquet dataset folder `output`, atomically."""
    output = Path(output)
    with atomic_output(
        output,
        folder=True,
        replace=overwrite,
        inputs=[database, *inputs],
        exists_fix="pass --overwrite to replace it, or choose another output folder",
    ) as tmp:
        tmp.mkdir()
        write_dataset_folder(database, tmp)


def write_dataset_folder(database: Path, folder: Path) -> None:
    """Write the tables of the database at `database` into the empty folder `folder` (not atomic)."""
    con = connect(database, read_only=True, external_access=True)  # it writes the Parquet files
    try:
        catalog = scalar(con, "SELECT current_database()")
        copy_tables_to_parquet(con, catalog, folder)
        tables = sorted(table_columns(con, catalog))
    finally:
        con.close()
    write_marker(folder, tables)


def write_marker(folder: Path, tables: list[str]) -> None:
    """The dataset's marker: format, schema version, tables, and every Parquet file with its size."""
    files = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*.parquet"))}
    (folder / MARKER).write_text(json.dumps({"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION, "tables": tables, "files": files}, indent=1))


def _marker_problem(marker: object) -> str | None:
    """What is wrong with a marker's shape, by its schema (None: nothing): an object with
    `schema_version` (text), `tables` (a list of distinct table names of the schema) and `files`
    (an object: relative path -> size in bytes, a whole number >= 0)."""
    if not isinstance(marker, dict):
        return "is not an object"
    if marker.get("format", FORMAT_NAME) != FORMAT_NAME:
        return f"says format {_short(marker.get('format'))}, not {FORMAT_NAME!r}"
    tables = marker.get("tables")
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        return f"has tables {_short(tables)}, not a list of table names"
    twice = sorted({t for t in tables if tables.count(t) > 1})
    if twice:
        return f"lists table {_short(twice[0])} twice"
    unknown = sorted(set(tables) - set(expected_tables()))
    if unknown:
        return f"lists table {_short(unknown[0])}, which the schema does not have"
    files = marker.get("files")
    if not isinstance(files, dict):
        return f"has files {_short(files)}, not an object of file sizes"
    for name, size in files.items():
        if type(size) is not int or size < 0:
            return f"gives file {_short(name)} the size {_short(size)}, not a whole number of bytes"
        if name.split("/")[0] not in tables:
            return f"lists file {_short(name)}, which is in none of its tables"
    return None


def _short(value: object) -> str:
    """A marker value quoted in an error line: JSON, on one line, at most 80 characters."""
    try:
        text = json.dumps(value)
    except (RecursionError, ValueError):
        return "(a value nested too deep)"
    return text if len(text) <= 80 else text[:77] + "..."


def _check_files(folder: Path, marker: dict) -> None:
    """Every Parquet file the writer listed is there with its size, and no other: a deleted partition,
    a truncated copy or a stray file is one line, not a silently different analysis."""
    listed = marker["files"]
    present = {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*.parquet")}
    fix = "copy the whole folder again, or convert the traces again"
    missing = sorted(set(listed) - set(present))
    if missing:
        raise InputError(folder, f"is missing {len(missing)} of its Parquet files (e.g. {missing[0]}): a deleted partition?", fix)
    changed = sorted(name for name, size in listed.items() if present[name] != size)
    if changed:
        raise InputError(folder, f"has {len(changed)} Parquet file(s) of another size than written (e.g. {changed[0]}): truncated?", fix)
    extra = sorted(set(present) - set(listed))
    if extra:
        raise InputError(folder, f"holds {len(extra)} Parquet file(s) it did not write (e.g. {extra[0]})", "remove them, or convert the traces again")


def _table_files(folder: Path, hive: bool) -> list[Path]:
    """A table's Parquet files in a fixed order: its run_id=N partitions (hive) or the folder's own."""
    return sorted(folder.rglob("*.parquet") if hive else folder.glob("*.parquet"))


def dataset_files(folder: Path) -> list[Path]:
    """Every Parquet file of the dataset at `folder`: what its views read, and all that a locked-down
    query may read (views name their files, not a glob, so no folder needs to be readable)."""
    return sorted(Path(folder).rglob("*.parquet"))


def open_dataset(folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection whose tables are views over the dataset's Parquet files."""
    folder = Path(folder)
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested deeper than Python's json reads
        raise InputError(
            folder, f"is not an xsp-trace Parquet dataset ({MARKER} unreadable)", "pass a folder written by xsp-trace convert --format parquet"
        ) from exc
    if isinstance(marker, dict) and marker.get("schema_version") != SCHEMA_VERSION:
        raise InputError(
            folder,
            f"has xsp-trace schema version {_short(marker.get('schema_version'))}, this xsp-trace reads version {SCHEMA_VERSION}",
            "convert the traces again",
        )
    problem = _marker_problem(marker)
    if problem is not None:
        raise InputError(folder, f"is not an xsp-trace Parquet dataset: its {MARKER} {problem}", "convert the traces again")
    _check_files(folder, marker)
    con = duckdb_connect()
    create_schema(con)  # the typed, empty tables; those with files become views below
    schema = expected_tables()
    for table in marker["tables"]:
        hive = "run_id" in dict(schema[table])
        files = _table_files(folder / table, hive)
        if not files:
            continue
        typed = ", ".join(f"CAST({_quote(c)} AS {t}) AS {_quote(c)}" for c, t in schema[table])
        con.execute(f"DROP TABLE {_quote(table)}")
        try:
            con.execute(
                f"CREATE VIEW {_quote(table)} AS SELECT {typed} FROM read_parquet([{', '.join(_literal(str(f)) for f in files)}], "
                f"hive_partitioning = {str(hive).lower()}, union_by_name = true)"
            )
        except duckdb.Error as exc:
            raise InputError(
                folder,
                f"has an unreadable Parquet file in {table}/ ({str(exc).splitlines()[0][:200]})",
                "copy the whole folder again, or convert the traces again",
            ) from exc
    return con
