"""The Kineto readers: DuckDB's JSON reader takes the traceEvents bytes cut exactly out of the
trace object; files it does not take go through the streaming reader into the same mapping."""

from __future__ import annotations

import duckdb

from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.kineto_fast import extract_events


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
