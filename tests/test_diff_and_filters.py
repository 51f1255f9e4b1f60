"""`xsp-trace diff` (regression gate) and `analyze --iteration / --window`, in-process (CliRunner).

Hand-made pair, 12 steps each with one call of every entry (constant durations: no spread, so any
change is beyond the noise): kernel k 100 -> 110 ns per call and per step (+10 %), kernel j 100 ->
103 (+3 %), op "aten::mm, seq = N, op_id = M" 50 -> 50 under one name, new kernel z 5 ns (on one
side only: never gates).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support.handmade import Run, write
from xsp_trace.analyze.diff import Gate, diff_databases
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app

TWO_RANKS = sorted((Path(__file__).parent / "data" / "kineto_two_ranks_sendrecv").glob("sampled_rank-*.json.gz"))
STEPS = 12


def _db(path, k, j, z=None):
    run = Run(1)
    for step in range(STEPS):
        t = step * 10_000
        run.span("annotation", f"ProfilerStep#{step}", t, t + 10_000, iteration=step)
        run.span("op", f"aten::mm, seq = {step}, op_id = {100 + step}", t, t + 50)
        run.gpu("kernel", "k", (t + 1, t + 2), (t + 100, t + 100 + k))
        run.gpu("kernel", "j", (t + 3, t + 4), (t + 300, t + 300 + j))
        if z:
            run.gpu("kernel", "z", (t + 5, t + 6), (t + 500, t + 500 + z))
    return write(path, [run])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    return _db(d / "base.duckdb", 100, 100), _db(d / "new.duckdb", 110, 103, z=5)


def test_diff_library_rows(pair):
    result = diff_databases(*pair, Gate(fail_above_pct=5.0))
    found, story = result.rows, result.headline
    rows = {(r.level, r.name): r for r in found}
    assert story.per_step and (story.base_steps, story.new_steps) == (STEPS, STEPS)
    measures = {m.what: (m.base, m.new) for m in story.measures}
    assert measures["GPU kernel time per step"] == (200.0, 218.0) and measures["kernel calls per step"] == (2.0, 3.0)
    assert story.step_verdict(5.0) == "within noise" and not result.step_regression  # every step 10 us on both sides
    k, j, mm, z = rows[("kernel", "k")], rows[("kernel", "j")], rows[("op", "aten::mm")], rows[("kernel", "z")]
    assert (k.calls_base, k.calls_new, k.per_call_change_pct, k.per_step_change_pct, k.regression) == (STEPS, STEPS, 10.0, 10.0, True)
    assert (j.per_step_change_pct, j.significant, j.regression) == (3.0, True, False)
    assert (mm.calls_base, mm.per_call_change_pct, mm.significant, mm.regression) == (STEPS, 0.0, False, False)
    assert not [name for level, name in rows if level == "op" and name != "aten::mm"]  # one op, not twelve
    assert (z.calls_base, z.calls_new, z.per_step_ns_new, z.regression) == (0, STEPS, 5.0, False)
    assert found[0] is k  # regressions first


def test_diff_cli_exit_codes_and_formats(pair):
    runner = CliRunner()
    failing = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "5%"])
    assert failing.exit_code == 1, failing.output
    assert failing.output.splitlines()[0] == "diff base.duckdb -> new.duckdb: compared per step (12 and 12 steps)"
    assert "GPU kernel time per step: 0.0002 ms -> 0.000218 ms (+9.0 %)" in failing.output
    assert "1 entry regression(s)" in failing.output and "REGRESSION" in failing.output
    assert runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "15%"]).exit_code == 0
    assert runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--min-calls", str(STEPS + 1)]).exit_code == 0
    assert runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--min-share", "60%"]).exit_code == 0
    as_json = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--format", "json", "--limit", "0"])
    payload = json.loads(as_json.stdout)
    entries = {(e["level"], e["name"]): e for e in payload["entries"]}
    assert {"name", "level", "calls_base", "calls_new", "per_call_change_pct", "per_step_change_pct"} <= set(entries[("kernel", "k")])
    assert (entries[("kernel", "k")]["per_call_change_pct"], entries[("kernel", "z")]["per_call_change_pct"]) == (10.0, None)
    assert payload["headline"]["per_step"] is True and payload["gate"]["regressions"] == 1
    assert payload["rows_total"] == payload["rows_shown"] == len(payload["entries"]) == 4
    as_csv = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--format", "csv", "--level", "op"])
    (mm,) = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert (mm["name"], mm["calls_base"], mm["per_step_change_pct"]) == ("aten::mm", str(STEPS), "0.0")
    bad = runner.invoke(app, ["diff", str(pair[0]), str(pair[1]), "--fail-above", "lots"])
    assert bad.exit_code == 2 and "is not a percentage" in bad.output
    missing = runner.invoke(app, ["diff", str(pair[0]), "nope.duckdb"])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_diff_of_a_real_trace_with_itself_and_with_the_other_rank(converted_path):
    dbs = [converted_path(path) for path in TWO_RANKS]
    same = diff_databases(dbs[0], dbs[0]).rows
    assert same and not any(r.regression or r.significant or r.per_call_change_pct for r in same)
    # Rank 1 against rank 0: NCCL kernel calls, time per call and per step from the JSON, 2 steps each.
    raw = []
    for path in TWO_RANKS:
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        durations = [e["dur"] * 1000 for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel")]
        raw.append((len(durations), sum(durations) / len(durations), sum(durations) / 2))
    result = diff_databases(dbs[0], dbs[1])
    (nccl,) = [r for r in result.rows if r.level == "kernel" and r.name.startswith("ncclKernel")]
    assert result.headline.per_step and (result.headline.base_steps, result.headline.new_steps) == (2, 2)
    assert (nccl.calls_base, nccl.mean_ns_base, nccl.per_step_ns_base) == raw[0]
    assert (nccl.calls_new, nccl.mean_ns_new, nccl.per_step_ns_new) == raw[1]
    result = CliRunner().invoke(app, ["diff", str(dbs[0]), str(dbs[1]), "--level", "kernel", "--fail-above", "1000%"])
    gated = diff_databases(dbs[0], dbs[1], Gate(fail_above_pct=1000.0), levels=("kernel",))
    assert result.exit_code == (1 if gated.failed else 0)
    assert result.output.count("REGRESSION") == sum(r.regression for r in gated.rows) + gated.step_regression


def test_iteration_and_window_filters(converted_path):
    path = converted_path(*TWO_RANKS)
    every = run_analysis(open_session(path), "step_bound").records()
    only = run_analysis(open_session(path, AnalysisOptions(iterations=[552])), "step_bound").records()
    assert [r for r in every if r["iteration"] == 552] == only and len(only) == 2
    # The rank-1 run alone, through the CLI, as a window around its step 551: in µs after the run's
    # first event (its earliest span, mark or counter sample, read here from the tables).
    (step,) = [r for r in every if r["iteration"] == 551 and r["run_id"] == 2]
    con = open_session(path, AnalysisOptions(runs=[2]))
    start, end = con.execute("SELECT start_ns, end_ns FROM steps WHERE iteration = 551").fetchone()
    (first,) = con.execute(
        "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM spans UNION ALL SELECT min(ts_ns) FROM marks UNION ALL SELECT min(ts_ns) FROM counters)"
    ).fetchone()
    window = f"{(start - first) / 1000}us:{(end - first) / 1000}us"
    result = CliRunner().invoke(app, ["analyze", str(path), "--run", "2", "--window", window, "-a", "step_bound", "--format", "json"])
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
