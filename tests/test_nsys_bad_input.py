"""Bad nsys input: exit code 2, one clear line, no output left behind, input untouched."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import NEWER_NSYS_REPORT, NSYS_EXPORTS
from xsp_trace.cli import app

runner = CliRunner()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def convert_fails(source: Path, tmp_path: Path, *extra: str, env: dict | None = None) -> str:
    """Run `xsp-trace convert`, assert the bad-input contract, return the one error line."""
    out = tmp_path / "out" / "result.duckdb"
    out.parent.mkdir(exist_ok=True)
    before = _digest(source)
    result = runner.invoke(app, ["convert", str(source), "-o", str(out), *extra], env=env)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("xsp-trace: error: ")
    assert "Traceback" not in result.output
    assert list(out.parent.iterdir()) == []  # neither the database nor a temp file
    assert _digest(source) == before
    return lines[0]


def test_report_from_newer_nsys_names_both_versions(tmp_path):
    report = tmp_path / NEWER_NSYS_REPORT.name
    shutil.copyfile(NEWER_NSYS_REPORT, report)
    line = convert_fails(report, tmp_path)
    assert "nsys 2026.1.2" in line  # the version that wrote it
    assert "nsys 2022.4" in line  # the installed one
    assert "export it there" in line and ".sqlite" in line  # what to do


def test_no_nsys_for_a_report(tmp_path):
    report = tmp_path / NEWER_NSYS_REPORT.name
    shutil.copyfile(NEWER_NSYS_REPORT, report)
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    line = convert_fails(report, tmp_path, env={"PATH": str(empty_bin), "NSYS": ""})
    assert "nsys (Nsight Systems CLI) is not installed" in line and "--nsys PATH" in line


def test_nsys_option_pointing_nowhere(tmp_path):
    report = tmp_path / NEWER_NSYS_REPORT.name
    shutil.copyfile(NEWER_NSYS_REPORT, report)
    line = convert_fails(report, tmp_path, "--nsys", str(tmp_path / "no-such-nsys"))
    assert "is not an executable nsys" in line


def test_not_a_report(tmp_path):
    fake = tmp_path / "notes.nsys-rep"
    fake.write_text("these are my notes, not a report\n")
    line = convert_fails(fake, tmp_path)
    assert "notes.nsys-rep" in line and "not an Nsight Systems report" in line


def test_report_header_but_garbage_body(tmp_path):
    fake = tmp_path / "broken.nsys-rep"
    fake.write_bytes(b"NVIDIA Tegra Profiler Report 2022@4@2@1-000v0.\n" + b"\x00garbage" * 100)
    line = convert_fails(fake, tmp_path)
    assert "broken.nsys-rep" in line and "could not export it" in line


def test_truncated_sqlite(tmp_path):
    truncated = tmp_path / "truncated.sqlite"
    data = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"].read_bytes()
    truncated.write_bytes(data[: len(data) // 3])
    line = convert_fails(truncated, tmp_path)
    assert "truncated.sqlite" in line and "truncated or corrupt" in line


def test_corrupt_sqlite(tmp_path):
    corrupt = tmp_path / "corrupt.sqlite"
    data = bytearray(NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"].read_bytes())
    page = 4096
    for start in range(page, len(data), page * 3):  # smash every third page after the header page
        data[start : start + 64] = b"\xff" * 64
    corrupt.write_bytes(bytes(data))
    line = convert_fails(corrupt, tmp_path)
    assert "truncated or corrupt" in line


def test_corrupt_page_met_while_streaming_a_table(tmp_path):
    """The export opens and its small tables read; a leaf page of the kernel table is damaged, so
    the error comes from the middle of the streamed kernel rows."""
    source = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"]
    with sqlite3.connect(f"file:{source}?mode=ro&immutable=1", uri=True) as con:
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        leaves = [
            r[0] for r in con.execute("SELECT pageno FROM dbstat WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL' AND pagetype = 'leaf' ORDER BY pageno")
        ]
    data = bytearray(source.read_bytes())
    start = (leaves[len(leaves) // 2] - 1) * page_size
    data[start : start + page_size] = b"\xff" * page_size
    corrupt = tmp_path / "damaged_kernels.sqlite"
    corrupt.write_bytes(bytes(data))
    line = convert_fails(corrupt, tmp_path)
    assert "damaged_kernels.sqlite" in line and "truncated or corrupt" in line


def test_missing_required_column(tmp_path):
    broken = tmp_path / "no_device_column.sqlite"
    shutil.copyfile(NSYS_EXPORTS["nsys_2026_mock_rtx3080"], broken)
    with sqlite3.connect(broken) as con:
        con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN deviceId")
    line = convert_fails(broken, tmp_path)
    assert "CUPTI_ACTIVITY_KIND_KERNEL lacks required column(s) deviceId" in line


def test_sqlite_that_is_not_an_nsys_export(tmp_path):
    other = tmp_path / "inventory.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE items (id INTEGER, name TEXT)")
    line = convert_fails(other, tmp_path)
    assert "not an Nsight Systems export" in line


def test_unknown_file_type(tmp_path):
    other = tmp_path / "picture.png"
    other.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    line = convert_fails(other, tmp_path)
    assert "not a trace xsp-trace knows" in line


def test_missing_input(tmp_path):
    result = runner.invoke(app, ["convert", str(tmp_path / "nope.sqlite"), "-o", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2
    assert "nope.sqlite: does not exist" in result.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_existing_output_needs_append_or_overwrite(tmp_path):
    out = tmp_path / "db.duckdb"
    source = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
    assert runner.invoke(app, ["convert", str(source), "-o", str(out), "-q"]).exit_code == 0
    before = _digest(out)
    result = runner.invoke(app, ["convert", str(source), "-o", str(out)])
    assert result.exit_code == 2 and "already exists" in result.stderr and "--append" in result.stderr
    assert _digest(out) == before


@pytest.mark.slow  # converts a real export, then a broken copy of another
def test_failure_in_a_later_input_keeps_the_previous_database(tmp_path):
    """--append with a bad second input: the database stays as it was (atomic replace)."""
    out = tmp_path / "db.duckdb"
    good = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
    assert runner.invoke(app, ["convert", str(good), "-o", str(out), "-q"]).exit_code == 0
    before = _digest(out)
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(NSYS_EXPORTS["nsys_2026_pytorch_2xh100"].read_bytes()[:300_000])
    result = runner.invoke(app, ["convert", str(good), str(truncated), "-o", str(out), "--append"])
    assert result.exit_code == 2
    assert _digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.duckdb", "truncated.sqlite"]


def test_debug_shows_the_traceback(tmp_path):
    fake = tmp_path / "notes.nsys-rep"
    fake.write_text("not a report")
    result = runner.invoke(app, ["--debug", "convert", str(fake), "-o", str(tmp_path / "o.duckdb")])
    assert result.exit_code != 0
    assert result.exception is not None and "not an Nsight Systems report" in str(result.exception)


@pytest.mark.parametrize("command", [[], ["convert"]])
def test_help_has_a_runnable_example(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "xsp-trace convert" in result.output
