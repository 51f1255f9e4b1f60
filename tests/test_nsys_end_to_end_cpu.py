"""End to end on the CPU: profile a Python program with nested NVTX ranges under the real nsys,
convert the real .nsys-rep, and check nesting and durations (the latter against `nsys stats`)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import nsys_stats, require_nsys
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # nsys capture

PROGRAM = Path(__file__).parent / "programs" / "nested_nvtx.py"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """(report, database) for one nsys run of programs/nested_nvtx.py."""
    nsys = require_nsys()
    work = tmp_path_factory.mktemp("e2e")
    report = work / "nested.nsys-rep"
    proc = subprocess.run(
        [
            nsys,
            "profile",
            "--trace=nvtx,osrt",
            "--sample=none",
            "--cpuctxsw=none",
            "--force-overwrite=true",
            "-o",
            str(report.with_suffix("")),
            sys.executable,
            str(PROGRAM),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.exists(), proc.stdout + proc.stderr
    digest = hashlib.sha256(report.read_bytes()).hexdigest()
    db_path = work / "nested.duckdb"
    result = CliRunner().invoke(app, ["convert", str(report), "-o", str(db_path), "-q"])
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(report.read_bytes()).hexdigest() == digest  # input untouched
    return report, duckdb.connect(str(db_path), read_only=True)


def test_export_is_cached_beside_the_report(profiled):
    report, _ = profiled
    cached = list((report.parent / ".xsp-cache").glob("nested.nsys-rep.*.sqlite"))
    assert len(cached) == 1


def test_levels_and_nesting(profiled):
    _, db = profiled
    rows = db.execute(
        """SELECT s.kind, s.name, s.depth, s.layer_index, s.iteration, p.kind AS parent_kind, s.category
           FROM spans s LEFT JOIN spans p ON p.run_id = s.run_id AND p.span_id = s.parent_id
           WHERE s.kind IN ('model', 'layer', 'op') ORDER BY s.start_ns, s.depth"""
    ).fetchall()
    expected = []
    for iteration in range(3):
        expected.append(("model", "xsp.model:toy", 0, None, iteration, None, "xsp"))
        for index, (name, kind) in enumerate([("conv1", "Conv2d"), ("fc", "Linear")]):
            expected.append(("layer", f"xsp.layer:{index}:{name}:{kind}", 1, index, iteration, "model", "xsp"))
            expected.append(("op", "aten::addmm", 2, None, iteration, "layer", None))
    assert rows == expected


def test_children_lie_inside_parents_and_last_at_least_their_sleeps(profiled):
    _, db = profiled
    outside = db.execute(
        """SELECT count(*) FROM spans s JOIN spans p ON p.run_id = s.run_id AND p.span_id = s.parent_id
           WHERE s.start_ns < p.start_ns OR s.end_ns > p.end_ns"""
    ).fetchone()[0]
    assert outside == 0
    shortest = dict(db.execute("SELECT kind, min(end_ns - start_ns) FROM spans GROUP BY kind").fetchall())
    assert shortest["op"] >= 2_000_000  # time.sleep(2 ms) inside
    assert shortest["layer"] >= 3_000_000  # the op + 1 ms
    assert shortest["model"] >= 6_000_000


def test_durations_equal_nsys_stats_nvtxsum(profiled, tmp_path):
    report, db = profiled
    ref = nsys_stats(report, "nvtxsum", tmp_path)
    theirs = {(r["Style"], r["Range"]): (int(r["Instances"]), int(r["Total Time (ns)"]), int(r["Min (ns)"]), int(r["Max (ns)"])) for r in ref}
    ours = {
        ("PushPop" if style == "push_pop" else "StartEnd", tag): (n, total, lo, hi)
        for style, tag, n, total, lo, hi in db.execute(
            """SELECT s.range_style, CASE WHEN s.category IS NULL THEN s.name ELSE s.category || ':' || s.name END,
                      count(*), sum(s.end_ns - s.start_ns), min(s.end_ns - s.start_ns), max(s.end_ns - s.start_ns)
               FROM spans s WHERE s.range_style IS NOT NULL GROUP BY 1, 2"""
        ).fetchall()
    }
    assert len(theirs) == 5
    assert ours == theirs


def test_range_ending_on_another_thread_and_mark(profiled):
    _, db = profiled
    tid, end_tid, pid = db.execute("SELECT tid, end_tid, pid FROM spans WHERE name = 'async work'").fetchone()
    assert end_tid is not None and end_tid != tid
    assert db.execute("SELECT count(*) FROM threads WHERE pid = ? AND tid = ?", [pid, tid]).fetchone()[0] == 1
    assert db.execute("SELECT name FROM marks").fetchall() == [("done",)]
    assert db.execute("SELECT source_kind, tool, source_format_version FROM runs").fetchone()[:2] == ("nsys", "nsys")


def test_osrt_sum_equals_nsys_stats_osrtsum(profiled, tmp_path):
    """The program's OS runtime calls (recorded with --trace=osrt): every row of nsys's own osrtsum
    report -- share, total, calls, mean, median, min, max, stddev -- equal to the analysis."""
    from conftest import nsys_version
    from xsp_trace.analyze.session import open_session, run_analysis
    from xsp_trace.formats.nsys_stats import report_name

    report, db = profiled
    ref = nsys_stats(report, report_name("osrt_sum", nsys_version()), tmp_path)
    assert len(ref) >= 5  # read, open64, clock_nanosleep, sem_wait, mmap64, ...
    theirs = {
        r["Name"]: (
            float(r["Time (%)"]),
            int(r["Total Time (ns)"]),
            int(r["Num Calls"]),
            float(r["Avg (ns)"]),
            float(r["Med (ns)"]),
            int(r["Min (ns)"]),
            int(r["Max (ns)"]),
            float(r["StdDev (ns)"]),
        )
        for r in ref
    }
    path = db.execute("PRAGMA database_list").fetchall()[0][2]
    ours = {
        r["name"]: (
            float(r["time_pct"]),
            r["total_ns"],
            r["calls"],
            float(r["avg_ns"]),
            float(r["med_ns"]),
            r["min_ns"],
            r["max_ns"],
            float(r["stddev_ns"]),
        )
        for r in run_analysis(open_session(path), "osrt_sum").records()
    }
    assert ours == theirs
