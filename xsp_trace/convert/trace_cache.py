"""Any trace straight to `analyze`, `diff`, `perfetto` and `query`: a raw trace (.nsys-rep, nsys
.sqlite export, PyTorch profiler .json/.json.gz) is converted once into a cached database and the
command reads that, as `nsys stats` does with its SQLite export.

The cache sits beside the trace in `.xsp-cache/` (or, where that folder cannot be written or is not
this user's own, in a private folder under the temporary directory: cache_folder.py), one database
per trace content, xsp-trace version and schema version: a changed trace or a newer xsp-trace
converts again, an unchanged one is reused. Databases are written atomically (convert_files), so a
killed conversion leaves no half database for the next command to pick up.

An entry proves what it holds before it is used: its `schema_info` records the SHA-256 of the
trace's bytes, the xsp-trace version that wrote it and the schema version, all compared with the
trace and this xsp-trace (its name alone is predictable). An entry recording anything else, or that
is a symbolic link or another user's, is left alone and the trace converted into the private folder;
an entry that is broken (not a DuckDB file, truncated, a table missing) is rebuilt with one warning.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import duckdb

from .. import __version__
from ..store.connection import duckdb_connect
from ..store.data_only import code_in_file
from ..store.database import SCHEMA_VERSION
from ..store.opening import is_duckdb_file
from ..store.schema import schema_difference
from ..store.sql import scalar
from .cache_folder import beside_folder, entry_problem, evict, private_folder, warn
from .common import ConvertOptions, Progress, detect_source, no_progress

HASH_CHUNK = 1 << 20
SOURCE_DIGEST_KEY = "cache_source_sha256"  # the schema_info row of a cache entry: SHA-256 of the trace's bytes
NAME_DIGEST_CHARS = 20  # of the digest, in the entry's name


def content_digest(path: Path) -> str:
    """SHA-256 of the file's bytes, read in chunks (the cache must not trust names, sizes or mtimes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def entry_facts(digest: str) -> dict[str, str]:
    """The schema_info rows a valid entry for a trace of this content holds (create_schema writes the other two)."""
    return {SOURCE_DIGEST_KEY: digest, "schema_version": SCHEMA_VERSION, "created_by": f"xsp-trace {__version__}"}


def entry_name(trace: Path, digest: str) -> str:
    return f"{Path(trace).name}.{digest[:NAME_DIGEST_CHARS]}.xsp-{__version__}-schema{SCHEMA_VERSION}.duckdb"


def cached_database_path(trace: Path) -> Path:
    """Where the database of `trace` is cached when `.xsp-cache/` beside it is usable, else in the private folder."""
    trace = Path(trace)
    return (beside_folder(trace) or private_folder()) / entry_name(trace, content_digest(trace))


class BrokenEntry(Exception):
    """The entry is this user's file but no whole xsp-trace database: rebuild it."""


class CraftedEntry(Exception):
    """The entry defines what no xsp-trace entry does: leave it alone."""


def _recorded_facts(entry: Path) -> dict[str, str]:
    """The schema_info rows of the entry, once its tables are checked. Nothing the entry defines is
    run: system functions are named in full until `main` is known to define no view or macro, and
    `schema_info` is read only once it is known to be a base table of the schema."""
    if os.path.lexists(f"{entry}.wal"):  # DuckDB would replay it, even read-only; a finished entry has none
        raise BrokenEntry("has a write-ahead log (.wal) beside it, which no finished entry has")
    if not is_duckdb_file(entry):
        raise BrokenEntry("is not a DuckDB database")
    try:
        con = duckdb_connect(entry, read_only=True)
    except duckdb.Error as exc:
        raise BrokenEntry(f"cannot be opened ({str(exc).splitlines()[0]})") from exc
    try:
        code = code_in_file(con, xsp_replaced=False)  # the one check of what a file may define (data_only)
        if code:
            what, schema, name, _ = code[0]
            raise CraftedEntry(f"defines views or macros ({what} {schema}.{name}), which no xsp-trace cache entry does")
        catalog = scalar(con, "SELECT system.main.current_database()")
        difference = schema_difference(con, catalog)
        if difference is not None:
            raise BrokenEntry(difference)
        return dict(con.execute("SELECT key, value FROM main.schema_info").fetchall())
    except duckdb.Error as exc:
        raise BrokenEntry(f"cannot be read ({str(exc).splitlines()[0]})") from exc
    finally:
        con.close()


def _verdict(entry: Path, digest: str) -> tuple[str, str | None]:
    """("missing" | "valid" | "broken" | "foreign", why) for the cache entry at `entry`."""
    try:
        problem = entry_problem(entry)
    except FileNotFoundError:
        return "missing", None
    wal = Path(f"{entry}.wal")
    if problem is None and os.path.lexists(wal) and entry_problem(wal) is not None:
        problem = f"has {wal.name} beside it, which {entry_problem(wal)}"
    if problem is not None:
        return "foreign", problem
    try:
        facts = _recorded_facts(entry)
    except BrokenEntry as exc:
        return "broken", str(exc)
    except CraftedEntry as exc:
        return "foreign", str(exc)
    for key, expected in entry_facts(digest).items():
        if facts.get(key) != expected:
            return "foreign", f"records {key} {facts.get(key)!r}, not {expected!r} (this trace, this xsp-trace)"
    return "valid", None


def _remove(entry: Path) -> None:
    for path in (entry, Path(f"{entry}.wal")):
        try:
            path.unlink()
        except OSError:
            pass  # (a folder in its place: convert_files names it)


def database_for(path: Path, report: Progress = no_progress, nsys: str | None = None) -> Path:
    """The database to read for `path`: itself when it is a database file or a folder (a Parquet
    dataset), else the cached conversion of the raw trace, converted now if not cached yet."""
    path = Path(path)
    if path.is_dir() or not path.exists() or is_duckdb_file(path):
        return path  # open_store reports what is wrong with it, if anything
    source = detect_source(path)  # an InputError for a file that is no trace either
    if source not in ("nsys-rep", "nsys-sqlite", "kineto"):
        return path
    digest = content_digest(path)
    name = entry_name(path, digest)
    beside = beside_folder(path)
    if beside is not None:
        verdict, why = _verdict(beside / name, digest)
        if verdict == "valid":
            return beside / name
        if verdict != "foreign":
            return _convert(path, beside / name, digest, verdict, why, report, nsys, superseded=True)
        warn(beside / name, f"{why}, so it is not used; converting into a private folder instead")
    private = private_folder()
    verdict, why = _verdict(private / name, digest)
    if verdict == "valid":
        return private / name
    return _convert(path, private / name, digest, verdict, why, report, nsys, superseded=False)


def _convert(trace: Path, entry: Path, digest: str, verdict: str, why: str | None, report: Progress, nsys: str | None, superseded: bool) -> Path:
    """Convert `trace` into `entry` (replacing what is there: a broken entry, with a warning), then
    keep its folder within its bound."""
    from .local import convert_files

    if verdict != "missing":
        warn(entry, f"{why}: " + ("a damaged cache entry, converted again" if verdict == "broken" else "replaced by a new conversion"))
        _remove(entry)
    report(f"converting {trace.name} into {entry} (reused next time)", None)
    convert_files([trace], entry, ConvertOptions(nsys=nsys), overwrite=True, facts=entry_facts(digest))
    evict(entry.parent, keep=entry, superseded=superseded)
    return entry
