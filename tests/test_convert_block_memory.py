"""The converting database keeps DuckDB's block allocator memory (connection.convert_block_memory):
buffer blocks reused instead of faulted in again, no more than the trace's size (BENCHMARKS.md,
"Convert: nsys")."""

from __future__ import annotations

from pathlib import Path

import duckdb

from xsp_trace.store.connection import CONVERT_BLOCK_MEMORY, convert_block_memory, keep_block_memory

DATA = Path(__file__).parent / "data"


def _block_memory(con: duckdb.DuckDBPyConnection) -> str:
    return con.execute("SELECT current_setting('block_allocator_memory')").fetchone()[0]


def _parse(size: str) -> str:
    """`size` as DuckDB shows the setting (e.g. "244.1 MiB" for 256MB)."""
    con = duckdb.connect()
    con.execute("SET block_allocator_memory = ?", [size])
    return _block_memory(con)


def test_keep_block_memory_sets_it_and_never_lowers_a_larger_one():
    con = duckdb.connect()
    assert _block_memory(con) == "0 bytes"
    keep_block_memory(con, 256 << 20)
    assert _block_memory(con) == _parse("256MiB")
    con.execute("SET block_allocator_memory = '512MB'")
    keep_block_memory(con, 256 << 20)  # DuckDB refuses to lower it: kept, no error
    assert _block_memory(con) == _parse("512MB")


def test_a_trace_keeps_no_more_than_its_own_size():
    assert convert_block_memory(59 << 20) == 59 << 20
    assert convert_block_memory(573 << 20) == CONVERT_BLOCK_MEMORY


def test_convert_sets_it_on_the_converting_database(tmp_path):
    from xsp_trace.convert.common import ConvertOptions, no_progress
    from xsp_trace.convert.dispatch import convert_trace
    from xsp_trace.store.database import atomic_database

    with atomic_database(tmp_path / "out.duckdb") as con:
        assert _block_memory(con) == "0 bytes"
        trace = DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite"
        convert_trace(con, trace, ConvertOptions(), no_progress)
        assert _block_memory(con) == _parse(f"{trace.stat().st_size}B")
        assert con.execute("SELECT count(*) FROM spans").fetchone()[0] > 0
