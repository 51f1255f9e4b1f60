"""Where the `]` closing traceEvents is, in the bytes after the last event: found in one pass
(the work counted, not timed), and right wherever those bytes start (inside a string, an escape,
an array of the last event)."""

from __future__ import annotations

import json

import duckdb
import pytest

from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.kineto import python_reader
from xsp_trace.convert.kineto.python_reader import closing_bracket

CANDIDATES = 100_000  # `],` pairs: each was a `]` followed by what may start more metadata keys
BASE_NS = 1_700_000_000_000_000_000


class _DecodeBudget:
    """json.loads that counts its calls and bytes, and stops (AssertionError, which no reader
    catches) once the bytes pass `max_bytes`: a quadratic search fails at once instead of crawling."""

    def __init__(self, monkeypatch, max_bytes: int):
        self.calls = 0
        self.bytes = 0
        self.max_bytes = max_bytes
        self._loads = json.loads
        monkeypatch.setattr(json, "loads", self)

    def __call__(self, data, *args, **kwargs):
        self.calls += 1
        self.bytes += len(data)
        assert self.bytes <= self.max_bytes, f"{self.calls} decodes, {self.bytes} bytes: more than one pass over the tail"
        return self._loads(data, *args, **kwargs)


def _many_candidates_event() -> bytes:
    """A complete event whose args hold CANDIDATES empty arrays: `[],[],...,[]`."""
    dims = b"[" + b"[]," * CANDIDATES + b"[]]"
    return b'{"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2, "args": {"Input Dims": ' + dims + b"}}"


def test_the_end_of_trace_events_is_found_with_one_decode_on_a_tail_of_100k_candidates(monkeypatch):
    event = _many_candidates_event()
    after = b', "traceName": "t", "ranks": [1, 2], "displayTimeUnit": "ms"}'
    tail = event[5:] + b"]" + after  # starting inside the last event, as the readers' tails do
    assert tail.count(b"],") >= CANDIDATES
    budget = _DecodeBudget(monkeypatch, max_bytes=len(tail))
    assert closing_bracket(tail) == (len(event) - 5, {"traceName": "t", "ranks": [1, 2], "displayTimeUnit": "ms"})
    assert budget.calls == 1


@pytest.mark.parametrize("reader", ["auto", "python"])
def test_both_readers_convert_a_trace_of_100k_candidates_decoding_its_tail_once(reader, tmp_path, monkeypatch):
    """The key after traceEvents (baseTimeNanoseconds: the run's clock origin) is read by both
    readers, and the JSON decoded to find it stays within twice the file."""
    import xsp_trace.convert.kineto.converter as converter

    source = tmp_path / "trace.json"
    source.write_bytes(
        b'{"schemaVersion": 1, "traceEvents": [' + _many_candidates_event() + b'], "baseTimeNanoseconds": ' + str(BASE_NS).encode() + b"}"
    )
    streaming = []
    monkeypatch.setattr(converter, "KinetoTrace", lambda *a, _kt=converter.KinetoTrace, **k: streaming.append(a) or _kt(*a, **k))
    _DecodeBudget(monkeypatch, max_bytes=2 * source.stat().st_size)
    out = tmp_path / "out.duckdb"
    convert_files([source], out, ConvertOptions(kineto_reader=reader))
    assert bool(streaming) == (reader == "python")  # auto: DuckDB's reader took it, tail and all
    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT clock_origin_utc_ns FROM runs").fetchall() == [(BASE_NS,)]
        assert con.execute("SELECT name FROM spans").fetchall() == [("aten::cat",)]


# Strings that read backwards as something else if escapes are miscounted: escaped quotes and
# backslashes before quotes, brackets and braces inside strings, a `],` inside a string.
_TRICKY = ['a\\"]', "\\\\", '"], "x": [', 'b\\\\"}]', "}]}", '\\\\\\"],', ""]


def test_every_start_inside_the_last_event_finds_the_same_end():
    last = {"ph": "X", "name": _TRICKY[0], "args": {s: [s, [s], {"k": s}] for s in _TRICKY}, "ts": 1, "dur": 1}
    events = json.dumps([{"ph": "i", "name": "]", "ts": 0}, last])
    meta = {"traceName": _TRICKY[2], "list": [_TRICKY, [[]]], "more": {"a": [_TRICKY[1]]}}
    doc = ('{"traceEvents": ' + events + ", " + json.dumps(meta)[1:]).encode()
    end = len('{"traceEvents": ') + len(events) - 1
    assert doc[end : end + 1] == b"]"
    first_of_last = doc.rindex(b'{"ph": "X"')
    for start in range(first_of_last, end + 1):
        assert closing_bracket(doc[start:]) == (end - start, meta), start


@pytest.mark.parametrize(
    "tail",
    [
        b'"x": 1}]',  # no metadata object closes it
        b'"x": 1}], "k": }',  # the rest is not JSON
        b'"x": 1}], "k": 1} junk',
        b'"x": {"y": [1]}}',  # no `]` directly inside the top-level object
        b"",
    ],
)
def test_a_tail_without_the_end_of_trace_events_gives_none(tail):
    assert closing_bracket(tail) is None


def test_non_finite_words_after_the_events_are_read_as_their_stand_ins():
    found = closing_bracket(b'1}], "after": [-inf, 1], "x": NaN}', non_finite=True)
    assert found is not None and found[0] == 2
    assert [python_reader.NON_FINITE_TEXT[v] for v in (found[1]["after"][0], found[1]["x"])] == ["-Infinity", "NaN"]
