"""The merged run of two profilers in Perfetto's own trace processor: one nested stack per thread.

The merged database (convert --one-execution of tests/data/nsys_2022_torch_one_execution_tiny_cnn)
is exported and read back; each torch op sits under the model and layer slices kept from nsys on
the same thread track, and no range shows twice.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from perfetto_harness.checks import assert_cpu_nesting
from perfetto_harness.trace_processor import WasmTraceProcessor
from xsp_trace.cli import app
from xsp_trace.perfetto import export_perfetto

pytestmark = pytest.mark.slow  # Perfetto's trace processor

CASE = Path(__file__).parent / "data" / "nsys_2022_torch_one_execution_tiny_cnn"


@pytest.fixture(scope="module")
def merged_trace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one_execution")
    database, trace = folder / "merged.duckdb", folder / "merged.pftrace"
    result = CliRunner().invoke(
        app, ["convert", str(CASE / "tiny_cnn_nsys.sqlite"), str(CASE / "tiny_cnn_kineto.json.gz"), "--one-execution", "-o", str(database), "-q"]
    )
    assert result.exit_code == 0, result.output
    export_perfetto(database, trace)
    con = duckdb.connect(str(database), read_only=True)
    with WasmTraceProcessor(trace) as tp:
        yield con, tp
    con.close()


def test_one_nested_stack_per_thread(merged_trace):
    con, tp = merged_trace
    assert assert_cpu_nesting(tp, con) == 0  # every CPU span at its depth on its thread track, none on overlap lanes
    tracks = tp.query(
        "SELECT t.utid, count(*) AS n FROM slice s JOIN thread_track t ON s.track_id = t.id WHERE s.category IN ('model', 'layer', 'op') GROUP BY t.utid"
    )
    assert len(tracks) == 1  # the torch ops and the nsys ranges on one track of the one thread


def test_each_range_once_with_the_ops_beneath(merged_trace):
    _, tp = merged_trace
    counts = {
        r["category"]: r["n"] for r in tp.query("SELECT category, count(*) AS n FROM slice WHERE category IN ('model', 'layer') GROUP BY category")
    }
    assert counts == {"model": 10, "layer": 70}  # 10 inferences of 7 layers, as each raw trace recorded them
    under = tp.query(
        """SELECT count(*) AS ops, count(*) FILTER (WHERE EXISTS (
               SELECT 1 FROM ancestor_slice(s.id) a WHERE a.category = 'model')) AS under_model
           FROM slice s WHERE s.category = 'op'"""
    )[0]
    assert under["ops"] == under["under_model"] == 1160
