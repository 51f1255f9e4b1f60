"""Any trace straight to `analyze`, `diff`, `perfetto` and `query`: a raw trace (.nsys-rep, nsys
.sqlite export, PyTorch profiler .json/.json.gz) is converted once into a cached database and the
command reads that, as `nsys stats` does with its SQLite export.

The cache sits beside the trace in `.xsp-cache/` (or, where that folder cannot be written, in a
private folder under the temporary directory), one database per trace content, xsp-trace version
and schema version: a changed trace or a newer xsp-trace converts again, an unchanged one is reused.
Databases are written atomically (convert_files), so a killed conversion leaves no half database
for the next command to pick up.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .. import __version__
from ..database import SCHEMA_VERSION
from ..store import is_duckdb_file
from .common import ConvertOptions, Progress, detect_source, no_progress
from .nsys.report import CACHE_DIR

HASH_CHUNK = 1 << 20


def content_key(path: Path) -> str:
    """A short digest of the file's bytes (the cache must not trust names, sizes or mtimes)."""
    digest = hashlib.blake2b(digest_size=10)
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _writable_folder(folder: Path) -> bool:
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return True
    except OSError:
        return False


def cache_folder(trace: Path) -> Path:
    """`.xsp-cache/` beside the trace, or this user's private folder under the temporary directory."""
    beside = trace.parent / CACHE_DIR
    if _writable_folder(beside):
        return beside
    private = Path(tempfile.gettempdir()) / f"xsp-trace-cache-{os.getuid()}"
    if not _writable_folder(private) or private.stat().st_uid != os.getuid():
        private = Path(tempfile.mkdtemp(prefix="xsp-trace-cache-"))
    return private


def cached_database_path(trace: Path) -> Path:
    """Where the database of `trace` is (or will be) cached."""
    trace = Path(trace)
    name = f"{trace.name}.{content_key(trace)}.xsp-{__version__}-schema{SCHEMA_VERSION}.duckdb"
    return cache_folder(trace) / name


def database_for(path: Path, report: Progress = no_progress, nsys: str | None = None) -> Path:
    """The database to read for `path`: itself when it is a database file or a folder (a Parquet
    dataset), else the cached conversion of the raw trace, converted now if not cached yet."""
    path = Path(path)
    if path.is_dir() or not path.exists() or is_duckdb_file(path):
        return path  # open_store reports what is wrong with it, if anything
    source = detect_source(path)  # an InputError for a file that is no trace either
    if source not in ("nsys-rep", "nsys-sqlite", "kineto"):
        return path
    cached = cached_database_path(path)
    if not cached.exists():
        from .local import convert_files

        report(f"converting {path.name} into {cached} (reused next time)", None)
        convert_files([path], cached, ConvertOptions(nsys=nsys), overwrite=True)
    return cached
