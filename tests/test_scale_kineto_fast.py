"""The Kineto readers: DuckDB's JSON reader takes the traceEvents bytes cut exactly out of the
trace object; files it does not take go through the streaming reader into the same mapping."""

from __future__ import annotations

import duckdb
import pytest

from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.input_limits import InputLimits
from xsp_trace.convert.kineto import duckdb_reader
from xsp_trace.convert.kineto.duckdb_reader import extract_events
from xsp_trace.convert.kineto.pieces import PieceWriter

pytestmark = pytest.mark.slow  # Ray, worker processes and big inputs


def extract(trace, folder, piece_bytes: int = 1 << 40):
    """(metadata, the pieces' bytes) of extract_events on `trace`."""
    pieces: list[bytes] = []
    writer = PieceWriter(folder, piece_bytes, 2 * duckdb_reader.TAIL_BYTES, lambda piece: pieces.append(piece.read_bytes()))
    return extract_events(trace, writer, InputLimits()), pieces


def test_events_array_is_cut_exactly_with_metadata_on_both_sides(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(
        '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x]"}],\n "traceEvents": [\n'
        '{"ph": "X", "name": "a]}", "pid": 1, "tid": 1, "ts": 1.5, "dur": 2, "args": {"grid": [1, 2, 3]}}\n'
        '], "traceName": "n]", "baseTimeNanoseconds": 1700000000000000000}\n'
    )
    meta, pieces = extract(trace, tmp_path)
    assert meta == {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x]"}], "traceName": "n]", "baseTimeNanoseconds": 1700000000000000000}
    assert len(pieces) == 1 and pieces[0].strip().startswith(b"[") and pieces[0].rstrip().endswith(b"}\n]")


def test_files_the_fast_path_does_not_take_still_convert(tmp_path):
    """A top-level array and an args list send the file to the Python path; the result is the same."""
    trace = tmp_path / "array.json"
    trace.write_text(
        '[{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 10, "dur": 5, "args": [1]},'
        ' {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 2, "ts": 11, "dur": 1}]'
    )
    out = tmp_path / "out.duckdb"
    convert_files([trace], out, ConvertOptions())
    rows = duckdb.connect(str(out), read_only=True).execute("SELECT name, start_ns, end_ns, depth FROM spans ORDER BY start_ns").fetchall()
    assert rows == [("aten::add", 10_000, 15_000, 0), ("aten::mul", 11_000, 12_000, 1)]


def _trace_with_time_at_chunk_end(tmp_path, value: bytes, spaces: int):
    """A trace whose second event's `"ts":` ends exactly at the first chunk's end (after `spaces`
    blanks), its value starting the next chunk."""
    head = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"p": "'
    rest = b'"}}, {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "dur": 1, "ts":' + b" " * spaces
    pad = duckdb_reader.CHUNK_BYTES - len(head) - len(rest)
    trace = tmp_path / f"t{spaces}.json"
    trace.write_bytes(head + b"x" * pad + rest + value + b"}]}")
    return trace


def test_a_number_after_a_time_key_at_a_chunk_end_stays_on_the_duckdb_reader(tmp_path):
    for spaces in (0, 1, 40, 200):
        assert extract(_trace_with_time_at_chunk_end(tmp_path, b"12", spaces), tmp_path)[0] == {}, spaces


def test_a_non_numeric_time_across_a_chunk_end_goes_to_the_streaming_reader(tmp_path):
    for spaces in (0, 1, 40, 200):
        assert extract(_trace_with_time_at_chunk_end(tmp_path, b"true", spaces), tmp_path)[0] is None, spaces


def test_extracting_keeps_no_earlier_chunk_and_takes_events_past_the_first_event_limit(tmp_path, monkeypatch):
    """The source of extract_events keeps only the chunk in hand (it once kept every chunk: the
    whole decompressed file in memory, and past 64 MiB of events 'has no trace events' on a good file)."""
    from xsp_trace.convert.kineto import python_reader

    monkeypatch.setattr(duckdb_reader, "CHUNK_BYTES", 1 << 10)
    monkeypatch.setattr(python_reader, "MAX_BYTES_BEFORE_FIRST_EVENT", 8 * python_reader.CHUNK_BYTES)  # reached after 8 reads
    event = '{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": %d, "dur": 1}'
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [' + ", ".join(event % (10 * i) for i in range(1000)) + '], "schemaVersion": 1}')
    held: list[int] = []
    read = python_reader._Source.read

    def counting_read(self, size):
        chunk = read(self, size)
        held.append(sum(map(len, self.recent)))
        return chunk

    monkeypatch.setattr(python_reader._Source, "read", counting_read)
    assert extract(trace, tmp_path)[0] == {"schemaVersion": 1}
    assert len(held) > 64 and max(held[2:]) <= 2 * duckdb_reader.CHUNK_BYTES
