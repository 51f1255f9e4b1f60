"""The Kineto mapping's value rules (queries/ingest/kineto_map.sql header) on every way a value can be
written: integers as JSON integers, integral decimals or digit strings (a plainly written integer is
decided by a cast, every other spelling by the JSON parse and regexes), grid and block as arrays of
three JSON integers, string args unquoted with their escapes undone. The trace is written as text,
so each number keeps the spelling under test; the expected values follow from the rules alone."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from xsp_trace.convert import ConvertOptions, convert_files


def _kernel(ts: int, correlation: str, grid: str, block: str, stream: str, registers: str) -> str:
    return (
        f'{{"ph": "X", "cat": "kernel", "name": "k{ts}", "pid": 0, "tid": {stream}, "ts": {ts}, "dur": 1, "args": '
        f'{{"device": 0, "stream": {stream}, "correlation": {correlation}, "grid": {grid}, "block": {block}, '
        f'"registers per thread": {registers}}}}}'
    )


EVENTS = [
    _kernel(10, "5", "[1,2,3]", "[128, 1, 1]", "7", "32"),
    _kernel(20, "6.0", "[1.0,2,3]", "[3000000000,1,1]", "7.0", "1e2"),
    _kernel(30, '"8"', "[1,2]", "[-1, 0, 5]", '"007"', "-0"),
    _kernel(40, "6.5", '"[1,2,3]"', "[99999999999999999999,1,1]", "9223372036854775808", '"+3"'),
    '{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 3, "tid": "007", "ts": 50, "dur": 1, "args": '
    r'{"quote": "a\"b", "slash": "\u00e9/x", "plain": "abc", "number": 1.50, "list": [1, "x"]}}',
    '{"ph": "X", "cat": "cpu_op", "name": "off track", "pid": 3, "tid": "+4", "ts": 60, "dur": 1}',
]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    folder = tmp_path_factory.mktemp("values")
    source = folder / "trace.json"
    source.write_text('{"traceEvents": [' + ",\n".join(EVENTS) + "]}")
    out: Path = folder / "out.duckdb"
    convert_files([source], out, ConvertOptions())
    return duckdb.connect(str(out), read_only=True)


def test_integers_in_every_spelling(converted):
    rows = converted.execute(
        "SELECT s.name, s.correlation_id, s.stream_id, k.registers_per_thread FROM spans s JOIN kernels k USING (run_id, span_id) ORDER BY s.start_ns"
    ).fetchall()
    assert rows == [("k10", 5, 7, 32), ("k20", 6, 7, 100), ("k30", 8, 7, 0), ("k40", None, None, None)]


def test_grid_and_block_only_from_three_integers(converted):
    rows = converted.execute("SELECT grid_x, grid_y, grid_z, block_x, block_y, block_z FROM kernels ORDER BY span_id").fetchall()
    assert rows == [
        (1, 2, 3, 128, 1, 1),
        (None, None, None, None, 1, 1),  # a decimal in the grid; a block size past INTEGER
        (None, None, None, -1, 0, 5),  # two numbers are no grid
        (None, None, None, None, None, None),  # a string is no grid; a block number past BIGINT
    ]


def test_cpu_track_from_digit_strings(converted):
    assert converted.execute("SELECT name, pid, tid FROM spans WHERE tid IS NOT NULL").fetchall() == [("op", 3, 7)]


def test_string_args_unquoted_and_unescaped(converted):
    rows = dict(converted.execute("SELECT key, value FROM span_args JOIN spans USING (run_id, span_id) WHERE spans.name = 'op'").fetchall())
    assert rows == {"quote": 'a"b', "slash": "\u00e9/x", "plain": "abc", "number": "1.5", "list": '[1,"x"]'}
