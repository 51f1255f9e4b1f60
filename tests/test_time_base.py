"""One time base: every time analyze and its findings show is ns after the run's origin
(runs.origin_ns, its first event), and the Perfetto export puts that origin at 0, so a gap time
read from `analyze` is the time Perfetto's own trace processor (the UI's wasm build) gives the
GPU slices around it. --window takes units on the same base; a database of schema 5 (no
origin_ns) is still read, with the same times.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.cli import app
from xsp_trace.perfetto import export_perfetto
from xsp_trace.store.opening import open_store

DATA = Path(__file__).parent / "data"
KINETO = DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz"  # Kineto: epoch-µs clock
NSYS = DATA / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite"  # nsys session clock, 2 GPUs
GPU_CATEGORIES = "('kernel', 'memcpy', 'memset')"  # what a GPU is busy with (xsp_gpu_busy_intervals)
GAPS_CHECKED = 25  # the longest gaps of each fixture, each checked in the trace processor


def _analyze(*args: str) -> dict:
    result = CliRunner().invoke(app, ["analyze", *args, "--format", "json", "--limit", "0"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _origin(database: Path) -> int:
    """The run's first event, from the tables in a plain DuckDB (what runs.origin_ns should hold)."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        return con.execute(
            "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM spans UNION ALL SELECT min(ts_ns) FROM marks "
            "UNION ALL SELECT min(ts_ns) FROM counters)"
        ).fetchone()[0]
    finally:
        con.close()


@pytest.fixture(scope="module", params=[KINETO, NSYS], ids=["kineto", "nsys"])
def exported(request, tmp_path_factory, converted_path):
    """The session's database of the trace (read only: a test that changes it works on a copy) and its Perfetto export."""
    database, trace = converted_path(request.param), tmp_path_factory.mktemp("timebase") / "run.pftrace"
    export_perfetto(database, trace)
    with WasmTraceProcessor(trace) as tp:
        yield database, tp


def _gpu_slices(device_id: int) -> str:
    """The trace processor's GPU slices of one device: on the stream tracks of its GPU group."""
    return (
        "slice AS s JOIN track AS t ON s.track_id = t.id JOIN track AS g ON t.parent_id = g.id "
        f"WHERE s.category IN {GPU_CATEGORIES} AND (g.name LIKE '% · GPU {device_id} · %' OR g.name LIKE '% · GPU {device_id}')"
    )


def test_origin_is_the_first_event(exported):
    database, _ = exported
    con = duckdb.connect(str(database), read_only=True)
    try:
        assert con.execute("SELECT origin_ns FROM runs").fetchall() == [(_origin(database),)]
    finally:
        con.close()


def test_gap_times_are_the_times_perfetto_shows(exported):
    """A gap of gpu_idle_gaps starts where the preceding GPU slice ends and ends where the next one
    starts, in the exported trace as Perfetto's trace processor reads it; the trace starts at 0, so
    the UI (which shows times from the trace's start) shows the same times."""
    database, tp = exported
    assert tp.query("SELECT start_ts FROM trace_bounds") == [{"start_ts": 0}]
    gaps = _analyze(str(database), "-a", "gpu_idle_gaps")["gpu_idle_gaps"]
    assert len(gaps) >= GAPS_CHECKED
    raw = _origin(database)
    assert all(0 < g["gap_start_ns"] < raw for g in gaps)  # relative, not the run clock
    for g in gaps[:GAPS_CHECKED]:
        where = _gpu_slices(g["device_id"])
        (before,) = tp.query(f"SELECT max(s.ts + s.dur) AS busy_until FROM {where} AND s.ts < {g['gap_start_ns']}")
        (after,) = tp.query(f"SELECT min(s.ts) AS next_start FROM {where} AND s.ts >= {g['gap_start_ns']}")
        assert (before["busy_until"], after["next_start"]) == (g["gap_start_ns"], g["gap_end_ns"]), g


def test_window_units_on_the_same_base(exported):
    """--window 120ms:180ms, 0.12s:0.18s, 120000us:180000us and plain ns select the same spans, on
    the base analyze shows: the gaps found inside the window lie in it, and every gap of the whole
    run that lies in it is found."""
    database, _ = exported
    every = _analyze(str(database), "-a", "gpu_idle_gaps")["gpu_idle_gaps"]
    lo, hi = sorted(g["gap_start_ns"] for g in every)[len(every) // 4], sorted(g["gap_end_ns"] for g in every)[3 * len(every) // 4]
    lo_us, hi_us = lo // 1000, hi // 1000 + 1
    outputs = [
        _analyze(str(database), "-a", "gpu_idle_gaps", "--window", window)["gpu_idle_gaps"]
        for window in (f"{lo_us}us:{hi_us}us", f"{lo_us / 1e3}ms:{hi_us / 1e3}ms", f"{lo_us / 1e6}s:{hi_us / 1e6}s", f"{lo_us * 1000}:{hi_us * 1000}")
    ]
    assert outputs[0] and all(o == outputs[0] for o in outputs)
    # The gaps of the GPU work starting in the window, from the tables in Python: the busy union of
    # each device's kernels, copies and sets, and the gaps of 1 µs or more between its stretches.
    origin = _origin(database)
    con = duckdb.connect(str(database), read_only=True)
    ops = con.execute(
        "SELECT device_id, start_ns - ?, end_ns - ? FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset') "
        "AND start_ns - ? >= ? AND start_ns - ? < ? ORDER BY device_id, start_ns, end_ns",
        [origin, origin, origin, lo_us * 1000, origin, hi_us * 1000],
    ).fetchall()
    con.close()
    expected, busy_until = set(), {}
    for device, start, end in ops:
        if device in busy_until and start - busy_until[device] >= 1000:
            expected.add((device, busy_until[device], start))
        busy_until[device] = max(busy_until.get(device, end), end)
    assert {(g["device_id"], g["gap_start_ns"], g["gap_end_ns"]) for g in outputs[0]} == expected


def test_window_outside_the_run_says_its_range(exported):
    database, _ = exported
    result = CliRunner().invoke(app, ["analyze", str(database), "-a", "gpu_idle_gaps", "--window", "100s:200s"])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    con = duckdb.connect(str(database), read_only=True)
    first, last = con.execute("SELECT min(start_ns), max(end_ns) FROM spans").fetchall()[0]
    con.close()
    origin = _origin(database)
    held = f"run 1: spans from {(first - origin) / 1e6:.3f} ms to {(last - origin) / 1e6:.3f} ms"
    assert f"--window 100000.000 ms:200000.000 ms holds no span of the selected runs (times after each run's first event; {held})" in line, line


def test_schema_5_database_reads_with_the_same_times(exported, tmp_path):
    """A database written before runs.origin_ns (schema 5) is read with the origin computed: the
    same gap times; appending to it is refused in one line."""
    database, _ = exported
    old = tmp_path / "old.duckdb"
    shutil.copy(database, old)
    con = duckdb.connect(str(old))
    con.execute("ALTER TABLE runs DROP COLUMN origin_ns")
    con.execute("UPDATE schema_info SET value = '5' WHERE key = 'schema_version'")
    con.close()
    assert _analyze(str(old), "-a", "gpu_idle_gaps")["gpu_idle_gaps"] == _analyze(str(database), "-a", "gpu_idle_gaps")["gpu_idle_gaps"]
    assert _analyze(str(old), "--run", "1", "-a", "gpu_utilization_bins") == _analyze(str(database), "--run", "1", "-a", "gpu_utilization_bins")
    con = open_store(old)  # what query and the Perfetto export read
    assert con.execute("SELECT origin_ns FROM runs").fetchall() == [(_origin(database),)]
    con.close()
    result = CliRunner().invoke(app, ["convert", str(KINETO), "-o", str(old), "--append"])
    assert result.exit_code == 2 and "schema version 5" in result.output


def test_report_utilisation_strip_is_on_the_same_base(exported, tmp_path):
    """The HTML report's utilisation strip says where its first bin starts -- each GPU's first
    operation, in ms after the run's first event, as the Perfetto export places it -- and its 50
    bins span that GPU's work to its last operation's end."""
    database, tp = exported
    report = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["analyze", str(database), "-a", "gpu_utilization_bins", "--report", str(report)])
    assert result.exit_code == 0, result.output
    html = report.read_text()
    checked = 0
    for device in range(8):
        ((first, last),) = [tuple(r.values()) for r in tp.query(f"SELECT min(s.ts) AS first, max(s.ts + s.dur) AS last FROM {_gpu_slices(device)}")]
        if first is not None:
            assert f"bins of {(last - first) / 50 / 1e6:.4g} ms, the first at {first / 1e6:.3f} ms" in html, (device, first, last)
            checked += 1
    assert checked >= 1
