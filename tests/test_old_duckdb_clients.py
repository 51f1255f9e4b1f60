"""A database written by xsp-trace opens in a DuckDB 1.x client (README, "Opening a database in
other DuckDB clients"): the file is written in storage format v1.0.0 (connection.STORAGE_VERSION), not
DuckDB 2.0's own, which no 1.x client reads ("version number 999 ... we can only read ... 64").

The old client is a real DuckDB 1.1.3 wheel (the oldest Python DuckDB the project's Python 3.10+
can pair with that format and still reads every view), in a venv this test creates once and
reuses (XSP_TEST_VENVS, default ~/.cache/xsp-trace-tests); pip fetches it from the package index,
and the test is skipped, saying so, only where pip cannot reach the index.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import venv
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # a venv (once), a real conversion, installs bound views

OLD_DUCKDB = "1.1.3"
TRACE = Path(__file__).parent / "data/kineto_2025_all_options_h100/tracelens_h100_qwen1.5_0.5b.json.gz"
_NO_INDEX = (
    "Could not find a version",
    "No matching distribution",
    "Failed to establish a new connection",
    "ConnectionError",
    "Network is unreachable",
)


@pytest.fixture(scope="module")
def old_python() -> Path:
    """The interpreter of a venv holding DuckDB OLD_DUCKDB only."""
    root = Path(os.environ.get("XSP_TEST_VENVS") or Path.home() / ".cache" / "xsp-trace-tests")
    env_dir = root / f"duckdb-{OLD_DUCKDB}-py{sys.version_info.major}{sys.version_info.minor}"
    python = env_dir / "bin" / "python"
    check = [str(python), "-c", "import duckdb; print(duckdb.__version__)"]
    if python.exists() and subprocess.run(check, capture_output=True, text=True).stdout.strip() == OLD_DUCKDB:
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"duckdb=={OLD_DUCKDB}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0 and any(marker in install.stdout + install.stderr for marker in _NO_INDEX):
        pytest.skip(f"pip cannot fetch duckdb=={OLD_DUCKDB} from the package index: {(install.stdout + install.stderr).strip().splitlines()[-1]}")
    assert install.returncode == 0, install.stdout + install.stderr
    assert subprocess.run(check, capture_output=True, text=True).stdout.strip() == OLD_DUCKDB
    return python


def old_client(python: Path, database: Path, *statements: str) -> subprocess.CompletedProcess:
    """Run the statements in the old DuckDB on `database` (read-only); the last one's rows as JSON on stdout."""
    script = (
        "import duckdb, json, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "con.execute('SET enable_progress_bar = false')\n"
        "for sql in sys.argv[2:-1]:\n"
        "    con.execute(sql)\n"
        "print(json.dumps(con.execute(sys.argv[-1]).fetchall(), default=str))\n"
    )
    return subprocess.run([str(python), "-c", script, str(database), *statements], capture_output=True, text=True, timeout=300)


def same_rows(old: list, new: list) -> bool:
    """Rows equal, doubles to 1e-9 (the two DuckDBs may sum in another order)."""
    if len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12):
                    return False
            elif x != y:
                return False
    return True


def test_a_converted_database_opens_in_duckdb_1(old_python, tmp_path):
    database = tmp_path / "run.duckdb"
    result = CliRunner().invoke(app, ["convert", str(TRACE), "-o", str(database), "-q"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(database), read_only=True) as con:
        spans = con.execute("SELECT count(*) FROM spans").fetchone()[0]
        storage = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    assert storage == "v1.0.0+"
    opened = old_client(old_python, database, "SELECT count(*) FROM spans")
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout) == [[spans]] and spans > 1000

    # convert's views are created WITH (DEFER_BINDING) (DuckDB 2.0): no column types stored, which
    # a 1.x client refuses. README says so; install-analyses --bind-views is the way for 1.x.
    deferred = old_client(old_python, database, "SELECT * FROM xsp.top_kernels")
    assert deferred.returncode != 0 and "Contents of view were altered" in deferred.stderr, deferred.stderr

    result = CliRunner().invoke(app, ["install-analyses", str(database), "--bind-views"])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(database), read_only=True) as con:
        expected = con.execute("SELECT * FROM xsp.top_kernels ORDER BY ALL").fetchall()
        views = [name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'xsp' ORDER BY 1").fetchall()]
    assert len(expected) > 5
    # DuckDB 1.1 binds a view's names by the search path, not the view's own schema (1.3 on does).
    top = old_client(old_python, database, "SET search_path = 'xsp,main'", "SELECT * FROM xsp.top_kernels ORDER BY ALL")
    assert top.returncode == 0, top.stderr
    assert same_rows(json.loads(top.stdout), expected)
    # Every installed view binds in the old client (DESCRIBE binds, runs nothing; the narrowing view
    # memops once used a row-valued IN, which 1.1 lacks).
    bound = old_client(old_python, database, "SET search_path = 'xsp,main'", *(f'DESCRIBE SELECT * FROM xsp."{name}"' for name in views), "SELECT 1")
    assert bound.returncode == 0, bound.stderr
    assert len(views) > 100
