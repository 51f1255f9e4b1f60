"""`xsp-trace query` opens the data read-only: no file writes, no reading other files, no
extension installs, no settings changes -- unless --allow-external-access is given.

Every statement of the SQL corpus (tests/data/query_sql_corpus/statements.tsv) is run through the
CLI (CliRunner) on a database file and on a Parquet dataset folder. A refused statement exits 2
with one line; a snapshot of every file of the data folder (the dataset, its marker, a `<db>.tmp`
spill folder beside the database, a secret file beside them) shows nothing was written, replaced or
deleted. The reading statements of the corpus still run.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DATA
from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app

runner = CliRunner()
SMALL = KINETO_TRACES["kineto_rocm_mi250"]
CORPUS = DATA / "query_sql_corpus" / "statements.tsv"


def corpus() -> list[tuple[str, str, str]]:
    """(expect, case, sql) rows of the corpus file."""
    with open(CORPUS, encoding="utf-8") as f:
        rows = [r for r in csv.reader((line for line in f if line.strip() and not line.startswith("#")), delimiter="\t", quoting=csv.QUOTE_NONE)]
    assert all(len(r) == 3 and r[0] in ("refused", "runs") for r in rows), rows
    return [(r[0], r[1], r[2]) for r in rows]


STATEMENTS = corpus()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("query")
    for args in (["-o", str(folder / "db.duckdb")], ["--format", "parquet", "-o", str(folder / "ds")]):
        result = runner.invoke(app, ["convert", str(SMALL), "-q", *args])
        assert result.exit_code == 0, result.output
    (folder / "secret.txt").write_text("do not read me\n")
    (folder / "db.duckdb.tmp").mkdir()  # DuckDB's default spill folder, which it lets COPY write into
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


def _sql(template: str, data: Path) -> str:
    return template.replace("{out}", str(data)).replace("{ds}", str(data / "ds")).replace("{db}", str(data / "db.duckdb"))


REFUSED = [(case, target) for expect, case, _ in STATEMENTS if expect == "refused" for target in ("db.duckdb", "ds")]
RUNS = [(case, target) for expect, case, _ in STATEMENTS if expect == "runs" for target in ("db.duckdb", "ds")]
SQL = {case: sql for _, case, sql in STATEMENTS}


@pytest.mark.slow
@pytest.mark.parametrize("case,target", REFUSED)
def test_writes_and_exfiltration_are_refused(case, target, data):
    before = snapshot(data)
    result = runner.invoke(app, ["query", str(data / target), _sql(SQL[case], data)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"xsp-trace: error: {data / target}: query "), result.stderr
    assert "Traceback" not in result.output and "root:" not in result.output and "do not read me" not in result.output
    assert snapshot(data) == before


@pytest.mark.slow
@pytest.mark.parametrize("case,target", RUNS)
def test_reading_statements_run(case, target, data):
    before = snapshot(data)
    result = runner.invoke(app, ["query", str(data / target), _sql(SQL[case], data), "--csv"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) >= 2  # a header and at least one row
    assert snapshot(data) == before


def test_allowed_statements_are_checked_not_only_the_first_word(data):
    """EXPLAIN ANALYZE runs its statement: refused for a COPY even when a comment sits between the words."""
    refused = {case for expect, case, _ in STATEMENTS if expect == "refused"}
    assert {"explain_analyze_copy", "explain_comment_analyze_copy", "prepare_execute_copy", "update_extensions"} <= refused


@pytest.mark.parametrize("target", ["db.duckdb", "ds"])
def test_reading_the_data_still_works(target, data):
    """The same count the database holds (from the raw JSON: complete events the converter keeps)."""
    result = runner.invoke(app, ["query", str(data / target), "SELECT count(*) AS n FROM spans WHERE kind = 'kernel'", "--csv"])
    assert result.exit_code == 0, result.output
    from xsp_trace.formats import kineto_fields as kf

    events = json.loads(gzip.open(SMALL).read())["traceEvents"]
    kernels = sum(1 for e in events if e.get("ph") == "X" and kf.CATEGORY_KIND.get(str(e.get("cat")).lower()) == "kernel")
    assert result.stdout.strip().splitlines()[-1] == str(kernels) and kernels > 0


def test_allow_external_access_lets_copy_write(data, tmp_path):
    out = tmp_path / "kernels.csv"
    result = runner.invoke(
        app, ["query", str(data / "db.duckdb"), "--allow-external-access", f"COPY (SELECT name FROM spans WHERE kind = 'kernel') TO '{out}'"]
    )
    assert result.exit_code == 0, result.output
    assert out.exists() and out.read_text().splitlines()[0] == "name"


@pytest.mark.parametrize("target", ["db.duckdb", "ds"])
def test_the_lock_alone_stops_writes(target, data):
    """Without the statement checks the locked connection still writes nothing: no folder is writable,
    only the dataset's own Parquet files are readable, and DuckDB spills into a private folder."""
    from xsp_trace.sandbox import query_connection

    before = snapshot(data)
    with query_connection(data / target) as con:
        for sql in ("copy_over_marker", "copy_partitions_overwrite", "copy_into_db_tmp", "copy_into_dataset"):
            with pytest.raises(Exception, match="Permission Error"):
                con.execute(_sql(SQL[sql], data))
        assert con.execute("SELECT count(*) FROM spans").fetchone()[0] > 0
    assert snapshot(data) == before


def test_limit_fetches_only_the_rows_it_prints(data):
    """10^8 rows with --limit 50 under a 1.5 GB address-space limit (fetching them all needs several GB)."""
    import resource
    import subprocess
    import sys

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    code = "from xsp_trace.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", code, "query", str(data / "db.duckdb"), "SELECT * FROM range(100000000)", "--limit", "50"],
        capture_output=True,
        text=True,
        preexec_fn=limit_memory,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "│ 49 " in result.stdout and "more rows" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT max(i) FROM r",
        "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = -1",
    ],
    ids=["unbounded_recursion", "cross_join_10e12"],
)
def test_timeout_stops_a_runaway_query(sql, data):
    import time

    started = time.monotonic()
    result = runner.invoke(app, ["query", str(data / "db.duckdb"), sql, "--timeout", "1"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "stopped after 1 s (--timeout)" in lines[0], result.stderr
    assert time.monotonic() - started < 30


def test_a_killed_querys_spill_folder_is_removed_by_the_next(data, tmp_path, monkeypatch):
    """A reading connection spills into a private folder named after its process (xsp-read-<pid>-<n>,
    data_only.lock_reading); the next reader removes one whose process is gone, and the command its
    own once it is done."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    stale = tmp_path / "xsp-read-999999999-0"  # no such pid
    stale.mkdir()
    (stale / "spill.tmp").write_text("x")
    result = runner.invoke(app, ["query", str(data / "db.duckdb"), "SELECT count(*) FROM spans", "--csv"])
    assert result.exit_code == 0, result.output
    assert not stale.exists() and not list(tmp_path.glob("xsp-read-*"))


def test_sql_from_a_file_and_a_missing_file(data, tmp_path):
    script = tmp_path / "count.sql"
    script.write_text(SQL["select"])
    result = runner.invoke(app, ["query", str(data / "db.duckdb"), f"@{script}", "--csv"])
    assert result.exit_code == 0 and result.stdout.splitlines()[0] == "n"
    missing = runner.invoke(app, ["query", str(data / "db.duckdb"), f"@{tmp_path / 'none.sql'}"])
    assert missing.exit_code == 2 and "none.sql: does not exist" in missing.stderr


def test_query_prints_ids_and_clocks_without_separators(data):
    """An id and a raw clock read as written (no "4,515"), in query's table as in analyze's."""
    result = runner.invoke(app, ["query", str(data / "db.duckdb"), "SELECT 4515 AS pid, 1683564902658025000 AS start_ns, 1234.5 AS x"])
    assert result.exit_code == 0, result.output
    for shown in (" 4515 ", " 1683564902658025000 ", " 1234.5 "):
        assert shown in result.stdout, result.stdout
    assert "4,515" not in result.stdout and "1,234" not in result.stdout
