"""Leveled capture end to end on the CPU: a small real model (tests/capture_scripts/tiny_model.py)
captured at M, ML (the capture's own timer for both tools; nsys with --nvtx-ranges) and MLG (torch.profiler), the run
directories converted, and the levels checked: one model span per iteration, one layer span per
module call nested in its model span in module order, aten ops nested in the layer spans. The
script runs under inference_mode, so the encoder layer runs torch's fused fast path (one layer). nsys's own
`nsys stats --report nvtxppsum` is the reference for the NVTX ranges nsys recorded.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import nsys_stats, require_nsys
from test_capture_hooks import FUSED_CALL_ORDER as CALL_ORDER
from test_capture_hooks import FUSED_TREE_ORDER as TREE_ORDER
from test_capture_hooks import _range as _range_in
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # torch captures

SCRIPTS = Path(__file__).parent / "capture_scripts"
CHECKOUT = Path(__file__).resolve().parent.parent
ITERATIONS = 5  # >= 5, so the trimmed means of the prelude and of capture_level_overhead.sql agree


def _range(name: str) -> str:
    return _range_in(name, TREE_ORDER)


def _capture_and_convert(tmp: Path, *options: str) -> tuple[Path, duckdb.DuckDBPyConnection]:
    env = {"PYTHONPATH": os.pathsep.join([str(CHECKOUT), str(SCRIPTS), os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        run_dir = tmp / "run"
        result = CliRunner().invoke(
            app,
            [
                "capture",
                "-q",
                *options,
                "--iterations",
                str(ITERATIONS),
                "--warmup",
                "1",
                "-o",
                str(run_dir),
                "--",
                sys.executable,
                str(SCRIPTS / "tiny_model.py"),
            ],
        )
        assert result.exit_code == 0, result.output
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    result = CliRunner().invoke(app, ["convert", "-q", str(run_dir)])
    assert result.exit_code == 0, result.output
    return run_dir, duckdb.connect(str(run_dir / "xsp.duckdb"), read_only=True)


@pytest.fixture(scope="module")
def nsys_run(tmp_path_factory):
    require_nsys()
    return _capture_and_convert(tmp_path_factory.mktemp("nsys"), "--tool", "nsys", "--nvtx-ranges", "--levels", "M,ML", "--batch-sizes", "2")


@pytest.fixture(scope="module")
def nsys_timer_run(tmp_path_factory):
    """The nsys tool's M and ML without --nvtx-ranges: the capture's own timer, nsys never started."""
    return _capture_and_convert(tmp_path_factory.mktemp("nsys_timer"), "--tool", "nsys", "--nsys", "/no/such/nsys", "--levels", "M,ML")


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory):
    return _capture_and_convert(tmp_path_factory.mktemp("torch"), "--tool", "torch", "--levels", "M,ML,MLG", "--batch-sizes", "1,2")


def _runs(db) -> dict:
    """(level, batch size) -> run_id."""
    return {(lv, bs): rid for rid, lv, bs in db.execute("SELECT run_id, level, batch_size FROM runs").fetchall()}


def _check_model_spans(db, run_id: int) -> None:
    rows = db.execute("SELECT name, iteration, depth FROM spans WHERE run_id = ? AND kind = 'model' ORDER BY start_ns", [run_id]).fetchall()
    assert rows == [("xsp.model:tiny", i, 0) for i in range(ITERATIONS)]


def _check_layer_spans(db, run_id: int) -> None:
    rows = db.execute(
        """SELECT p.iteration, s.name, s.layer_index, p.kind, s.iteration
           FROM spans s JOIN spans p ON p.run_id = s.run_id AND p.span_id = s.parent_id
           WHERE s.run_id = ? AND s.kind = 'layer' ORDER BY s.start_ns""",
        [run_id],
    ).fetchall()
    assert db.execute("SELECT count(*) FROM spans WHERE run_id = ? AND kind = 'layer'", [run_id]).fetchone()[0] == len(rows)
    expected = [(i, _range(name), [n for n, _ in TREE_ORDER].index(name), "model", i) for i in range(ITERATIONS) for name in CALL_ORDER]
    assert rows == expected


def _check_capture_tables(db, run_id: int, level: str) -> None:
    loops = dict(db.execute("SELECT loop, count(*) FROM capture_latencies WHERE run_id = ? GROUP BY 1", [run_id]).fetchall())
    assert loops == {"uninstrumented": ITERATIONS, "instrumented": ITERATIONS}
    layers = db.execute("SELECT name, type FROM layers WHERE run_id = ? ORDER BY layer_index", [run_id]).fetchall()
    assert layers == TREE_ORDER
    changed, note = db.execute("SELECT program_changed, program_change_note FROM capture_runs WHERE run_id = ?", [run_id]).fetchone()
    if level == "M":
        assert changed is None  # no layers in the M run
    else:
        assert changed is False and note is None  # the layer wrappers keep the fused encoder fast path


def test_nsys_levels(nsys_run):
    _, db = nsys_run
    runs = _runs(db)
    assert set(runs) == {("M", 2), ("ML", 2)}
    assert db.execute("SELECT DISTINCT tool, model FROM runs").fetchall() == [("nsys", "tiny")]
    _check_model_spans(db, runs[("M", 2)])
    assert db.execute("SELECT count(*) FROM spans WHERE run_id = ? AND kind <> 'model'", [runs[("M", 2)]]).fetchone()[0] == 0
    _check_model_spans(db, runs[("ML", 2)])
    _check_layer_spans(db, runs[("ML", 2)])
    for level in ("M", "ML"):
        _check_capture_tables(db, runs[(level, 2)], level)


def test_nsys_tool_times_m_and_ml_itself_by_default(nsys_timer_run):
    run_dir, db = nsys_timer_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [(e["key"], Path(e["trace"]).name) for e in manifest["runs"]] == [("nsys-M-bs1", "trace.json"), ("nsys-ML-bs1", "trace.json")]
    assert not any(f.endswith((".nsys-rep", ".qdstrm", ".sqlite")) for e in manifest["runs"] for f in e["files"])
    assert "nsys" not in manifest["tools"] and manifest["options"]["nsys_trace"] == {}
    runs = _runs(db)
    assert db.execute("SELECT DISTINCT tool, profiler_scope FROM capture_runs").fetchall() == [("nsys", "none")]
    _check_model_spans(db, runs[("M", 1)])
    _check_model_spans(db, runs[("ML", 1)])
    _check_layer_spans(db, runs[("ML", 1)])
    for level in ("M", "ML"):
        _check_capture_tables(db, runs[(level, 1)], level)


def test_nsys_ranges_match_nsys_stats(nsys_run, tmp_path):
    run_dir, db = nsys_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for entry in manifest["runs"]:
        reference = nsys_stats(run_dir / entry["trace"], "nvtxppsum", tmp_path / entry["key"])
        want = {row["Range"]: (int(row["Instances"]), int(row["Total Time (ns)"])) for row in reference}
        run_id = _runs(db)[(entry["level"], entry["batch_size"])]
        got = {
            f"{cat}:{name}": (n, total)
            for cat, name, n, total in db.execute(
                "SELECT category, name, count(*), sum(end_ns - start_ns)::BIGINT FROM spans WHERE run_id = ? GROUP BY 1, 2", [run_id]
            ).fetchall()
        }
        assert got == want
        assert entry["model_ranges"] == ITERATIONS


def test_torch_levels_and_batch_sizes(torch_run):
    _, db = torch_run
    runs = _runs(db)
    assert set(runs) == {(lv, bs) for lv in ("M", "ML", "MLG") for bs in (1, 2)}
    for (level, _batch_size), run_id in runs.items():
        _check_model_spans(db, run_id)
        _check_capture_tables(db, run_id, level)
        if level == "M":
            assert db.execute("SELECT count(*) FROM spans WHERE run_id = ? AND kind IN ('layer', 'op')", [run_id]).fetchone()[0] == 0
        else:
            _check_layer_spans(db, run_id)
        if level == "ML":  # no profiler: no aten ops recorded
            assert db.execute("SELECT count(*) FROM spans WHERE run_id = ? AND kind = 'op'", [run_id]).fetchone()[0] == 0
        scope = db.execute("SELECT profiler_scope FROM capture_runs WHERE run_id = ?", [run_id]).fetchone()[0]
        assert scope == ("all" if level == "MLG" else "none")
    shapes = db.execute("SELECT input_shapes FROM layers WHERE run_id = ? AND name = 'conv.0'", [runs[("ML", 2)]]).fetchone()[0]
    assert json.loads(shapes) == [[2, 3, 16, 16]]


def test_torch_mlg_nests_aten_ops_in_layer_spans(torch_run):
    _, db = torch_run
    for batch_size in (1, 2):
        run_id = _runs(db)[("MLG", batch_size)]
        # Direct op children of each layer span, per iteration: the op each module's forward starts with.
        first_ops = dict(
            db.execute(
                """SELECT l.name, arg_min(o.name, o.start_ns) FROM spans l JOIN spans o ON o.run_id = l.run_id AND o.parent_id = l.span_id
               WHERE l.run_id = ? AND l.kind = 'layer' AND o.kind = 'op' AND l.iteration = 0 GROUP BY 1""",
                [run_id],
            ).fetchall()
        )
        assert first_ops[_range("conv.0")] == "aten::conv2d"
        assert first_ops[_range("proj")] == "aten::linear"
        assert first_ops[_range("conv.1")] == "aten::relu"
        assert first_ops[_range("encoder")] == "aten::_transformer_encoder_layer_fwd"  # the fused fast path
        assert set(first_ops) == {_range(n) for n in CALL_ORDER}  # every layer span holds ops
        # Every op inside a layer span carries its layer's iteration; ops between layers hang off the model span.
        mismatched = db.execute(
            """SELECT count(*) FROM span_ancestors a JOIN spans o ON o.run_id = a.run_id AND o.span_id = a.span_id
               JOIN spans l ON l.run_id = a.run_id AND l.span_id = a.ancestor_id
               WHERE a.run_id = ? AND o.kind = 'op' AND l.kind = 'layer' AND o.iteration IS DISTINCT FROM l.iteration""",
            [run_id],
        ).fetchone()[0]
        assert mismatched == 0
        outside = db.execute("""SELECT count(*) FROM spans o WHERE o.run_id = ? AND o.kind = 'op' AND o.depth = 0""", [run_id]).fetchone()[0]
        assert outside == 0  # the profiler recorded only the profiled loop, all of it inside model spans


def test_level_overhead_query_matches_scipy_on_the_session_latencies(nsys_run):
    import numpy as np
    from scipy import stats

    run_dir, db = nsys_run
    rows = db.execute((CHECKOUT / "queries" / "analyses" / "capture_level_overhead.sql").read_text()).fetchall()
    columns = [d[0] for d in db.description]
    by_level = {r[columns.index("level")]: dict(zip(columns, r, strict=True)) for r in rows}
    assert set(by_level) == {"M", "ML"}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for entry in manifest["runs"]:
        latencies = json.loads((run_dir / entry["session"]).read_text())["latencies_ns"]
        row = by_level[entry["level"]]
        plain, instrumented = np.array(latencies["uninstrumented"]), np.array(latencies["instrumented"])
        assert row["uninstrumented_trimmed_mean_ns"] == pytest.approx(stats.trim_mean(plain, 0.2))
        assert row["instrumented_trimmed_mean_ns"] == pytest.approx(stats.trim_mean(instrumented, 0.2))
        assert row["instrumented_median_ns"] == pytest.approx(np.median(instrumented))
        assert row["uninstrumented_p90_ns"] == pytest.approx(np.percentile(plain, 90))
        assert row["inflation_pct"] == pytest.approx(100 * (stats.trim_mean(instrumented, 0.2) / stats.trim_mean(plain, 0.2) - 1))


def _exact_bootstrap_quantiles(plain, timed, probabilities):
    """Every paired resample of n iterations (n**n of them): quantiles of the trimmed-mean overhead, %."""
    import itertools

    import numpy as np
    from scipy import stats

    n = len(plain)
    values = sorted(
        100 * (stats.trim_mean(np.take(timed, idx), 0.2) / stats.trim_mean(np.take(plain, idx), 0.2) - 1)
        for idx in itertools.product(range(n), repeat=n)
    )
    return [values[min(len(values) - 1, int(p * len(values)))] for p in probabilities]


def test_torch_level_overhead_in_process_interleaved_with_bootstrap(torch_run):
    """level_overhead per run = capture_level_overhead.sql = scipy on the session's own loops; the
    loops alternate under the torch tool; the bootstrap interval lies where the exact paired
    bootstrap distribution (all n**n resamples) puts its 2.5 % and 97.5 % quantiles."""
    from scipy import stats

    from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis

    run_dir, db = torch_run
    con = open_session(run_dir / "xsp.duckdb", AnalysisOptions())
    rows = {(r["level"], int(r["experiment"].split("=")[1])): r for r in run_analysis(con, "level_overhead").records()}
    in_process = db.execute((CHECKOUT / "queries" / "analyses" / "capture_level_overhead.sql").read_text()).fetchall()
    columns = [d[0] for d in db.description]
    in_process = {(r["level"], r["batch_size"]): r for r in (dict(zip(columns, row, strict=True)) for row in in_process)}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(rows) == len(manifest["runs"]) == 6
    for entry in manifest["runs"]:
        row = rows[(entry["level"], entry["batch_size"])]
        latencies = json.loads((run_dir / entry["session"]).read_text())["latencies_ns"]
        plain, timed = latencies["uninstrumented"], latencies["instrumented"]
        assert latencies["uninstrumented_phase"] == ["interleaved"] * ITERATIONS and row["interleaved"] is True
        expected = 100 * (stats.trim_mean(timed, 0.2) / stats.trim_mean(plain, 0.2) - 1)
        assert row["overhead_pct"] == pytest.approx(expected, abs=0.006)
        assert row["overhead_pct"] == pytest.approx(in_process[(entry["level"], entry["batch_size"])]["inflation_pct"], abs=0.006)
        assert row["uninstrumented_ms"] == pytest.approx(stats.trim_mean(plain, 0.2) / 1e6, abs=1e-6)
        trace = json.loads((run_dir / entry["trace"]).read_text())["traceEvents"]
        ranges = [e["dur"] * 1000 for e in trace if e.get("ph") == "X" and e["name"].startswith("xsp.model:")]
        assert row["model_latency_ms"] == pytest.approx(stats.trim_mean(ranges, 0.2) / 1e6, abs=2e-6)
        low_from, low_to, high_from, high_to = _exact_bootstrap_quantiles(plain, timed, (0.005, 0.06, 0.94, 0.995))
        assert low_from - 0.01 <= row["overhead_pct_low"] <= low_to + 0.01, entry["key"]
        assert high_from - 0.01 <= row["overhead_pct_high"] <= high_to + 0.01, entry["key"]
