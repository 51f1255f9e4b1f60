"""Validation after ingest: what a reader staged is checked with set-based SQL before it becomes spans.

Independent of how the staging tables were filled (the nsys reader may change), this looks only
at their rows. Every problem is either repaired and counted in one warning line, or rejected
with one InputError line -- never stored silently:

- rows whose start/end is NULL, outside +-TIME_LIMIT_NS (an overflow or a corrupt value), or whose
  end lies before their start: dropped, counted per table;
- duplicate ids in the string table (several values for one id): one value kept per id (the
  first), counted -- before any join, so one id never multiplies rows;
- GPU activities without a process id (an export without globalPid): the process of the CUDA API
  call with the same correlation id, where exactly one process has it;
- an NVTX end-of-trace time out of range: recomputed from the kept rows.

`reading_errors` turns the exceptions a reader raises on values of the wrong type or size
(Arrow, DuckDB conversion, overflow, undecodable text, SQLite corruption) into one line naming
the file, as the last line of defence behind the readers' own checks.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from ..errors import InputError, one_line
from ..store.sql import is_temp_view, one_row, scalar

# Timestamps and ends in ns must lie within +-2^62 ns (year 2116 as UNIX-epoch ns): sums and
# differences of two of them then never overflow a BIGINT.
TIME_LIMIT_NS = 2**62
TIME_LIMIT_US = TIME_LIMIT_NS // 1000

# Staged tables with start/end, and whether a NULL end is allowed (an NVTX range never closed, a mark).
_TIMED = {
    "_nsys_nvtx": True,
    "_nsys_api": False,
    "_nsys_osrt": False,
    "_nsys_kernel": False,
    "_nsys_memcpy": False,
    "_nsys_memset": False,
    "_nsys_sync": False,
}
_GPU_TABLES = ("_nsys_kernel", "_nsys_memcpy", "_nsys_memset", "_nsys_sync")
_WHAT = {
    "_nsys_nvtx": "NVTX",
    "_nsys_api": "CUDA API",
    "_nsys_osrt": "OS runtime",
    "_nsys_kernel": "kernel",
    "_nsys_memcpy": "memcpy",
    "_nsys_memset": "memset",
    "_nsys_sync": "synchronization",
}


def warn(path, message: str) -> None:
    """One warning line on stderr: the input, what was repaired and how many rows."""
    where = f"{path}: " if path is not None else ""
    print(f"xsp-trace: warning: {one_line(where + message)}", file=sys.stderr, flush=True)


def _exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """A staging table, or the view a multi-threaded staging leaves in its place."""
    return is_temp_view(con, table) or bool(scalar(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND temporary", [table]))


def _writable(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """A staging view (staging_threads: pieces read side by side) as a table, before rows change."""
    if is_temp_view(con, table):
        con.execute(f"CREATE TEMP TABLE {table}__rows AS SELECT * FROM {table}")
        con.execute(f"DROP VIEW {table}")
        con.execute(f"ALTER TABLE {table}__rows RENAME TO {table}")


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    return {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND database_name = 'temp'", [table]).fetchall()}


def validate_nsys_staging(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Check and repair the `_nsys_*` staging tables in place (see the module docstring)."""
    limit = TIME_LIMIT_NS
    for table, end_may_be_null in _TIMED.items():
        if not _exists(con, table):
            continue
        end_null = "" if end_may_be_null else " OR end_ns IS NULL"
        bad_null, bad_range, bad_order = one_row(
            con,
            f"""
            SELECT count(*) FILTER (WHERE start_ns IS NULL{end_null}),
                   count(*) FILTER (WHERE start_ns NOT BETWEEN -{limit} AND {limit} OR end_ns NOT BETWEEN -{limit} AND {limit}),
                   count(*) FILTER (WHERE end_ns < start_ns)
            FROM {table}""",
        )
        if bad_null or bad_range or bad_order:
            _writable(con, table)
            con.execute(f"""DELETE FROM {table} WHERE start_ns IS NULL{end_null}
                OR start_ns NOT BETWEEN -{limit} AND {limit} OR end_ns NOT BETWEEN -{limit} AND {limit}
                OR end_ns < start_ns""")
            parts = [
                f"{n} with {why}"
                for n, why in ((bad_null, "no start or end"), (bad_range, "a time out of range"), (bad_order, "end before start"))
                if n
            ]
            warn(path, f"dropped {_WHAT[table]} rows: {', '.join(parts)}")
    _dedupe_strings(con, path)
    _fill_gpu_pids(con, path)
    _check_nvtx_end(con, path)


def _dedupe_strings(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    if not _exists(con, "_nsys_strings"):
        return
    rows, ids, null_ids = one_row(con, "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE id IS NULL) FROM _nsys_strings")
    duplicates = rows - null_ids - ids
    if duplicates or null_ids:
        _writable(con, "_nsys_strings")
        con.execute("""CREATE OR REPLACE TEMP TABLE _nsys_strings AS
            SELECT id, arg_min(value, rowid) AS value FROM _nsys_strings WHERE id IS NOT NULL GROUP BY id""")
        warn(path, f"string table: {duplicates} duplicate id(s) (first value kept), {null_ids} row(s) without an id dropped")


def _fill_gpu_pids(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    if not _exists(con, "_nsys_api"):
        return
    for table in _GPU_TABLES:
        if not _exists(con, table) or not {"pid", "correlation_id"} <= _columns(con, table):
            continue
        missing = scalar(con, f"SELECT count(*) FROM {table} WHERE pid IS NULL")
        if not missing:
            continue
        _writable(con, table)
        con.execute(f"""
            UPDATE {table} AS g SET pid = owner.pid
            FROM (SELECT correlation_id, any_value(pid) AS pid FROM _nsys_api
                  WHERE correlation_id IS NOT NULL AND pid IS NOT NULL
                  GROUP BY correlation_id HAVING count(DISTINCT pid) = 1) AS owner
            WHERE g.pid IS NULL AND g.correlation_id = owner.correlation_id""")
        left = scalar(con, f"SELECT count(*) FROM {table} WHERE pid IS NULL")
        warn(
            path,
            f"{missing} {_WHAT[table]} row(s) without a process id: {missing - left} given the process of "
            f"their CUDA API call (same correlation id), {left} left without one",
        )


def _check_nvtx_end(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    try:
        value = scalar(con, "SELECT getvariable('nsys_nvtx_max_ts')")
    except duckdb.Error:
        return
    if value is None or (isinstance(value, int) and -TIME_LIMIT_NS <= value <= TIME_LIMIT_NS):
        return
    fixed = scalar(con, "SELECT max(greatest(start_ns, coalesce(end_ns, start_ns))) FROM _nsys_nvtx") if _exists(con, "_nsys_nvtx") else None
    con.execute("SET VARIABLE nsys_nvtx_max_ts = ?", [fixed])
    warn(path, "the last NVTX time of the export is out of range: unclosed ranges end at the last valid NVTX time")


_FIX_VALUES = "export the trace again, or repair the file"


@contextmanager
def reading_errors(path: Path) -> Iterator[None]:
    """Values of the wrong type or size in the input, whichever reader meets them: one InputError line."""
    try:
        yield
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise InputError(path, f"holds a value of the wrong type or size ({_first_line(exc)})", _FIX_VALUES) from exc
    except OverflowError as exc:
        raise InputError(path, f"holds a number too large to store ({_first_line(exc)})", _FIX_VALUES) from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, f"holds text that is not valid UTF-8 (byte {exc.start})", _FIX_VALUES) from exc
    except sqlite3.DatabaseError as exc:
        raise InputError(path, f"is truncated or corrupt ({_first_line(exc)})", _FIX_VALUES) from exc
    except (duckdb.ConversionException, duckdb.OutOfRangeException, duckdb.ConstraintException) as exc:
        raise InputError(path, f"holds a value xsp-trace cannot store ({_first_line(exc)})", _FIX_VALUES) from exc
    except ValueError as exc:  # int("abc"), a date out of range: a value the reader could not interpret
        raise InputError(path, f"holds a value xsp-trace cannot interpret ({_first_line(exc)})", _FIX_VALUES) from exc
    except RecursionError as exc:
        raise InputError(path, "is nested too deeply to read", _FIX_VALUES) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
