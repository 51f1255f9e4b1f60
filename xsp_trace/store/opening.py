"""Open what `convert` wrote, whichever form it took: a DuckDB database file or a Parquet dataset folder.

Both give a DuckDB connection in which the schema's tables can be queried by their names; the
analyses, the Perfetto writer and `xsp-trace query` read through this one door.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import InputError
from ..formats.file_magic import DUCKDB_MAGIC, DUCKDB_MAGIC_OFFSET
from .data_only import lock_reading
from .database import connect
from .dataset import dataset_files, is_dataset, open_dataset


def open_store(path: Path, read_only: bool = True, external_access: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection to the xsp-trace database file or Parquet dataset folder at `path`; read-only, it
    reads nothing but the data (data_only.lock_reading) unless `external_access`."""
    path = Path(path)
    if path.is_dir():
        if is_dataset(path):
            con = open_dataset(path)
            if read_only and not external_access:
                lock_reading(con, dataset_files(path))
            return con
        raise InputError(
            path,
            "is a folder, not an xsp-trace database or Parquet dataset",
            "pass a .duckdb file or a folder written by xsp-trace convert --format parquet",
        )
    return connect(path, read_only=read_only, external_access=external_access)


def is_duckdb_file(path: Path) -> bool:
    """True for a DuckDB database file (its magic bytes), whatever its name."""
    try:
        with open(path, "rb") as f:
            head = f.read(DUCKDB_MAGIC_OFFSET + len(DUCKDB_MAGIC))
    except OSError:
        return False
    return head[DUCKDB_MAGIC_OFFSET:] == DUCKDB_MAGIC
