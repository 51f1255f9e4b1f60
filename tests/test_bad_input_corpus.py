"""A corpus of hand-made bad inputs, made at test time by mutating the real fixtures in tests/data.

Every class of issue 11: numbers out of range or of the wrong type, NULL/text/blob values in nsys
columns, undecodable text, truncated and damaged files, end before start, duplicate string ids,
empty `_V2` tables, missing optional columns, non-numeric pid/tid, pipes and process
substitution, damaged Parquet datasets, outputs that are inputs. A rejected input must give exit
2 and one stderr line naming the file, no traceback, nothing left in the folder or in $TMPDIR,
the input unchanged and no output. A repaired input must convert with a warning line that counts
what was repaired, and the stored rows are checked against the raw file (sqlite3/json).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.convert.nsys import converter as nsys_module

pytestmark = pytest.mark.slow  # real processes and signals

runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent
NSYS = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
NSYS_NVTX = NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"]  # the mock has no NVTX_EVENTS
KINETO = {"triton": KINETO_TRACES["kineto_triton_cuda_driver"], "cpu": KINETO_TRACES["kineto_cpu_only"], "rocm": KINETO_TRACES["kineto_rocm_mi250"]}
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """$TMPDIR for the code under test, checked empty afterwards (Kineto extraction, pipes, spills)."""
    folder = tmp_path / "TMPDIR"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): digest(p) for p in sorted(folder.rglob("*")) if "TMPDIR" not in p.parts}


def rejected(args: list[str], folder: Path, tmpdir: Path, named: Path, expect: str) -> str:
    before = snapshot(folder)
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    errors = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("xsp-trace: warning:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"xsp-trace: error: {named}"), errors[0]
    assert expect in errors[0], errors[0]
    assert snapshot(folder) == before  # input unchanged, no output, no temp file
    assert list(tmpdir.iterdir()) == []
    return errors[0]


def converted(source: Path, folder: Path, tmpdir: Path, expect_warnings: list[str]) -> duckdb.DuckDBPyConnection:
    before = digest(source)
    out = folder / "out.duckdb"
    result = runner.invoke(app, ["convert", str(source), "-o", str(out), "-q"])
    assert result.exit_code == 0, (result.output, result.exception)
    warnings = [line for line in result.stderr.splitlines() if line.startswith(f"xsp-trace: warning: {source}: ")]
    for expected in expect_warnings:
        assert any(expected in w for w in warnings), (expected, result.stderr)
    assert digest(source) == before
    assert list(tmpdir.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir() if p.name != "TMPDIR") == sorted([source.name, "out.duckdb"])
    return duckdb.connect(str(out), read_only=True)


# -- Kineto: numbers and types -----------------------------------------------------------------------


def kineto_doc(name: str) -> dict:
    return json.loads(gzip.open(KINETO[name]).read())


def complete_events(doc: dict, category: str | None = None) -> list[dict]:
    return [
        e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X" and (category is None or str(e.get("cat")).lower() == category)
    ]


def write_doc(folder: Path, doc, gz: bool = False, raw: bytes | None = None) -> Path:
    data = raw if raw is not None else json.dumps(doc).encode()
    path = folder / ("trace.json.gz" if gz else "trace.json")
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def set_field(name: str, key: str, value, gz: bool = False, raw_value: str | None = None):
    """A mutation: `key` of the second complete event of fixture `name` set to `value` (or raw JSON text)."""

    def make(folder: Path) -> Path:
        doc = kineto_doc(name)
        event = complete_events(doc)[1]
        if raw_value is None:
            event[key] = value
            return write_doc(folder, doc, gz)
        event[key] = "__RAW__"
        return write_doc(folder, None, gz, raw=json.dumps(doc).encode().replace(b'"__RAW__"', raw_value.encode()))

    return make


def set_fields(name: str, **values):
    def make(folder: Path) -> Path:
        doc = kineto_doc(name)
        complete_events(doc)[1].update(values)
        return write_doc(folder, doc)

    return make


KINETO_REJECTED = {}
for fixture in ("triton", "cpu", "rocm"):
    KINETO_REJECTED.update(
        {
            f"{fixture}-ts_out_of_range": (set_field(fixture, "ts", 10**25), "out-of-range 'ts'"),
            f"{fixture}-dur_out_of_range": (set_field(fixture, "dur", 10**25), "out-of-range 'dur'"),
            f"{fixture}-dur_true": (set_field(fixture, "dur", True), "non-numeric 'dur'"),
            f"{fixture}-dur_string": (set_field(fixture, "dur", "12"), "non-numeric 'dur'"),
            f"{fixture}-ts_null": (set_field(fixture, "ts", None), "has no 'ts'"),
            f"{fixture}-ts_out_of_range_gz": (set_field(fixture, "ts", -(10**25), gz=True), "out-of-range 'ts'"),
            f"{fixture}-dur_true_gz": (set_field(fixture, "dur", True, gz=True), "non-numeric 'dur'"),
        }
    )
KINETO_REJECTED.update(
    {
        "ts_plus_dur_overflow": (set_fields("triton", ts=4 * 10**15, dur=9 * 10**14), "ends out of range"),
        "ts_list": (set_field("triton", "ts", [1]), "non-numeric 'ts'"),
        "ts_object": (set_field("cpu", "ts", {"a": 1}), "non-numeric 'ts'"),
        "ts_exponent_400": (set_field("triton", "ts", None, raw_value="1e400"), "out-of-range 'ts'"),
        "ts_nan_literal": (set_field("cpu", "ts", None, raw_value="NaN"), "out-of-range 'ts' (NaN: a time must be a finite number)"),
        "ts_infinity_literal": (set_field("rocm", "ts", None, raw_value="Infinity"), "out-of-range 'ts' (Infinity: a time must be a finite number)"),
        "dur_int64_max_us": (set_field("rocm", "dur", 2**63 - 1), "out-of-range 'dur'"),
        "ts_string_gz": (set_field("rocm", "ts", "5", gz=True), "non-numeric 'ts'"),
    }
)


@pytest.mark.parametrize("case", list(KINETO_REJECTED))
def test_kineto_values_rejected(case, tmp_path, private_tmp):
    make, expect = KINETO_REJECTED[case]
    source = make(tmp_path)
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, expect)


# -- Kineto: text, truncation, structure --------------------------------------------------------------


def raw_text(name: str) -> bytes:
    return gzip.open(KINETO[name]).read()


def bytes_case(data_fn, gz: bool = False, name: str = "trace.json"):
    def make(folder: Path) -> Path:
        data = data_fn()
        path = folder / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        return path

    return make


def insert_at(name: str, fraction: float, junk: bytes):
    def data() -> bytes:
        text = raw_text(name)
        i = text.index(b'"name"', int(len(text) * fraction)) + 9  # inside a name string
        return text[:i] + junk + text[i:]

    return data


def truncated(name: str, fraction: float, gz: bool):
    def make(folder: Path) -> Path:
        text = raw_text(name)
        data = gzip.compress(text, mtime=0) if gz else text
        path = folder / ("cut.json.gz" if gz else "cut.json")
        path.write_bytes(data[: int(len(data) * fraction)])
        return path

    return make


def gz_damaged(name: str, offset: float):
    def make(folder: Path) -> Path:
        data = bytearray(KINETO[name].read_bytes())
        i = int(len(data) * offset)
        data[i : i + 16] = bytes(16)
        path = folder / "damaged.json.gz"
        path.write_bytes(bytes(data))
        return path

    return make


STRUCTURE_REJECTED = {
    "invalid_utf8_head": (bytes_case(insert_at("triton", 0.1, b"\xff\xfe")), "not valid UTF-8"),
    "invalid_utf8_middle": (bytes_case(insert_at("rocm", 0.5, b"\xc3")), "not valid UTF-8"),
    "invalid_utf8_tail": (bytes_case(insert_at("cpu", 0.8, b"\xed\xa0\x80")), "not valid UTF-8"),
    "invalid_utf8_gz": (bytes_case(insert_at("triton", 0.5, b"\x80\x80"), gz=True), "not valid UTF-8"),
    "utf16_file": (bytes_case(lambda: raw_text("cpu").decode().encode("utf-16")), "not a trace xsp-trace knows"),
    "empty_json": (bytes_case(lambda: b""), "not a trace xsp-trace knows"),
    "empty_gz": (bytes_case(lambda: b"", gz=True), "JSON"),
    "top_level_string": (bytes_case(lambda: b'"traceEvents"'), "not a trace xsp-trace knows"),
    "trace_events_not_list": (bytes_case(lambda: b'{"traceEvents": {"ph": "X"}}'), "traceEvents"),
    "event_not_object": (bytes_case(lambda: b'{"traceEvents": [1, 2]}'), "is not a JSON object"),
    # DuckDB's reader keeps args as JSON text: 200,000 levels are read, and the event's real fault is named.
    "deeply_nested_args": (bytes_case(lambda: b'{"traceEvents": [{"ph": "X", "args": ' + b"[" * 200_000 + b"]" * 200_000 + b"}]}"), "has no 'ts'"),
    # A repeated args key sends the file to the streaming reader, whose parser stops at its nesting limit.
    "deeply_nested_args_streamed": (
        bytes_case(
            lambda: (
                b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"k": 1, "k": 2, "x": '
                + b"[" * 200_000
                + b"]" * 200_000
                + b"}}]}"
            )
        ),
        "levels deep",
    ),
    "list_of_numbers": (bytes_case(lambda: b"[1, 2, 3]"), "not a JSON object"),
}
for fixture, fraction in (("triton", 0.1), ("rocm", 0.5), ("cpu", 0.9)):
    STRUCTURE_REJECTED[f"truncated_{fixture}_{fraction}"] = (truncated(fixture, fraction, False), "middle of the JSON")
    STRUCTURE_REJECTED[f"truncated_gz_{fixture}_{fraction}"] = (truncated(fixture, fraction, True), "gzip")
for fixture, offset in (("triton", 0.3), ("rocm", 0.6)):
    STRUCTURE_REJECTED[f"damaged_gz_{fixture}_{offset}"] = (gz_damaged(fixture, offset), "gzip")


@pytest.mark.parametrize("case", list(STRUCTURE_REJECTED))
def test_kineto_files_rejected(case, tmp_path, private_tmp):
    make, expect = STRUCTURE_REJECTED[case]
    source = make(tmp_path)
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, expect)


# -- nsys exports: values, truncation, missing tables ------------------------------------------------------


def nsys_copy(folder: Path, *statements: str, source: Path = NSYS) -> Path:
    path = folder / "export.sqlite"
    shutil.copyfile(source, path)
    with sqlite3.connect(path) as con:
        for statement in statements:
            con.execute(statement)
    return path


def first_rows(table: str, column: str, value_sql: str, rows: int = 2) -> str:
    return f'UPDATE "{table}" SET "{column}" = {value_sql} WHERE rowid IN (SELECT rowid FROM "{table}" ORDER BY rowid LIMIT {rows})'


NSYS_REJECTED = {
    "kernel_start_text": ([first_rows(KERNEL, "start", "'abc'")], "wrong type"),
    "kernel_start_blob": ([first_rows(KERNEL, "start", "x'00ff'")], "wrong type"),
    "kernel_start_1e19": ([first_rows(KERNEL, "start", "1e19")], "wrong type"),
    "kernel_start_1e30": ([first_rows(KERNEL, "start", "1e30")], "wrong type"),
    "kernel_end_text": ([first_rows(KERNEL, "end", "'--5'")], "wrong type"),
    "kernel_grid_text": ([first_rows(KERNEL, "gridX", "'wide'")], "wrong type"),
    "api_correlation_text": ([first_rows("CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId", "'c1'")], "wrong type"),
    "api_start_blob": ([first_rows("CUPTI_ACTIVITY_KIND_RUNTIME", "start", "x'01'")], "wrong type"),
    # Fractions in integer columns: never truncated (SQLite's >> and & would make 1.5 an integer).
    "kernel_start_fraction": ([first_rows(KERNEL, "start", "start + 0.5")], "wrong type"),
    "kernel_global_pid_fraction": ([first_rows(KERNEL, "globalPid", "globalPid + 0.5")], "wrong type"),
    "api_global_tid_fraction": ([first_rows("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid", "globalTid + 0.5")], "wrong type"),
    "session_start_text": ([first_rows("TARGET_INFO_SESSION_START_TIME", "utcEpochNs", "'noon'", 1)], "cannot interpret"),
    # Text bytes that are not UTF-8 (a flipped byte in a kernel name): found by the long fuzzing run.
    "string_value_not_utf8": ([first_rows("StringIds", "value", "CAST(x'6b65726e656cff80' AS TEXT)", 3)], "not valid UTF-8"),
    "kernel_start_column_dropped": (
        [
            f'CREATE TABLE k AS SELECT "end", deviceId, streamId, correlationId, globalPid, demangledName FROM {KERNEL}',
            f"DROP TABLE {KERNEL}",
            f"ALTER TABLE k RENAME TO {KERNEL}",
        ],
        "lacks required column(s) start",
    ),
    "string_value_column_dropped": (
        ["CREATE TABLE s AS SELECT id FROM StringIds", "DROP TABLE StringIds", "ALTER TABLE s RENAME TO StringIds"],
        "lacks required column(s) value",
    ),
}


def test_nvtx_start_text_rejected(tmp_path, private_tmp):
    source = nsys_copy(tmp_path, first_rows("NVTX_EVENTS", "start", "'t0'"), source=NSYS_NVTX)
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, "wrong type")


@pytest.mark.parametrize("case", list(NSYS_REJECTED))
def test_nsys_values_rejected(case, tmp_path, private_tmp):
    statements, expect = NSYS_REJECTED[case]
    source = nsys_copy(tmp_path, *statements)
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, expect)


@pytest.mark.parametrize("value", ["start + 0.5", "'abc'", "x'01'"])
def test_nsys_wrong_type_in_a_later_batch(value, tmp_path, private_tmp, monkeypatch):
    """The first Arrow batch fixes a column's type; a later batch's fraction, text or blob is the
    SQLite driver's type mismatch, and still the wrong-type line (not 'truncated or corrupt')."""
    monkeypatch.setattr(nsys_module, "BATCH_ROWS", 8)
    api = "CUPTI_ACTIVITY_KIND_RUNTIME"
    source = nsys_copy(tmp_path, f'UPDATE "{api}" SET start = {value} WHERE rowid = (SELECT max(rowid) FROM "{api}")', source=NSYS_NVTX)
    assert raw_count(source, f'SELECT count(*) FROM "{api}"') > 8 * 2
    line = rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, "wrong type")
    assert "start_ns" in line


def damaged_sqlite(folder: Path, how: str) -> Path:
    data = NSYS.read_bytes()
    if how.startswith("truncated"):
        data = data[: int(len(data) * float(how.split("_")[1]))]
    elif how == "zeroed_pages":
        data = data[:8192] + bytes(len(data) // 2 - 8192) + data[len(data) // 2 :]
    elif how == "header_only":
        data = data[:100]
    elif how == "not_sqlite":
        data = b"id,start,end\n1,2,3\n"
    path = folder / "broken.sqlite"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("how", ["truncated_0.1", "truncated_0.5", "truncated_0.9", "zeroed_pages", "header_only", "not_sqlite"])
def test_nsys_files_rejected(how, tmp_path, private_tmp):
    source = damaged_sqlite(tmp_path, how)
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, "broken.sqlite: ")


def test_sqlite_that_is_not_an_export(tmp_path, private_tmp):
    source = tmp_path / "other.sqlite"
    with sqlite3.connect(source) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    rejected(["convert", source, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, source, "not an Nsight Systems export")


# -- nsys exports: repaired with a counted warning --------------------------------------------------------


def raw_count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as con:
        return con.execute(sql).fetchone()[0]


@pytest.mark.parametrize("table,kind", [(KERNEL, "kernel"), ("CUPTI_ACTIVITY_KIND_RUNTIME", "api"), ("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy")])
def test_end_before_start_dropped_and_counted(table, kind, tmp_path, private_tmp):
    source = nsys_copy(tmp_path, f'UPDATE "{table}" SET "end" = start - 1000 WHERE rowid IN (SELECT rowid FROM "{table}" LIMIT 1)')
    label = {"kernel": "kernel", "api": "CUDA API", "memcpy": "memcpy"}[kind]
    con = converted(source, tmp_path, private_tmp, [f"dropped {label} rows: 1 with end before start"])
    stored = con.execute("SELECT count(*), count(*) FILTER (WHERE end_ns < start_ns) FROM spans WHERE kind = ?", [kind]).fetchone()
    class_filter = " WHERE eventClass IN (0, 1)" if kind == "api" else ""
    assert stored == (raw_count(source, f'SELECT count(*) FROM "{table}"{class_filter}') - 1, 0)


def test_nvtx_end_before_start_dropped(tmp_path, private_tmp):
    source = nsys_copy(
        tmp_path,
        'UPDATE NVTX_EVENTS SET "end" = start - 5 WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS WHERE "end" IS NOT NULL AND eventType = 59 LIMIT 2)',
        source=NSYS_NVTX,
    )
    con = converted(source, tmp_path, private_tmp, ["dropped NVTX rows: 2 with end before start"])
    assert con.execute("SELECT count(*) FROM spans WHERE end_ns < start_ns").fetchone()[0] == 0


def test_null_and_out_of_range_times_dropped(tmp_path, private_tmp):
    source = nsys_copy(
        tmp_path,
        f"CREATE TABLE k AS SELECT * FROM {KERNEL}",
        f"DROP TABLE {KERNEL}",
        f"ALTER TABLE k RENAME TO {KERNEL}",
        first_rows(KERNEL, "start", "NULL", 2),
        f'UPDATE {KERNEL} SET "end" = 9200000000000000000 WHERE rowid = (SELECT max(rowid) FROM {KERNEL})',
        source=NSYS_NVTX,
    )
    con = converted(source, tmp_path, private_tmp, ["2 with no start or end", "1 with a time out of range"])
    kept = con.execute("SELECT count(*), max(end_ns) FROM spans WHERE kind = 'kernel'").fetchone()
    assert kept[0] == raw_count(NSYS_NVTX, f"SELECT count(*) FROM {KERNEL}") - 3
    assert kept[1] < 2**62


def test_duplicate_string_ids_deduped_before_the_join(tmp_path, private_tmp):
    source = nsys_copy(
        tmp_path,
        "CREATE TABLE s AS SELECT id, value FROM StringIds",
        "DROP TABLE StringIds",
        "ALTER TABLE s RENAME TO StringIds",
        "INSERT INTO StringIds SELECT id, value || ' (dup)' FROM StringIds ORDER BY id LIMIT 14",
    )
    con = converted(source, tmp_path, private_tmp, ["14 duplicate id(s) (first value kept)"])
    assert con.execute("SELECT count(*) FROM spans WHERE kind = 'kernel'").fetchone()[0] == raw_count(source, f"SELECT count(*) FROM {KERNEL}")
    assert con.execute("SELECT count(*) FROM spans WHERE name LIKE '% (dup)'").fetchone()[0] == 0


def test_empty_v2_table_does_not_win(tmp_path, private_tmp):
    source = nsys_copy(tmp_path, f"CREATE TABLE {KERNEL}_V2 AS SELECT * FROM {KERNEL} WHERE 0")
    con = converted(source, tmp_path, private_tmp, [f"table {KERNEL}_V2 is empty: read {KERNEL} instead"])
    assert con.execute("SELECT count(*) FROM spans WHERE kind = 'kernel'").fetchone()[0] == raw_count(source, f"SELECT count(*) FROM {KERNEL}") > 0


def test_missing_global_pid_degrades_with_a_warning(tmp_path, private_tmp):
    """A minimal export without globalPid on kernels: converted, kernels take their launch's process."""
    columns = [r[1] for r in sqlite3.connect(NSYS).execute(f"PRAGMA table_info({KERNEL})") if r[1] != "globalPid"]
    cols = ", ".join(f'"{c}"' for c in columns)
    source = nsys_copy(tmp_path, f"CREATE TABLE k AS SELECT {cols} FROM {KERNEL}", f"DROP TABLE {KERNEL}", f"ALTER TABLE k RENAME TO {KERNEL}")
    con = converted(source, tmp_path, private_tmp, [f"table {KERNEL} lacks column(s) globalPid", "given the process of their CUDA API call"])
    kernels, linked = con.execute(
        "SELECT count(*), count(l.gpu_span_id) FROM spans s LEFT JOIN launches l ON l.gpu_span_id = s.span_id WHERE s.kind = 'kernel'"
    ).fetchone()
    reference = raw_count(
        NSYS,
        f"SELECT count(*) FROM {KERNEL} k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)",
    )
    assert kernels == raw_count(source, f"SELECT count(*) FROM {KERNEL}") and linked == reference > 0


# -- Kineto: repaired with a counted warning -------------------------------------------------------------


def test_non_numeric_pid_tid_skipped_with_a_count(tmp_path, private_tmp):
    doc = kineto_doc("cpu")
    ops = complete_events(doc, "cpu_op")
    for event in ops:
        event["tid"] = "main thread"
    source = write_doc(tmp_path, doc)
    con = converted(source, tmp_path, private_tmp, [f"skipped {len(ops)} CPU event(s) whose pid or tid is not a number"])
    assert con.execute("SELECT count(*) FROM spans WHERE kind = 'op'").fetchone()[0] == 0


def test_double_minus_pid_is_not_a_number(tmp_path, private_tmp):
    doc = kineto_doc("cpu")
    complete_events(doc, "cpu_op")[0]["pid"] = "--5"
    source = write_doc(tmp_path, doc, gz=True)
    con = converted(source, tmp_path, private_tmp, ["skipped 1 CPU event(s) whose pid or tid is not a number"])
    assert con.execute("SELECT count(*) FROM spans WHERE pid = -5").fetchone()[0] == 0


def test_base_time_out_of_range_left_unknown(tmp_path, private_tmp):
    doc = kineto_doc("triton")
    doc["baseTimeNanoseconds"] = 10**30
    source = write_doc(tmp_path, doc)
    con = converted(source, tmp_path, private_tmp, ["baseTimeNanoseconds 1000000000000000000000000000000 is not"])
    assert con.execute("SELECT clock_origin_utc_ns FROM runs").fetchone()[0] in (None, 0)  # the pre-2023 rule, or unknown


# -- pipes and process substitution ----------------------------------------------------------------------


def test_fifo_input_is_read_as_a_stream(tmp_path, private_tmp):
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(KINETO["rocm"].read_bytes()))
    writer.start()
    result = runner.invoke(app, ["convert", str(fifo), "-o", str(tmp_path / "out.duckdb"), "-q"])
    writer.join(10)
    assert result.exit_code == 0, result.output
    direct = runner.invoke(app, ["convert", str(KINETO["rocm"]), "-o", str(tmp_path / "ref.duckdb"), "-q"])
    assert direct.exit_code == 0
    counts = [
        duckdb.connect(str(tmp_path / n), read_only=True).execute("SELECT count(*) FROM spans").fetchone()[0] for n in ("out.duckdb", "ref.duckdb")
    ]
    assert counts[0] == counts[1] > 0
    assert list(private_tmp.iterdir()) == []


def test_fifo_without_writer_does_not_hang(tmp_path, private_tmp):
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    rejected(["convert", fifo, "-o", tmp_path / "out.duckdb", "-q"], tmp_path, private_tmp, fifo, "not a trace")


def test_process_substitution(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    out = tmp_path / "out.duckdb"
    proc = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m xsp_trace.cli convert <(cat "{KINETO["cpu"]}") -o "{out}" -q'],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM spans WHERE kind = 'op'").fetchone()[0] == len(complete_events(kineto_doc("cpu"), "cpu_op"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.duckdb"]


# -- Parquet datasets ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds") / "ds"
    result = runner.invoke(app, ["convert", str(KINETO["rocm"]), str(KINETO["cpu"]), "--format", "parquet", "-o", str(folder), "-q", "-j", "1"])
    assert result.exit_code == 0, result.output
    return folder


def _spans_file(folder: Path, run: int) -> Path:
    return next((folder / "spans" / f"run_id={run}").glob("*.parquet"))


DATASET_DAMAGE = {
    "deleted_partition": (lambda d: shutil.rmtree(d / "spans" / "run_id=2"), "missing"),
    "truncated_file": (lambda d: _spans_file(d, 1).write_bytes(_spans_file(d, 1).read_bytes()[:-100]), "another size"),
    "stray_file": (lambda d: shutil.copyfile(_spans_file(d, 1), d / "spans" / "run_id=1" / "copy.parquet"), "did not write"),
    "garbage_marker": (lambda d: (d / "xsp_dataset.json").write_text("{not json"), "unreadable"),
    "marker_is_a_list": (lambda d: (d / "xsp_dataset.json").write_text("[]"), "not an object"),
}


@pytest.mark.parametrize("command", ["query", "analyze"])
@pytest.mark.parametrize("case", list(DATASET_DAMAGE))
def test_damaged_dataset_is_one_line(case, command, dataset, tmp_path, private_tmp):
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    damage, expect = DATASET_DAMAGE[case]
    damage(copy)
    args = ["query", copy, "SELECT count(*) FROM spans"] if command == "query" else ["analyze", copy, "-a", "kernel_info"]
    rejected(args, tmp_path, private_tmp, copy, expect)


# -- outputs that are inputs, query writes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["convert", "{src}", "-o", "{src}", "--overwrite", "-q"],
        ["convert", "{src}", "-o", "{tmp}/o.duckdb", "--perfetto", "{src}", "-q"],
        ["perfetto", "{db}", "-o", "{db}"],
        ["analyze", "{db}", "--report", "{db}"],
        ["query", "{db}", "COPY spans TO '{tmp}/leak.csv'"],
        ["query", "{db}", "SELECT * FROM read_text('/etc/passwd')"],
    ],
    ids=["convert_over_input", "perfetto_over_input", "perfetto_over_database", "report_over_database", "query_copy", "query_read_text"],
)
def test_misuse_is_refused(args, tmp_path, private_tmp):
    src = tmp_path / "t.json.gz"
    shutil.copyfile(KINETO["rocm"], src)
    db = tmp_path / "db.duckdb"
    assert runner.invoke(app, ["convert", str(src), "-o", str(db), "-q"]).exit_code == 0
    filled = [a.format(src=src, db=db, tmp=tmp_path) for a in args]
    named = db if args[0] in ("perfetto", "analyze", "query") else src
    rejected(filled, tmp_path, private_tmp, named, "")
