"""The schema documents itself, and a non-editable install ships the SQL and the capture side."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pytest

from conftest import NSYS_EXPORTS
from xsp_trace.store.database import SCHEMA_VERSION, create_schema

pytestmark = pytest.mark.slow  # wheels and virtual environments

ROOT = Path(__file__).parent.parent
REQUIRED_SPAN_COLUMNS = "run_id span_id parent_id kind name start_ns end_ns pid tid device_id stream_id correlation_id".split()


def test_every_table_and_column_has_a_comment():
    con = duckdb.connect()
    create_schema(con)
    tables = con.execute("SELECT table_name, comment FROM duckdb_tables() WHERE NOT internal").fetchall()
    assert {"spans", "runs", "devices", "threads", "kernels", "launches"} <= {t for t, _ in tables}
    assert [t for t, comment in tables if not comment] == []
    undocumented = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal AND (comment IS NULL OR comment = '')"
    ).fetchall()
    assert undocumented == []
    span_columns = [c for (c,) in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'spans'").fetchall()]
    assert set(REQUIRED_SPAN_COLUMNS) <= set(span_columns)
    assert con.execute("SELECT value FROM schema_info WHERE key = 'schema_version'").fetchone()[0] == SCHEMA_VERSION


def test_several_inputs_are_kept_apart_by_run_id(converted):
    a, b = NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"], NSYS_EXPORTS["nsys_2026_mock_rtx3080"]
    db = converted(a, b)
    runs = db.execute("SELECT run_id, source_format_version FROM runs ORDER BY run_id").fetchall()
    assert runs == [(1, "2.9.1"), (2, "3.24.14")]
    per_run = dict(db.execute("SELECT run_id, count(*) FROM spans WHERE kind = 'kernel' GROUP BY 1").fetchall())
    assert per_run == {1: 5, 2: 2}
    # Launch links never cross runs: both ends of every link are spans of the link's own run, the
    # API call on the CPU and the GPU span carrying the same correlation id.
    links = db.execute("""
        SELECT count(*), count(api.span_id), count(gpu.span_id),
               count(*) FILTER (WHERE api.correlation_id = gpu.correlation_id)
        FROM launches l
        LEFT JOIN spans api ON api.run_id = l.run_id AND api.span_id = l.api_span_id AND api.kind = 'api'
        LEFT JOIN spans gpu ON gpu.run_id = l.run_id AND gpu.span_id = l.gpu_span_id AND gpu.device_id IS NOT NULL
    """).fetchall()
    assert links == [(launched_in_raw_export(a) + launched_in_raw_export(b),) * 4]  # 20 + 4


def launched_in_raw_export(path: Path) -> int:
    """GPU activity rows of an nsys export whose correlationId matches a CUDA runtime call, read with sqlite3."""
    con = sqlite3.connect(path)
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    gpu = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"]
    return sum(
        con.execute(f"SELECT count(*) FROM {t} g WHERE g.correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)").fetchone()[0]
        for t in gpu
        if t in tables
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)], check=True, capture_output=True, text=True
    )
    (built,) = out.glob("xsp_trace-*.whl")
    return built


def test_wheel_ships_sql_and_capture(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sql_files = [*ROOT.glob("schemas/*.sql"), *ROOT.glob("queries/**/*.sql")]
    assert len(sql_files) > 50
    for sql in sql_files:
        assert f"xsp_trace/{sql.relative_to(ROOT).as_posix()}" in names
    assert "xsp_trace/capture/__init__.py" in names
    assert "xsp_trace/capture/examples/tiny_cnn.py" in names  # the example of xsp-trace capture --help
    assert any(n.endswith("entry_points.txt") for n in names)


def test_installed_wheel_converts_outside_the_checkout(wheel, tmp_path):
    """Install the wheel into a fresh folder (no editable checkout on the path) and convert with it."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import xsp_trace, xsp_trace.resources as r;"
        "assert xsp_trace.__file__.startswith(sys.argv[1]), xsp_trace.__file__;"
        "assert str(r.queries_dir()).startswith(sys.argv[1]);"
        "import xsp_trace.capture.runner as cr; assert cr.__file__.startswith(sys.argv[1]);"
        "from xsp_trace.convert import convert_files, ConvertOptions;"
        "convert_files([sys.argv[2]], sys.argv[3], ConvertOptions());"
        "import duckdb; print(duckdb.connect(sys.argv[3]).execute(\"select count(*) from spans where kind='kernel'\").fetchone()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(target), str(NSYS_EXPORTS["nsys_2026_mock_rtx3080"]), str(tmp_path / "o.duckdb")],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.stdout.strip() == "2"


def test_checkout_folders_reach_the_package_once():
    """In a checkout the capture side imports as xsp_trace.capture only (one module object per file),
    and the checkout's tests/ and bench/ are not part of the package."""
    script = (
        "import importlib.util, sys, xsp_trace.capture.runner as r;"
        "assert r.__name__ == 'xsp_trace.capture.runner';"
        "assert not any(m == 'capture' or m.startswith('capture.') for m in sys.modules), sorted(sys.modules);"
        "assert importlib.util.find_spec('xsp_trace.tests') is None and importlib.util.find_spec('xsp_trace.bench') is None;"
        "from xsp_trace.resources import query_text; assert query_text('ingest/kineto_map').startswith('--')"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT.parent)
