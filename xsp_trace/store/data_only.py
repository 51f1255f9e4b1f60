"""A database file is data, never code: what a file may define besides tables, checked before anything
else runs on a connection to it, and the lock that keeps a reading connection off the file system.

DuckDB resolves an unqualified function through its search path before its built-ins, so a macro
`main.round` in a colleague's file would run inside every analysis that calls round(), with the
reader's file access (read_text, glob). A file xsp-trace writes defines code in one place only, the
schema `xsp` its analyses are installed in (analyze/install.py), none of it named like a built-in.
So, on open (database.check_schema):

- refused, naming the first such object and how to strip it: a macro, function or view outside
  schema xsp; a column default, generated column or CHECK constraint (expressions that run when a
  row is read or written); in a file opened for reading, an xsp macro named like a built-in (the
  reading search path holds xsp). A file opened for writing gets its xsp schema replaced whole
  (install_analyses), so what xsp holds there never runs.
- the check names the system catalog in every call (`system.main.duckdb_functions()`), so that it
  cannot be shadowed itself, and runs before any other query on the file.
- a reading connection then loses file access (lock_reading: `enable_external_access = false`,
  DuckDB spilling into a private folder): whatever the file's installed views compute, they read
  the file's own data and nothing else, as its author could have written into the data anyway.
"""

from __future__ import annotations

import itertools
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import duckdb

from ..errors import InputError
from ..output_files import private_temp_prefix, remove_stale_temp

# The schema analyze/install.py installs the analyses into: the one place a file may hold code.
ANALYSES_SCHEMA = "xsp"
# DuckDB's built-ins live in this catalog; a qualified call cannot be shadowed by a file's macro.
SYSTEM = "system.main"

# (what, schema, name, how to strip it) of every object in the file that holds code, first the worst.
# The columns of schema xsp are left out: listing them binds every view of it (seconds per open:
# docs/robustness.md), and an expression there reads the file's own data at most (lock_reading); on
# write xsp is replaced.
_CODE_QUERY = f"""
SELECT 'macro', schema_name, function_name,
       'DROP MACRO ' || CASE WHEN function_type = 'table_macro' THEN 'TABLE ' ELSE '' END || schema_name || '.' || function_name
FROM {SYSTEM}.duckdb_functions()
WHERE database_name = $catalog AND NOT internal
  AND (schema_name <> $xsp
       OR (NOT $xsp_replaced AND function_name IN (SELECT function_name FROM {SYSTEM}.duckdb_functions() WHERE database_name = 'system')))
UNION ALL
SELECT 'view', schema_name, view_name, 'DROP VIEW ' || schema_name || '.' || view_name
FROM {SYSTEM}.duckdb_views()
WHERE database_name = $catalog AND NOT internal AND schema_name <> $xsp
UNION ALL
SELECT CASE WHEN is_generated THEN 'generated column' ELSE 'column default' END, schema_name, table_name || '.' || column_name,
       CASE WHEN is_generated THEN 'ALTER TABLE ' || schema_name || '.' || table_name || ' DROP COLUMN ' || column_name
            ELSE 'ALTER TABLE ' || schema_name || '.' || table_name || ' ALTER COLUMN ' || column_name || ' DROP DEFAULT' END
FROM {SYSTEM}.duckdb_columns()
WHERE database_name = $catalog AND schema_name <> $xsp AND (is_generated OR column_default IS NOT NULL)
UNION ALL
SELECT 'CHECK constraint', schema_name, table_name, 'CREATE TABLE ... AS SELECT * FROM ' || schema_name || '.' || table_name || ' (a copy without it)'
FROM {SYSTEM}.duckdb_constraints()
WHERE database_name = $catalog AND constraint_type = 'CHECK' AND NOT ($xsp_replaced AND schema_name = $xsp)
"""


def code_in_file(con: duckdb.DuckDBPyConnection, *, xsp_replaced: bool) -> list[tuple[str, str, str, str]]:
    """(what, schema, name, strip statement) of every object of the connection's database that holds
    code a query here could run: see the module's docstring. `xsp_replaced`: the caller replaces
    schema xsp before reading it (a write), so what it holds is left out."""
    row = con.execute(f"SELECT {SYSTEM}.current_database()").fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    return [tuple(r) for r in con.execute(_CODE_QUERY, {"catalog": row[0], "xsp": ANALYSES_SCHEMA, "xsp_replaced": xsp_replaced}).fetchall()]


def refuse_code(con: duckdb.DuckDBPyConnection, path: Path | str, *, xsp_replaced: bool) -> None:
    """InputError naming the first object of code_in_file, with the statement that strips it."""
    found = code_in_file(con, xsp_replaced=xsp_replaced)
    if not found:
        return
    what, schema, name, strip = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    where = ", named like a DuckDB built-in" if schema == ANALYSES_SCHEMA else ""
    raise InputError(
        path,
        f"defines {what} {schema}.{name}{more}{where}: code that would run inside xsp-trace's queries; "
        f"a database xsp-trace writes holds none outside schema {ANALYSES_SCHEMA} (crafted or edited by hand?)",
        f"strip it with the duckdb CLI: duckdb {shlex.quote(str(path))} -c {shlex.quote(strip + ';')}, or convert the trace again",
    )


def lock_reading(con: duckdb.DuckDBPyConnection, readable_files: Sequence[Path] = ()) -> None:
    """No file access for the connection beyond reading `readable_files` (a dataset's Parquet files):
    no extension loading, DuckDB spilling into a private folder, `enable_external_access = false`.
    DuckDB refuses to turn it back on, so nothing the file holds can. A database opened earlier in
    this process shares DuckDB's instance, settings included: one already locked is left as it is."""
    row = con.execute(f"SELECT {SYSTEM}.current_setting('enable_external_access')").fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    if not row[0]:
        return
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET temp_directory = ?", [str(_spill_folder())])
    if readable_files:
        con.execute("SET allowed_paths = ?", [sorted({str(Path(f).resolve()) for f in readable_files} | {str(f) for f in readable_files})])
    con.execute("SET enable_external_access = false")


_SPILLS = itertools.count()
_STALE_REMOVED: set[str] = set()  # the $TMPDIRs this process has cleared of killed processes' folders


def _spill_folder() -> Path:
    """A private folder for one connection's spills, `$TMPDIR/xsp-read-<pid>-<n>`, not yet made: DuckDB
    makes it when it first spills and removes it when the connection closes. One left by a killed
    process is removed by the next reader (remove_stale_temp), one left by this process when its
    command ends (remove_spill_folders)."""
    base = tempfile.gettempdir()
    if base not in _STALE_REMOVED:
        remove_stale_temp()
        _STALE_REMOVED.add(base)
    return Path(base) / f"{private_temp_prefix('read')}{next(_SPILLS)}"


def remove_spill_folders() -> None:
    """Remove what is left of this process's spill folders (its connections are closed, or the process
    ends without its atexit handlers)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{private_temp_prefix('read')}*"):
        shutil.rmtree(folder, ignore_errors=True)
