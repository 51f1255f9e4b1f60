"""`xsp-trace query` is a read tool: the user's SQL may read the data, not files, the network or the disk.

By default the connection is locked down before the user's SQL runs:
- a database file is opened read-only (DuckDB refuses CREATE/INSERT in it); a Parquet dataset is an
  in-memory catalog of views over an explicit list of its files;
- `enable_external_access = false` with no directory allowed at all: only the dataset's own Parquet
  files are readable (`allowed_paths`, exact files), so nothing can be created or replaced beside
  them -- DuckDB writes a new file and renames it, and neither is allowed;
- DuckDB spills into a private temporary folder (not `<db>.tmp` beside the data), removed afterwards;
- extensions are neither installed nor loaded automatically, and `lock_configuration = true` (last)
  stops the SQL from switching any of this back on;
- every statement is checked *before anything runs*, on DuckDB's own parse and tokens: only the
  kinds in `_ALLOWED` run (queries, EXPLAIN of a query, read-only PRAGMAs, session variables, views
  and macros); an EXPLAIN ANALYZE or PREPARE cannot smuggle a COPY in, and a statement type this
  module does not know is refused.

`--allow-external-access` skips all of this for users who want their SQL to write files.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .errors import InputError
from .resources import queries_dir
from .store.data_only import lock_reading
from .store.dataset import dataset_files
from .store.opening import open_store

_FIX = "query the data only, or pass --allow-external-access to let the SQL use files and extensions"

# PRAGMAs that only read the catalog or the version (the rest change settings or write files).
READ_ONLY_PRAGMAS = frozenset(
    {
        "table_info",
        "show",
        "show_tables",
        "show_tables_expanded",
        "show_databases",
        "database_list",
        "database_size",
        "storage_info",
        "metadata_info",
        "version",
        "platform",
        "functions",
        "collations",
        "user_agent",
    }
)
# What CREATE may make: session-local objects (a read-only file refuses them in its own catalog anyway).
CREATABLE = frozenset({"VIEW", "MACRO", "FUNCTION", "TABLE"})
# Words that may stand between CREATE and the kind of object.
_CREATE_MODIFIERS = frozenset({"OR", "REPLACE", "TEMP", "TEMPORARY"})


def _words(text: str) -> list[tuple[int, str]]:
    """(position, upper-cased token) of the statement's tokens, comments left out."""
    tokens = duckdb.tokenize(text)
    words = []
    for i, (position, kind) in enumerate(tokens):
        if kind == duckdb.token_type.comment:
            continue
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        words.append((position, text[position:end].strip().upper()))
    return words


def _explained(text: str, words: list[tuple[int, str]]) -> str:
    """The statement an EXPLAIN [ANALYZE] [(options)] wraps, as text."""
    i = 1
    if i < len(words) and words[i][1] == "ANALYZE":
        i += 1
    if i < len(words) and words[i][1] == "(":
        while i < len(words) and words[i][1] != ")":
            i += 1
        i += 1
    return text[words[i][0] :] if i < len(words) else ""


def sql_argument(text: str) -> str:
    """The SQL of `query`'s argument: the text itself; for @NAME, the installed analysis of that name
    (`SELECT * FROM xsp.NAME`); for @PATH, that file -- or, when no such file is here, the file of that
    path in the package's queries/ (@queries/analyses/top_kernels.sql runs from any folder)."""
    if not text.startswith("@"):
        return text
    from .analyze.catalog import BY_NAME
    from .analyze.install import not_installed_reason

    argument = text[1:]
    if argument in BY_NAME:
        if not_installed_reason(BY_NAME[argument]):
            raise InputError(None, f"@{argument} is computed in Python, not in the database", f"run xsp-trace analyze DATABASE -a {argument}")
        return f"SELECT * FROM xsp.{argument}"
    source = Path(argument)
    if not source.is_file():
        packaged = _packaged_query(source)
        if packaged is None:
            raise InputError(source, "does not exist", "pass @PATH of an existing .sql file or @NAME of an analysis (xsp-trace analyze --list)")
        return packaged
    try:
        return source.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, "is not UTF-8 text", "pass a .sql text file") from exc


def _packaged_query(source: Path) -> str | None:
    """The text of queries/<path> shipped in the package, for @queries/... or @analyses/... paths."""
    parts = source.parts[1:] if source.parts[:1] == ("queries",) else source.parts
    if source.is_absolute() or not parts or source.suffix != ".sql" or ".." in parts:
        return None
    entry = queries_dir().joinpath(*parts)
    return entry.read_text(encoding="utf-8") if entry.is_file() else None


def refusal(con: duckdb.DuckDBPyConnection, statement) -> str | None:
    """Why `statement` (from extract_statements) may not run in a read-only query, or None if it may."""
    try:
        kind = statement.type.name
    except ValueError:  # a statement type newer than this DuckDB's Python enum (e.g. UPDATE EXTENSIONS)
        return "statements of this kind are not allowed"
    text = statement.query
    words = _words(text)
    first = words[0][1] if words else ""
    second = words[1][1] if len(words) > 1 else ""
    if kind in ("SELECT", "CALL", "TRANSACTION"):
        return None
    if kind == "EXPLAIN":
        inner = con.extract_statements(_explained(text, words))
        if len(inner) == 1 and inner[0].type.name == "SELECT":
            return None
        return "EXPLAIN is allowed of a query only"
    if kind == "PRAGMA":
        name = second.lower()
        return None if name in READ_ONLY_PRAGMAS else f"PRAGMA {name} is not allowed (it changes settings or writes files)"
    if kind == "SET" and first in ("SET", "RESET") and second == "VARIABLE":
        return None
    if kind == "CREATE":
        rest = [word for _, word in words[1:]]
        while rest and rest[0] in _CREATE_MODIFIERS:
            rest.pop(0)
        if rest and rest[0] in CREATABLE:
            return None
        return f"CREATE {rest[0] if rest else ''} is not allowed (views, macros and tables of this session only)".replace("  ", " ")
    return {
        "COPY": "COPY statements are not allowed",
        "EXPORT": "EXPORT DATABASE statements are not allowed",
        "COPY_DATABASE": "COPY FROM DATABASE statements are not allowed",
        "ATTACH": "ATTACH statements are not allowed",
        "DETACH": "DETACH statements are not allowed",
        "LOAD": "INSTALL/LOAD statements are not allowed",
        "SET": "SET/RESET/USE statements are not allowed (SET VARIABLE is)",
        "PREPARE": "PREPARE statements are not allowed",
        "EXECUTE": "EXECUTE statements are not allowed",
        "MULTI": "statements that expand into several (e.g. PIVOT without an IN list) are not allowed",
    }.get(kind, f"{kind.replace('_', ' ')} statements are not allowed")


def check_statements(con: duckdb.DuckDBPyConnection, sql: str, path: Path) -> None:
    """InputError naming the first statement that could write, reach out or change settings."""
    try:
        statements = con.extract_statements(sql)
        reasons = [refusal(con, statement) for statement in statements]
    except duckdb.Error as exc:
        raise InputError(path, f"query failed: {str(exc).splitlines()[0]}", "fix the SQL") from exc
    for reason in reasons:
        if reason:
            raise InputError(path, f"query refused: {reason} (xsp-trace query opens the data read-only)", _FIX)


def lock_down(con: duckdb.DuckDBPyConnection, readable_files: Sequence[Path] = ()) -> None:
    """No file, network or extension access beyond reading `readable_files`, and no way to turn it back on."""
    row = con.execute("SELECT system.main.current_setting('lock_configuration'), system.main.current_setting('enable_external_access')").fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    locked, external = row
    if locked:  # the same database opened and locked earlier in this process (DuckDB shares the instance)
        if external:
            raise InputError(None, "the database is open elsewhere in this process with external access allowed", "close that connection first")
        return
    lock_reading(con, readable_files)  # done already where the store opened the data for reading
    con.execute("SET lock_configuration = true")


@contextmanager
def query_connection(
    path: Path, allow_external_access: bool = False, memory_limit: str | None = None, notes: list[str] | None = None, sql: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection for the user's SQL on a database or dataset, with the analyses and their building
    blocks by name (xsp_trace/analyze/install.py), locked down unless allowed; closed on leaving the
    block (DuckDB removes its private spill folder, data_only.lock_reading). Notes for the user are
    appended to `notes`."""
    from .analyze.install import analyses_for_reading

    path = Path(path)
    con = open_store(path, read_only=True, external_access=allow_external_access)
    try:
        note = analyses_for_reading(con, str(path), sql)
        if note and notes is not None:
            notes.append(note)
        if memory_limit:
            con.execute("SET memory_limit = ?", [memory_limit])
        if not allow_external_access:
            lock_down(con, dataset_files(path) if path.is_dir() else [])
        yield con
    finally:
        con.close()
