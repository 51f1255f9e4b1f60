"""`xsp-trace query` opens the data read-only: no file writes, no reading other files, no
extension installs, no settings changes -- unless --allow-external-access is given.

Checked on a database file and on a Parquet dataset folder, through the CLI (CliRunner); the
folder listing and a canary file outside it show nothing was written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app

runner = CliRunner()
SMALL = KINETO_TRACES["kineto_rocm_mi250"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("query")
    for args in (["-o", str(folder / "db.duckdb")], ["--format", "parquet", "-o", str(folder / "ds")]):
        result = runner.invoke(app, ["convert", str(SMALL), "-q", *args])
        assert result.exit_code == 0, result.output
    (folder / "secret.txt").write_text("do not read me\n")
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


STATEMENTS = {
    "copy_to": "COPY spans TO '{out}/leak.csv'",
    "copy_into_dataset": "COPY spans TO '{ds}/spans/leak.parquet'",
    "export_database": "EXPORT DATABASE '{out}/exported'",
    "read_text_passwd": "SELECT * FROM read_text('/etc/passwd')",
    "read_text_secret": "SELECT content FROM read_text('{out}/secret.txt')",
    "read_csv": "SELECT * FROM read_csv('{out}/secret.txt')",
    "attach_new_file": "ATTACH '{out}/new.duckdb' AS n",
    "attach_in_dataset": "ATTACH '{ds}/new.duckdb' AS n",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "set_external_access": "SET enable_external_access = true",
    "second_statement": "SELECT 1; COPY spans TO '{out}/leak2.csv'",
    "create_table_in_db": "CREATE TABLE spans2 AS SELECT * FROM spans",
}


# A dataset is an in-memory catalog of views: CREATE TABLE there writes nothing, so it is only tried on a file.
CASES = [(name, target) for name in STATEMENTS for target in ("db.duckdb", "ds") if not (name == "create_table_in_db" and target == "ds")]


@pytest.mark.parametrize("name,target", CASES)
def test_writes_and_exfiltration_are_refused(name, target, data):
    before = snapshot(data)
    sql = STATEMENTS[name].format(out=data, ds=data / "ds")
    result = runner.invoke(app, ["query", str(data / target), sql])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"xsp-trace: error: {data / target}: query "), result.stderr
    assert "root:" not in result.output and "do not read me" not in result.output
    assert snapshot(data) == before


@pytest.mark.parametrize("target", ["db.duckdb", "ds"])
def test_reading_the_data_still_works(target, data):
    """The same count the database holds (from the raw JSON: complete events the converter keeps)."""
    result = runner.invoke(app, ["query", str(data / target), "SELECT count(*) AS n FROM spans WHERE kind = 'kernel'", "--csv"])
    assert result.exit_code == 0, result.output
    import gzip
    import json

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
