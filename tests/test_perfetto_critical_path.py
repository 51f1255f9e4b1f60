"""`xsp-trace perfetto --critical-path`: each run's critical path as a track of its own, read back by
Perfetto's own trace processor -- one slice per segment of `analyze -a critical_path`, on the same
clock as the spans (so a segment sits over the span it names), tiling the step, linked by flows.
"""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA
from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # the browser and Perfetto's trace processor

runner = CliRunner()
TRACE = DATA / "critical_path_hta" / "cuda_event_sync.json.gz"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cp")
    database = folder / "t.duckdb"
    assert runner.invoke(app, ["convert", str(TRACE), "-o", str(database), "-q"]).exit_code == 0
    trace = folder / "t.pftrace"
    result = runner.invoke(app, ["perfetto", str(database), "-o", str(trace), "--critical-path"])
    assert result.exit_code == 0, result.output
    with WasmTraceProcessor(trace) as tp:
        yield database, tp


def test_the_track_holds_the_path_segment_by_segment(exported):
    database, tp = exported
    rows = run_analysis(open_session(database, AnalysisOptions()), "critical_path")
    at = {c: i for i, c in enumerate(rows.columns)}
    slices = tp.query(
        "SELECT s.ts, s.dur, s.name FROM slice AS s JOIN track AS t ON s.track_id = t.id WHERE t.name LIKE '% · critical path' ORDER BY s.ts"
    )
    assert len(slices) == len(rows.rows) > 10
    for got, want in zip(slices, rows.rows, strict=True):
        kind, name = want[at["kind"]], want[at["name"]]
        assert got["name"] == (f"{kind}: {name}" if name else kind)
        assert got["dur"] == want[at["on_path_ns"]]
    assert all(a["ts"] + a["dur"] == b["ts"] for a, b in zip(slices, slices[1:], strict=False))
    step = duckdb.connect(str(database), read_only=True).execute("SELECT end_ns - start_ns FROM steps").fetchone()[0]
    assert sum(s["dur"] for s in slices) == step


def test_segments_sit_over_the_spans_they_name(exported):
    """A kernel segment on the path has the kernel's own start and end on its GPU stream track."""
    _, tp = exported
    (row,) = tp.query(
        "SELECT cp.ts AS cp_ts, cp.dur AS cp_dur, k.ts AS k_ts, k.dur AS k_dur FROM slice AS cp JOIN track AS t ON cp.track_id = t.id "
        "JOIN slice AS k ON k.name = substr(cp.name, length('kernel: ') + 1) AND k.id <> cp.id "
        "WHERE t.name LIKE '% · critical path' AND cp.name LIKE 'kernel: %'"
    )
    assert (row["cp_ts"], row["cp_dur"]) == (row["k_ts"], row["k_dur"])


def test_flows_link_consecutive_segments(exported):
    _, tp = exported
    n = tp.scalar("SELECT count(*) FROM slice AS s JOIN track AS t ON s.track_id = t.id WHERE t.name LIKE '% · critical path'")
    linked = tp.scalar(
        "SELECT count(*) FROM flow AS f JOIN slice AS a ON f.slice_out = a.id JOIN slice AS b ON f.slice_in = b.id "
        "JOIN track AS ta ON a.track_id = ta.id JOIN track AS tb ON b.track_id = tb.id "
        "WHERE ta.name LIKE '% · critical path' AND tb.name LIKE '% · critical path' AND a.ts + a.dur = b.ts"
    )
    assert linked == n - 1
    assert tp.problems() == []
