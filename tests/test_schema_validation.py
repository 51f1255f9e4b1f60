"""A database or dataset that says the current schema version but was edited by hand is refused on open, in one line.

Databases: a table dropped, a column dropped, a column retyped -- for every command that opens one
(analyze, perfetto, convert --append, diff). Datasets: the marker xsp_dataset.json checked by its
schema (a table listed twice, an unknown table, `files: null`, `tables: 5`, a size that is no
number). The expected tables and types come from schemas/xsp_schema.sql, read here by a regular
expression over its text -- not by the code under test, which runs the DDL in DuckDB.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.store.database import SCHEMA_VERSION
from xsp_trace.store.schema import expected_tables

REPO = Path(__file__).resolve().parent.parent
SMALL = KINETO_TRACES["kineto_rocm_mi250"]  # 7 KB
runner = CliRunner()

EDITS = {
    "dropped_table": ("DROP TABLE kernels", "has no table kernels"),
    "dropped_capture_table": ("DROP TABLE layers", "has no table layers"),
    "dropped_column": ("ALTER TABLE spans DROP COLUMN name", "has no column spans.name"),
    "retyped_column": ("ALTER TABLE spans ALTER COLUMN start_ns TYPE VARCHAR", "has column spans.start_ns of type VARCHAR, not BIGINT"),
}


def ddl_tables() -> dict[str, dict[str, str]]:
    """table -> {column: type} from the schema file's text, by a regular expression."""
    text = (REPO / "schemas" / "xsp_schema.sql").read_text()
    tables = {}
    for name, body in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\);", text, re.S):
        columns = {}
        for piece in re.split(r",\s*(?![^()]*\))", body):  # commas outside parentheses
            match = re.match(r"\s*(\w+) ([A-Z]+(?:\[\])?)", piece)
            if match and match.group(1) not in ("PRIMARY", "UNIQUE"):
                columns[match.group(1)] = match.group(2)
        tables[name] = columns
    return tables


def one_error(args: list[str]) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xsp-trace: error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "good.duckdb"
    result = runner.invoke(app, ["convert", str(SMALL), "-o", str(path), "-q"])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "ds"
    result = runner.invoke(app, ["convert", str(SMALL), "-o", str(path), "--format", "parquet", "-q", "-j", "1"])
    assert result.exit_code == 0, result.output
    return path


def test_expected_tables_are_those_of_the_schema_file():
    derived = {table: dict(columns) for table, columns in expected_tables().items()}
    by_text = ddl_tables()
    assert set(derived) == set(by_text) and len(by_text) >= 19
    for table, columns in by_text.items():
        assert list(derived[table]) == list(columns), table
        for column, kind in columns.items():  # the simple types the text shows; lists and structs are checked by name above
            assert derived[table][column].startswith(kind.rstrip("[]")), (table, column)


@pytest.mark.slow
@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("command", ["analyze", "perfetto", "convert_append", "diff", "query"])
def test_hand_edited_database_is_one_line(edit, command, database, tmp_path):
    sql, expect = EDITS[edit]
    edited = tmp_path / "edited.duckdb"
    shutil.copyfile(database, edited)
    with duckdb.connect(str(edited)) as con:
        con.execute(sql)
    args = {
        "analyze": ["analyze", edited, "-a", "kernel_info"],
        "perfetto": ["perfetto", edited, "-o", tmp_path / "t.pftrace"],
        "convert_append": ["convert", SMALL, "-o", edited, "--append", "-q"],
        "diff": ["diff", database, edited],
        "query": ["query", edited, "SELECT 1"],
    }[command]
    before = edited.read_bytes()
    line = one_error(args)
    assert line.startswith(f"xsp-trace: error: {edited}: {expect}"), line
    assert f"schema version {SCHEMA_VERSION}" in line
    assert edited.read_bytes() == before and not (tmp_path / "t.pftrace").exists()
    if edit == "retyped_column":
        assert ddl_tables()["spans"]["start_ns"] == "BIGINT"  # the type the line names is the schema's


def marker_edit(dataset: Path, tmp_path: Path, change) -> Path:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    marker = json.loads((copy / "xsp_dataset.json").read_text())
    change(marker)
    (copy / "xsp_dataset.json").write_text(json.dumps(marker))
    return copy


MARKER_CASES = {
    "table_twice": (lambda m: m["tables"].append(m["tables"][0]), 'lists table "attribution" twice'),
    "unknown_table": (lambda m: m["tables"].append("secrets"), 'lists table "secrets", which the schema does not have'),
    "files_null": (lambda m: m.update(files=None), "has files null, not an object of file sizes"),
    "files_missing": (lambda m: m.pop("files"), "has files null, not an object of file sizes"),
    "tables_number": (lambda m: m.update(tables=5), "has tables 5, not a list of table names"),
    "tables_with_number": (lambda m: m["tables"].append(5), "not a list of table names"),
    "size_text": (lambda m: m["files"].update({k: "12" for k in list(m["files"])[:1]}), 'the size "12", not a whole number of bytes'),
    "size_negative": (lambda m: m["files"].update({k: -1 for k in list(m["files"])[:1]}), "the size -1, not a whole number"),
    "size_bool": (lambda m: m["files"].update({k: True for k in list(m["files"])[:1]}), "the size true, not a whole number"),
    "file_of_unlisted_table": (lambda m: m["tables"].remove("spans"), "which is in none of its tables"),
    "not_object": (lambda m: None, "is not an object"),
    "nested_10000": (lambda m: None, "is not an xsp-trace Parquet dataset (xsp_dataset.json unreadable)"),
    "other_format": (lambda m: m.update(format="x\ny"), 'says format "x\\ny"'),
    "version_text": (lambda m: m.update(schema_version="4\nx"), 'schema version "4\\nx"'),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(MARKER_CASES))
@pytest.mark.parametrize("command", ["analyze", "query"])
def test_bad_dataset_marker_is_one_line(case, command, dataset, tmp_path):
    change, expect = MARKER_CASES[case]
    copy = marker_edit(dataset, tmp_path, change)
    if case == "not_object":
        (copy / "xsp_dataset.json").write_text("[1, 2]")
    if case == "nested_10000":  # deeper than Python's json module reads
        (copy / "xsp_dataset.json").write_text('{"tables": ' + "[" * 10_000 + "]" * 10_000 + "}")
    args = ["analyze", copy, "-a", "kernel_info"] if command == "analyze" else ["query", copy, "SELECT count(*) FROM spans"]
    line = one_error(args)
    assert line.startswith(f"xsp-trace: error: {copy}: "), line
    assert expect in line, line


def test_good_dataset_and_database_still_open(dataset, database):
    for path in (dataset, database):
        result = runner.invoke(app, ["query", str(path), "SELECT count(*) AS n FROM spans WHERE kind = 'kernel'", "--csv"])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[1] == str(raw_kernel_count())


def raw_kernel_count() -> int:
    """GPU kernel events in the raw trace (cat "kernel"), the count every store must hold."""
    import gzip

    events = json.loads(gzip.open(SMALL).read())["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")
