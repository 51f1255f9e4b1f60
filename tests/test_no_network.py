"""xsp-trace never reaches the network through DuckDB: every connection the package opens has the
automatic install and load of extensions off, and an SQLite file (an nsys export, perhaps renamed
.duckdb) -- which DuckDB would open by downloading its sqlite extension before any setting applies --
is refused with one line before DuckDB sees it.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

import xsp_trace
from conftest import DATA
from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.store.connection import duckdb_connect
from xsp_trace.store.opening import open_store

pytestmark = pytest.mark.slow  # every command in a child process

runner = CliRunner()
PACKAGE = Path(xsp_trace.__file__).parent
NSYS_EXPORT = DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite"


def _connect_calls() -> list[str]:
    """'module:function' of every duckdb.connect(...) call in the package's source (capture/ included)."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "duckdb.connect":
                    calls.append(f"{path.relative_to(PACKAGE)}:{function.name}")
    return calls


def test_duckdb_is_opened_in_one_place():
    assert _connect_calls() == ["store/connection.py:duckdb_connect"]


def _extension_settings(con: duckdb.DuckDBPyConnection) -> tuple:
    return con.execute("SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')").fetchone()


def test_every_kind_of_connection_has_extension_downloads_off(tmp_path):
    database = tmp_path / "db.duckdb"
    dataset = tmp_path / "ds"
    for args in (["-o", str(database)], ["--format", "parquet", "-o", str(dataset)]):
        assert runner.invoke(app, ["convert", str(KINETO_TRACES["kineto_rocm_mi250"]), "-q", *args]).exit_code == 0
    connections = [duckdb_connect(), duckdb_connect(tmp_path / "new.duckdb"), open_store(database), open_store(dataset)]
    for con in connections:
        assert _extension_settings(con) == (False, False)
        con.close()


@pytest.mark.parametrize("name", ["export.sqlite", "renamed.duckdb"])
@pytest.mark.parametrize("command", ["query", "analyze", "diff", "perfetto"])
def test_duckdb_never_opens_an_sqlite_file(name, command, tmp_path, monkeypatch):
    """The reading commands take an nsys export (even renamed .duckdb) through the conversion cache,
    which reads it with the SQLite driver: DuckDB never opens it (it would fetch its sqlite extension)."""
    source = tmp_path / name
    shutil.copyfile(NSYS_EXPORT, source)
    opened: list[str] = []
    real_connect = duckdb.connect

    def recording_connect(database=":memory:", *args, **kwargs):
        opened.append(str(database))
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", recording_connect)
    args = {
        "query": ["query", str(source), "SELECT count(*) FROM spans"],
        "analyze": ["analyze", str(source), "-a", "top_kernels"],
        "diff": ["diff", str(source), str(source)],
        "perfetto": ["perfetto", str(source), "-o", str(tmp_path / "out.pftrace")],
    }[command]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert opened and str(source) not in opened


def test_duckdb_connect_refuses_an_sqlite_file(tmp_path):
    source = tmp_path / "renamed.duckdb"
    shutil.copyfile(NSYS_EXPORT, source)
    with pytest.raises(xsp_trace.errors.InputError, match="is an SQLite file"):
        open_store(source)
