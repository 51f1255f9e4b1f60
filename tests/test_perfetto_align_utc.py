"""Runs of one job on their absolute clock: `perfetto --align utc` and `analyze --window --align utc`.

The two ranks of tests/data/kineto_two_ranks_sendrecv were recorded together, their `ts` in UNIX-epoch
µs: the raw traces say rank 1 began ProfilerStep#551 192 µs after rank 0. Aligned by origin (the
default) both steps sit at 0; aligned on the absolute clock, Perfetto's own trace processor must show
each step where the raw trace has it, every slice of a run moved by that run's offset alone, and a
window on the absolute clock must select what per-run windows shifted by hand select.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import NSYS_EXPORTS
from kineto_cases import KINETO_TRACES
from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.analyze.session import AnalysisOptions, open_session
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # real traces, Perfetto's trace processor

RANKS = Path(__file__).parent / "data" / "kineto_two_ranks_sendrecv"
RANK_TRACES = [RANKS / "sampled_rank-0.json.gz", RANKS / "sampled_rank-1.json.gz"]
STEPS = ("ProfilerStep#551", "ProfilerStep#552")
runner = CliRunner()


def _raw_step_starts_ns(trace: Path) -> dict[str, int]:
    """ns of each profiler step's start in the raw Kineto trace (integer UNIX-epoch µs)."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    return {e["name"]: e["ts"] * 1000 for e in events if e.get("ph") == "X" and e.get("name") in STEPS}


def _perfetto(database: Path, out: Path, *args: str) -> Path:
    result = runner.invoke(app, ["perfetto", str(database), "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return out


def _slices_by_run(tp: WasmTraceProcessor) -> dict[int, Counter]:
    """(name, ts, dur) of every slice, per run: named by its thread's or track's process, its GPU's
    group track, or its own track (a run-wide one)."""
    rows = tp.query(
        "SELECT coalesce(p.name, pp.name, g.name, t.name) AS owner, s.name, s.ts, s.dur FROM slice AS s JOIN track AS t ON s.track_id = t.id "
        "LEFT JOIN thread_track AS tt ON tt.id = t.id LEFT JOIN thread AS th ON th.utid = tt.utid LEFT JOIN process AS p ON p.upid = th.upid "
        "LEFT JOIN process_track AS pt ON pt.id = t.id LEFT JOIN process AS pp ON pp.upid = pt.upid LEFT JOIN track AS g ON g.id = t.parent_id"
    )
    found: dict[int, Counter] = {}
    for r in rows:
        run = int(re.match(r"run (\d+) ·", r["owner"]).group(1))
        found.setdefault(run, Counter())[(r["name"], int(r["ts"]), int(r["dur"]))] += 1
    return found


def _absolute_origins(database: Path) -> dict[int, int]:
    con = duckdb.connect(str(database), read_only=True)
    try:
        return dict(con.execute("SELECT run_id, clock_origin_utc_ns + origin_ns FROM runs").fetchall())
    finally:
        con.close()


@pytest.fixture(scope="module")
def ranks(converted_path) -> Path:
    return converted_path(*RANK_TRACES)


def test_ranks_carry_absolute_clocks(ranks):
    """Each rank's runs.clock_origin_utc_ns maps its run clock onto the raw trace's epoch µs."""
    con = duckdb.connect(str(ranks), read_only=True)
    for run_id, trace in enumerate(RANK_TRACES, start=1):
        clock = con.execute("SELECT clock_origin_utc_ns FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        assert clock is not None
        starts = dict(con.execute("SELECT name, start_ns FROM spans WHERE run_id = ? AND name IN ?", [run_id, list(STEPS)]).fetchall())
        assert {name: clock + start for name, start in starts.items()} == _raw_step_starts_ns(trace)
    con.close()


def test_utc_places_each_rank_where_it_ran(ranks, tmp_path):
    raw = [_raw_step_starts_ns(t) for t in RANK_TRACES]
    zero = min(min(r.values()) for r in raw)
    assert raw[1][STEPS[0]] - raw[0][STEPS[0]] == 192_000  # the offset the test is about: not 0
    absolute = _absolute_origins(ranks)
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "utc.pftrace", "--align", "utc")) as tp:
        assert tp.problems() == []
        slices = _slices_by_run(tp)
        for run_id, steps in enumerate(raw, start=1):
            assert {name: ts for name, ts, _ in slices[run_id] if name in STEPS} == {name: ts - zero for name, ts in steps.items()}
            # each run's first slice at its first event on the absolute clock, less the earliest run's
            assert min(ts for _, ts, _ in slices[run_id]) == absolute[run_id] - min(absolute.values())


def test_utc_moves_every_slice_by_its_runs_offset(ranks, tmp_path):
    """The utc export is the default export with each run moved as a whole, by the raw traces' offset."""
    raw = [_raw_step_starts_ns(t)[STEPS[0]] for t in RANK_TRACES]  # each rank's first kept event is its first step
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "origin.pftrace")) as tp:
        by_origin = _slices_by_run(tp)
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "utc.pftrace", "--align", "utc")) as tp:
        by_utc = _slices_by_run(tp)
    assert by_origin.keys() == by_utc.keys() == {1, 2}
    for run_id, first in enumerate(raw, start=1):
        offset = first - min(raw)
        assert by_utc[run_id] == Counter({(name, ts + offset, dur): n for (name, ts, dur), n in by_origin[run_id].items()})
    assert by_utc[2] != by_origin[2]


def test_utc_window_of_the_export_is_one_instant(ranks, tmp_path):
    """--from-ns/--to-ns under --align utc count from the shared 0: run 2's slices are those of its
    own export with the window moved by its offset by hand."""
    offset = _raw_step_starts_ns(RANK_TRACES[1])[STEPS[0]] - _raw_step_starts_ns(RANK_TRACES[0])[STEPS[0]]
    lo, hi = 3_000_000, 5_000_000  # run 2 has spans starting within its offset of both ends
    window = ["--from-ns", str(lo), "--to-ns", str(hi)]
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "utc.pftrace", "--align", "utc", *window)) as tp:
        aligned = _slices_by_run(tp)[2]
    by_hand = ["--runs", "2", "--from-ns", str(lo - offset), "--to-ns", str(hi - offset)]
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "own.pftrace", *by_hand)) as tp:
        shifted = Counter({(name, ts + offset, dur): n for (name, ts, dur), n in _slices_by_run(tp)[2].items()})
    with WasmTraceProcessor(_perfetto(ranks, tmp_path / "unshifted.pftrace", "--runs", "2", *window)) as tp:
        unshifted = Counter({(name, ts + offset, dur): n for (name, ts, dur), n in _slices_by_run(tp)[2].items()})
    assert aligned == shifted and len(aligned) > 20
    assert aligned != unshifted  # the offset changes what the window holds


def test_kineto_and_nsys_in_one_database(converted_path, tmp_path):
    """Two tools' clocks (nsys's session start, Kineto's epoch µs) on one axis."""
    database = converted_path(NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"], KINETO_TRACES["kineto_cuda_sync_alexnet"])
    absolute = _absolute_origins(database)
    assert len(set(absolute.values())) == 2
    with WasmTraceProcessor(_perfetto(database, tmp_path / "both.pftrace", "--align", "utc")) as tp:
        assert tp.problems() == []
        slices = _slices_by_run(tp)
    assert {run: min(ts for _, ts, _ in s) for run, s in slices.items()} == {run: t - min(absolute.values()) for run, t in absolute.items()}


def _selected(database: Path, options: AnalysisOptions) -> set[tuple[int, int]]:
    con = open_session(database, options)
    try:
        return set(con.execute("SELECT run_id, span_id FROM spans").fetchall())
    finally:
        con.close()


def test_analyze_window_on_the_absolute_clock(ranks):
    """One window on the absolute clock selects what a window per run, moved by that run's offset by hand, selects."""
    raw = [_raw_step_starts_ns(t)[STEPS[0]] for t in RANK_TRACES]
    lo, hi = 3_000_000, 5_000_000  # run 2 has spans starting within its offset of both ends
    aligned = _selected(ranks, AnalysisOptions(window_ns=(lo, hi), align="utc"))
    by_hand = set()
    for run_id, first in enumerate(raw, start=1):
        offset = first - min(raw)
        by_hand |= _selected(ranks, AnalysisOptions(runs=[run_id], window_ns=(lo - offset, hi - offset)))
    assert aligned == by_hand
    assert aligned != _selected(ranks, AnalysisOptions(window_ns=(lo, hi)))  # the offset changes what is selected


def test_analyze_cli_window_utc(ranks):
    """The command line: gpu_busy_idle per rank in one window on the absolute clock, as in windows moved
    by hand by each rank's offset (rank 1: 192 µs, the raw traces' ProfilerStep#551 offset)."""
    result = runner.invoke(app, ["analyze", str(ranks), "--window", "3ms:5ms", "--align", "utc", "-a", "gpu_busy_idle", "--format", "json"])
    assert result.exit_code == 0, result.output
    aligned = json.loads(result.output)["gpu_busy_idle"]
    by_hand = []
    for run_id, window in ((1, "3ms:5ms"), (2, "2.808ms:4.808ms")):
        result = runner.invoke(app, ["analyze", str(ranks), "--run", str(run_id), "--window", window, "-a", "gpu_busy_idle", "--format", "json"])
        assert result.exit_code == 0, result.output
        by_hand += json.loads(result.output)["gpu_busy_idle"]
    assert aligned == by_hand and aligned


def test_run_without_absolute_clock_is_one_line(ranks, tmp_path):
    """A run whose clock_origin_utc_ns is unknown (set NULL by hand here) is named, with what to do."""
    database = tmp_path / "edited.duckdb"
    shutil.copy(ranks, database)
    con = duckdb.connect(str(database))
    con.execute("UPDATE runs SET clock_origin_utc_ns = NULL WHERE run_id = 2")
    con.close()
    out = tmp_path / "x.pftrace"
    for args in (["perfetto", str(database), "-o", str(out), "--align", "utc"], ["analyze", str(database), "--window", "0:10ms", "--align", "utc"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "run 2 (kineto: " in lines[0] and "has no absolute clock" in lines[0], result.output
        assert ("--runs 1" if args[0] == "perfetto" else "--run 1") in lines[0]
    assert not out.exists()
    _perfetto(database, out, "--align", "utc", "--runs", "1")  # the run that has one still aligns
