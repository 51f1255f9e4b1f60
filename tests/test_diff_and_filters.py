"""`xsp-trace diff` (regression gate) and `analyze --iteration / --window`, in-process (CliRunner).

Hand-made pair: kernel k 100 -> 110 ns per step (+10 %), kernel j 100 -> 103 (+3 %), op aten::mm 50
-> 50, new kernel z 5 ns (2.4 % of the baseline's 200 ns of kernel time: above --min-share 1 %).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from handmade_trace import Run, write
from xsp_trace.analyze import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.diff import diff_databases
from xsp_trace.cli import app

TWO_RANKS = sorted((Path(__file__).parent / "data" / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz"))


def _db(path, k, j, z=None):
    run = Run(1)
    run.span("annotation", "ProfilerStep#1", 0, 10_000, iteration=1)
    run.span("op", "aten::mm", 0, 50)
    run.gpu("kernel", "k", (1, 2), (100, 100 + k))
    run.gpu("kernel", "j", (3, 4), (300, 300 + j))
    if z:
        run.gpu("kernel", "z", (5, 6), (500, 500 + z))
    return write(path, [run])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    return _db(d / "base.duckdb", 100, 100), _db(d / "new.duckdb", 110, 103, z=5)


def test_diff_library_rows(pair):
    rows = {(r.level, r.name): r for r in diff_databases(*pair, fail_above_pct=5.0)}
    assert (rows[("kernel", "k")].delta_pct, rows[("kernel", "k")].regression) == (10.0, True)
    assert (rows[("kernel", "j")].delta_pct, rows[("kernel", "j")].regression) == (3.0, False)
    assert (rows[("op", "aten::mm")].delta_ns, rows[("op", "aten::mm")].regression) == (0.0, False)
    assert (rows[("kernel", "z")].base_per_step_ns, rows[("kernel", "z")].new_per_step_ns, rows[("kernel", "z")].regression) == (None, 5.0, True)


def test_diff_cli_exit_codes(pair):
    runner = CliRunner()
    failing = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "5%"])
    assert failing.exit_code == 1, failing.output
    assert "2 regression(s)" in failing.output and "REGRESSION\tk" in failing.output
    passing = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "15%", "--min-share", "3%"])
    assert passing.exit_code == 0, passing.output
    bad = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "lots"])
    assert bad.exit_code == 2 and "is not a percentage" in bad.output
    missing = runner.invoke(app, ["diff", str(pair[0]), "nope.duckdb"])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_diff_of_a_real_trace_with_itself_and_with_the_other_rank(converted_path, tmp_path):
    dbs = [converted_path(path) for path in TWO_RANKS]
    assert not any(r.regression or r.delta_ns for r in diff_databases(dbs[0], dbs[0]))
    # Rank 1 against rank 0: per-step NCCL kernel time from the JSON, 2 steps each.
    per_step = []
    for path in TWO_RANKS:
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        per_step.append(sum(e["dur"] for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")) * 1000 / 2)
    rows = {(r.level, r.name): r for r in diff_databases(dbs[0], dbs[1])}
    (nccl,) = [r for (lvl, name), r in rows.items() if lvl == "kernel" and name.startswith("ncclKernel")]
    assert (nccl.base_per_step_ns, nccl.new_per_step_ns) == (per_step[0], per_step[1])
    result = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--level", "kernel", "--fail-above", "1000%"])
    gate = diff_databases(dbs[0], dbs[1], fail_above_pct=1000.0, levels=("kernel",))
    assert result.exit_code == (1 if any(r.regression for r in gate) else 0)
    assert result.output.count("REGRESSION") == sum(r.regression for r in gate)


def test_iteration_and_window_filters(converted_path):
    path = converted_path(*TWO_RANKS)
    every = run_analysis(open_session(path), "step_bound").records()
    only = run_analysis(open_session(path, AnalysisOptions(iterations=[552])), "step_bound").records()
    assert [r for r in every if r["iteration"] == 552] == only and len(only) == 2
    # The rank-1 run alone, through the CLI, as a window around its step 551.
    (step,) = [r for r in every if r["iteration"] == 551 and r["run_id"] == 2]
    con = open_session(path, AnalysisOptions(runs=[2]))
    start, end = con.execute("SELECT start_ns, end_ns FROM steps WHERE iteration = 551").fetchone()
    result = CliRunner().invoke(app, ["analyze", str(path), "--run", "2", "--window", f"{start}:{end}", "-a", "step_bound", "--format", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)["step_bound"]
    assert row["iteration"] == 551 and row["gpu_busy_ms"] == step["gpu_busy_ms"]
    assert CliRunner().invoke(app, ["analyze", str(path), "--iteration", "x"]).exit_code == 2


def test_run_and_iteration_together_narrow_the_memory_summaries(converted_path):
    """--run with --iteration: memops follows the narrowed spans of the selected run only (each
    narrowing view reads the database's tables, never a view it replaces)."""
    path = converted_path(*TWO_RANKS)
    both = open_session(path, AnalysisOptions(runs=[2], iterations=[551]))
    alone = open_session(path, AnalysisOptions(iterations=[551]))
    rows = run_analysis(both, "cuda_gpu_mem_size_sum").records()
    assert rows and rows == [r for r in run_analysis(alone, "cuda_gpu_mem_size_sum").records() if r["run_id"] == 2]
