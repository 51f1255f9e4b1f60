"""kernel_pace and cuda_gpu_kern_hist (the nsys recipes cuda_gpu_kern_pace and cuda_gpu_kern_hist)
on a hand-made trace whose outlier is injected: five steps of 1 ms, each launching gemm (100 us)
then relu (10 us), except that step 3's gemm takes 400 us and starts 50 us late. The expected rows
are worked out by hand below; no nsys with the recipes is installed here to produce a reference
(nsys 2022.4 predates them).
"""

from __future__ import annotations

from typer.testing import CliRunner

from support.handmade import Run, write
from xsp_trace.analyze.session import AnalysisOptions, open_session, run_analysis
from xsp_trace.cli import app

US = 1_000
STEP_NS = 1_000 * US
SLOW_STEP = 3


def _trace(tmp_path):
    run = Run(1, source_kind="kineto")
    for step in range(1, 6):
        at = (step - 1) * STEP_NS
        run.span("annotation", f"ProfilerStep#{step}", at, at + STEP_NS, iteration=step)
        run.span("op", "aten::mm", at + 10 * US, at + 30 * US)
        late = 50 * US if step == SLOW_STEP else 0
        gemm = 400 * US if step == SLOW_STEP else 100 * US
        run.gpu("kernel", "gemm", (at + 15 * US, at + 20 * US), (at + 100 * US + late, at + 100 * US + late + gemm))
        run.gpu("kernel", "relu", (at + 40 * US, at + 45 * US), (at + 600 * US, at + 610 * US))
    return write(tmp_path / "t.duckdb", [run])


def _records(db, name, settings=None):
    return run_analysis(open_session(db, AnalysisOptions(settings=settings)), name).records()


def test_pace_shows_the_slow_step(tmp_path):
    rows = _records(_trace(tmp_path), "kernel_pace")
    # The default kernel: both run once per step, gemm has the most GPU time.
    assert {r["name"] for r in rows} == {"gemm"}
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["instance"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["duration_ns"] for r in rows] == [100 * US, 100 * US, 400 * US, 100 * US, 100 * US]
    assert [r["duration_accum_ns"] for r in rows] == [100 * US, 200 * US, 600 * US, 700 * US, 800 * US]
    # Instances start 1 ms apart and last 100 us, so 900 us between them; step 3's starts 50 us later
    # and ends 350 us later, which the delta after it pays back.
    assert [r["delta_ns"] for r in rows] == [None, 900 * US, 950 * US, 550 * US, 900 * US]
    assert [r["delta_accum_ns"] for r in rows] == [0, 900 * US, 1850 * US, 2400 * US, 3300 * US]
    assert rows[0]["start_ns"] == 100 * US and rows[2]["end_ns"] == 2 * STEP_NS + 550 * US


def test_pace_of_a_named_kernel(tmp_path):
    rows = _records(_trace(tmp_path), "kernel_pace", {"pace_kernel": "relu"})
    assert {r["name"] for r in rows} == {"relu"}
    assert [r["duration_ns"] for r in rows] == [10 * US] * 5
    assert [r["delta_ns"] for r in rows] == [None] + [990 * US] * 4


def test_histogram_puts_the_slow_step_alone_in_the_last_bin(tmp_path):
    rows = [r for r in _records(_trace(tmp_path), "cuda_gpu_kern_hist") if r["name"] == "gemm"]
    assert [(r["bin"], r["instances"], r["probability_pct"], r["iterations"]) for r in rows] == [(1, 4, 80.0, "1,2,4,5"), (10, 1, 20.0, "3")]
    # Ten bins of 30 us from 100 us to 400 us.
    assert (rows[0]["bin_start_ns"], rows[0]["bin_end_ns"]) == (100 * US, 130 * US)
    assert (rows[1]["bin_start_ns"], rows[1]["bin_end_ns"]) == (370 * US, 400 * US)
    relu = [r for r in _records(_trace(tmp_path), "cuda_gpu_kern_hist") if r["name"] == "relu"]
    assert [(r["bin"], r["instances"], r["bin_start_ns"], r["bin_end_ns"]) for r in relu] == [(1, 5, 10 * US, 10 * US)]


def test_histogram_bins_setting(tmp_path):
    rows = [r for r in _records(_trace(tmp_path), "cuda_gpu_kern_hist", {"hist_bins": 2}) if r["name"] == "gemm"]
    assert [(r["bin"], r["instances"], r["bin_start_ns"], r["bin_end_ns"]) for r in rows] == [(1, 4, 100 * US, 250 * US), (2, 1, 250 * US, 400 * US)]


def test_bad_bins_is_one_line(tmp_path):
    result = CliRunner().invoke(app, ["analyze", str(_trace(tmp_path)), "--analysis", "cuda_gpu_kern_hist", "--set", "hist_bins=0"])
    assert result.exit_code == 2
    assert "hist_bins=0 is out of range" in result.output
