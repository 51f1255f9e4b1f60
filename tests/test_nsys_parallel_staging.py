"""Reading an nsys export with several threads (convert/nsys/staging_threads.py) gives exactly what
one reader gives: every table of the converted database, row for row, on every real export in
tests/data, with the big tables cut into many rowid pieces; and the same warnings and the same
one-line errors for bad rows that land in a piece other than the first.

The reference is the one-reader path (one SQLite query per table, streamed in order), which the
nsys-stats comparison tests check against NVIDIA's own reports.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import xsp_trace.convert.nsys.converter as nsys_module
import xsp_trace.convert.nsys.staging_threads as parallel
from conftest import NSYS_EXPORTS
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # Ray, worker processes and big inputs

runner = CliRunner()
# Rowids per piece: every big table of each export is cut into several pieces (a few dozen in all
# for the H100 export; thousands would only make the test slow).
PIECE_ROWS = {"nsys_2026_pytorch_2xh100": 500}
SMALL_PIECE = 3
H100 = "nsys_2026_pytorch_2xh100"


def convert_with(monkeypatch, source: Path, out: Path, readers: int, piece_rows: int) -> list[int]:
    """Convert with `readers` reader threads; returns how many pieces each staging read took."""
    monkeypatch.setattr(nsys_module, "reader_threads", lambda con: readers)
    monkeypatch.setattr(parallel, "PIECE_ROWS", piece_rows)
    counts: list[int] = []
    original = parallel._pieces

    def counted(plan, source):
        pieces = original(plan, source)
        counts.append(len(pieces))
        return pieces

    monkeypatch.setattr(parallel, "_pieces", counted)
    convert_files([source], out, ConvertOptions())
    return counts


def table_rows(path: Path) -> dict[str, list[tuple]]:
    """Every data table's rows in span/row order (runs.converted_at aside; the installed analyses in schema xsp are the same for both)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = {}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY table_name").fetchall():
            columns = [
                c
                for (c,) in con.execute("SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ?", [table]).fetchall()
                if c != "converted_at"
            ]
            listed = ", ".join(f'"{c}"' for c in columns)
            rows[table] = con.execute(f"SELECT {listed} FROM {table} ORDER BY ALL").fetchall()
        return rows
    finally:
        con.close()


@pytest.mark.parametrize("name", sorted(NSYS_EXPORTS))
def test_pieces_read_by_threads_equal_one_reader(name, tmp_path, monkeypatch):
    source, piece_rows = NSYS_EXPORTS[name], PIECE_ROWS.get(name, SMALL_PIECE)
    convert_with(monkeypatch, source, tmp_path / "one.duckdb", readers=1, piece_rows=piece_rows)
    pieces = convert_with(monkeypatch, source, tmp_path / "threads.duckdb", readers=3, piece_rows=piece_rows)
    with sqlite3.connect(source) as con:
        kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert pieces and pieces[0] >= kernels // piece_rows  # the kernel table alone makes that many pieces
    one, threads = table_rows(tmp_path / "one.duckdb"), table_rows(tmp_path / "threads.duckdb")
    assert one.keys() == threads.keys()
    for table in one:
        assert threads[table] == one[table], table
    assert len(one["spans"]) >= 13


def test_span_ids_follow_the_export_order(tmp_path, monkeypatch):
    """Span ids count the export's rows in rowid order, piece after piece: the kernel with the k-th
    rowid has the k-th kernel span id, as one reader numbers them."""
    source = NSYS_EXPORTS[H100]
    convert_with(monkeypatch, source, tmp_path / "threads.duckdb", readers=2, piece_rows=PIECE_ROWS[H100])
    with sqlite3.connect(source) as con:
        starts = [r[0] for r in con.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")]
    db = duckdb.connect(str(tmp_path / "threads.duckdb"), read_only=True)
    ids = db.execute("SELECT start_ns FROM spans WHERE kind = 'kernel' ORDER BY span_id").fetchall()
    assert [r[0] for r in ids] == starts


def bad_copy(folder: Path, statement: str) -> Path:
    path = folder / "export.sqlite"
    shutil.copyfile(NSYS_EXPORTS[H100], path)
    with sqlite3.connect(path) as con:
        con.execute(statement)
    return path


def cli_convert(monkeypatch, source: Path, out: Path, readers: int):
    monkeypatch.setattr(nsys_module, "reader_threads", lambda con: readers)
    monkeypatch.setattr(parallel, "PIECE_ROWS", PIECE_ROWS[H100])
    return runner.invoke(app, ["convert", str(source), "-o", str(out), "-q"])


def test_rows_dropped_from_a_later_piece_as_by_one_reader(tmp_path, monkeypatch):
    """Kernels ending before they start, deep in the table: the same warning and the same database
    (the staging view becomes a table before its rows are deleted)."""
    source = bad_copy(tmp_path, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1 WHERE rowid % 50 = 13')
    results = {}
    for readers in (1, 2):
        out = tmp_path / f"out{readers}.duckdb"
        result = cli_convert(monkeypatch, source, out, readers)
        assert result.exit_code == 0, result.output
        results[readers] = (sorted(line for line in result.stderr.splitlines() if "warning" in line), table_rows(out))
    assert any("dropped kernel rows" in line and "end before start" in line for line in results[2][0]), results[2][0]
    assert results[1] == results[2]


def test_wrong_type_in_a_later_piece_is_the_same_one_line_error(tmp_path, monkeypatch):
    source = bad_copy(
        tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 'wide' WHERE rowid = (SELECT max(rowid) - 3 FROM CUPTI_ACTIVITY_KIND_KERNEL)"
    )
    errors = {}
    for readers in (1, 2):
        result = cli_convert(monkeypatch, source, tmp_path / f"out{readers}.duckdb", readers)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        errors[readers] = [line for line in result.stderr.splitlines() if line.startswith("xsp-trace: error:")]
        assert not (tmp_path / f"out{readers}.duckdb").exists()
    assert len(errors[2]) == 1 and "wrong type" in errors[2][0] and "kernels" in errors[2][0], errors[2]
    assert errors[1] == errors[2]
