"""`xsp-trace perfetto` and `convert --perfetto`, in-process; the written traces are read back
by Perfetto's trace processor."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from perfetto_harness import handmade_db
from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.cli import app

DATA = Path(__file__).parent / "data"
SMALL_NSYS = DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite"
runner = CliRunner()


def test_help_has_a_runnable_example():
    result = runner.invoke(app, ["perfetto", "--help"])
    assert result.exit_code == 0
    assert "xsp-trace perfetto run.duckdb -o run.pftrace" in result.output


@pytest.mark.slow  # Perfetto's trace processor reads the trace back
def test_perfetto_command_selects_runs_and_kinds(tmp_path):
    database = handmade_db.build(tmp_path / "h.duckdb")
    out = tmp_path / "run2.pftrace"
    result = runner.invoke(app, ["perfetto", str(database), "-o", str(out), "--runs", "2", "--kinds", "kernel,api,op"])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "ui.perfetto.dev" in result.output
    con = duckdb.connect(str(database), read_only=True)
    expected = dict(con.execute("SELECT kind, count(*) FROM spans WHERE run_id = 2 AND kind IN ('kernel', 'api', 'op') GROUP BY kind").fetchall())
    with WasmTraceProcessor(out) as tp:
        assert tp.problems() == []
        got = {r["category"]: r["n"] for r in tp.query("SELECT category, count(*) AS n FROM slice GROUP BY category")}
        assert got == expected
        assert tp.scalar("SELECT count(*) FROM process WHERE name LIKE 'run 1 %'") == 0


@pytest.mark.slow  # Perfetto's trace processor reads the trace back
def test_keep_clocks_keeps_the_run_clock(tmp_path):
    database = handmade_db.build(tmp_path / "h.duckdb")
    out = tmp_path / "abs.pftrace"
    result = runner.invoke(app, ["perfetto", str(database), "-o", str(out), "--runs", "2", "--keep-clocks"])
    assert result.exit_code == 0, result.output
    with WasmTraceProcessor(out) as tp:
        assert tp.scalar("SELECT ts FROM slice WHERE name = 'aten::linear'") == handmade_db.EPOCH + 1_000


@pytest.mark.slow  # Perfetto's trace processor reads the trace back
def test_convert_writes_database_and_perfetto_trace(tmp_path):
    database, trace = tmp_path / "mock.duckdb", tmp_path / "mock.pftrace"
    result = runner.invoke(app, ["convert", str(SMALL_NSYS), "-o", str(database), "--perfetto", str(trace), "-q"])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(database), read_only=True)
    spans = con.execute("SELECT count(*) FROM spans").fetchone()[0]
    assert spans > 0
    with WasmTraceProcessor(trace) as tp:
        assert tp.problems() == []
        assert tp.scalar("SELECT count(*) FROM slice") == spans
        assert tp.scalar("SELECT count(*) FROM flow") == con.execute("SELECT count(*) FROM launches").fetchone()[0]


def test_bad_input_is_one_line_exit_2(tmp_path):
    database = handmade_db.build(tmp_path / "h.duckdb")
    out = tmp_path / "x.pftrace"
    cases = {
        ("--runs", "7"): "has no run 7",
        ("--kinds", "kernal"): "unknown kind(s) kernal",
        ("--runs", "one"): "--runs 'one' is not a number",
        ("--from-ns", "10", "--to-ns", "5"): "is not before its end",
    }
    for args, message in cases.items():
        result = runner.invoke(app, ["perfetto", str(database), "-o", str(out), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output
        assert "Traceback" not in result.output
        assert not out.exists()
    missing = runner.invoke(app, ["perfetto", str(tmp_path / "none.duckdb"), "-o", str(out)])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    no_folder = runner.invoke(app, ["perfetto", str(database), "-o", str(tmp_path / "no" / "x.pftrace")])
    assert no_folder.exit_code == 2 and "folder does not exist" in no_folder.output


def test_failed_export_leaves_no_file(tmp_path, monkeypatch):
    """Atomic output: an error half-way leaves neither the trace nor a temporary file."""
    from xsp_trace.perfetto import export as export_module

    database = handmade_db.build(tmp_path / "h.duckdb")
    out = tmp_path / "x.pftrace"

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(export_module, "_write_marks", explode)
    result = runner.invoke(app, ["perfetto", str(database), "-o", str(out)])
    assert result.exit_code != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.duckdb"]
