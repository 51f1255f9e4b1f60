"""Databases the schema check accepts but convert never writes -- made by hand from a converted trace
by deleting rows or setting NULLs -- are read by analyze (every analysis, the critical path, what-if,
the report), perfetto and diff: each answers (empty tables, a note) or refuses with one line naming
the database, never a traceback. tests/support/fuzzing/databases.py fuzzes the same promise with random edits.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.store.connection import duckdb_connect
from xsp_trace.store.database import create_schema

runner = CliRunner()
GPU_KINDS = "('kernel', 'memcpy', 'memset', 'sync')"
EVERY_TABLE_BUT_RUNS = (
    "spans kernels memops launches span_ancestors steps attribution span_args marks counters metrics devices processes threads layers "
    "capture_runs capture_latencies"
).split()
# name -> statements turning the converted trace (GPU work, two steps) into the case
EDITS = {
    "runs without spans": [f"DELETE FROM {t}" for t in EVERY_TABLE_BUT_RUNS] + ["UPDATE runs SET origin_ns = NULL"],
    "spans without steps": ["DELETE FROM steps", "DELETE FROM attribution"],
    "steps without kernels": [f"DELETE FROM spans WHERE kind IN {GPU_KINDS}", "DELETE FROM kernels", "DELETE FROM memops", "DELETE FROM launches"],
    "only CPU spans": [f"DELETE FROM spans WHERE kind IN {GPU_KINDS}"],
    "only GPU spans": [f"DELETE FROM spans WHERE kind NOT IN {GPU_KINDS}"],
    "no origin": ["UPDATE runs SET origin_ns = NULL"],
}


@pytest.fixture(scope="module")
def source(converted_path) -> Path:
    return converted_path(KINETO_TRACES["kineto_rocm_mi250"])


def edited(source: Path, folder: Path, statements: list[str]) -> Path:
    path = folder / "edited.duckdb"
    shutil.copyfile(source, path)
    with duckdb.connect(str(path)) as con:
        for statement in statements:
            con.execute(statement)
    return path


def empty_database(folder: Path) -> Path:
    """Schema only: what create_schema writes, no run."""
    path = folder / "empty.duckdb"
    con = duckdb_connect(path)
    try:
        create_schema(con)
    finally:
        con.close()
    return path


def ok(args: list) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0 and result.exception is None, (args, result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    return result.stdout


def one_error(args: list) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit | None), (args, result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xsp-trace: error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("case", ["schema only", "runs without spans"])
def test_database_without_spans_has_empty_critical_path_and_a_note(case, source, tmp_path):
    """The critical path and what-if of no step (an IndexError in critical_path._segment_table
    before): empty tables, the same in the Perfetto export, and a note saying why."""
    db = empty_database(tmp_path) if case == "schema only" else edited(source, tmp_path, EDITS[case])
    out = json.loads(ok(["analyze", db, "-a", "critical_path", "-a", "critical_path_summary", "--what-if", "kernel:.*=0", "--format", "json"]))
    assert out == {"critical_path": [], "critical_path_summary": [], "what_if": []}
    every = json.loads(ok(["analyze", db, "--all", "--format", "json"]))
    sources = every.pop("level_sources")  # what each level's numbers come from: a row per level of each run
    assert [r["experiment"] for r in sources] == ([] if case == "schema only" else ["run 1"] * 3)
    assert len(every) > 40 and all(rows == [] for rows in every.values()), {k: v for k, v in every.items() if v}
    note = "the database holds no runs" if case == "schema only" else "the selected runs hold no spans"
    assert f"note: {note}" in ok(["analyze", db])
    trace = tmp_path / "t.pftrace"
    if case == "schema only":  # nothing to export: refused, as a --runs that selects nothing is
        assert one_error(["perfetto", db, "-o", trace, "--critical-path"]).endswith(f"{db}: holds no runs (convert a trace into it first)")
        assert not trace.exists()
    else:
        assert "(0 slices, 0 flows" in ok(["perfetto", db, "-o", trace, "--critical-path"])
        assert trace.exists()
    assert json.loads(ok(["analyze", db, "--findings", "--format", "json"])) == {"findings": []}


def test_run_without_origin_says_so(source, tmp_path):
    """runs.origin_ns NULL beside spans (convert writes it for a run without events only): --window
    says the run's range is unknown instead of failing on None, and the report leaves out the
    utilisation plot it cannot place."""
    db = edited(source, tmp_path, EDITS["no origin"])
    line = one_error(["analyze", db, "--window", "0ms:1ms", "-a", "gpu_idle_gaps"])
    assert "holds no span" in line and "run 1: spans from ? (runs.origin_ns is NULL)" in line, line
    report = tmp_path / "r.html"
    ok(["analyze", db, "-a", "top_kernels", "--format", "json", "--report", report])
    assert "busy % over time" not in report.read_text() and "Top kernels" in report.read_text()


def test_infinite_and_nan_doubles_reach_the_report(source, tmp_path):
    """Doubles set to NaN or infinity by hand (a GPU's peaks, a kernel's occupancy): the HTML report
    prints them as nan / inf (int(inf) raised OverflowError in report/text.py number before)."""
    db = edited(
        source,
        tmp_path,
        [
            "UPDATE devices SET peak_flops = 'inf', peak_dram_bytes_per_s = 'nan', memory_bandwidth_bytes_per_s = '-inf'",
            "UPDATE kernels SET occupancy_estimate = 'nan', blocks_per_sm = 'inf'",
        ],
    )
    report = tmp_path / "r.html"
    ok(["analyze", db, "-a", "top_kernels", "--format", "json", "--report", report])
    assert ">inf<" in report.read_text()


def test_perfetto_of_times_before_the_origin(source, tmp_path):
    """Perfetto's timestamps are unsigned. runs.origin_ns moved after the first event: one line (a
    ValueError from protobuf before). A step moved before the origin: its critical path starts at
    0 (the same ValueError with --critical-path before)."""
    late = edited(source, tmp_path, ["UPDATE runs SET origin_ns = origin_ns + 1000000000"])
    trace = tmp_path / "t.pftrace"
    line = one_error(["perfetto", late, "-o", trace])
    assert line.startswith(f"xsp-trace: error: {late}: run 1 has events before its runs.origin_ns ("), line
    assert not trace.exists()
    (tmp_path / "early").mkdir()
    early = edited(source, tmp_path / "early", ["UPDATE steps SET start_ns = -1"])
    assert "slices" in ok(["perfetto", early, "-o", trace, "--critical-path"])
    assert trace.stat().st_size > 0


def test_stream_wait_without_its_stream(converted_path, tmp_path):
    """A cudaStreamWaitEvent whose GPU span lost its stream_id (NULL): the critical path and what-if
    leave that wait out (int(None) raised TypeError in critical_path_run._event_waits before)."""
    source = converted_path(Path(__file__).parent / "data" / "critical_path_hta" / "cuda_event_sync_multi_stream.json.gz")
    db = edited(source, tmp_path, ["UPDATE spans SET stream_id = NULL WHERE kind = 'sync'"])
    out = json.loads(ok(["analyze", db, "-a", "critical_path_summary", "--what-if", "kernel:.*=0", "--format", "json"]))
    assert len(out["critical_path_summary"]) == 1 and out["critical_path_summary"][0]["latency_ns"] > 0, out
    assert len(out["what_if"]) == 1, out


def test_perfetto_of_ids_past_int32(source, tmp_path):
    """A pid or tid past 2^31 - 1 (a 64-bit thread id, or edited by hand): Perfetto's pid and tid
    are int32, so the track gets a fresh id and names the recorded one (protobuf raised ValueError
    before; found by the long fuzzing run, seed 1,900)."""
    db = edited(
        source,
        tmp_path,
        ["UPDATE spans SET pid = 4611686018427387904 WHERE tid IS NOT NULL", "UPDATE spans SET tid = 2147483648 WHERE tid IS NOT NULL"],
    )
    trace = tmp_path / "t.pftrace"
    ok(["perfetto", db, "-o", trace])
    data = trace.read_bytes()
    assert b"(pid 4611686018427387904)" in data and b"(tid 2147483648)" in data


@pytest.mark.parametrize("case", ["spans without steps", "steps without kernels", "only CPU spans", "only GPU spans"])
def test_partial_databases_answer_every_command(case, source, tmp_path):
    db = edited(source, tmp_path, EDITS[case])
    every = json.loads(ok(["analyze", db, "--all", "--format", "json"]))
    with duckdb.connect(str(db), read_only=True) as con:
        kernels = con.execute("SELECT count(*) FROM spans WHERE kind = 'kernel'").fetchone()[0]
    assert bool(every["top_kernels"]) == bool(kernels) and sum(r["instances"] for r in every["top_kernels"]) == kernels
    ok(["analyze", db, "--findings", "-a", "what_if", "--what-if", "kernel:.*=0", "--format", "json"])
    ok(["perfetto", db, "-o", tmp_path / "t.pftrace", "--critical-path"])
    ok(["diff", source, db, "--format", "json"])


def test_values_convert_never_writes_are_one_line(source, tmp_path):
    """A span starting at -2^63 ns (convert keeps times within +-2^62): DuckDB's overflow in the
    analyses' `start_ns - origin_ns` is one line naming the database, for analyze and diff; a span
    ending at 2^63 - 1 overflows perfetto's shift to the origin, one line too."""
    db = edited(source, tmp_path, ["UPDATE spans SET start_ns = -9223372036854775808 WHERE kind = 'kernel'"])
    for args in (["analyze", db, "-a", "top_kernels"], ["diff", db, source]):
        line = one_error(args)
        assert line.startswith(f"xsp-trace: error: {db}: holds values xsp-trace cannot compute with (Out of Range Error: Overflow"), line
    # perfetto meets the span before the origin first (test_perfetto_of_times_before_the_origin)
    assert "run 1 has events before its runs.origin_ns" in one_error(["perfetto", db, "-o", tmp_path / "t.pftrace"])
    assert not (tmp_path / "t.pftrace").exists()
    # perfetto's own overflow: a span ending at 2^63 - 1 in a run whose origin is -2^62
    (tmp_path / "p").mkdir()
    first, last = "(SELECT min(span_id) FROM spans)", "(SELECT max(span_id) FROM spans)"
    db = edited(
        source,
        tmp_path / "p",
        [
            f"UPDATE spans SET start_ns = -4611686018427387904 WHERE span_id = {first}",
            "UPDATE runs SET origin_ns = -4611686018427387904",
            f"UPDATE spans SET end_ns = 9223372036854775807 WHERE span_id = {last}",
        ],
    )
    line = one_error(["perfetto", db, "-o", tmp_path / "t.pftrace"])
    assert line.startswith(f"xsp-trace: error: {db}: holds values xsp-trace cannot compute with (Out of Range Error: Overflow"), line
    assert not (tmp_path / "t.pftrace").exists()
