"""A colleague's database is data, never code (xsp_trace/store/data_only.py): a file that defines macros,
views or expressions DuckDB would run inside the package's queries is refused by every command before
any of its code runs, and a reading connection cannot reach the file system even where that check
is bypassed. Each attack crafts a copy of a real converted trace; a secret file stands for what the
attacker wants to read."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from xsp_trace.cli import app
from xsp_trace.errors import InputError
from xsp_trace.resources import queries_dir
from xsp_trace.store.database import connect

runner = CliRunner()
TRACE = Path(__file__).parent / "data" / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz"
SECRET = "s3cr3t-token-5b0d"


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "private.txt"
    path.write_text(SECRET)
    return path


@pytest.fixture
def crafted(converted_path, tmp_path):
    """crafted(*statements) -> a copy of a converted trace with `statements` run in it."""

    def make(*statements: str, name: str = "colleague.duckdb") -> Path:
        path = tmp_path / name
        shutil.copyfile(converted_path(TRACE), path)
        with duckdb.connect(str(path)) as con:
            for statement in statements:
                con.execute(statement)
        return path

    return make


def reads(secret: Path) -> str:
    """An expression that yields the secret file's content (a scalar subquery over read_text)."""
    return f"(SELECT string_agg(content, '') FROM read_text('{secret}'))"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def builtins_the_package_calls() -> list[str]:
    """Every DuckDB built-in function called by name in the package's SQL (queries/): each is one a
    file's macro could shadow."""
    called = set()
    for sql in queries_dir().rglob("*.sql"):
        called |= {m.lower() for m in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(", sql.read_text())}
    with duckdb.connect() as con:
        builtin = {row[0] for row in con.execute("SELECT DISTINCT function_name FROM duckdb_functions() WHERE internal").fetchall()}
    return sorted(called & builtin)


SHADOWED = builtins_the_package_calls()


def test_the_package_calls_the_builtins_this_file_shadows():
    """The list the next test runs over is real: the analyses call round, printf, nullif, ..."""
    assert {"round", "printf", "nullif", "sum", "count", "getvariable"} <= set(SHADOWED)
    assert len(SHADOWED) > 40


@pytest.mark.parametrize("name", SHADOWED)
def test_a_macro_shadowing_a_builtin_is_refused_on_open(name, crafted, secret):
    """Per built-in the package's SQL calls: a main-schema macro of that name is refused before any
    query runs, by name, with the statement that strips it."""
    try:
        db = crafted(f'CREATE MACRO main."{name}"(a := NULL, b := NULL, c := NULL) AS {reads(secret)}')
    except duckdb.Error as exc:
        pytest.skip(f"DuckDB refuses a macro named {name}: {exc}")
    with pytest.raises(InputError) as refused:
        connect(db).close()
    assert f"defines macro main.{name}" in refused.value.line() and f"DROP MACRO main.{name}" in refused.value.line()


COMMANDS = {
    "analyze_report": lambda db, tmp: ["analyze", str(db), "--report", str(tmp / "r.html")],
    "analyze_json": lambda db, tmp: ["analyze", str(db), "--all", "--format", "json"],
    "diff": lambda db, tmp: ["diff", str(db), str(db)],
    "perfetto": lambda db, tmp: ["perfetto", str(db), "-o", str(tmp / "t.pftrace"), "--critical-path"],
    "install_analyses": lambda db, tmp: ["install-analyses", str(db)],
    "query": lambda db, tmp: ["query", str(db), "SELECT round(1.5) AS x"],
    "query_external": lambda db, tmp: ["query", str(db), "SELECT round(1.5) AS x", "--allow-external-access"],
    "convert_append": lambda db, tmp: ["convert", str(TRACE), "-o", str(db), "--append"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_file_with_code(command, crafted, secret, tmp_path):
    """The issue's attack (a `main.round` macro reading a file) under every command that opens a
    database: exit 2, one line naming the macro, the secret nowhere, the file unchanged, no output."""
    db = crafted(f"CREATE MACRO main.round(x, d := 0) AS {reads(secret)}", f"CREATE MACRO main.printf(f, a := NULL) AS {reads(secret)}")
    before = digest(db)
    result = runner.invoke(app, COMMANDS[command](db, tmp_path))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "defines macro main." in lines[0] and "(and 1 more)" in lines[0], result.stderr
    assert SECRET not in result.output
    assert digest(db) == before
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "t.pftrace").exists()


@pytest.mark.parametrize(
    "statement, named",
    [
        ("CREATE MACRO main.kernels_of(r) AS TABLE SELECT * FROM read_text('{secret}')", "macro main.kernels_of"),
        ("CREATE VIEW main.top_kernels AS SELECT * FROM read_text('{secret}')", "view main.top_kernels"),
        ("CREATE SCHEMA other; CREATE VIEW other.v AS SELECT 1", "view other.v"),
        ("CREATE TABLE extra (x INTEGER, leak INTEGER AS (length('{secret}')))", "generated column main.extra.leak"),
        ("ALTER TABLE runs ADD COLUMN note2 VARCHAR DEFAULT 'x'", "column default main.runs.note2"),
        ("CREATE TABLE extra (x INTEGER CHECK (x > 0))", "CHECK constraint main.extra"),
        ("CREATE MACRO xsp.round(x, d := 0) AS {reads}", "macro xsp.round, named like a DuckDB built-in"),
    ],
    ids=["table_macro", "view_shadowing_an_analysis", "view_in_another_schema", "generated_column", "column_default", "check", "xsp_builtin"],
)
def test_each_kind_of_code_is_refused_by_name(statement, named, crafted, secret):
    db = crafted(*statement.format(secret=secret, reads=reads(secret)).split("; "))
    result = runner.invoke(app, ["query", str(db), "SELECT 1"])
    assert result.exit_code == 2 and named in result.stderr, result.output
    assert SECRET not in result.output


def test_install_analyses_replaces_a_crafted_xsp_schema_whole(crafted, secret):
    """xsp is the package's: install-analyses drops it with whatever it held and installs its own,
    after which the file reads like any other."""
    db = crafted(f"CREATE MACRO xsp.round(x, d := 0) AS {reads(secret)}", "CREATE OR REPLACE VIEW xsp.top_kernels AS SELECT 1 AS planted")
    assert runner.invoke(app, ["query", str(db), "SELECT 1"]).exit_code == 2
    assert runner.invoke(app, ["install-analyses", str(db)]).exit_code == 0
    with duckdb.connect(str(db), read_only=True) as con:
        functions = con.execute("SELECT count(*) FROM duckdb_functions() WHERE schema_name = 'xsp' AND function_name = 'round'").fetchone()
        planted = con.execute("SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'xsp' AND column_name = 'planted'").fetchone()
    assert functions == (0,) and planted == (0,)
    result = runner.invoke(app, ["query", str(db), "SELECT count(*) AS n FROM xsp.top_kernels", "--csv"])
    assert result.exit_code == 0 and int(result.stdout.splitlines()[1]) > 0, result.output


def test_the_lock_alone_keeps_a_reading_connection_off_the_file_system(crafted, secret, tmp_path, monkeypatch):
    """Where the catalog check were bypassed, the macro would run -- and fail to read the file: every
    reading connection has external access off. Without the lock the same macro does read it (so the
    attack is real and this test can fail)."""
    db = crafted(f"CREATE MACRO main.round(x, d := 0) AS {reads(secret)}")
    with duckdb.connect(str(db), read_only=True) as unlocked:
        assert unlocked.execute("SELECT round(1.5)").fetchone() == (SECRET,)
    monkeypatch.setattr("xsp_trace.store.database.refuse_code", lambda *args, **kwargs: None)
    con = connect(db)
    try:
        with pytest.raises(duckdb.PermissionException):
            con.execute("SELECT round(1.5)").fetchone()
        with pytest.raises(duckdb.Error):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()
    result = runner.invoke(app, ["analyze", str(db), "--report", str(tmp_path / "r.html")])
    assert SECRET not in result.output
    assert not (tmp_path / "r.html").exists() or SECRET not in (tmp_path / "r.html").read_text()


def test_a_file_the_package_wrote_passes_and_reads_as_before(converted_path, tmp_path):
    """The check refuses nothing the package writes: the analyses it installs shadow no built-in."""
    db = converted_path(TRACE)
    result = runner.invoke(app, ["analyze", str(db), "-a", "top_kernels", "-a", "critical_path", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["perfetto", str(db), "-o", str(tmp_path / "t.pftrace"), "--critical-path"]).exit_code == 0
