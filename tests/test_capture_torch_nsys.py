"""`capture --tool torch+nsys`: one process under nsys with torch.profiler inside, converted as one run per level.

The reference for the ranges is nsys's own `nsys stats --report nvtxppsum` of each run's export, and
the raw Kineto trace the profiler wrote beside it: each range once in the merged run, with its nsys
times, and the torch ops beneath it.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import nsys_stats, require_nsys
from test_capture_end_to_end import ITERATIONS, _capture_and_convert
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # torch captures under nsys


@pytest.fixture(scope="module")
def both_run(tmp_path_factory):
    require_nsys()
    return _capture_and_convert(tmp_path_factory.mktemp("both"), "--tool", "torch+nsys", "--levels", "M,ML")


def test_one_run_per_level_with_each_range_once(both_run, tmp_path):
    run_dir, db = both_run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert [e["key"] for e in manifest["runs"]] == ["torch+nsys-M-bs1", "torch+nsys-ML-bs1"]
    runs = dict(db.execute("SELECT level, run_id FROM runs").fetchall())
    assert sorted(runs) == ["M", "ML"]
    for entry in manifest["runs"]:
        run_id = runs[entry["level"]]
        reference = nsys_stats(run_dir / entry["trace"], "nvtxppsum", tmp_path / entry["key"])
        want = {row["Range"].split(":", 1)[1]: (int(row["Instances"]), int(row["Total Time (ns)"])) for row in reference}
        got = {
            name: (n, total)
            for name, n, total in db.execute(
                "SELECT name, count(*), sum(end_ns - start_ns)::BIGINT FROM spans WHERE run_id = ? AND kind IN ('model', 'layer') GROUP BY name",
                [run_id],
            ).fetchall()
        }
        assert got == want  # nsys's ranges, each once, with nsys's times
        kineto = json.loads((run_dir / entry["kineto_trace"]).read_text())
        annotations = sum(1 for e in kineto["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith("xsp."))
        assert annotations == sum(n for n, _ in want.values())  # the profiler saw the same ranges
        ops = sum(1 for e in kineto["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op")
        nested = db.execute(
            """SELECT count(*) FROM spans s JOIN span_ancestors a USING (run_id, span_id) JOIN spans m ON m.run_id = a.run_id AND m.span_id = a.ancestor_id
               WHERE s.run_id = ? AND s.kind = 'op' AND m.kind = 'model'""",
            [run_id],
        ).fetchone()[0]
        assert 0 < nested <= ops
        assert db.execute("SELECT paired_spans FROM one_execution_alignments WHERE run_id = ?", [run_id]).fetchone()[0] == annotations
        assert entry["model_ranges"] == ITERATIONS


def test_gpu_level_refused(tmp_path):
    require_nsys()
    result = CliRunner().invoke(app, ["capture", "--tool", "torch+nsys", "--levels", "MLG", "-o", str(tmp_path / "run"), "--", "python", "x.py"])
    assert result.exit_code == 2
    assert "cannot both trace CUDA" in result.output and len(result.output.strip().splitlines()) == 1
