"""CPU samples and thread states in the Perfetto export, read back by Perfetto's trace processor.

The nsys recording of tests/data/nsys_2022_cpu_sampling_hot_and_blocking: every sample the
export shows is an instant on its thread's own track, named after the sampled function; every
thread state a slice on the thread's scheduling track, with the database's times.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.perfetto import PerfettoOptions, export_perfetto

pytestmark = pytest.mark.slow  # the browser and Perfetto's trace processor

OWN = Path(__file__).parent / "data" / "nsys_2022_cpu_sampling_hot_and_blocking" / "cpu_sampling.sqlite"


@pytest.fixture(scope="module")
def exported(converted_path, tmp_path_factory):
    database = converted_path(OWN)
    trace = tmp_path_factory.mktemp("cpu") / "cpu.pftrace"
    stats = export_perfetto(database, trace, PerfettoOptions())
    con = duckdb.connect(str(database), read_only=True)
    with WasmTraceProcessor(trace) as tp:
        yield con, tp, stats
    con.close()


def test_samples_are_instants_on_their_thread_track(exported):
    con, tp, _ = exported
    origin = con.execute("SELECT origin_ns FROM runs").fetchone()[0]
    expected = con.execute("SELECT tid, function, ts_ns - ? FROM cpu_samples WHERE ts_ns >= ? ORDER BY ALL", [origin, origin]).fetchall()
    assert len(expected) > 200  # the 4 samples of interpreter start-up lie before the first span: left out
    rows = tp.query(
        """SELECT t.tid, s.name, s.ts FROM slice AS s JOIN thread_track AS tt ON s.track_id = tt.id
           JOIN thread AS t USING (utid) WHERE s.category = 'cpu_sample' AND s.dur = 0 ORDER BY 1, 2, 3"""
    )
    assert [(r["tid"], r["name"], r["ts"]) for r in rows] == sorted(expected)
    assert sum(1 for r in rows if r["name"] == "xsp_hot_spin") > 0.6 * len(rows)


def test_thread_states_are_slices_on_a_scheduling_track_per_thread(exported):
    con, tp, _ = exported
    origin = con.execute("SELECT origin_ns FROM runs").fetchone()[0]
    expected = con.execute(
        """SELECT 'thread ' || tid || ' · scheduling', state, greatest(start_ns, ?) - ?, end_ns - greatest(start_ns, ?)
           FROM thread_states WHERE end_ns > ? ORDER BY ALL""",
        [origin, origin, origin, origin],
    ).fetchall()
    rows = tp.query(
        """SELECT t.name AS track, s.name, s.ts, s.dur FROM slice AS s JOIN track AS t ON s.track_id = t.id
           WHERE s.category = 'thread_state' ORDER BY 1, 2, 3, 4"""
    )
    assert [(r["track"], r["name"], r["ts"], r["dur"]) for r in rows] == sorted(expected)
    assert {r["name"] for r in rows} == {"running", "descheduled"}
    assert tp.problems() == []
