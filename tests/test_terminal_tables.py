"""`xsp-trace analyze` as a person reads it, in-process on real traces: tables that fit 120 columns
with no 10-digit and no wrapped number, times in ms against the nsys export's own kernel times,
kernel base names against nsys's shortName, --sort, --columns, the one-screen summary, empty
tables that say why, and "did you mean"."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DATA, NSYS_EXPORTS
from xsp_trace.analyze.catalog import ANALYSES
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.analyze.summary import TOP_KERNELS, summarize
from xsp_trace.cli import app
from xsp_trace.naming import short_kernel_name, short_names
from xsp_trace.terminal.readable_table import shorten_distinct, shorten_middle

runner = CliRunner()
H100 = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"]
QWEN = DATA / "kineto_2025_all_options_h100" / "tracelens_h100_qwen1.5_0.5b.json.gz"
WIDTH = 120


def _analyze(db: Path, *args: str):
    return runner.invoke(app, ["analyze", str(db), *args], env={"COLUMNS": str(WIDTH)})


def _kernel_times(export: Path) -> dict[str, tuple[int, int]]:
    """{demangled name: (instances, total ns)} read from the nsys export with plain SQLite."""
    with sqlite3.connect(export) as con:
        rows = con.execute(
            "SELECT s.value, count(*), sum(k.[end] - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS s ON s.id = k.demangledName GROUP BY s.value"
        ).fetchall()
    return {name: (n, total) for name, n, total in rows}


@pytest.mark.parametrize("export", sorted(NSYS_EXPORTS.values()), ids=lambda p: p.parent.name)
def test_short_kernel_name_is_nsys_short_name(export):
    with sqlite3.connect(export) as con:
        pairs = con.execute(
            "SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS d ON d.id = k.demangledName JOIN StringIds AS s ON s.id = k.shortName"
        ).fetchall()
    assert pairs
    assert [(full, short_kernel_name(full)) for full, _ in pairs] == [(full, short) for full, short in pairs]
    for other in ("aten::mm", "ProfilerStep#6", "[CUDA memcpy Host-to-Device]", "<built-in method embedding of type object at 0x7d>"):
        assert short_kernel_name(other) == other


def _table_body(lines: list[str], start: int) -> list[str]:
    """The row lines of the table whose header rule is at or after `start`."""
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("─"))
    body = []
    for line in lines[rule + 1 :]:
        if not line.strip() or line.startswith("  ("):
            break
        body.append(line)
    return body


def _check_fits(output: str, rows: int, limit: int) -> None:
    lines = output.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    assert not re.search(r"\d{10}", output), re.search(r".*\d{10}.*", output).group()
    assert not re.search(r"\d,\d{3}", output)  # no thousands separators
    if rows:
        # One line per row: no cell (a number least of all) wrapped onto a second line.
        assert len(_table_body(lines, 0)) == min(rows, limit)


@pytest.mark.parametrize("export", sorted(NSYS_EXPORTS.values()), ids=lambda p: p.parent.name)
def test_wide_analyses_fit_120_columns_with_no_long_or_wrapped_number(converted_path, export):
    db = converted_path(export)
    con = open_session(db, AnalysisOptions())
    results = {a.name: run_analysis(con, a.name) for a in ANALYSES}
    wide = [name for name, r in results.items() if len(r.columns) >= 10]
    assert len(wide) >= 15
    for name in wide:
        result = _analyze(db, "-a", name)
        assert result.exit_code == 0, result.output
        _check_fits(result.output, len(results[name].rows), 30)


def test_wide_analyses_fit_on_a_kineto_trace_with_an_epoch_clock(converted_path):
    db = converted_path(QWEN)
    result = _analyze(db, "-a", "gpu_idle_gaps")
    assert result.exit_code == 0, result.output
    _check_fits(result.output, 30, 30)


def test_times_are_ms_of_the_exports_own_kernel_times(converted_path):
    """top_kernels' total_ns in the table: ms with µs precision, equal to the export's sum(end - start)."""
    expected = _kernel_times(H100)
    result = _analyze(converted_path(H100), "-a", "top_kernels", "--full-names", "--wide", "--limit", "0", "--columns", "total_ms,instances,name")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].split()[:3] == ["total_ms", "instances", "name"]
    shown = {}
    for line in _table_body(lines, 0):
        total, instances, name = line.split(maxsplit=2)
        shown[name.rstrip()] = (int(instances), total)
    assert shown == {name: (n, f"{total / 1e6:.3f}") for name, (n, total) in expected.items()}


def test_sort_and_columns(converted_path):
    db = converted_path(H100)
    expected = _kernel_times(H100)
    result = _analyze(
        db, "-a", "top_kernels", "--sort", "instances:asc", "--columns", "name,instances", "--format", "csv", "--full-names", "--limit", "0"
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.output)))
    assert rows[0] == ["name", "instances"]
    counts = [int(r[1]) for r in rows[1:]]
    assert counts == sorted(n for n, _ in expected.values())
    assert {r[0]: int(r[1]) for r in rows[1:]} == {name: n for name, (n, _) in expected.items()}
    # Table: the largest total first by default, the header's ms name accepted.
    table = _analyze(db, "-a", "top_kernels", "--sort", "total_ms", "--columns", "name,total_ms", "--limit", "3")
    body = _table_body(table.output.splitlines(), 0)
    largest = sorted(expected.items(), key=lambda kv: -kv[1][1])[:3]
    assert [line.split()[-1] for line in body] == [f"{total / 1e6:.3f}" for _, (_, total) in largest]
    head, tail = body[0].split()[0].split("…")  # too long for 120 columns: shortened in the middle
    assert largest[0][0].startswith(head) and largest[0][0].endswith(tail) and len(head) > len(tail)


def test_summary_is_one_screen_from_the_analyses(converted_path):
    db = converted_path(H100)
    con = open_session(db, AnalysisOptions())
    summary = summarize(con)
    busy = run_analysis(con, "gpu_busy_idle").records()
    assert [(r["run_id"], r["device_id"], r["window_ns"], r["busy_pct"], r["idle_ns"]) for r in summary.gpus.records()] == [
        (r["run_id"], r["device_id"], r["window_ns"], r["busy_pct"], r["idle_ns"]) for r in busy
    ]
    # Memory copies dominate this trace's GPU time (the export's memcpy time is ~40x its kernel time).
    with sqlite3.connect(H100) as raw:
        copies = raw.execute("SELECT sum([end] - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
    assert copies > 10 * sum(t for _, t in _kernel_times(H100).values())
    assert all(r["largest_share"].startswith("memory ") for r in summary.gpus.records())
    top = max(_kernel_times(H100).items(), key=lambda kv: kv[1][1])
    assert summary.kernels.rows[0][1] == top[0] and len(summary.kernels.rows) == TOP_KERNELS
    assert summary.runs_without_steps == [1] and not summary.steps.rows
    result = _analyze(db)
    assert result.exit_code == 0, result.output
    out = result.output
    assert len(out.splitlines()) <= 50 and all(len(line) <= WIDTH for line in out.splitlines())
    for title in ("GPU time", "What bounds the steps", "Top kernels", "Findings", "no steps:", "analyze --all"):
        assert title in out
    assert short_kernel_name(top[0])[:30] in out  # the head of a name shortened in the middle
    everything = _analyze(db, "--all")
    assert all(f"[{a.name}]" in everything.output for a in ANALYSES if a.name != "compare_runs")


def test_notes_only_where_they_apply(converted_path):
    db = converted_path(H100)
    assert "note:" not in _analyze(db, "-a", "top_kernels").output
    note = " ".join(_analyze(converted_path(QWEN), "-a", "model_info").output.split())  # its `corrected` says no
    assert "note: run 1: model and layer times are measured while the profiler also recorded the work inside them" in note


def _steps_in_trace(path: Path) -> list[int]:
    with gzip.open(path, "rt") as f:
        names = {e.get("name", "") for e in json.load(f)["traceEvents"]}
    return sorted(int(n.split("#")[1]) for n in names if re.fullmatch(r"ProfilerStep#\d+", n))


def test_empty_results_say_why(converted_path, tmp_path):
    qwen = converted_path(QWEN)
    steps = _steps_in_trace(QWEN)
    assert steps == [6]
    missing = _analyze(qwen, "--iteration", "99", "-a", "step_bound")
    assert missing.exit_code == 2
    assert "has no iteration 99 (iterations: run 1: 6)" in missing.output and "Traceback" not in missing.output
    partly = _analyze(qwen, "--iteration", "6,99", "-a", "step_bound")
    assert partly.exit_code == 0 and "note: no iteration 99 in this trace" in partly.output

    h100 = converted_path(H100)
    with sqlite3.connect(H100) as raw:
        last = raw.execute("SELECT max([end]) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    outside = _analyze(h100, "--window", f"{last * 2}:{last * 3}", "-a", "top_kernels")
    assert outside.exit_code == 2 and "holds no span of the selected runs" in outside.output and "run 1: spans from 0.000 ms to " in outside.output
    no_steps = _analyze(h100, "-a", "step_bound", "-a", "step_breakdown")
    assert no_steps.output.count("(no steps: this trace has no model ranges or iteration ranges") == 2
    clean = _analyze(h100, "-a", "cuda_sync_memset")
    assert "nothing to flag" in clean.output
    no_modules = _analyze(qwen, "--layer-ranges", "modules", "-a", "layer_gpu_aggregates")
    assert no_modules.exit_code == 0 and "--python-functions" in no_modules.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["-a", "top_kernel"], "unknown analysis top_kernel (did you mean top_kernels?)"),
        (["-a", "top_kernels", "--sort", "totl_ms"], "--sort totl_ms: no such column (did you mean total_ms?)"),
        (["-a", "top_kernels", "--columns", "name,instance"], "--columns instance: no such column (did you mean instances?)"),
        (["-a", "top_kernels", "--sort", "total_ms:up"], "the order is asc or desc"),
    ],
)
def test_did_you_mean(converted_path, args, message):
    result = _analyze(converted_path(H100), *args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_names_are_shortened_in_the_middle_and_wide_keeps_them():
    assert shorten_middle("abcdefghij", 7) == "abcd…ij"
    assert shorten_middle("abc", 7) == "abc"


def test_wide_and_full_names(converted_path):
    db = converted_path(H100)
    full = max(_kernel_times(H100), key=len)
    narrow = _analyze(db, "-a", "kernel_launch_stats", "--limit", "0")
    assert full not in narrow.output and "not shown, to fit 120 columns" in narrow.output
    wide = _analyze(db, "-a", "kernel_launch_stats", "--limit", "0", "--wide", "--full-names")
    assert full in wide.output and "not shown" not in wide.output
    assert "kernel_stddev_ms" in wide.output


def test_kernels_sharing_a_base_name_keep_their_template_arguments():
    """In one table, a base name nsys gives several kernels is followed by the kernel's template
    arguments, so that different kernels never read alike; a base name of one kernel stays bare."""
    with sqlite3.connect(H100) as con:
        pairs = con.execute(
            "SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS d ON d.id = k.demangledName JOIN StringIds AS s ON s.id = k.shortName"
        ).fetchall()
    shared = {s for _, s in pairs if sum(1 for _, t in pairs if t == s) > 1}
    assert "vectorized_elementwise_kernel" in shared
    shown = short_names([full for full, _ in pairs])
    for full, short in pairs:
        assert shown[full].startswith(short + "<") if short in shared else shown[full] == short
        assert "at::native::" not in shown[full]
    assert len(set(shown.values())) == len(pairs)


def test_names_cut_to_fit_do_not_read_alike():
    """The H100 export's kernel names (CUPTI's shortName, read with plain SQLite) cut to a column's
    width: cut in the middle only, its cuBLAS GEMMs collapse into 9 texts for 15 names at 50
    columns; shown where each parts from its nearest look-alike, all 15 read differently (the split-k
    GEMM and its plain twin, 248 and 240 instances in the README's main job, among them)."""
    with sqlite3.connect(H100) as raw:
        names = sorted({r[0] for r in raw.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName")})
    assert len(names) == 15 and len({shorten_middle(n, 50) for n in names}) == 9
    shown = shorten_distinct(names, 50)
    assert len(set(shown)) == 15 and max(len(s) for s in shown) <= 50
    assert shorten_distinct(names + names[:3], 50) == shown + shown[:3]  # equal names stay equal
    assert [s for s, n in zip(shown, names, strict=True) if len(n) <= 50] == [n for n in names if len(n) <= 50]
