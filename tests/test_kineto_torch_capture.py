"""A CPU trace recorded here with torch.profiler converts, its record_function ranges nesting the aten ops.

The reference for nesting is torch's own event tree (FunctionEvent.cpu_parent), for counts its
key_averages(); xsp-trace only sees the exported Chrome trace.
"""

from __future__ import annotations

from collections import Counter

import duckdb
import pytest
from typer.testing import CliRunner

from xsp_trace.cli import app
from xsp_trace.naming import layer_range_name, model_range_name

pytestmark = pytest.mark.slow  # torch captures

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    work = tmp_path_factory.mktemp("torch_capture")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    trace = work / "trace.json"
    seen = {}

    def ready(prof):  # called once, after the two active steps
        prof.export_chrome_trace(str(trace))
        seen["counts"] = {e.key: e.count for e in prof.key_averages()}
        seen["pairs"] = Counter((e.name, e.cpu_parent.name if e.cpu_parent is not None else None) for e in prof.events())

    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, on_trace_ready=ready, schedule=schedule(wait=0, warmup=1, active=2, repeat=1)
    ) as prof:
        for _ in range(4):
            with record_function(model_range_name("tiny_mlp")), torch.no_grad():
                y = x
                for index, (name, layer) in enumerate(model.named_children()):
                    with record_function(layer_range_name(index, name, type(layer).__name__)):
                        y = layer(y)
            prof.step()
    db_path = work / "trace.duckdb"
    result = CliRunner().invoke(app, ["convert", str(trace), "-o", str(db_path), "-q"])
    assert result.exit_code == 0, result.output
    return seen, duckdb.connect(str(db_path), read_only=True)


def test_levels_and_layer_indices(capture):
    _, db = capture
    models = db.execute("SELECT name, iteration FROM spans WHERE kind = 'model' ORDER BY start_ns").fetchall()
    assert [m[0] for m in models] == ["xsp.model:tiny_mlp"] * 2
    layers = db.execute("SELECT layer_index, count(*) FROM spans WHERE kind = 'layer' GROUP BY 1 ORDER BY 1").fetchall()
    assert layers == [(0, 2), (1, 2), (2, 2)]
    # Each iteration's ProfilerStep#N annotation numbers everything inside it.
    steps = db.execute("SELECT name, iteration FROM spans WHERE name LIKE 'ProfilerStep#%' ORDER BY start_ns").fetchall()
    assert [s[1] for s in steps] == [int(s[0].split("#")[1]) for s in steps]
    assert [m[1] for m in models] == [s[1] for s in steps]


def test_op_counts_equal_torch_key_averages(capture):
    seen, db = capture
    expected = {k: n for k, n in seen["counts"].items() if k.startswith("aten::")}
    got = dict(db.execute("SELECT name, count(*) FROM spans WHERE kind = 'op' AND name LIKE 'aten::%' GROUP BY 1").fetchall())
    assert got == expected


def test_nesting_equals_torch_event_tree(capture):
    """Every (range or op, its parent) pair equals torch's cpu_parent, counted over the trace."""
    seen, db = capture
    expected = seen["pairs"]
    # torch's event list names every step range "ProfilerStep*"; the trace keeps "ProfilerStep#N".
    got = Counter(
        db.execute(
            """SELECT regexp_replace(s.name, '^ProfilerStep#\\d+$', 'ProfilerStep*'),
                  regexp_replace(p.name, '^ProfilerStep#\\d+$', 'ProfilerStep*')
           FROM spans s LEFT JOIN spans p ON p.run_id = s.run_id AND p.span_id = s.parent_id"""
        ).fetchall()
    )
    assert got == expected
    # And every aten op sits under a layer range of the model range (what XSP needs).
    orphans = db.execute("""
        SELECT count(*) FROM spans s WHERE s.kind = 'op' AND s.name = 'aten::linear' AND NOT EXISTS (
            SELECT 1 FROM span_ancestors a JOIN spans l ON l.run_id = a.run_id AND l.span_id = a.ancestor_id
            WHERE a.run_id = s.run_id AND a.span_id = s.span_id AND l.kind = 'layer')""").fetchone()[0]
    assert orphans == 0
