"""CPU sampling and thread scheduling of nsys exports: every row of the export's own tables kept,
and cpu_hot_functions / thread_scheduling against causes known without our converter.

Fixtures: a recording of this project (tests/data/nsys_2022_cpu_sampling_hot_and_blocking: each
step spends ~35 ms in the C function xsp_hot_spin, sleeps 30 ms, blocks 20 ms in a pipe read), and
the public 2022.2 MPI+CUDA saxpy export, which holds samples and scheduling events beside GPU work.
References are read straight from the SQLite export with Python's sqlite3.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA, NSYS_EXPORTS
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.cli import app
from xsp_trace.formats import nsys_export as fmt

OWN = DATA / "nsys_2022_cpu_sampling_hot_and_blocking" / "cpu_sampling.sqlite"
SAXPY = NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"]
EXPORTS = {"own_cpu_sampling": OWN, **NSYS_EXPORTS}
HOT = "xsp_hot_spin"
GLOBAL_TID_MASK = fmt.ID_MASK


def _export(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        try:
            return con.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise


def _nvtx(path: Path, where: str) -> list[tuple]:
    """(name, start, end) of the NVTX events whose name (inline text or its StringIds text) passes `where` (on `name`)."""
    return _export(
        path,
        f"""SELECT name, start, "end" FROM (SELECT coalesce(s.value, n.text) AS name, n.start, n."end"
            FROM {fmt.NVTX_EVENTS} AS n LEFT JOIN StringIds AS s ON s.id = n.textId) WHERE {where}""",
    )


def _count(path: Path, table: str) -> int:
    rows = _export(path, f"SELECT count(*) FROM {table}")
    return rows[0][0] if rows else 0


def _rows(result, **where) -> list[dict]:
    named = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    return [r for r in named if all(r[k] == v for k, v in where.items())]


@pytest.mark.parametrize("case", sorted(EXPORTS))
def test_every_sample_frame_and_switch_of_the_export_is_a_row(case, converted):
    path = EXPORTS[case]
    con = converted(path)
    assert con.execute("SELECT count(*) FROM cpu_samples").fetchone()[0] == _count(path, fmt.COMPOSITE_EVENTS)
    assert con.execute("SELECT count(*) FROM cpu_sample_frames").fetchone()[0] == _count(path, fmt.SAMPLING_CALLCHAINS)
    assert con.execute("SELECT count(*) FROM thread_states").fetchone()[0] == _count(path, fmt.SCHED_EVENTS)
    ours = Counter(r[0] for r in con.execute("SELECT sample_id FROM cpu_samples").fetchall())
    assert ours == Counter(r[0] for r in _export(path, f"SELECT id FROM {fmt.COMPOSITE_EVENTS}"))


def test_the_fixtures_hold_what_these_tests_need():
    assert _count(OWN, fmt.COMPOSITE_EVENTS) > 200 and _count(OWN, fmt.SCHED_EVENTS) > 0
    assert _count(SAXPY, fmt.COMPOSITE_EVENTS) == 5451 and _count(SAXPY, fmt.SCHED_EVENTS) == 3238


def test_the_sampled_function_is_the_innermost_frame_with_its_module(converted):
    con = converted(OWN)
    reference = dict(
        _export(
            OWN,
            f"""SELECT c.id, s.value || ' @ ' || m.value FROM {fmt.SAMPLING_CALLCHAINS} AS c
            JOIN StringIds AS s ON s.id = c.symbol JOIN StringIds AS m ON m.id = c.module WHERE c.stackDepth = 0""",
        )
    )
    ours = dict(con.execute("SELECT sample_id, function || ' @ ' || module FROM cpu_samples").fetchall())
    assert ours == reference


@pytest.fixture(scope="module")
def own_hot(converted_path):
    return run_analysis(open_session(converted_path(OWN)), "cpu_hot_functions")


def test_every_sample_is_counted_once_and_the_hot_function_is_on_top(own_hot):
    run = _rows(own_hot, scope="run")
    assert sum(r["samples"] for r in run) == _count(OWN, fmt.COMPOSITE_EVENTS)
    assert run[0]["function"] == HOT and run[0]["samples_pct"] > 50


def test_each_step_is_topped_by_the_hot_function_and_counts_its_samples_once(own_hot):
    steps = _nvtx(OWN, "name LIKE 'ProfilerStep#%'")
    assert len(steps) == 6
    for text, start, end in steps:
        iteration = int(text.removeprefix("ProfilerStep#"))
        rows = _rows(own_hot, scope="step", iteration=iteration)
        in_window = _count(OWN, f"{fmt.COMPOSITE_EVENTS} WHERE start >= {start} AND start < {end}")
        assert sum(r["samples"] for r in rows) == in_window
        assert rows[0]["function"] == HOT


def _gpu_idle_sample_count(path: Path) -> int:
    """Samples taken while no GPU work ran, between the first and the last (stretches >= 1 us)."""
    intervals = sorted(
        _export(
            path,
            " UNION ALL ".join(f'SELECT start, "end" FROM {t}' for t in (fmt.KERNEL, fmt.MEMCPY, fmt.MEMSET)),
        )
    )
    gaps, covered = [], intervals[0][1]
    for start, end in intervals[1:]:
        if start - covered >= 1000:
            gaps.append((covered, start))
        covered = max(covered, end)
    times = [r[0] for r in _export(path, f"SELECT start FROM {fmt.COMPOSITE_EVENTS}")]
    return sum(1 for t in times for a, b in gaps if a <= t < b)


def test_the_samples_of_gpu_idle_time_are_those_no_gpu_work_covers(converted_path):
    result = run_analysis(open_session(converted_path(SAXPY)), "cpu_hot_functions")
    idle = _rows(result, scope="gpu idle")
    assert sum(r["samples"] for r in idle) == _gpu_idle_sample_count(SAXPY) > 0
    longest = max(idle, key=lambda r: (r["gap_ms"], r["samples"]))
    top = _rows(result, scope="gpu idle", gap_start_ms=longest["gap_start_ms"])[0]
    assert top["function"] == "main"  # the host loop of saxpy-mpi-cuda between its kernels


def test_the_main_thread_is_descheduled_while_it_sleeps(converted):
    con = converted(OWN)
    sleeps = _nvtx(OWN, "name = 'sleep'")
    assert len(sleeps) == 6
    for _, start, end in sleeps:
        descheduled = con.execute(
            """SELECT sum(least(end_ns, ?) - greatest(start_ns, ?)) FROM thread_states
               WHERE state = 'descheduled' AND tid = pid AND start_ns < ? AND end_ns > ?""",
            [end, start, end, start],
        ).fetchone()[0]
        assert descheduled >= 0.9 * (end - start)


def test_thread_scheduling_counts_the_sleeps_and_blocking_reads_of_the_main_thread(converted_path):
    result = run_analysis(open_session(converted_path(OWN)), "thread_scheduling")
    (main,) = [r for r in result.rows if dict(zip(result.columns, r, strict=True))["thread"] == "python"]
    main = dict(zip(result.columns, main, strict=True))
    blocked_ms = sum(end - start for _, start, end in _nvtx(OWN, "name IN ('sleep', 'blocking read')")) / 1e6
    assert blocked_ms > 6 * 45  # 30 ms sleep + 20 ms read per step, as program.py asks
    assert main["descheduled_ms"] >= 0.9 * blocked_ms
    assert main["switches"] == _count(
        OWN, f"{fmt.SCHED_EVENTS} WHERE (globalTid & {GLOBAL_TID_MASK}) = (globalTid >> {fmt.PID_SHIFT} & {GLOBAL_TID_MASK})"
    )


def _descheduled_in_gaps(path: Path, tid: int) -> int:
    """ns the thread spent switched out while no GPU work ran, from the export's own rows."""
    intervals = sorted(_export(path, " UNION ALL ".join(f'SELECT start, "end" FROM {t}' for t in (fmt.KERNEL, fmt.MEMCPY, fmt.MEMSET))))
    gaps, covered = [], intervals[0][1]
    for start, end in intervals[1:]:
        if start - covered >= 1000:
            gaps.append((covered, start))
        covered = max(covered, end)
    events = sorted(_export(path, f"SELECT start, isSchedIn FROM {fmt.SCHED_EVENTS} WHERE (globalTid & {GLOBAL_TID_MASK}) = {tid}"))
    last = max(r[0] for r in _export(path, f"SELECT start FROM {fmt.SCHED_EVENTS}"))
    ends = [e[0] for e in events[1:]] + [last]
    return sum(max(0, min(end, b) - max(start, a)) for (start, sched_in), end in zip(events, ends, strict=True) if not sched_in for a, b in gaps)


def test_thread_scheduling_of_the_launch_thread_in_gpu_idle_time(converted_path):
    result = run_analysis(open_session(converted_path(SAXPY)), "thread_scheduling")
    rows = [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    launcher = rows[0]
    assert launcher["thread"] == "MPI Rank 0" and launcher["launches"] == 20  # 5 kernels, 15 copies
    for row in rows:
        assert row["descheduled_in_gpu_idle_ms"] == round(_descheduled_in_gaps(SAXPY, row["tid"]) / 1e6, 3)


def test_each_gpu_idle_gap_names_the_function_sampled_most_on_the_launch_thread(converted_path):
    con = open_session(converted_path(SAXPY))
    origin = con.execute("SELECT origin_ns FROM runs").fetchone()[0]
    samples = _export(
        SAXPY,
        f"""SELECT e.start, e.globalTid & {GLOBAL_TID_MASK}, s.value FROM {fmt.COMPOSITE_EVENTS} AS e
            JOIN {fmt.SAMPLING_CALLCHAINS} AS c ON c.id = e.id AND c.stackDepth = 0 JOIN StringIds AS s ON s.id = c.symbol""",
    )
    gaps = run_analysis(con, "gpu_idle_gaps").records()
    named = [g for g in gaps if g["sampled_function"] is not None]
    assert named and any(g["cpu_span"] is None for g in named)  # samples say what the thread did where no span does
    for gap in gaps:
        start, end = gap["gap_start_ns"] + origin, gap["gap_end_ns"] + origin
        counts = Counter(name for ts, tid, name in samples if tid == gap["launch_tid"] and start <= ts < end)
        if not counts:
            assert gap["sampled_function"] is None
            continue
        top = min(counts, key=lambda name: (-counts[name], name))
        assert (gap["sampled_function"], gap["sampled_pct"]) == (top, round(100 * counts[top] / sum(counts.values()), 1))


def test_a_schema_6_database_reads_with_no_samples(converted_path, tmp_path):
    """A database written before the CPU sampling tables (schema 6) is still analysed: no samples;
    appending to it is refused in one line."""
    old = tmp_path / "old.duckdb"
    shutil.copy(converted_path(OWN), old)
    with duckdb.connect(str(old)) as con:
        for table in ("cpu_samples", "cpu_sample_frames", "thread_states"):
            con.execute(f"DROP TABLE {table}")
        con.execute("UPDATE schema_info SET value = '6' WHERE key = 'schema_version'")
    session = open_session(old)
    assert run_analysis(session, "cpu_hot_functions").rows == []
    assert run_analysis(session, "blocking_os_calls").rows  # the OS calls are spans of schema 6 too
    result = CliRunner().invoke(app, ["convert", str(OWN), "-o", str(old), "--append"])
    assert result.exit_code == 2 and "schema version 6" in result.output
