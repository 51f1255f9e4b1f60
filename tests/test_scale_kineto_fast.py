"""The Kineto fast path (DuckDB's JSON reader + queries/ingest/kineto_map.sql) writes exactly the tables
of the Python mapper (ijson + KinetoMapper, itself checked against HTA) on every Kineto fixture."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conftest import DATA
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.kineto import _STAGING_DDL
from xsp_trace.convert.kineto_fast import convert_kineto_fast, extract_events
from xsp_trace.database import create_schema

FIXTURES = sorted(DATA.glob("kineto_*/*.json.gz"))


def _table_rows(path: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    out = {}
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall():
        cols = [c for (c,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND column_name <> 'converted_at' "
            "ORDER BY column_index", [table]).fetchall()]
        out[table] = sorted(con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
    return out


@pytest.mark.parametrize("trace", FIXTURES, ids=[p.parent.name for p in FIXTURES])
def test_fast_path_tables_equal_python_mapper(trace, tmp_path):
    con = duckdb.connect()
    create_schema(con)
    con.execute(_STAGING_DDL)
    con.execute("SET VARIABLE xsp_run_id = 1")
    assert convert_kineto_fast(con, trace, 1, False) is not None  # the fixture takes the fast path
    fast, slow = tmp_path / "fast.duckdb", tmp_path / "python.duckdb"
    convert_files([trace], fast, ConvertOptions())
    convert_files([trace], slow, ConvertOptions(kineto_reader="python"))
    fast_rows, slow_rows = _table_rows(fast), _table_rows(slow)
    assert fast_rows.keys() == slow_rows.keys()
    for table in slow_rows:
        assert fast_rows[table] == slow_rows[table], table
    assert len(slow_rows["spans"]) > 5


def test_events_array_is_cut_exactly_with_metadata_on_both_sides(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x]"}],\n "traceEvents": [\n'
                     '{"ph": "X", "name": "a]}", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2, "args": {"grid": [1, 2, 3]}}\n'
                     '], "traceName": "n]", "baseTimeNanoseconds": 1700000000000000000}\n')
    events = tmp_path / "events.json"
    meta = extract_events(trace, events)
    assert meta == {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x]"}], "traceName": "n]",
                    "baseTimeNanoseconds": 1700000000000000000}
    assert events.read_text().strip().startswith("[") and events.read_text().rstrip().endswith("}\n]")


def test_files_the_fast_path_does_not_take_still_convert(tmp_path):
    """A top-level array and an args list send the file to the Python path; the result is the same."""
    trace = tmp_path / "array.json"
    trace.write_text('[{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 10, "dur": 5, "args": [1]},'
                     ' {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 2, "ts": 11, "dur": 1}]')
    out = tmp_path / "out.duckdb"
    convert_files([trace], out, ConvertOptions())
    rows = duckdb.connect(str(out), read_only=True).execute(
        "SELECT name, start_ns, end_ns, depth FROM spans ORDER BY start_ns").fetchall()
    assert rows == [("aten::add", 10_000, 15_000, 0), ("aten::mul", 11_000, 12_000, 1)]
