"""`xsp-trace query` is a read tool: the user's SQL may read the data, not files, the network or the disk.

By default the connection is locked down before the user's SQL runs:
- a database file is opened read-only (DuckDB refuses CREATE/INSERT in it);
- `enable_external_access = false`: no COPY ... TO, EXPORT DATABASE, read_text/read_csv of other
  files, ATTACH of new files, INSTALL/LOAD of extensions; a Parquet dataset's own folder stays
  readable (`allowed_directories`) so its views work;
- extensions are neither installed nor loaded automatically, and `lock_configuration = true` stops
  the SQL from switching any of this back on;
- statements that write or fetch (COPY, EXPORT, ATTACH, INSTALL/LOAD, SET) are refused by type
  before anything runs -- inside a dataset folder DuckDB would otherwise let COPY write.

`--allow-external-access` skips all of this for users who want their SQL to write files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from .errors import InputError
from .store import open_store

# Statement types the user's SQL may not contain (duckdb.StatementType names).
REFUSED_STATEMENTS = {
    "COPY": "COPY",
    "EXPORT": "EXPORT DATABASE",
    "ATTACH": "ATTACH",
    "LOAD": "INSTALL/LOAD",
    "SET": "SET/USE",
    "COPY_DATABASE": "COPY FROM DATABASE",
}
_FIX = "query the data only, or pass --allow-external-access to let the SQL use files and extensions"


def lock_down(con: duckdb.DuckDBPyConnection, readable_folders: Sequence[Path] = ()) -> None:
    """No file, network or extension access beyond `readable_folders`, and no way to turn it back on."""
    row = con.execute("SELECT current_setting('lock_configuration'), current_setting('enable_external_access')").fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    locked, external = row
    if locked:  # the same database opened and locked earlier in this process (DuckDB shares the instance)
        if external:
            raise InputError(None, "the database is open elsewhere in this process with external access allowed", "close that connection first")
        return
    folders = []
    for folder in readable_folders:
        for form in {str(folder), os.path.abspath(folder), os.path.realpath(folder)}:
            folders.append(form.rstrip("/") + "/")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    if folders:
        con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def check_statements(con: duckdb.DuckDBPyConnection, sql: str, path: Path) -> None:
    """InputError naming the first statement of a type that writes files or changes settings."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(path, f"query failed: {str(exc).splitlines()[0]}", "fix the SQL") from exc
    for statement in statements:
        kind = statement.type.name
        if kind in REFUSED_STATEMENTS:
            raise InputError(
                path, f"query refused: {REFUSED_STATEMENTS[kind]} statements are not allowed (xsp-trace query opens the data read-only)", _FIX
            )


def open_for_query(path: Path, allow_external_access: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection for the user's SQL on a database or dataset, locked down unless allowed."""
    path = Path(path)
    con = open_store(path, read_only=True)
    if not allow_external_access:
        lock_down(con, [path] if path.is_dir() else [])
    return con
