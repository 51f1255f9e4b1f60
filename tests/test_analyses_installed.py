"""The analyses inside the database: `convert` installs them as views in schema xsp, and a plain DuckDB
(a subprocess in which xsp_trace cannot be imported) runs them and gets what `xsp-trace analyze`
gets; a finding's evidence runs there as written; SET VARIABLE changes a parameter; `query` sees the
same names from any folder; an older database gets them with `install-analyses` (or a note).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.analyze.catalog import ANALYSES
from xsp_trace.analyze.findings.find import Finding, evidence, find
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app

# A real trace converted, and every analysis run again in plain DuckDB subprocesses (minutes).
pytestmark = pytest.mark.slow

runner = CliRunner()
TRACE = KINETO_TRACES["kineto_rocm_mi250"]

# Run by a bare interpreter: xsp_trace blocked, so only what is inside the database can answer.
PLAIN = """
import json, sys
sys.modules["xsp_trace"] = None
try:
    import xsp_trace
    raise SystemExit("xsp_trace is importable")
except ImportError:
    pass
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
out = {}
for name, sql in json.loads(sys.argv[2]).items():
    out[name] = [[None if v is None else (v if isinstance(v, (int, float)) else str(v)) for v in row] for row in con.execute(sql).fetchall()]
print(json.dumps(out))
"""


def plain_duckdb(database: Path, queries: dict[str, str], cwd: Path) -> dict[str, list[list]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", PLAIN, str(database), json.dumps(queries)], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _normal(rows) -> list[tuple]:
    """Rows as sortable tuples, floats rounded to 9 significant digits (JSON and DuckDB agree on them)."""

    def value(v):
        if isinstance(v, float):
            return ("f", float(f"{v:.9g}")) if math.isfinite(v) else ("f", str(v))
        if v is None:
            return ("n", "")
        return ("v", v if isinstance(v, int) else str(v))

    return sorted(tuple(value(v) for v in row) for row in rows)


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("installed") / "run.duckdb"
    result = runner.invoke(app, ["convert", str(TRACE), "-q", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_a_plain_duckdb_runs_every_installed_analysis_as_analyze_does(database, tmp_path):
    listed = plain_duckdb(database, {"list": "SELECT name, installed, note FROM xsp.xsp_analyses ORDER BY name"}, tmp_path)["list"]
    assert {row[0] for row in listed} == {a.name for a in ANALYSES}
    installed = [name for name, ok, _ in listed if ok]
    # Left out: exactly the analyses a Python builder computes, each saying so.
    assert {name for name, ok, note in listed if not ok and "computed in Python" in note} == {a.name for a in ANALYSES if a.builds}
    plain = plain_duckdb(database, {name: f"SELECT * FROM xsp.{name}" for name in installed}, tmp_path)
    con = open_session(database)
    try:
        for name in installed:
            assert _normal(plain[name]) == _normal(run_analysis(con, name).rows), name
    finally:
        con.close()
    assert plain["top_kernels"], "the trace has kernels"


def test_top_kernels_counts_match_the_spans_table(database, tmp_path):
    got = plain_duckdb(
        database,
        {
            "view": "SELECT name, instances FROM xsp.top_kernels",
            "spans": "SELECT name, count(*) FROM spans WHERE kind = 'kernel' GROUP BY name",
        },
        tmp_path,
    )
    assert sorted(map(tuple, got["view"])) == sorted(map(tuple, got["spans"]))


def test_set_variable_changes_a_parameter(database, tmp_path):
    got = plain_duckdb(
        database,
        {
            "default": "SELECT count(*) FROM xsp.gpu_utilization_bins",
            "ten": "SET VARIABLE xsp_bins = 10; SELECT count(*) FROM xsp.gpu_utilization_bins",
        },
        tmp_path,
    )
    gpus = plain_duckdb(database, {"n": "SELECT count(DISTINCT (run_id, device_id)) FROM spans WHERE device_id IS NOT NULL"}, tmp_path)["n"][0][0]
    assert got["default"][0][0] == 50 * gpus and got["ten"][0][0] == 10 * gpus


def test_a_findings_evidence_runs_as_written(database, tmp_path):
    """SQL evidence runs in plain DuckDB; evidence from an analysis computed in Python (the step
    causes, from the critical path) names the analyze command, which shows those rows."""
    con = open_session(database)
    try:
        found = [f for f in find(con) if f.kind != "healthy"] or find(con)
        for f in found:
            if f.evidence.startswith("xsp-trace analyze DB -a "):
                assert f.evidence == f"xsp-trace analyze DB -a {f.analysis} (rows where {f.where})" and evidence(con, f).rows
        # The SQL kind (a healthy line's, over gpu_busy_idle, where this trace has no other).
        found = [f for f in found if f.evidence.startswith("SELECT")] or [Finding("healthy", 0.0, "", "gpu_busy_idle", "run_id = 1")]
        expected = {f.evidence: len(evidence(con, f).rows) for f in found}
    finally:
        con.close()
    assert expected
    got = plain_duckdb(database, {sql: sql for sql in expected}, tmp_path)
    assert {sql: len(rows) for sql, rows in got.items()} == expected
    result = runner.invoke(app, ["query", str(database), next(iter(expected)), "--csv"])
    assert result.exit_code == 0, result.output


def test_query_names_analyses_and_packaged_files_from_any_folder(database, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_name = runner.invoke(app, ["query", str(database), "@top_kernels", "--csv"])
    by_file = runner.invoke(app, ["query", str(database), "@queries/analyses/top_kernels.sql", "--csv"])
    plain = runner.invoke(app, ["query", str(database), "SELECT * FROM top_kernels", "--csv"])
    assert by_name.exit_code == by_file.exit_code == plain.exit_code == 0, by_name.output + by_file.output
    assert sorted(by_name.stdout.splitlines()) == sorted(by_file.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    python_made = runner.invoke(app, ["query", str(database), "@critical_path"])
    assert python_made.exit_code == 2 and "computed in Python" in python_made.stderr and "analyze" in python_made.stderr


def test_query_on_a_dataset_sees_the_same_views(tmp_path):
    folder = tmp_path / "ds"
    assert runner.invoke(app, ["convert", str(TRACE), "-q", "--format", "parquet", "-o", str(folder)]).exit_code == 0
    result = runner.invoke(app, ["query", str(folder), "SELECT count(*) AS n FROM xsp.top_kernels", "--csv"])
    assert result.exit_code == 0, result.output
    assert int(result.stdout.splitlines()[1]) > 0


def test_an_older_database_gets_a_note_then_one_command(database, tmp_path):
    old = tmp_path / "old.duckdb"
    old.write_bytes(database.read_bytes())
    con = duckdb.connect(str(old))
    con.execute("DROP SCHEMA xsp CASCADE")
    con.close()
    result = runner.invoke(app, ["query", str(old), "SELECT count(*) AS n FROM top_kernels", "--csv"])
    assert result.exit_code == 0 and "install-analyses" in result.stderr and int(result.stdout.splitlines()[1]) > 0
    done = runner.invoke(app, ["install-analyses", str(old)])
    assert done.exit_code == 0, done.output
    got = plain_duckdb(old, {"n": "SELECT count(*) FROM xsp.top_kernels"}, tmp_path)
    assert got["n"][0][0] == int(result.stdout.splitlines()[1])
    again = runner.invoke(app, ["query", str(old), "SELECT 1", "--csv"])
    assert again.exit_code == 0 and "note" not in again.stderr


NARROWED = ("top_kernels", "gpu_busy_idle", "step_bound", "step_breakdown", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "kernel_info")


def _narrowed_both_ways(database: Path, tmp_path: Path, variables: str, options: AnalysisOptions) -> None:
    plain = plain_duckdb(database, {name: f"{variables} SELECT * FROM xsp.{name}" for name in NARROWED}, tmp_path)
    con = open_session(database, options)
    try:
        for name in NARROWED:
            assert _normal(plain[name]) == _normal(run_analysis(con, name).rows), name
    finally:
        con.close()


def test_set_variable_narrows_as_analyze_options_do(database, tmp_path):
    # The window is given after the run's first event (its earliest span, mark or counter sample), as --window takes it.
    first_event = (
        "(SELECT min(t) FROM (SELECT min(start_ns) AS t FROM spans UNION ALL SELECT min(ts_ns) FROM marks UNION ALL SELECT min(ts_ns) FROM counters))"
    )
    steps = plain_duckdb(
        database, {"s": f"SELECT iteration, start_ns - {first_event}, end_ns - {first_event} FROM steps ORDER BY iteration"}, tmp_path
    )["s"]
    assert len(steps) >= 2, "the trace has two steps"
    first, start, end = steps[0]
    _narrowed_both_ways(database, tmp_path, f"SET VARIABLE xsp_iterations = [{first}];", AnalysisOptions(iterations=[first]))
    _narrowed_both_ways(database, tmp_path, f"SET VARIABLE xsp_window_ns = [{start}, {end}];", AnalysisOptions(window_ns=(start, end)))
    # The narrowing changes something: one step holds fewer spans than the trace.
    counts = plain_duckdb(
        database,
        {"all": "SELECT count(*) FROM xsp.spans", "one": f"SET VARIABLE xsp_iterations = [{first}]; SELECT count(*) FROM xsp.spans"},
        tmp_path,
    )
    assert 0 < counts["one"][0][0] < counts["all"][0][0]


def test_set_variable_selects_runs_as_run_does(tmp_path):
    two = tmp_path / "two.duckdb"
    other = KINETO_TRACES["kineto_2025_all_options_h100"]
    assert runner.invoke(app, ["convert", str(TRACE), str(other), "-q", "-o", str(two)]).exit_code == 0
    _narrowed_both_ways(two, tmp_path, "SET VARIABLE xsp_run_ids = [2];", AnalysisOptions(runs=[2]))
    runs = plain_duckdb(two, {"r": "SET VARIABLE xsp_run_ids = [2]; SELECT DISTINCT run_id FROM xsp.top_kernels"}, tmp_path)["r"]
    assert runs == [[2]]
