"""Both Kineto readers fill the same raw event relation, checked and mapped once (kineto/events.py,
queries/ingest/kineto_map.sql): on every hand-made bad value of the corpus they reject with the same
line, on damaged files both reject, and on odd but valid inputs they store the same rows.

The DuckDB reader ("auto") hands files it does not take to the streaming reader, so the cases
below include both kinds: those DuckDB reads itself (times out of range, pid written as 1e3) and
those it hands over (a non-numeric time, a null event).
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from test_bad_input_corpus import KINETO, KINETO_REJECTED, STRUCTURE_REJECTED, bytes_case, complete_events, kineto_doc
from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.errors import InputError
from xsp_trace.formats import kineto_fields as kf

pytestmark = pytest.mark.slow  # both Kineto readers over every case, real traces among them

CPU_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
ORDER_REJECTED = {
    # null reads as a row of NULLs in DuckDB's reader (as {} does): handed to the streaming reader.
    "null_event": (bytes_case(lambda: json.dumps({"traceEvents": [CPU_OP, None]}).encode()), "event #2 is not a JSON object"),
    # The first problem in file order is reported, whichever reader met which first.
    "bad_time_before_non_object": (
        bytes_case(lambda: json.dumps({"traceEvents": [dict(CPU_OP, ts=10**25), 5]}).encode()),
        "event #1 ('aten::add') has an out-of-range 'ts' (10000000000000000000000000;",
    ),
    "non_object_before_bad_time": (
        bytes_case(lambda: json.dumps({"traceEvents": [CPU_OP, [1], dict(CPU_OP, dur="7")]}).encode()),
        "event #2 is not a JSON object",
    ),
    # Non-finite times (NaN, Infinity in any spelling DuckDB reads) are out of range, as 1e25 is; so
    # is a number past Decimal's exponent range (abs() of it once raised an Overflow traceback).
    **{
        f"non_finite_{key}_{word}": (
            bytes_case(
                lambda key=key, word=word: json.dumps({"traceEvents": [CPU_OP, dict(CPU_OP, **{key: "__T__"})]}).replace('"__T__"', word).encode()
            ),
            f"event #2 ('aten::add') has an out-of-range '{key}' ({shown}: a time must be a finite number)",
        )
        for key, word, shown in [("ts", "NaN", "NaN"), ("dur", "-Infinity", "-Infinity"), ("ts", "inf", "Infinity"), ("dur", "-nan", "NaN")]
    },
    "time_past_decimal_exponents": (
        bytes_case(lambda: json.dumps({"traceEvents": [dict(CPU_OP, ts="__T__")]}).replace('"__T__"', "12e999999").encode()),
        "event #1 ('aten::add') has an out-of-range 'ts' (1.2E+1000000;",
    ),
    "end_out_of_range_exact_text": (
        bytes_case(lambda: json.dumps({"traceEvents": [dict(CPU_OP, ts=4 * 10**15, dur=9 * 10**14)]}).encode()),
        "event #1 ('aten::add') ends out of range (ts + dur = 4900000000000000 us)",
    ),
}
CASES = {**KINETO_REJECTED, **ORDER_REJECTED}


def outcome(source: Path, out: Path, reader: str):
    """('error', the problem) or ('ok', every span) for one reader, in-process."""
    try:
        convert_files([source], out, ConvertOptions(kineto_reader=reader))
    except InputError as exc:
        return "error", exc.problem
    with duckdb.connect(str(out), read_only=True) as con:
        return "ok", con.execute(
            "SELECT kind, name, start_ns, end_ns, pid, tid, device_id, stream_id, correlation_id FROM spans ORDER BY ALL"
        ).fetchall()


def both(source: Path, folder: Path):
    return outcome(source, folder / "auto.duckdb", "auto"), outcome(source, folder / "python.duckdb", "python")


@pytest.mark.parametrize("case", list(CASES))
def test_both_readers_reject_with_the_same_line(case, tmp_path):
    make, expect = CASES[case]
    fast, slow = both(make(tmp_path), tmp_path)
    assert fast[0] == slow[0] == "error", (fast, slow)
    assert fast[1] == slow[1], (fast[1], slow[1])
    assert expect in fast[1], fast[1]


@pytest.mark.parametrize("case", list(STRUCTURE_REJECTED))
def test_both_readers_reject_damaged_files(case, tmp_path):
    """Damaged gzip or JSON: both reject; the line may differ, as each reader meets the damage
    where it reads first (the DuckDB reader decompresses the whole file before parsing)."""
    make, _ = STRUCTURE_REJECTED[case]
    fast, slow = both(make(tmp_path), tmp_path)
    assert fast[0] == slow[0] == "error", (fast, slow)


def write(folder: Path, doc: dict) -> Path:
    path = folder / "trace.json"
    path.write_text(json.dumps(doc))
    return path


def test_pid_written_as_a_decimal_is_the_same_process_in_both_readers(tmp_path):
    """DuckDB's reader keeps 1e3 as the text '1000.0'; the streaming reader writes it the same way,
    so both store the op on process 1000 (the JSON number's value)."""
    doc = kineto_doc("cpu")
    op = complete_events(doc, "cpu_op")[0]
    data = json.dumps(doc).replace(json.dumps(op), json.dumps(dict(op, pid="__PID__")).replace('"__PID__"', "1e3"), 1)
    source = tmp_path / "trace.json"
    source.write_text(data)
    fast, slow = both(source, tmp_path)
    assert fast[0] == slow[0] == "ok" and fast[1] == slow[1]
    assert [s for s in fast[1] if s[4] == 1000] == [
        ("op", op["name"], round(op["ts"] * 1000), round((op["ts"] + op["dur"]) * 1000), 1000, op["tid"], None, None, None)
    ]


def test_flow_with_a_time_out_of_range_is_left_out(tmp_path):
    """A launch flow whose ts is beyond the time limit is skipped (as an unusable flow), not an
    overflow: both readers convert, storing the same spans."""
    doc = json.loads(gzip.open(KINETO["rocm"]).read())
    flows = [
        e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") in ("s", "f") and str(e.get("cat")).lower() in kf.LAUNCH_FLOW_CATEGORIES
    ]
    flows[0]["ts"] = 10**25
    fast, slow = both(write(tmp_path, doc), tmp_path)
    assert fast[0] == slow[0] == "ok" and fast[1] == slow[1]
    assert len([s for s in fast[1] if s[0] == "kernel"]) == len([e for e in complete_events(doc) if str(e.get("cat")).lower() == "kernel"]) > 0


def test_cpu_events_off_track_skipped_alike(tmp_path, capfd):
    doc = kineto_doc("rocm")
    ops = complete_events(doc, "cpu_op")[:3]
    for op in ops:
        op["pid"] = "--5"
    fast, slow = both(write(tmp_path, doc), tmp_path)
    assert fast[0] == slow[0] == "ok" and fast[1] == slow[1]
    warnings = [line for line in capfd.readouterr().err.splitlines() if "whose pid or tid is not a number" in line]
    assert len(warnings) == 2 and all("skipped 3 CPU event(s)" in w for w in warnings), warnings


@pytest.mark.parametrize("repeat", [False, True])
def test_odd_args_objects_are_read_as_json_loads_reads_them(repeat, tmp_path):
    """Args the mapping reads from JSON text: a key written twice (json.loads keeps the last; DuckDB's
    reader hands such a file to the streaming reader), keys that need escaping in a JSON path ("",
    '/', '~', a quote), args that are not an object (no args). Both readers store what json.loads reads;
    without the repeated key DuckDB's reader maps the odd keys itself."""
    doc = kineto_doc("triton")
    kernel = complete_events(doc, "kernel")[0]
    ops = complete_events(doc, "cpu_op")[:2]
    odd_keys = {"": "empty", "a/b~c": 1.5, 'say "hi"': [1, {"x": None}]}
    ops[0]["args"] = dict(odd_keys)
    ops[1]["args"] = [1, 2]
    kernel["args"] = dict(kernel["args"], stream="__STREAM__")
    text = json.dumps(doc).replace('"stream": "__STREAM__"', '"stream": 99, "stream": 7' if repeat else '"stream": 7', 1)
    source = tmp_path / "trace.json"
    source.write_text(text)
    expected = json.loads(text)  # the reference: Python's own parse of the same text
    expected_kernel = next(e for e in expected["traceEvents"] if e.get("name") == kernel["name"] and e.get("ts") == kernel["ts"])
    assert expected_kernel["args"]["stream"] == 7
    stored = {}
    for reader in ("auto", "python"):
        out = tmp_path / f"{reader}.duckdb"
        convert_files([source], out, ConvertOptions(kineto_reader=reader))
        with duckdb.connect(str(out), read_only=True) as con:
            stream = con.execute(
                "SELECT stream_id FROM spans WHERE kind = 'kernel' AND name = ? AND start_ns = ?", [kernel["name"], round(kernel["ts"] * 1000)]
            ).fetchall()
            odd = con.execute(
                "SELECT a.key, a.value FROM span_args a JOIN spans s USING (run_id, span_id) WHERE s.name = ? AND s.start_ns = ? ORDER BY a.key",
                [ops[0]["name"], round(ops[0]["ts"] * 1000)],
            ).fetchall()
            not_object = con.execute(
                "SELECT count(*) FROM span_args a JOIN spans s USING (run_id, span_id) WHERE s.name = ? AND s.start_ns = ?",
                [ops[1]["name"], round(ops[1]["ts"] * 1000)],
            ).fetchone()[0]
        stored[reader] = (stream, odd, not_object)
    assert stored["auto"] == stored["python"]
    assert stored["auto"][0] == [(7,)]
    assert stored["auto"][1] == sorted([("", "empty"), ("a/b~c", "1.5"), ('say "hi"', '[1,{"x":null}]')])
    assert stored["auto"][2] == 0


def _converted_by_the_streaming_reader(source: Path, out: Path, monkeypatch, options: ConvertOptions | None = None) -> bool:
    """Convert `source`; whether DuckDB's reader handed it to the streaming reader (KinetoTrace)."""
    import xsp_trace.convert.kineto.converter as converter

    opened = []
    streaming = converter.KinetoTrace
    monkeypatch.setattr(converter, "KinetoTrace", lambda *a, **k: opened.append(a) or streaming(*a, **k))
    convert_files([source], out, options or ConvertOptions())
    return bool(opened)


@pytest.mark.parametrize(
    ("category", "include_python", "handed_over"),
    [
        ("kernel", False, True),  # a mapped event: its repeated key would read differently
        ("python_function", False, False),  # never mapped: its args do not matter
        ("python_function", True, True),  # mapped when asked for
        ("instant", False, True),  # an event that is not a complete one (the counters, marks...)
    ],
)
def test_a_repeated_arg_key_hands_the_file_over_only_where_the_args_are_mapped(category, include_python, handed_over, tmp_path, monkeypatch):
    """A key written twice in an args object of an event the mapping reads sends the file to the
    streaming reader (json.loads keeps the last value, json_extract the first); in an event it
    never maps, nothing is read differently and DuckDB's reader keeps the file. An args array
    elsewhere and a key "0" (a pointer /0 finds the array's first element) must not hide it."""
    doc = kineto_doc("triton")
    kernel = complete_events(doc, "kernel")[0]
    ops = complete_events(doc, "cpu_op")[:2]
    ops[0]["args"] = [5, 6]
    ops[1]["args"] = dict(ops[1]["args"], **{"0": "zero"})
    marker = {"__REPEATED__": 1}
    if category == "kernel":
        kernel["args"] = dict(kernel["args"], **marker)
    elif category == "instant":
        doc["traceEvents"].append(
            {"ph": "i", "name": "mark", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": kernel["ts"], "s": "t", "args": marker}
        )
    else:
        doc["traceEvents"].append(
            {"ph": "X", "cat": category, "name": "f.py(1): f", "pid": 1, "tid": 1, "ts": kernel["ts"], "dur": 1, "args": marker}
        )
    source = tmp_path / "trace.json"
    source.write_text(json.dumps(doc).replace('"__REPEATED__": 1', '"seq": 1, "seq": 2'))
    options = ConvertOptions(include_python_functions=include_python)
    assert _converted_by_the_streaming_reader(source, tmp_path / "out.duckdb", monkeypatch, options) is handed_over


# Non-finite numbers in args, as DuckDB reads them (any case, optional minus) and where they may
# hide: a top-level value, inside a list, a counter sample; a string holding the words stays a string.
NON_FINITE_SPELLINGS = [("NaN", "-Infinity", "Infinity"), ("nan", "-inf", "INF"), ("-NaN", "Infinity", "inf")]
NON_FINITE_STORED = {"nan": "NaN", "-nan": "NaN", "inf": "Infinity", "infinity": "Infinity", "-inf": "-Infinity", "-infinity": "-Infinity"}


@pytest.mark.parametrize("spelling", NON_FINITE_SPELLINGS, ids="/".join)
def test_non_finite_numbers_in_args_are_stored_alike_by_both_readers(spelling, tmp_path, monkeypatch):
    """The rule (docs/robustness.md, "Inputs"): a non-finite number in args is kept, stored in span_args
    as NaN, Infinity or -Infinity whatever its spelling; a counter sample that is not finite is left out.
    DuckDB's reader hands such a file to the streaming reader, so both store the same rows."""
    value, in_list, counter = spelling
    doc = kineto_doc("triton")
    op = complete_events(doc, "cpu_op")[0]
    op["args"] = {"bandwidth": "__VALUE__", "dims": ["__IN_LIST__", 2], "note": "nan, inf]", "kept": 1}
    doc["traceEvents"].append({"ph": "C", "name": "load", "pid": 1, "tid": 1, "ts": op["ts"], "args": {"a": "__COUNTER__", "b": 7}})
    text = json.dumps(doc).replace('"__VALUE__"', value).replace('"__IN_LIST__"', in_list).replace('"__COUNTER__"', counter)
    source = tmp_path / "trace.json"
    source.write_text(text)
    fast, slow = both(source, tmp_path)
    assert fast[0] == slow[0] == "ok" and fast[1] == slow[1]
    stored = {}
    for reader in ("auto", "python"):
        with duckdb.connect(str(tmp_path / f"{reader}.duckdb"), read_only=True) as con:
            args = con.execute(
                "SELECT a.key, a.value FROM span_args a JOIN spans s USING (run_id, span_id) WHERE s.name = ? AND s.start_ns = ? ORDER BY a.key",
                [op["name"], round(op["ts"] * 1000)],
            ).fetchall()
            samples = con.execute("SELECT name, value FROM counters WHERE name LIKE 'load.%' ORDER BY name").fetchall()
        stored[reader] = (args, samples)
    assert stored["auto"] == stored["python"]
    assert stored["auto"][0] == [
        ("bandwidth", NON_FINITE_STORED[value.lower()]),
        ("dims", f"[{NON_FINITE_STORED[in_list.lower()]},2]"),
        ("kept", "1"),
        ("note", "nan, inf]"),
    ]
    assert stored["auto"][1] == [("load.b", 7.0)]  # load.a: not a finite number
    assert _converted_by_the_streaming_reader(source, tmp_path / "again.duckdb", monkeypatch)


def test_non_finite_numbers_in_the_metadata_are_read_alike(tmp_path):
    """Top-level keys before and after traceEvents with non-finite values: both readers read the
    key after them too (baseTimeNanoseconds, the run's clock origin), and store the same spans."""
    doc = kineto_doc("cpu")
    base = 1_700_000_000_000_000_000
    events = json.dumps(doc["traceEvents"])
    text = f'{{"before": NaN, "baseTimeNanoseconds": {base}, "traceEvents": {events}, "after": [-inf, 1]}}'
    source = tmp_path / "trace.json"
    source.write_text(text)
    fast, slow = both(source, tmp_path)
    assert fast[0] == slow[0] == "ok" and fast[1] == slow[1]
    origins = []
    for reader in ("auto", "python"):
        with duckdb.connect(str(tmp_path / f"{reader}.duckdb"), read_only=True) as con:
            origins.append(con.execute("SELECT clock_origin_utc_ns FROM runs").fetchall())
    assert origins == [[(base,)], [(base,)]]


def test_rewriting_non_finite_words_does_not_depend_on_where_chunks_end():
    """The streaming reader's rewrite sees the file in chunks: fed one byte at a time or whole, the
    same bytes come out; words inside strings (escaped quotes, backslashes) and glued to numbers stay."""
    from xsp_trace.convert.kineto.python_reader import NON_FINITE_TEXT, _NonFiniteAsNumbers

    text = rb'{"a": NaN, "s": "x\\\" nan, inf]", "b": [-Infinity,inf], "c": 1e5, "d": -inf, "e": null, "f": 1inf, "g": nanx}'
    whole = _NonFiniteAsNumbers()
    expected = whole.feed(text) + whole.feed(b"")
    split = _NonFiniteAsNumbers()
    assert b"".join(split.feed(text[i : i + 1]) for i in range(len(text))) + split.feed(b"") == expected
    string = text[text.index(b'"s": ') + 5 : text.index(b', "b"')]  # x, an escaped backslash, an escaped quote, then the words
    assert string in expected and b"1e5" in expected and b"null" in expected and b"nanx" in expected
    assert b'"f": 1 ' in expected  # 1inf stays invalid: the stand-in is not glued to the 1
    names = [NON_FINITE_TEXT[Decimal(word.decode())] for word in re.findall(rb"-?[0-9]+e999999", expected)]
    assert names == ["NaN", "-Infinity", "Infinity", "-Infinity", "Infinity"]
